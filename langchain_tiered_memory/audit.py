"""The audit log: every page-out, page-in, compression, recall, write and delete.

Events live in the archive's SQLite file (table ``audit_events``), so a write
and its audit event commit in the same transaction, and forgetting a user
removes their events with their records. A user can read their events back
with :meth:`AuditLog.events` (the archive's ``export_user`` includes them).

Payloads are JSON. They should carry ids, counts, token numbers and scores;
the archive itself never writes memory text into an event, so a deleted
record leaves no copy behind in the log.

:class:`SQLiteDatabase` is the small connection manager the log and the
archives share: one writer connection behind a re-entrant lock (so a record
and its audit event can share a transaction), a pool of read-only reader
connections, WAL mode, and ``secure_delete`` on every connection.

Example:
    >>> import tempfile, pathlib
    >>> tmp = tempfile.TemporaryDirectory()
    >>> log = AuditLog(pathlib.Path(tmp.name) / "audit.sqlite")
    >>> _ = log.record("recall", user_id="ana", thread_id="t1", query_terms=3, hits=2)
    >>> _ = log.record("page_out", user_id="ana", thread_id="t1", turns=[0, 1])
    >>> [(e.kind, e.payload) for e in log.events("ana")]
    [('recall', {'query_terms': 3, 'hits': 2}), ('page_out', {'turns': [0, 1]})]
    >>> [e.kind for e in log.events("ana", kinds=["page_out"])]
    ['page_out']
    >>> log.events("bob")
    []
    >>> log.close(); tmp.cleanup()
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, cast, get_args

__all__ = [
    "AUDIT_KINDS",
    "AuditEvent",
    "AuditKind",
    "AuditLog",
    "SQLiteDatabase",
    "from_micros",
    "to_micros",
]

logger = logging.getLogger(__name__)

AuditKind = Literal["page_out", "page_in", "compression", "recall", "write", "delete", "error"]
AUDIT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_micros(at: datetime) -> int:
    """Microseconds since the Unix epoch (naive datetimes are taken as UTC).

    Example:
        >>> to_micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
        1000000
    """
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    delta = at - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """The UTC datetime ``micros`` microseconds after the Unix epoch (exact).

    Example:
        >>> from_micros(1_000_000).isoformat()
        '1970-01-01T00:00:01+00:00'
    """
    return _EPOCH + timedelta(microseconds=micros)


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


#: Times a read is tried when another connection changes the schema under it.
_SCHEMA_RETRIES = 20


def _is_schema_race(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's transient "the schema changed meanwhile" error."""
    name = getattr(exc, "sqlite_errorname", None)
    if name is not None:
        return bool(name == "SQLITE_SCHEMA")
    text = str(exc)
    return "vtable constructor failed" in text or "schema has changed" in text


