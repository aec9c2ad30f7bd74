"""The token budget: sections, exact token counters, clipping, and prompt assembly.

* :mod:`.sections` - :class:`~.sections.TokenBudget`: the window split into sections;
* :mod:`.tokens` - exact token counters (tiktoken, a chat model's own, ...);
* :mod:`.clipping` - clipping text and messages to a token count, with a marker;
* :mod:`.context` - assembling the prompt, every section within its budget;
* :mod:`.repeats` - what is already in the prompt (so recall does not repeat it).
"""
