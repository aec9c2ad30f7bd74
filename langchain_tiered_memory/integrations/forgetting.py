"""Forget what a user names - a core fact's subject, or words - and say what was done.

What chat's ``/forget`` and the MCP tool ``forget(subject=...)`` share: a name
that is a fact's subject forgets every version of that fact; any other words
forget what was said about them, in every tier
(:meth:`~langchain_tiered_memory.memory.TieredMemory.forget_about`: the facts
whose subject or content holds them, so ``daughter`` finds ``family:daughter``
and ``Lisbon`` the home fact). When nothing matches, the answer lists the core
facts there are, so the user can name one.

Example:
    >>> from langchain_tiered_memory.memory import TieredMemory
    >>> from langchain_tiered_memory.values.facts import CoreFact
    >>> m = TieredMemory(context_window=4096)
    >>> _ = m.write_fact(CoreFact.new("family:daughter", "has a daughter, Mia"))
    >>> forget_named(m, "Madrid")
    "nothing in memory matches 'Madrid'; core facts: family:daughter (has a daughter, Mia)"
    >>> forget_named(m, "daughter")
    "forgot 1 fact and 1 archived record about 'daughter'"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

__all__ = ["forget_named"]


def forget_named(memory: TieredMemory, what: str) -> str:
    """Forget the core fact whose subject is ``what`` (every version), else what was said
    about its words, in every tier; returns what was done in one line, without the
    forgotten text (or, when nothing matched, the core facts there are).

    Raises:
        TypeError: if ``what`` is not a string.
        ValueError: if it holds no word to match (``"the"``); nothing is deleted.
    """
    if not isinstance(what, str):
        raise TypeError(f"what to forget must be a string, got {type(what).__name__}")
    what = what.strip()
    if what and any(f.subject == what.lower() for f in memory.core.history()):
        removed = memory.forget_fact(what)
        return f"forgot {len(removed)} version(s) of {what!r}"
    report = memory.forget_about(what)
    if report.found:
        return f"forgot {report.summary()} about {what!r}"
    facts = memory.core.active()
    there = ", ".join(f"{f.subject} ({f.content})" for f in facts) or "none"
    return f"nothing in memory matches {what!r}; core facts: {there}"
