"""The one SQLite connection and transaction helper of the package.

:class:`SQLiteDatabase` is how every SQLite table here is read and written:
one writer connection behind a re-entrant lock (``BEGIN IMMEDIATE`` ...
``COMMIT``; a nested :meth:`~SQLiteDatabase.write` on the same thread joins
the outer transaction, so a record, its thread's head and its audit event
commit together), a pool of read-only reader connections, WAL mode and
``secure_delete`` on every connection (deleted content is overwritten).

Failures say what happened: a ``sqlite3`` error is re-raised as a
:class:`~langchain_tiered_memory.storage.errors.StorageError` subclass naming
the file (disk full, read-only, locked, damaged), after the transaction was
rolled back - and a rollback SQLite already did itself (on a full disk) is
not attempted twice, so the real error is never masked by "cannot rollback".

``SQLiteDatabase(None)`` is an in-memory database (one connection, reads
and writes serialised): what a memory without a data directory uses.

Example:
    >>> import tempfile, pathlib
    >>> tmp = tempfile.TemporaryDirectory()
    >>> db = SQLiteDatabase(pathlib.Path(tmp.name) / "x.sqlite")
    >>> with db.write() as tx:
    ...     _ = tx.execute("CREATE TABLE t (x INTEGER)")
    ...     tx.insert("INSERT INTO t VALUES (?)", (7,))
    1
    >>> db.query("SELECT x FROM t")
    [(7,)]
    >>> db.close(); tmp.cleanup()
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_tiered_memory.storage.errors import (
    StorageDamagedError,
    StorageError,
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
)

__all__ = ["SQLiteDatabase", "SQLiteTx", "storage_error", "validate_db_path"]

logger = logging.getLogger(__name__)

#: Times a read is tried when another connection changes the schema under it.
_SCHEMA_RETRIES = 20

_DAMAGED = ("file is not a database", "malformed", "SQLITE_CORRUPT", "SQLITE_NOTADB")


def _is_schema_race(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's transient "the schema changed meanwhile" error."""
    name = getattr(exc, "sqlite_errorname", None)
    if name is not None:
        return bool(name == "SQLITE_SCHEMA")
    text = str(exc)
    return "vtable constructor failed" in text or "schema has changed" in text


def storage_error(exc: sqlite3.Error, path: Path | str, doing: str) -> StorageError:
    """The :class:`StorageError` that says what ``exc`` (raised while ``doing``) means.

    Example:
        >>> e = storage_error(sqlite3.OperationalError("database or disk is full"),
        ...                   "/d/archive.sqlite", "writing")
        >>> type(e).__name__, str(e)
        ('StorageFullError', 'writing /d/archive.sqlite failed: database or disk is full')
    """
    text = str(exc)
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    message = f"{doing} {path} failed: {text}"
    if name == "SQLITE_FULL" or "disk is full" in text:
        return StorageFullError(message)
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return StorageReadOnlyError(f"{message} (is the file or its directory read-only?)")
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED") or "locked" in text:
        return StorageLockedError(f"{message} (another process held the lock too long)")
    if any(marker in text or marker == name for marker in _DAMAGED):
        return StorageDamagedError(
            f"{message}. The file is damaged: restore it from a backup, or move it away "
            "to start with an empty memory (the vector index and the embedding cache "
            "beside it are rebuilt on their own)."
        )
    return StorageError(message)


class SQLiteTx:
    """An open transaction on one connection (the :class:`~..sql.Tx` of SQLite).

    ``execute`` and ``executemany`` are the connection's own, so SQLite-only
    code may use its cursors (``lastrowid``, ``rowcount``) directly.
    """

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""
        self.conn.executemany(sql, rows)

    def insert(self, sql: str, params: Sequence[Any] = (), *, key: str = "rowid") -> int:
        """Run an ``INSERT``; the new row's integer key (its ``rowid``)."""
        return int(self.conn.execute(sql, tuple(params)).lastrowid or 0)


