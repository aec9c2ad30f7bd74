"""The offline fact rules' former home; they live in :mod:`langchain_tiered_memory.write.rules`.

Every name imported from here before still is (``find_facts``,
``normalise_message``, ``readable_prefix``, ``READ_LIMIT``, ``FoundFact``,
``strip_quoted``).

Example:
    >>> [(f.subject, f.content) for f in find_facts("I'm 34.")]
    [('age', '34 years old')]
"""

from __future__ import annotations

from langchain_tiered_memory.text import strip_quoted
from langchain_tiered_memory.write.rules import (
    READ_LIMIT,
    FoundFact,
    find_facts,
    normalise_message,
    readable_prefix,
)

__all__ = [
    "READ_LIMIT",
    "FoundFact",
    "find_facts",
    "normalise_message",
    "readable_prefix",
    "strip_quoted",
]
