"""Core memory: MemGPT's working context, kept in the ``core`` section.

Labelled blocks (``human``, ``persona``, ``task``) hold facts. Each fact is
versioned: a new fact about the same subject supersedes the old one - the
latest truth is what the prompt shows, the old version stays in the history
with its time and the reason it was replaced. A fact is never removed without
its replacement written first; only an explicit ``forget`` deletes.

Example:
    >>> core = CoreMemory()
    >>> _ = core.upsert(CoreFact.new("home_city", "lives in Paris", source_turn=2))
    >>> _ = core.upsert(CoreFact.new("home_city", "moved to Berlin", source_turn=40))
    >>> [f.content for f in core.active()]
    ['moved to Berlin']
    >>> [(f.content, f.status) for f in core.history("home_city")]
    [('lives in Paris', 'superseded'), ('moved to Berlin', 'active')]
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.expiry import is_expired, utc
from langchain_tiered_memory.storage.inprocess import InProcessFacts
from langchain_tiered_memory.values.facts import (
    BLOCKS,
    CoreFact,
    Expect,
    FactConflict,
    FactStore,
    FactUpdate,
    check_fact,
    held_during,
    utc_now,
)

# The fact's value types and rules live in values.facts (import them from there) and the
# in-process store in storage.inprocess; the fact, its blocks and its conflict are
# importable from here too, as the words of the tier's own methods.
__all__ = ["BLOCKS", "CoreFact", "CoreMemory", "FactConflict", "render_facts"]


def render_facts(facts: Iterable[CoreFact], *, now: datetime | None = None) -> str:
    """Active facts as core memory's prompt text: grouped by block, in the given order
    (pure; ``now`` for :meth:`CoreFact.render`).

    Example:
        >>> print(render_facts([CoreFact.new("name", "Maya")]).splitlines()[0])
        [human]
    """
    facts = list(facts)
    parts: list[str] = []
    for block in BLOCKS:
        chosen = [f for f in facts if f.block == block]
        if chosen:
            parts.append(f"[{block}]")
            parts.extend(f.render(now=now) for f in chosen)
    return "\n".join(parts)


def _ranked(facts: Iterable[CoreFact]) -> list[CoreFact]:
    return sorted(facts, key=lambda f: (-f.importance, -f.created_at.timestamp()))


class CoreMemory:
    """Versioned facts in labelled blocks: a view of one user's facts in a :class:`FactStore`.

    Reads see the store's latest state (reloaded only when its version
    changed); writes go to the store at once and atomically, so any number
    of views - threads, objects, processes - never lose each other's facts.

    Args:
        facts: Versions to start from (only without ``store``).
        store: Where the facts live (default: a private :class:`InProcessFacts`).
        user_id: Whose facts.
        thread_id: The thread this view writes from: a fact written with a
            ``source_turn`` but no ``source_thread`` is stamped with it.

    Example:
        >>> shared = InProcessFacts()
        >>> a, b = CoreMemory(store=shared, user_id="ana"), CoreMemory(store=shared, user_id="ana")
        >>> _ = a.upsert(CoreFact.new("diet", "vegetarian"))
        >>> b.get("diet").content
        'vegetarian'
    """

    def __init__(
        self,
        facts: Iterable[CoreFact] = (),
        *,
        store: FactStore | None = None,
        user_id: str = "default",
        thread_id: str | None = None,
    ) -> None:
        initial = list(facts)
        if store is None:
            own = InProcessFacts()
            if initial:
                own.add_versions(user_id, [check_fact(f) for f in initial])
            store = own
        elif initial:
            raise ValueError("pass facts= or store=, not both: a store already holds its facts")
        self.store: FactStore = store
        self.user_id = user_id
        self.thread_id = thread_id
        self._lock = threading.RLock()
        self._version: int | None = None
        self._facts: list[CoreFact] = []

    # -- reading -----------------------------------------------------------

    def _current(self) -> list[CoreFact]:
        with self._lock:
            version = self.store.facts_version(self.user_id)
            if version != self._version:
                self._version, self._facts = self.store.load_facts(self.user_id)
            return self._facts

    def active(self, block: str | None = None) -> list[CoreFact]:
        """Active facts, most important first (then newest); expired ones are left out."""
        now = utc_now()
        facts = [
            f for f in self._current() if f.status == "active" and not is_expired(f.expires_at, now)
        ]
        if block is not None:
            facts = [f for f in facts if f.block == block]
        return _ranked(facts)

    def history(self, subject: str | None = None) -> list[CoreFact]:
        """Every version (oldest first), optionally for one subject."""
        facts = list(self._current())
        if subject is not None:
            facts = [f for f in facts if f.subject == subject.lower()]
        return sorted(facts, key=lambda f: utc(f.created_at))

    def at(self, when: datetime, until: datetime | None = None) -> list[CoreFact]:
        """The fact versions that held at ``when`` (with ``until``: at any time in
        ``[when, until)``), superseded and ended ones included, oldest first.

        Expired versions are left out. See :func:`held_during`.

        Example:
            >>> from datetime import datetime
            >>> core = CoreMemory()
            >>> _ = core.upsert(CoreFact.new("home_city", "lives in Paris",
            ...                 created_at=datetime(2021, 1, 1)))
            >>> _ = core.upsert(CoreFact.new("home_city", "moved to Berlin",
            ...                 valid_from=datetime(2024, 1, 1)))
            >>> [(f.content, f.status) for f in core.at(datetime(2023, 6, 1))]
            [('lives in Paris', 'superseded')]
        """
        for name, value in (("when", when), ("until", until)):
            if value is not None and not isinstance(value, datetime):
                raise TypeError(f"{name} must be a datetime, got {value!r}")
        now = utc_now()
        versions = [f for f in self._current() if not is_expired(f.expires_at, now)]
        return held_during(versions, when, until)

    def get(self, subject: str, block: str = "human") -> CoreFact | None:
        """The active fact for ``subject`` in ``block``, if any."""
        for fact in self.active(block):
            if fact.subject == subject.lower():
                return fact
        return None

    def render(self, *, now: datetime | None = None) -> str:
        """All active facts, grouped by block, most important first (:func:`render_facts`;
        ``now``, default the current time, for when each holds).

        Example:
            >>> core = CoreMemory([CoreFact.new("name", "Maya", source_turn=0)])
            >>> print(core.render().splitlines()[0])
            [human]
        """
        return render_facts(self.active(), now=now)

    def tokens(self, counter: TokenCounter) -> int:
        """Tokens of the rendered core memory."""
        return counter.count_text(self.render())

    # -- writing -----------------------------------------------------------

    def upsert(
        self, fact: CoreFact, *, reason: str = "updated", expect: Expect = "any"
    ) -> FactUpdate:
        """Write ``fact``; an active fact with the same subject and block is
        superseded (kept in history with ``reason``) - after the new one is in.

        Re-stating the same content is a no-op (``unchanged=True``). Lone
        UTF-16 surrogates in the text are replaced by U+FFFD.

        Raises:
            TypeError: if ``fact`` is not a :class:`CoreFact`, or a field has the
                wrong type.
            ValueError: for an unknown block, or a non-finite importance or a
                confidence outside 0-1. Nothing is written in either case.
            FactConflict: when ``expect`` does not hold (nothing is written).
        """
        fact = check_fact(fact)
        if fact.source_thread is None and fact.source_turn is not None and self.thread_id:
            fact = replace(fact, source_thread=self.thread_id)
        return self.store.write_fact(self.user_id, fact, reason=reason, expect=expect)

    def end(
        self,
        subject: str,
        block: str = "human",
        *,
        at: datetime | None = None,
        reason: str = "ended",
    ) -> CoreFact | None:
        """End the subject's current fact: it stopped holding at ``at`` (default now)
        with no replacement ("I don't smoke any more"). The version stays in the
        history as ``ended``; nothing is deleted.

        Returns the ended version, or ``None`` when the subject has no current fact.

        Example:
            >>> core = CoreMemory([CoreFact.new("smoking", "smokes")])
            >>> core.end("smoking", reason="quit").status, core.get("smoking")
            ('ended', None)
        """
        if block not in BLOCKS:
            raise ValueError(f"Unknown core memory block {block!r}; use one of {list(BLOCKS)}.")
        if at is not None and not isinstance(at, datetime):
            raise TypeError(f"at must be a datetime or None, got {at!r}.")
        return self.store.end_fact(self.user_id, subject, block, at=at, reason=reason)

    def forget(self, *, subject: str | None = None, fact_id: str | None = None) -> list[CoreFact]:
        """Delete a fact for real (every version of the subject, or one id).

        Returns the removed versions. With a backend store, the turns that
        stated them and the records derived from them go too.
        """
        if subject is None and fact_id is None:
            raise ValueError("forget needs subject=... or fact_id=...")
        return self.store.forget_facts(self.user_id, subject=subject, fact_id=fact_id)

    def clear(self) -> list[CoreFact]:
        """Delete every fact (returns them)."""
        return self.store.clear_facts(self.user_id)

    def shrink_to(self, max_tokens: int, counter: TokenCounter) -> list[CoreFact]:
        """Move the least important active facts out until the render fits.

        The moved facts are marked ``archived`` (still in history, still in
        the archive) and returned; nothing vanishes.
        """
        active = self.active()
        if not active or self.tokens(counter) <= max_tokens:
            return []
        keep = list(active)
        victims: list[CoreFact] = []
        while keep and counter.count_text(render_facts(keep)) > max_tokens:
            victims.append(keep.pop())
        return self.store.retire_facts(
            self.user_id, [f.id for f in victims], reason="core memory full"
        )

    # -- persistence -------------------------------------------------------

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every version, JSON-ready."""
        return [f.to_dict() for f in self.history()]

    @classmethod
    def from_dicts(cls, rows: Sequence[dict[str, Any]]) -> CoreMemory:
        """Inverse of :meth:`to_dicts` (an in-process memory)."""
        return cls(CoreFact.from_dict(r) for r in rows)