class SQLiteDatabase:
    """Thread-safe access to one SQLite file (or an in-memory database).

    Args:
        path: The SQLite file (its parent directory must exist), or ``None``
            for a private in-memory database.
        max_idle_readers: Reader connections kept open between reads.

    Raises:
        ValueError: for ``":memory:"`` (pass ``None``), a directory, or a
            missing parent directory.
        StorageDamagedError: if the file is not a SQLite database.
    """

    #: Page cache per connection, in KiB.
    cache_kib: int = 32 * 1024

    def __init__(self, path: str | os.PathLike[str] | None, *, max_idle_readers: int = 8) -> None:
        self.path: Path | None = None if path is None else validate_db_path(path)
        self.where = ":memory:" if self.path is None else str(self.path)
        self.lock = threading.RLock()
        self._local = threading.local()
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._max_idle = max_idle_readers
        self._closed = False
        try:
            self._writer = self._connect(reader=False)
            if self.path is not None:
                mode = self._writer.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    logger.warning("SQLite at %s refused WAL mode (got %s)", self.path, mode)
            self._writer.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise storage_error(exc, self.where, "opening") from exc

    def _connect(self, *, reader: bool) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30.0)
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL: survives a killed process
        # a page cache that holds a busy thread's working set (SQLite's default is 2 MB),
        # so an add reads no pages back from the OS however big the archive grows
        conn.execute(f"PRAGMA cache_size=-{self.cache_kib}")
        if reader:
            conn.execute("PRAGMA query_only=ON")
        return conn

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the database {self.where} is closed")

    @property
    def in_transaction(self) -> bool:
        """True on a thread inside :meth:`write`."""
        return bool(getattr(self._local, "in_tx", False))

    @contextmanager
    def write(self) -> Iterator[SQLiteTx]:
        """A write transaction (re-entrant; nested calls join the outer one).

        Raises:
            StorageError: (a subclass) when SQLite fails; the transaction is
                rolled back and nothing of it is written.
        """
        with self.lock:
            self._check_open()
            if self.in_transaction:
                yield SQLiteTx(self._writer)
                return
            try:
                self._writer.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.where, "writing") from exc
            self._local.in_tx = True
            try:
                yield SQLiteTx(self._writer)
                self._writer.execute("COMMIT")
            except BaseException as exc:
                # SQLite rolls a transaction back by itself on some errors (a full
                # disk): a second ROLLBACK would replace the real error
                if self._writer.in_transaction:
                    try:
                        self._writer.execute("ROLLBACK")
                    except sqlite3.Error:  # pragma: no cover - keep the first error
                        logger.exception("rollback of %s failed", self.where)
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(exc, self.where, "writing") from exc
                raise
            finally:
                self._local.in_tx = False

    @contextmanager
    def read(self) -> Iterator[SQLiteTx]:
        """A consistent read-only snapshot (inside a write on this thread: that transaction).

        Every statement of the ``with`` block sees the database as it was when
        the first one ran, whatever other connections commit meanwhile.

        Raises:
            StorageError: (a subclass naming the file) when SQLite fails - a
                damaged page, a locked or unreadable file - as :meth:`write` does.
        """
        if self.in_transaction:  # the write translates its own errors
            with self._snapshot() as tx:
                yield tx
            return
        try:
            with self._snapshot() as tx:
                yield tx
        except sqlite3.Error as exc:
            raise storage_error(exc, self.where, "reading") from exc

    @contextmanager
    def _snapshot(self) -> Iterator[SQLiteTx]:
        """:meth:`read` with SQLite's own errors (:meth:`query` retries some of them)."""
        self._check_open()
        if self.in_transaction:
            yield SQLiteTx(self._writer)
            return
        if self.path is None:  # one connection: reads wait for writes
            with self.lock:
                self._check_open()
                yield SQLiteTx(self._writer)
            return
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            try:
                conn = self._connect(reader=True)
            except sqlite3.Error as exc:
                raise storage_error(exc, self.where, "reading") from exc
        try:
            # one read transaction: every statement of the block sees the same snapshot
            conn.execute("BEGIN")
            try:
                yield SQLiteTx(conn)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        finally:
            if self._closed or self._idle.qsize() >= self._max_idle:
                conn.close()
            else:
                self._idle.put(conn)

    def lock_key(self, tx: Any, key: str, *, shared: bool = False) -> None:
        """No-op: SQLite runs one write transaction at a time (``BEGIN IMMEDIATE``)."""

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query and return all rows.

        A read that meets a schema change made by another connection at that
        moment (``SQLITE_SCHEMA``, e.g. "vtable constructor failed" while a
        new FTS5 table is committed) is retried; reads change nothing, so a
        retry is safe.

        Raises:
            StorageError: (a subclass) for any other SQLite failure.
        """
        values = tuple(params)
        for attempt in range(_SCHEMA_RETRIES):
            try:
                with self._snapshot() as tx:
                    return tx.execute(sql, values).fetchall()
            except sqlite3.OperationalError as exc:
                if _is_schema_race(exc) and attempt < _SCHEMA_RETRIES - 1:
                    time.sleep(0.001 * (attempt + 1))
                    continue
                raise storage_error(exc, self.where, "reading") from exc
            except sqlite3.Error as exc:
                raise storage_error(exc, self.where, "reading") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def checkpoint(self, *, attempts: int = 50) -> bool:
        """Copy the WAL into the database file and truncate the WAL to 0 bytes.

        Returns False (and logs a warning) if readers kept it busy throughout.
        """
        if self.path is None:
            return True
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

    def __repr__(self) -> str:
        return f"SQLiteDatabase({self.where!r})"


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
