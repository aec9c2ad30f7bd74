"""The tiers a thread's memory keeps in the window.

* :mod:`.turns` - turns, the unit the buffer keeps, evicts and archives;
* :mod:`.buffer` - the summary buffer as pure functions (append, compress);
* :mod:`.window` - the buffer window a view holds, caught up from the turn log;
* :mod:`.compression` - a compression carried out against the store, as one write;
* :mod:`.summarize` - summarisers (extractive, LLM);
* :mod:`.core` - core memory: versioned facts and the :class:`~.core.FactStore` they live in.
"""
