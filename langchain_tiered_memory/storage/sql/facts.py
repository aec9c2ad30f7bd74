"""Core facts as rows (SQL shared by every backend).

Each version of a fact is one row of ``facts`` (in write order, ``seq``); a
write reads the subject's current version *inside* its transaction and
applies :func:`~langchain_tiered_memory.values.facts.plan_upsert` to it, so two
writers - threads, objects, processes - serialise on the database and never
lose each other's facts (last writer wins is impossible: nothing is written
from a copy). Every change bumps the user's ``core_version``, which views
compare before reading the facts again.

The methods take the caller's transaction, so a backend can archive the
fact's record in the same commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from langchain_tiered_memory.storage.codec import fact_from_json, fact_to_json, to_micros
from langchain_tiered_memory.storage.sql import Database, Tx, facts_key, user_key
from langchain_tiered_memory.values.facts import (
    CoreFact,
    Expect,
    FactUpdate,
    current_fact,
    plan_end,
    plan_upsert,
)

__all__ = ["FactLog"]

_CHUNK = 400


def _marks(n: int) -> str:
    return ",".join("?" * n)


class FactLog:
    """Every version of every user's core facts over a backend's database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @staticmethod
    def version(tx: Tx, user_id: str) -> int:
        """The user's core version (changes with every fact write)."""
        row = tx.execute("SELECT core_version FROM users WHERE user_id=?", (user_id,)).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(tx: Tx, user_id: str) -> None:
        tx.execute("INSERT INTO users (user_id) VALUES (?) ON CONFLICT DO NOTHING", (user_id,))
        tx.execute("UPDATE users SET core_version=core_version+1 WHERE user_id=?", (user_id,))

    @staticmethod
    def select(
        tx: Tx, user_id: str, where: str = "", params: Sequence[object] = ()
    ) -> list[CoreFact]:
        """The user's fact versions in write order (``where``: an extra SQL condition)."""
        sql = "SELECT body FROM facts WHERE user_id=?"
        if where:
            sql += f" AND ({where})"
        rows = tx.execute(sql + " ORDER BY seq", (user_id, *params)).fetchall()
        return [fact_from_json(str(r[0])) for r in rows]

    def load(self, user_id: str) -> tuple[int, list[CoreFact]]:
        """The core version and every fact version, from one snapshot."""
        with self.db.read() as tx:
            return self.version(tx, user_id), self.select(tx, user_id)

    def lock(self, tx: Tx, user_id: str) -> None:
        """Lock the user's facts for a write (inside ``tx``)."""
        self.db.lock_key(tx, user_key(user_id), shared=True)
        self.db.lock_key(tx, facts_key(user_id))

    def write(
        self, tx: Tx, user_id: str, fact: CoreFact, *, reason: str, expect: Expect = "any"
    ) -> FactUpdate:
        """Write ``fact`` over the subject's current version (inside ``tx``, after :meth:`lock`)."""
        candidates = self.select(
            tx,
            user_id,
            "subject=? AND block=? AND status IN ('active', 'archived')",
            (fact.subject, fact.block),
        )
        update = plan_upsert(
            current_fact(candidates, fact.subject, fact.block), fact, reason=reason, expect=expect
        )
        if update.unchanged:
            return update
        tx.execute(
            "INSERT INTO facts (user_id, fact_id, subject, block, status, body, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                user_id,
                fact.id,
                fact.subject,
                fact.block,
                fact.status,
                fact_to_json(fact),
                to_micros(fact.expires_at) if fact.expires_at else None,
            ),
        )
        if update.superseded is not None:
            self._store(tx, user_id, update.superseded)
        self._bump(tx, user_id)
        return update

    def end(
        self, tx: Tx, user_id: str, subject: str, block: str, *, at: datetime, reason: str
    ) -> CoreFact | None:
        """Mark the subject's current version ``ended`` at ``at`` (inside ``tx``, after
        :meth:`lock`); returns it, or ``None`` when there is none."""
        subject = subject.strip().lower()
        candidates = self.select(
            tx,
            user_id,
            "subject=? AND block=? AND status IN ('active', 'archived')",
            (subject, block),
        )
        ended = plan_end(current_fact(candidates, subject, block), at=at, reason=reason)
        if ended is not None:
            self._store(tx, user_id, ended)
            self._bump(tx, user_id)
        return ended

    @staticmethod
    def _store(tx: Tx, user_id: str, fact: CoreFact) -> None:
        tx.execute(
            "UPDATE facts SET status=?, body=? WHERE user_id=? AND fact_id=?",
            (fact.status, fact_to_json(fact), user_id, fact.id),
        )

    def matching(
        self, tx: Tx, user_id: str, *, subject: str | None = None, fact_id: str | None = None
    ) -> list[CoreFact]:
        """Every version of ``subject`` and the version ``fact_id``."""
        clauses, params = [], []
        if subject is not None:
            clauses.append("subject=?")
            params.append(subject.strip().lower())
        if fact_id is not None:
            clauses.append("fact_id=?")
            params.append(fact_id)
        if not clauses:
            return []
        return self.select(tx, user_id, " OR ".join(clauses), params)

    def expired(self, tx: Tx, user_id: str, now: datetime) -> list[CoreFact]:
        """The user's fact versions whose expiry has passed at ``now`` (inside ``tx``)."""
        return self.select(
            tx, user_id, "expires_at IS NOT NULL AND expires_at <= ?", (to_micros(now),)
        )

    def delete(self, tx: Tx, user_id: str, fact_ids: Sequence[str]) -> int:
        """Delete these versions (inside ``tx``)."""
        ids = list(dict.fromkeys(fact_ids))
        deleted = 0
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            deleted += tx.execute(
                f"DELETE FROM facts WHERE user_id=? AND fact_id IN ({_marks(len(chunk))})",
                (user_id, *chunk),
            ).rowcount
        if deleted:
            self._bump(tx, user_id)
        return deleted

    def retire(
        self, tx: Tx, user_id: str, fact_ids: Sequence[str], *, reason: str
    ) -> list[CoreFact]:
        """Mark these active versions ``archived`` (inside ``tx``); returns them."""
        wanted = set(fact_ids)
        moved = [
            replace(f, status="archived", reason=reason)
            for f in self.select(tx, user_id, "status='active'")
            if f.id in wanted
        ]
        for fact in moved:
            self._store(tx, user_id, fact)
        if moved:
            self._bump(tx, user_id)
        return moved

    def delete_user(self, tx: Tx, user_id: str) -> list[CoreFact]:
        """Delete every fact of the user (inside ``tx``); returns them."""
        facts = self.select(tx, user_id)
        tx.execute("DELETE FROM facts WHERE user_id=?", (user_id,))
        self._bump(tx, user_id)
        return facts
