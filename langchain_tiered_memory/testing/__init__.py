"""What tests of an application built on this package need: models and embedders that
call nothing, and the storage conformance suite.

* :class:`EchoChatModel` - a chat model that calls no LLM (``"echo"``
  anywhere a model is taken): it answers with what the memory put in its prompt;
* :class:`ScriptedExtractionModel` - a fake chat model whose structured output
  (the model extractor's answers) follows a script (:mod:`.models`);
* :class:`StemAxisEmbeddings`, :class:`HashEmbeddings` - deterministic fake
  embedders (:mod:`.embeddings`);
* :mod:`.conformance` - the suite every storage backend passes, to run
  against your own (imported on its own: it needs pytest).

Example:
    >>> import tempfile
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory import MemoryStore
    >>> with MemoryStore(tempfile.mkdtemp(), embeddings=HashEmbeddings(dim=16)) as store:
    ...     memory = store.memory("ana", "t1")
    ...     _ = memory.add_messages([HumanMessage("I'm allergic to peanuts.")])
    ...     reply = EchoChatModel().invoke(memory.build_context().messages).content
    >>> print(reply)  # doctest: +ELLIPSIS
    [echo model - no LLM was called] You said: I'm allergic to peanuts.
    Memory in my prompt: core memory: [human] - allergy:peanuts: allergic to peanuts (stated, ...).
"""

from langchain_tiered_memory.models.echo import EchoChatModel, echo_reply
from langchain_tiered_memory.testing.embeddings import HashEmbeddings, StemAxisEmbeddings
from langchain_tiered_memory.testing.models import ScriptedExtractionModel

__all__ = [
    "EchoChatModel",
    "HashEmbeddings",
    "ScriptedExtractionModel",
    "StemAxisEmbeddings",
    "echo_reply",
]
