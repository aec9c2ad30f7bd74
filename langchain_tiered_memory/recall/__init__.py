"""Bringing memories back: the recall gate and hybrid recall.

* :mod:`.gate` - whether a message needs memory at all, with a reason;
* :mod:`.hybrid` - :class:`~.hybrid.Recaller`: dense + keyword candidates
  scored with relevance, recency and importance;
* :mod:`.ranker` - the learned ranker over those signals (the default);
* :mod:`.signals` - the per-candidate signals both rankers use;
* :mod:`.dedupe` - near-duplicate merging;
* :mod:`.prompt` - what one prompt recalls (what it does not carry already) and its audit event;
* :mod:`.time_expressions` - date windows read from a question.
"""
