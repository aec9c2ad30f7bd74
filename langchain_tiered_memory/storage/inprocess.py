"""Core facts in this process's memory: the :class:`~langchain_tiered_memory.values.facts.FactStore`
a bare :class:`~langchain_tiered_memory.tiers.core.CoreMemory` uses."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from langchain_tiered_memory.values.facts import (
    CoreFact,
    Expect,
    FactUpdate,
    current_fact,
    plan_end,
    plan_upsert,
    utc_now,
)

__all__ = ["InProcessFacts"]


class InProcessFacts:
    """A :class:`FactStore` in this process's memory (what a bare :class:`CoreMemory` uses).

    Example:
        >>> store = InProcessFacts()
        >>> _ = store.write_fact("ana", CoreFact.new("diet", "vegetarian"), reason="new")
        >>> [f.content for f in store.load_facts("ana")[1]]
        ['vegetarian']
    """

    def __init__(self) -> None:
        self._facts: dict[str, list[CoreFact]] = {}
        self._versions: dict[str, int] = {}
        self._lock = threading.RLock()

    def _bump(self, user_id: str) -> None:
        self._versions[user_id] = self._versions.get(user_id, 0) + 1

    def facts_version(self, user_id: str) -> int:
        """The user's write count."""
        with self._lock:
            return self._versions.get(user_id, 0)

    def load_facts(self, user_id: str) -> tuple[int, list[CoreFact]]:
        """Every version of the user's facts."""
        with self._lock:
            return self._versions.get(user_id, 0), list(self._facts.get(user_id, ()))

    def write_fact(
        self, user_id: str, fact: CoreFact, *, reason: str, expect: Expect = "any"
    ) -> FactUpdate:
        """Write ``fact`` under the lock."""
        with self._lock:
            facts = self._facts.setdefault(user_id, [])
            update = plan_upsert(
                current_fact(facts, fact.subject, fact.block), fact, reason=reason, expect=expect
            )
            if update.unchanged:
                return update
            facts.append(update.fact)
            if update.superseded is not None:
                facts[:] = [update.superseded if f.id == update.superseded.id else f for f in facts]
            self._bump(user_id)
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
        """End the subject's current fact under the lock (see :func:`plan_end`)."""
        with self._lock:
            facts = self._facts.get(user_id, [])
            ended = plan_end(
                current_fact(facts, subject.strip().lower(), block),
                at=at or utc_now(),
                reason=reason,
            )
            if ended is not None:
                facts[:] = [ended if f.id == ended.id else f for f in facts]
                self._bump(user_id)
            return ended

    def add_versions(self, user_id: str, facts: Iterable[CoreFact]) -> None:
        """Load existing versions as they are (no superseding)."""
        with self._lock:
            self._facts.setdefault(user_id, []).extend(facts)
            self._bump(user_id)

    def forget_facts(
        self, user_id: str, *, subject: str | None = None, fact_id: str | None = None
    ) -> list[CoreFact]:
        """Delete matching versions."""
        with self._lock:
            facts = self._facts.get(user_id, [])
            removed = [f for f in facts if _matches(f, subject, fact_id)]
            if removed:
                self._facts[user_id] = [f for f in facts if f not in removed]
                self._bump(user_id)
            return removed

    def retire_facts(self, user_id: str, fact_ids: Sequence[str], *, reason: str) -> list[CoreFact]:
        """Mark active facts archived."""
        wanted = set(fact_ids)
        with self._lock:
            facts = self._facts.get(user_id, [])
            moved = []
            for i, f in enumerate(facts):
                if f.id in wanted and f.status == "active":
                    facts[i] = replace(f, status="archived", reason=reason)
                    moved.append(facts[i])
            if moved:
                self._bump(user_id)
            return moved

    def clear_facts(self, user_id: str) -> list[CoreFact]:
        """Delete every fact of the user."""
        with self._lock:
            removed = self._facts.pop(user_id, [])
            self._bump(user_id)
            return removed


def _matches(fact: CoreFact, subject: str | None, fact_id: str | None) -> bool:
    return (subject is not None and fact.subject == subject.lower()) or fact.id == fact_id
