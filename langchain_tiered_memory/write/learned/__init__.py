"""The learned offline extractor (issue 31): the user's own clauses kept as facts,
an about-the-user classifier and supersession by meaning, all from small logistic
models over the package's offline embeddings, trained on labelled data in ``data/``
(the logistic regression itself is :mod:`langchain_tiered_memory.embeddings.logistic`,
shared with the recall gate).

* :mod:`.clauses` - a message split into clauses, each cleaned of its lead-in;
* :mod:`.training` - the labelled clauses and pairs expanded, and the two models fitted;
* :mod:`.models` - the fitted models loaded and applied (``about_user``, ``link``);
* :mod:`.extractor` - :class:`LearnedExtractor`, the ``extractor="learned"`` option;
* :mod:`.linked` - :class:`LinkedRulesExtractor`, the ``extractor="rules+links"`` option
  (the rules' facts, with the linker for what they did not read).
"""

from langchain_tiered_memory.write.learned.extractor import LearnedExtractor
from langchain_tiered_memory.write.learned.linked import LinkedRulesExtractor
from langchain_tiered_memory.write.learned.models import LearnedModels, Link

__all__ = ["LearnedExtractor", "LearnedModels", "Link", "LinkedRulesExtractor"]
