"""The audit log: every page-out, page-in, compression, recall, write and delete.

Events live in the same database as the records (table ``audit_events``), so a
write and its audit event commit in one transaction, and forgetting a user
removes their events with their records. A user reads their events back with
:meth:`AuditLog.events` (``MemoryStore.export_user`` includes them).

Payloads are JSON. They carry ids, counts, token numbers and scores, and a
recall's query (what the user asked); the package writes no record text
into an event, so a deleted record leaves no copy behind in the log, and a
forget by words replaces the strings that hold its words
(:meth:`AuditLog.scrub`).

The SQL is shared by every backend (see :mod:`langchain_tiered_memory.storage.sql`).

Example:
    >>> from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
    >>> from langchain_tiered_memory.storage.sqlite.schema import create_schema
    >>> db = SQLiteDatabase(None)
    >>> _ = create_schema(db)
    >>> log = AuditLog(db)
    >>> _ = log.record("recall", user_id="ana", thread_id="t1", query_terms=3, hits=2)
    >>> _ = log.record("page_out", user_id="ana", thread_id="t1", turns=[0, 1])
    >>> [(e.kind, e.payload) for e in log.events("ana")]
    [('recall', {'query_terms': 3, 'hits': 2}), ('page_out', {'turns': [0, 1]})]
    >>> [e.kind for e in log.events("ana", kinds=["page_out"])]
    ['page_out']
    >>> log.events("bob")
    []
    >>> db.close()
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, cast

from langchain_tiered_memory.storage.base import AUDIT_KINDS, AuditEvent, AuditKind
from langchain_tiered_memory.storage.codec import from_micros, to_micros
from langchain_tiered_memory.storage.sql import Database, Tx

__all__ = ["AUDIT_KINDS", "FORGOTTEN", "AuditEvent", "AuditKind", "AuditLog"]

logger = logging.getLogger(__name__)

#: What stands in an event's payload for a string a forget took out.
FORGOTTEN = "[forgotten]"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(
        f"audit payload values must be JSON-serialisable, got {type(value).__name__}: {value!r}"
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_json_default, ensure_ascii=False, separators=(",", ":"))


def _scrubbed(value: Any, match: Callable[[str], bool], found: list[str]) -> Any:
    """``value`` with every string ``match`` accepts replaced (keys too), noted in ``found``."""
    if isinstance(value, str):
        if match(value):
            found.append(value)
            return FORGOTTEN
        return value
    if isinstance(value, list):
        return [_scrubbed(v, match, found) for v in value]
    if isinstance(value, dict):
        return {_scrubbed(k, match, found): _scrubbed(v, match, found) for k, v in value.items()}
    return value


def _check_kind(kind: str) -> None:
    if kind not in AUDIT_KINDS:
        raise ValueError(f"unknown audit event kind {kind!r}; use one of {sorted(AUDIT_KINDS)}")


def _check_user(user_id: object) -> None:
    if not isinstance(user_id, str) or not user_id:
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")


class AuditLog:
    """Audit events in a backend's database (table ``audit_events``): an
    :class:`~langchain_tiered_memory.storage.base.AuditTrail`.

    Args:
        db: The backend's :class:`~langchain_tiered_memory.storage.sql.Database`
            (its schema already created).
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    def record(
        self, kind: AuditKind, *, user_id: str, thread_id: str | None = None, **payload: Any
    ) -> AuditEvent:
        """Append an event and return it.

        Raises:
            ValueError: for an unknown kind or an empty ``user_id``.
            TypeError: for a payload value that is not JSON-serialisable.
        """
        with self.db.write() as tx:
            return self.insert(tx, kind, user_id=user_id, thread_id=thread_id, payload=payload)

    def record_all(
        self,
        events: Sequence[tuple[AuditKind, Mapping[str, Any]]],
        *,
        user_id: str,
        thread_id: str | None = None,
    ) -> list[AuditEvent]:
        """Append ``(kind, payload)`` events in one transaction and return them.

        Raises:
            ValueError: for an unknown kind or an empty ``user_id`` (nothing is written).
            TypeError: for a payload value that is not JSON-serialisable (nothing is written).

        Example:
            >>> from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
            >>> from langchain_tiered_memory.storage.sqlite.schema import create_schema
            >>> db = SQLiteDatabase(None)
            >>> _ = create_schema(db)
            >>> log = AuditLog(db)
            >>> [e.kind for e in log.record_all([("recall", {"hits": 1}), ("page_in", {})],
            ...                                 user_id="ana")]
            ['recall', 'page_in']
            >>> db.close()
        """
        with self.db.write() as tx:
            return [
                self.insert(tx, kind, user_id=user_id, thread_id=thread_id, payload=dict(payload))
                for kind, payload in events
            ]

    def insert(
        self,
        tx: Tx,
        kind: AuditKind,
        *,
        user_id: str,
        thread_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> AuditEvent:
        """Append an event inside the caller's open write transaction ``tx``."""
        _check_kind(kind)
        _check_user(user_id)
        data = dict(payload or {})
        text = _dumps(data)
        at = to_micros(datetime.now(timezone.utc))
        event_id = tx.insert(
            "INSERT INTO audit_events (at, user_id, thread_id, kind, payload) VALUES (?,?,?,?,?)",
            (at, user_id, thread_id, kind, text),
            key="id",
        )
        return AuditEvent(event_id, from_micros(at), user_id, thread_id, kind, json.loads(text))

    def events(
        self,
        user_id: str,
        *,
        kinds: Iterable[AuditKind] | None = None,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """A user's events, oldest first.

        Args:
            user_id: Whose events (required: one user never sees another's).
            kinds: Only these kinds.
            thread_id: Only events of this thread.
            limit: Only the newest ``limit`` events (still returned oldest first).
        """
        _check_user(user_id)
        sql = "SELECT id, at, user_id, thread_id, kind, payload FROM audit_events WHERE user_id=?"
        params: list[Any] = [user_id]
        if kinds is not None:
            wanted = [kinds] if isinstance(kinds, str) else list(kinds)
            for k in wanted:
                _check_kind(k)
            if not wanted:
                return []
            sql += f" AND kind IN ({','.join('?' * len(wanted))})"
            params.extend(wanted)
        if thread_id is not None:
            sql += " AND thread_id=?"
            params.append(thread_id)
        sql += " ORDER BY id DESC"
        if limit is not None:
            if limit < 0:
                raise ValueError(f"limit must be >= 0, got {limit}")
            sql += " LIMIT ?"
            params.append(limit)
        with self.db.read() as tx:
            rows = tx.execute(sql, params).fetchall()
        return [
            AuditEvent(
                int(r[0]), from_micros(r[1]), r[2], r[3], cast(AuditKind, r[4]), json.loads(r[5])
            )
            for r in reversed(rows)
        ]

    def count(self, user_id: str | None = None) -> int:
        """Number of events (of one user, or all)."""
        with self.db.read() as tx:
            if user_id is None:
                return int(tx.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0])
            row = tx.execute(
                "SELECT COUNT(*) FROM audit_events WHERE user_id=?", (user_id,)
            ).fetchone()
        return int(row[0])

    def scrub(self, tx: Tx, user_id: str, match: Callable[[str], bool]) -> list[str]:
        """Replace every string of the user's event payloads that ``match`` accepts (a
        recall's ``query``, say) with ``"[forgotten]"`` (inside ``tx``); returns them.

        Example:
            >>> from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
            >>> from langchain_tiered_memory.storage.sqlite.schema import create_schema
            >>> db = SQLiteDatabase(None)
            >>> _ = create_schema(db)
            >>> log = AuditLog(db)
            >>> _ = log.record("recall", user_id="ana", query="we moved to Porto", hits=1)
            >>> with db.write() as tx:
            ...     log.scrub(tx, "ana", lambda text: "Porto" in text)
            ['we moved to Porto']
            >>> log.events("ana")[0].payload
            {'query': '[forgotten]', 'hits': 1}
            >>> db.close()
        """
        _check_user(user_id)
        rows = tx.execute(
            "SELECT id, payload FROM audit_events WHERE user_id=?", (user_id,)
        ).fetchall()
        found: list[str] = []
        for event_id, payload in rows:
            data = json.loads(payload)
            cleaned = _scrubbed(data, match, found)
            if cleaned != data:
                tx.execute(
                    "UPDATE audit_events SET payload=? WHERE id=?", (_dumps(cleaned), event_id)
                )
        return found

    def delete_user(self, tx: Tx, user_id: str) -> int:
        """Delete a user's events inside the caller's write transaction; returns how many."""
        _check_user(user_id)
        return int(tx.execute("DELETE FROM audit_events WHERE user_id=?", (user_id,)).rowcount)

    @staticmethod
    def delete_citing(tx: Tx, user_id: str, fact_ids: Iterable[str]) -> int:
        """Delete the user's ``write`` events that name one of these fact versions (as
        ``fact_id`` or ``replaces``) inside the caller's write transaction - a forgotten
        fact leaves no reason behind; returns how many."""
        _check_user(user_id)
        deleted = 0
        for fact_id in dict.fromkeys(fact_ids):
            for key in ("fact_id", "replaces"):
                pattern = "%" + _dumps({key: fact_id})[1:-1] + "%"
                deleted += int(
                    tx.execute(
                        "DELETE FROM audit_events WHERE user_id=? AND kind='write' AND "
                        "payload LIKE ?",
                        (user_id, pattern),
                    ).rowcount
                )
        return deleted