class SQLiteDatabase:
    """Thread-safe access to one SQLite file, shared by the archive and the audit log.

    * one writer connection; :meth:`write` holds a re-entrant lock for the
      whole transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on an
      exception). A nested :meth:`write` on the same thread joins the outer
      transaction, so a record and its audit event commit together.
    * reader connections (``query_only``) from a small pool; WAL mode lets
      them read while the writer writes.
    * ``secure_delete=ON`` on every connection: deleted content is overwritten
      with zeros in the database file.

    Args:
        path: The SQLite file. Its parent directory must exist.
        max_idle_readers: Reader connections kept open between reads.

    Raises:
        ValueError: for ``:memory:``, a directory, or a missing parent directory.

    Example:
        >>> import tempfile, pathlib
        >>> tmp = tempfile.TemporaryDirectory()
        >>> db = SQLiteDatabase(pathlib.Path(tmp.name) / "x.sqlite")
        >>> with db.write() as conn:
        ...     _ = conn.execute("CREATE TABLE t (x INTEGER)")
        ...     _ = conn.execute("INSERT INTO t VALUES (1)")
        >>> db.query("SELECT x FROM t")
        [(1,)]
        >>> db.close(); tmp.cleanup()
    """

    def __init__(self, path: str | os.PathLike[str], *, max_idle_readers: int = 8) -> None:
        self.path = validate_db_path(path)
        self.lock = threading.RLock()
        self._local = threading.local()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._max_idle = max_idle_readers
        self._closed = False
        self._writer = self._connect(reader=False)
        mode = self._writer.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning("SQLite at %s refused WAL mode (got %s)", self.path, mode)

    def _connect(self, *, reader: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL: survives a killed process
        if reader:
            conn.execute("PRAGMA query_only=ON")
        return conn

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the database {self.path} is closed")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (re-entrant; nested calls join the outer one)."""
        with self.lock:
            self._check_open()
            if getattr(self._local, "in_tx", False):
                yield self._writer
                return
            self._writer.execute("BEGIN IMMEDIATE")
            self._local.in_tx = True
            try:
                yield self._writer
                self._writer.execute("COMMIT")
            except BaseException:
                if self._writer.in_transaction:
                    self._writer.execute("ROLLBACK")
                raise
            finally:
                self._local.in_tx = False

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reading (the writer's, inside a write transaction)."""
        self._check_open()
        if getattr(self._local, "in_tx", False):
            yield self._writer
            return
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect(reader=True)
        try:
            yield conn
        finally:
            if self._closed or self._idle.qsize() >= self._max_idle:
                conn.close()
            else:
                self._idle.put(conn)

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query and return all rows.

        A read that meets a schema change made by another connection at that
        moment (``SQLITE_SCHEMA``, e.g. "vtable constructor failed" while a
        new FTS5 table is committed) is retried; reads change nothing, so a
        retry is safe.
        """
        values = tuple(params)
        for attempt in range(_SCHEMA_RETRIES):
            try:
                with self.read() as conn:
                    return conn.execute(sql, values).fetchall()
            except sqlite3.OperationalError as exc:
                if not _is_schema_race(exc) or attempt == _SCHEMA_RETRIES - 1:
                    raise
                time.sleep(0.001 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def checkpoint(self, *, attempts: int = 50) -> bool:
        """Copy the WAL into the database file and truncate the WAL to 0 bytes.

        Returns False (and logs a warning) if readers kept it busy throughout.
        """
        with self.lock:
            self._check_open()
            for _ in range(attempts):
                busy, _log, _done = self._writer.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).fetchone()
                if busy == 0:
                    return True
                time.sleep(0.02)
        logger.warning("WAL checkpoint of %s stayed busy; the WAL was not truncated", self.path)
        return False

    def close(self) -> None:
        """Close every connection (idempotent)."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            while True:
                try:
                    self._idle.get_nowait().close()
                except queue.Empty:
                    break
            self._writer.close()


def validate_db_path(path: str | os.PathLike[str]) -> Path:
    """Check that ``path`` can hold a SQLite file and return it as a ``Path``.

    Raises:
        ValueError: for ``:memory:``, a directory, or a missing parent directory.

    Example:
        >>> validate_db_path("/no/such/dir/a.sqlite")
        Traceback (most recent call last):
        ...
        ValueError: cannot create /no/such/dir/a.sqlite: the directory /no/such/dir does not exist
    """
    if str(path) == ":memory:" or str(path).startswith("file:"):
        raise ValueError(
            "the archive needs a file path (its vector index lives next to it); "
            "use a temporary directory instead of ':memory:'"
        )
    p = Path(path).expanduser()
    if p.is_dir():
        raise ValueError(f"{p} is a directory; pass a file path such as {p / 'memory.sqlite'}")
    if not p.parent.is_dir():
        raise ValueError(f"cannot create {p}: the directory {p.parent} does not exist")
    return p


@dataclass(frozen=True)
class AuditEvent:
    """One audit event, as read back from the log.

    Attributes:
        id: Increasing event number (unique in the database).
        at: When it happened (UTC).
        user_id: Whose memory it concerns.
        thread_id: The conversation, when it concerns one.
        kind: ``page_out``, ``page_in``, ``compression``, ``recall``, ``write``,
            ``delete`` or ``error``.
        payload: JSON data (ids, counts, scores - no deleted text).
    """

    id: int
    at: datetime
    user_id: str
    thread_id: str | None
    kind: AuditKind
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``at`` as ISO 8601).

        Example:
            >>> AuditEvent(1, from_micros(0), "ana", None, "write", {"ids": ["a"]}).to_dict()["at"]
            '1970-01-01T00:00:00+00:00'
        """
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "kind": self.kind,
            "payload": self.payload,
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    thread_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_events_user ON audit_events (user_id, id);
"""


def _check_kind(kind: str) -> None:
    if kind not in AUDIT_KINDS:
        raise ValueError(f"unknown audit event kind {kind!r}; use one of {sorted(AUDIT_KINDS)}")


def _check_user(user_id: object) -> None:
    if not isinstance(user_id, str) or not user_id:
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")


class AuditLog:
    """Audit events in a SQLite database (table ``audit_events``).

    Args:
        db: A :class:`SQLiteDatabase` to share (the archive passes its own), or
            a path to open one (closed again by :meth:`close`).

    Example:
        >>> import tempfile, pathlib
        >>> tmp = tempfile.TemporaryDirectory()
        >>> with AuditLog(pathlib.Path(tmp.name) / "a.sqlite") as log:
        ...     event = log.record("write", user_id="ana", ids=["r1"])
        ...     event.kind, event.payload, log.count("ana")
        ('write', {'ids': ['r1']}, 1)
        >>> tmp.cleanup()
    """

    def __init__(self, db: SQLiteDatabase | str | os.PathLike[str]) -> None:
        self._owns_db = not isinstance(db, SQLiteDatabase)
        self.db: SQLiteDatabase = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)
        with self.db.write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)

    def record(
        self, kind: AuditKind, *, user_id: str, thread_id: str | None = None, **payload: Any
    ) -> AuditEvent:
        """Append an event and return it.

        Raises:
            ValueError: for an unknown kind or an empty ``user_id``.
            TypeError: for a payload value that is not JSON-serialisable.
        """
        with self.db.write() as conn:
            return self.insert(conn, kind, user_id=user_id, thread_id=thread_id, payload=payload)

    def insert(
        self,
        conn: sqlite3.Connection,
        kind: AuditKind,
        *,
        user_id: str,
        thread_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> AuditEvent:
        """Append an event inside the caller's open write transaction ``conn``."""
        _check_kind(kind)
        _check_user(user_id)
        data = dict(payload or {})
        text = _dumps(data)
        at = to_micros(datetime.now(timezone.utc))
        cur = conn.execute(
            "INSERT INTO audit_events (at, user_id, thread_id, kind, payload) VALUES (?,?,?,?,?)",
            (at, user_id, thread_id, kind, text),
        )
        return AuditEvent(
            int(cur.lastrowid or 0), from_micros(at), user_id, thread_id, kind, json.loads(text)
        )

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
        rows = self.db.query(sql, params)
        return [
            AuditEvent(
                int(r[0]), from_micros(r[1]), r[2], r[3], cast(AuditKind, r[4]), json.loads(r[5])
            )
            for r in reversed(rows)
        ]

    def count(self, user_id: str | None = None) -> int:
        """Number of events (of one user, or all)."""
        if user_id is None:
            return int(self.db.query("SELECT COUNT(*) FROM audit_events")[0][0])
        return int(
            self.db.query("SELECT COUNT(*) FROM audit_events WHERE user_id=?", [user_id])[0][0]
        )

    def delete_user(self, conn: sqlite3.Connection, user_id: str) -> int:
        """Delete a user's events inside the caller's write transaction; returns how many."""
        _check_user(user_id)
        cur = conn.execute("DELETE FROM audit_events WHERE user_id=?", (user_id,))
        return int(cur.rowcount)

    def close(self) -> None:
        """Close the database if this log opened it."""
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
