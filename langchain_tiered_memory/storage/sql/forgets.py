"""Forget intents: a forget is written down in the transaction that carries it out.

A forget deletes rows in one transaction, but some of what it must remove
lives outside that transaction: the vector index file, the embedding cache,
the write-ahead log, and LangGraph checkpoints (kept by thread id, in savers
that know nothing of users). So the forget's transaction also writes a row of
``forget_intents`` with what those steps need - the threads to delete from
the checkpointers and the embedding-cache keys of the deleted texts (digests,
never text) - and the row is deleted only when every step is done. A process
killed anywhere after the commit leaves the row; the next open of the store,
or a retry of the forget, finishes it from there (every step is idempotent).

A finished row is deleted at once. A row finished by *another* process than
the one that wrote it (after a crash) is kept, marked ``recovered_at``, with
only its thread ids and time, for :data:`RECOVERED_KEEP`: the checkpointers
the crashed process had attached are not known to the process that recovers
it, and each one attached later (``MemoryStore.attach_checkpointer``) is
purged of those threads then.

Example:
    >>> from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
    >>> from langchain_tiered_memory.storage.sqlite.schema import create_schema
    >>> db = SQLiteDatabase(None); _ = create_schema(db)
    >>> log = ForgetLog(db)
    >>> with db.write() as tx:
    ...     intent = log.open(tx, "ana", threads=["t1"], whole_user=True, cache_keys=["ab12"])
    >>> [(i.user_id, i.threads, i.cache_keys) for i in log.pending()]
    [('ana', ('t1',), ('ab12',))]
    >>> log.close(intent)
    >>> log.pending()
    []
    >>> db.close()
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from langchain_tiered_memory.storage.codec import from_micros, to_micros
from langchain_tiered_memory.storage.sql import Database, Tx

__all__ = ["RECOVERED_KEEP", "ForgetIntent", "ForgetLog"]

#: How long an intent recovered after a crash is kept for checkpointers attached later.
RECOVERED_KEEP = timedelta(days=30)

_COLS = "id, user_id, at, threads, cleanup, recovered_at"


@dataclass(frozen=True)
class ForgetIntent:
    """What a committed forget still has to do outside its transaction.

    Attributes:
        id: The row's key.
        user_id: Whose memory was forgotten.
        at: When the forget committed (UTC).
        threads: The LangGraph checkpoint threads to delete.
        whole_user: The whole user was forgotten (not some of their rows).
        cache_keys: Embedding-cache keys of the deleted texts (digests).
        recovered_at: When another process finished it after a crash (``None``:
            not finished yet, or finished by its own process).
    """

    id: int
    user_id: str
    at: datetime
    threads: tuple[str, ...]
    whole_user: bool
    cache_keys: tuple[str, ...]
    recovered_at: datetime | None = None


def _intent(row: Sequence[object]) -> ForgetIntent:
    cleanup = json.loads(str(row[4]))
    return ForgetIntent(
        id=int(row[0]),  # type: ignore[call-overload]
        user_id=str(row[1]),
        at=from_micros(int(row[2])),  # type: ignore[call-overload]
        threads=tuple(json.loads(str(row[3]))),
        whole_user=bool(cleanup.get("whole_user")),
        cache_keys=tuple(cleanup.get("cache_keys", ())),
        recovered_at=None if row[5] is None else from_micros(int(row[5])),  # type: ignore[call-overload]
    )


def _now() -> int:
    return to_micros(datetime.now(timezone.utc))


class ForgetLog:
    """The ``forget_intents`` table over a backend's database.

    Args:
        db: The backend's database (its schema created).
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    @staticmethod
    def open(
        tx: Tx,
        user_id: str,
        *,
        threads: Sequence[str],
        whole_user: bool,
        cache_keys: Sequence[str],
    ) -> ForgetIntent:
        """Write the intent inside the forget's own transaction ``tx``."""
        at = _now()
        threads = sorted(set(threads))
        keys = sorted(set(cache_keys))
        cleanup = json.dumps({"whole_user": whole_user, "cache_keys": keys})
        key = tx.insert(
            "INSERT INTO forget_intents (user_id, at, threads, cleanup) VALUES (?, ?, ?, ?)",
            (user_id, at, json.dumps(threads, ensure_ascii=False), cleanup),
            key="id",
        )
        return ForgetIntent(key, user_id, from_micros(at), tuple(threads), whole_user, tuple(keys))

    def pending(self, user_id: str | None = None) -> list[ForgetIntent]:
        """Intents a crash left unfinished (of one user, or all), oldest first."""
        sql = f"SELECT {_COLS} FROM forget_intents WHERE recovered_at IS NULL"
        params: tuple[str, ...] = ()
        if user_id is not None:
            sql += " AND user_id=?"
            params = (user_id,)
        with self.db.read() as tx:
            rows = tx.execute(sql + " ORDER BY id", params).fetchall()
        return [_intent(r) for r in rows]

    def recovered(self) -> list[ForgetIntent]:
        """Intents finished after a crash and kept for checkpointers attached later."""
        with self.db.read() as tx:
            rows = tx.execute(
                f"SELECT {_COLS} FROM forget_intents WHERE recovered_at IS NOT NULL ORDER BY id"
            ).fetchall()
        return [_intent(r) for r in rows]

    def close(self, intent: ForgetIntent) -> None:
        """Delete a finished intent."""
        with self.db.write() as tx:
            tx.execute("DELETE FROM forget_intents WHERE id=?", (intent.id,))

    def mark_recovered(self, intent: ForgetIntent) -> None:
        """Keep a recovered intent's threads and time only (its cache keys are done)."""
        with self.db.write() as tx:
            tx.execute(
                "UPDATE forget_intents SET recovered_at=?, cleanup=? WHERE id=? AND "
                "recovered_at IS NULL",
                (_now(), json.dumps({"whole_user": intent.whole_user}), intent.id),
            )

    def expire(self, keep: timedelta = RECOVERED_KEEP) -> int:
        """Delete recovered intents older than ``keep``; returns how many."""
        cut = to_micros(datetime.now(timezone.utc) - keep)
        with self.db.read() as tx:  # most opens: nothing to expire, and no write
            if not tx.execute(
                "SELECT 1 FROM forget_intents WHERE recovered_at IS NOT NULL AND recovered_at<? "
                "LIMIT 1",
                (cut,),
            ).fetchone():
                return 0
        with self.db.write() as tx:
            cur = tx.execute(
                "DELETE FROM forget_intents WHERE recovered_at IS NOT NULL AND recovered_at<?",
                (cut,),
            )
            return int(cur.rowcount or 0)
