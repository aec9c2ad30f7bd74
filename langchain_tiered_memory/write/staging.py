"""Staged fact writes: what an extraction batch would write, kept for one commit.

The write policy (:mod:`.policy`) writes through a
:class:`~langchain_tiered_memory.tiers.core.CoreMemory`, one candidate after the other,
each decided against the facts the ones before it left. :class:`StagedFacts` is the
:class:`~langchain_tiered_memory.values.facts.FactStore` such a core memory writes to
when the batch must commit as one: it reads the user's facts from the real store once
(at the first read), applies every write to a private copy (so the next candidate sees
it) and keeps each write as a
:class:`~langchain_tiered_memory.storage.base.FactChange`. The caller hands
:attr:`StagedFacts.changes` to
:meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`, which
writes them with the extraction watermark in one transaction - or, when another view
or process extracted the batch first, not at all.

Nothing reaches the real store through a :class:`StagedFacts`.

Example:
    >>> from langchain_tiered_memory.storage.inprocess import InProcessFacts
    >>> from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
    >>> real = InProcessFacts()
    >>> _ = real.write_fact("ana", CoreFact.new("home_city", "lives in Lisbon"), reason="new")
    >>> staged = StagedFacts(real, "ana", extraction="rules")
    >>> core = CoreMemory(store=staged, user_id="ana")
    >>> _ = core.upsert(CoreFact.new("home_city", "moved to Porto", source_turn=3))
    >>> core.get("home_city").content, real.load_facts("ana")[1][-1].content
    ('moved to Porto', 'lives in Lisbon')
    >>> [(c.action, c.audit["action"], c.audit["turn"]) for c in staged.changes]
    [('write', 'update', 3)]
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_tiered_memory.storage.base import FactChange
from langchain_tiered_memory.storage.inprocess import InProcessFacts
from langchain_tiered_memory.values.facts import CoreFact, Expect, FactStore, FactUpdate

__all__ = ["StagedFacts"]


class StagedFacts:
    """A :class:`~langchain_tiered_memory.values.facts.FactStore` that stages one user's
    fact writes over ``base`` (read once, never written) as
    :class:`~langchain_tiered_memory.storage.base.FactChange` values.

    Args:
        base: The store the user's facts are read from.
        user_id: Whose facts (the only user it accepts).
        extraction: The extractor's name, for each change's audit event.

    Raises:
        ValueError: for a write with ``expect`` other than ``"any"``, or a forget (an
            extraction batch only writes, ends and retires), or another user.
    """

    def __init__(self, base: FactStore, user_id: str, *, extraction: str = "rules") -> None:
        self.base = base
        self.user_id = user_id
        self.extraction = extraction
        #: The staged writes, in order.
        self.changes: list[FactChange] = []
        #: The turn of the candidate being written (for the audit events of its changes).
        self.turn: int | None = None
        self._copy: InProcessFacts | None = None

    def _staged(self, user_id: str) -> InProcessFacts:
        if user_id != self.user_id:
            raise ValueError(f"staged facts of {self.user_id!r}, not {user_id!r}")
        if self._copy is None:
            copy = InProcessFacts()
            copy.add_versions(user_id, self.base.load_facts(user_id)[1])
            self._copy = copy
        return self._copy

    def _audit(self, action: str, reason: str, turn: int | None) -> dict[str, Any]:
        return {
            "extraction": self.extraction,
            "action": action,
            "reason": " ".join(reason.split())[:200],
            "turn": turn,
        }

    def facts_version(self, user_id: str) -> int:
        """The staged copy's write count."""
        return self._staged(user_id).facts_version(user_id)

    def load_facts(self, user_id: str) -> tuple[int, list[CoreFact]]:
        """Every version of the user's facts, staged writes included."""
        return self._staged(user_id).load_facts(user_id)

    def write_fact(
        self, user_id: str, fact: CoreFact, *, reason: str, expect: Expect = "any"
    ) -> FactUpdate:
        """Stage a write (an unchanged one too: the commit compares with the store)."""
        if expect != "any":
            raise ValueError("an extraction batch writes with expect='any' only")
        update = self._staged(user_id).write_fact(user_id, fact, reason=reason)
        action = "update" if update.superseded is not None else "add"
        turn = fact.source_turn if fact.source_turn is not None else self.turn
        audit = self._audit(action, reason, turn)
        self.changes.append(FactChange(fact=fact, reason=reason, audit=audit))
        return update

    def end_fact(
        self,
        user_id: str,
        subject: str,
        block: str = "human",
        *,
        at: datetime | None = None,
        reason: str = "ended",
    ) -> CoreFact | None:
        """Stage an end of the subject's current fact."""
        ended = self._staged(user_id).end_fact(user_id, subject, block, at=at, reason=reason)
        audit = self._audit("end", reason, self.turn)
        self.changes.append(FactChange(end=(subject, block), at=at, reason=reason, audit=audit))
        return ended

    def retire_facts(self, user_id: str, fact_ids: Sequence[str], *, reason: str) -> list[CoreFact]:
        """Stage moving active versions out of core memory (kept in the history)."""
        moved = self._staged(user_id).retire_facts(user_id, fact_ids, reason=reason)
        audit = self._audit("retire", reason, self.turn)
        self.changes += [FactChange(retire=i, reason=reason, audit=audit) for i in fact_ids]
        return moved

    def forget_facts(
        self, user_id: str, *, subject: str | None = None, fact_id: str | None = None
    ) -> list[CoreFact]:
        """Refused: a forget is not part of an extraction batch."""
        raise ValueError("an extraction batch does not forget facts")

    def clear_facts(self, user_id: str) -> list[CoreFact]:
        """Refused: a forget is not part of an extraction batch."""
        raise ValueError("an extraction batch does not forget facts")
