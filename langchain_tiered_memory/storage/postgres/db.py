"""The Postgres connection and transaction helper (the :class:`~..sql.Database` of Postgres).

:class:`PostgresDatabase` is how every table of the Postgres backend is read
and written: a psycopg 3 connection pool (``psycopg_pool.ConnectionPool``),
explicit transactions, and the same contract the shared SQL
(:mod:`langchain_tiered_memory.storage.sql`) has on SQLite:

* :meth:`~PostgresDatabase.write` - a ``READ COMMITTED`` transaction, committed
  on success and rolled back on any error; a nested ``write()`` on the same
  thread joins the outer one, so a record, its thread's head and its audit
  event commit together;
* :meth:`~PostgresDatabase.read` - a ``REPEATABLE READ READ ONLY`` snapshot;
* :meth:`~PostgresDatabase.lock_key` - a transaction-scoped advisory lock
  (``pg_advisory_xact_lock``, shared or exclusive) on a hash of the key.
  SQLite serialises every write; here writes run in parallel, and these locks
  serialise exactly the writes that must not interleave (the writes of one
  thread, of one user's facts, and a forget against everything of its user).

Statements keep the shared SQL's ``?`` placeholders (turned into psycopg's
``%s`` once per statement). Postgres text cannot hold NUL characters: string
parameters have them replaced by U+FFFD.

Failures say what happened: a psycopg error becomes a
:class:`~langchain_tiered_memory.storage.errors.StorageError` subclass naming
the database (without its password): the server unreachable or the
connection dropped (:class:`StorageUnavailableError`), disk full, read-only,
a lock or statement timeout, damaged data. A transaction whose connection
dropped is rolled back by the server: nothing of it is written. Connections
that died while idle in the pool (a restarted or failed-over server) are
checked and replaced before use, so the first call after a failover does not
fail.

Example:
    >>> redact_url("postgresql://app:s3cret@db.internal:5432/memory")
    'postgresql://app:***@db.internal:5432/memory'
    >>> postgres_sql("SELECT x FROM t WHERE a=? AND b LIKE 'a%'", True)
    "SELECT x FROM t WHERE a=%s AND b LIKE 'a%%'"
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from langchain_tiered_memory.storage.errors import (
    StorageDamagedError,
    StorageError,
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
    StorageUnavailableError,
)

__all__ = [
    "PostgresDatabase",
    "PostgresTx",
    "advisory_key",
    "is_postgres_url",
    "postgres_sql",
    "redact_url",
    "storage_error",
    "with_database",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_URL_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@]*:)([^@]*)(@)")


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` is a Postgres connection URL.

    Example:
        >>> is_postgres_url("postgresql://localhost/memory"), is_postgres_url("./data")
        (True, False)
    """
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    redacted = _URL_PASSWORD.sub(r"\1***\3", url)
    return re.sub(r"(password=)[^&\s]*", r"\1***", redacted)


def with_database(url: str, database: str) -> str:
    """``url`` naming another database on the same server.

    Example:
        >>> with_database("postgresql://app:pw@db:5432/memory?sslmode=require", "bench")
        'postgresql://app:pw@db:5432/bench?sslmode=require'
        >>> with_database("postgresql://postgres:@/postgres?host=/tmp/pg", "t1")
        'postgresql://postgres:@/t1?host=/tmp/pg'
    """
    from urllib.parse import quote, urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(database)))


@functools.lru_cache(maxsize=4096)
def postgres_sql(sql: str, has_params: bool) -> str:
    """The shared SQL's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled).

    The shared statements never hold a ``?`` inside a string literal.
    """
    if not has_params:
        return sql
    return sql.replace("%", "%%").replace("?", "%s")


def advisory_key(key: str) -> int:
    """The signed 64-bit advisory-lock number of a lock key.

    Example:
        >>> advisory_key("user:ana") == advisory_key("user:ana") != advisory_key("user:bob")
        True
    """
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _clean(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_clean(p) for p in params)


def storage_error(exc: BaseException, where: str, doing: str) -> StorageError:
    """The :class:`StorageError` that says what a psycopg (or pool) error means.

    Example:
        >>> import psycopg
        >>> e = storage_error(psycopg.OperationalError("connection refused"),
        ...                   "postgresql://db/memory", "writing to")
        >>> type(e).__name__
        'StorageUnavailableError'
    """
    import psycopg
    from psycopg import errors as pg
    from psycopg_pool import PoolTimeout

    text = " ".join(str(exc).split()) or type(exc).__name__
    message = f"{doing} {where} failed: {text}"
    if isinstance(exc, PoolTimeout):
        return StorageUnavailableError(
            f"{message} (no connection could be had in time: is the server up, and is the "
            "pool's max_size enough for this many concurrent calls?)"
        )
    if isinstance(exc, pg.DiskFull):
        return StorageFullError(message)
    if isinstance(exc, pg.ReadOnlySqlTransaction):
        return StorageReadOnlyError(
            f"{message} (is this a read-only replica? point the URL at the primary)"
        )
    if isinstance(exc, (pg.LockNotAvailable, pg.QueryCanceled, pg.DeadlockDetected)):
        return StorageLockedError(f"{message} (another connection held a lock too long)")
    if isinstance(exc, (pg.DataCorrupted, pg.IndexCorrupted)):
        return StorageDamagedError(
            f"{message}. The database is damaged: restore it from a backup or REINDEX."
        )
    if isinstance(exc, psycopg.OperationalError):
        if "does not exist" in text and "database" in text:
            return StorageUnavailableError(
                f"{message} (create the database first - e.g. createdb, or CREATE DATABASE - "
                "or point the URL at an existing one)"
            )
        if doing.startswith(("opening", "reading", "migrating")):
            return StorageUnavailableError(
                f"{message} (is the server running, and are the URL's host, port, user, "
                "password and database right?)"
            )
        return StorageUnavailableError(
            f"{message} (the server is unreachable or the connection dropped; nothing of this "
            "call was written - retry it: adds are idempotent by message id)"
        )
    return StorageError(message)


def _is_pg_error(exc: BaseException) -> bool:
    import psycopg
    from psycopg_pool import PoolTimeout

    return isinstance(exc, (psycopg.Error, PoolTimeout))


class PostgresTx:
    """An open transaction on one pooled connection (the :class:`~..sql.Tx` of Postgres).

    ``execute`` takes the shared SQL (``?`` placeholders); :attr:`conn` is the
    psycopg connection, for Postgres-only statements.
    """

    __slots__ = ("conn",)

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; the psycopg cursor."""
        if params:
            return self.conn.execute(postgres_sql(sql, True), _params(params))
        return self.conn.execute(sql)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement per row of parameters (pipelined by psycopg)."""
        batch = [_params(r) for r in rows]
        if batch:
            with self.conn.cursor() as cur:
                cur.executemany(postgres_sql(sql, True), batch)

    def insert(self, sql: str, params: Sequence[Any] = (), *, key: str = "rowid") -> int:
        """Run an ``INSERT`` and return the new row's ``key`` column (``RETURNING``)."""
        row = self.execute(f"{sql} RETURNING {key}", params).fetchone()
        return int(row[0]) if row is not None else 0


class PostgresDatabase:
    """Thread-safe transactions over one Postgres database, through a connection pool.

    Args:
        url: A libpq connection URL (``postgresql://user:pass@host:5432/db``;
            a Unix socket: ``postgresql:///db?host=/run/postgresql``).
        min_size: Connections the pool keeps open.
        max_size: Most connections at once (each concurrent call holds one
            for the length of a statement or a transaction).
        timeout: Seconds to wait for a free connection before
            :class:`StorageUnavailableError`.
        configure: Called with each new connection (e.g. to register types).
        prepare_threshold: psycopg's server-side prepare threshold; ``None``
            behind a transaction-mode pgbouncer.
        application_name: Shown in ``pg_stat_activity``.
        retries: Times :meth:`retrying` (and :meth:`query`) try again after
            a dropped connection.

    Raises:
        StorageUnavailableError: if the server cannot be reached.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        configure: Callable[[Any], None] | None = None,
        prepare_threshold: int | None = 5,
        application_name: str = "langchain-tiered-memory",
        retries: int = 2,
    ) -> None:
        from psycopg_pool import ConnectionPool

        if min_size < 0 or max_size < max(1, min_size):
            raise ValueError(
                f"need 0 <= min_size <= max_size and max_size >= 1, got {min_size} and {max_size}"
            )
        self.url = url
        self.where = redact_url(url)
        self.retries = retries
        self._local = threading.local()
        self._closed = False
        kwargs = {
            "autocommit": True,  # transactions are explicit: BEGIN ... COMMIT
            "prepare_threshold": prepare_threshold,
            "application_name": application_name,
        }
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs=kwargs,
            configure=configure,
            check=ConnectionPool.check_connection,  # replace connections that died idle
            timeout=timeout,
            open=False,
            name="tiered-memory",
        )
        try:
            self.pool.open(wait=True, timeout=timeout)
        except BaseException as exc:
            self.pool.close()
            if _is_pg_error(exc):
                raise storage_error(exc, self.where, "connecting to") from exc
            raise

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
        return getattr(self._local, "tx", None) is not None

    @contextmanager
    def _connection(self, doing: str) -> Iterator[Any]:
        self._check_open()
        try:
            with self.pool.connection() as conn:
                yield conn
        except BaseException as exc:
            if _is_pg_error(exc):
                raise storage_error(exc, self.where, doing) from exc
            raise

    @contextmanager
    def _transaction(self, begin: str, doing: str) -> Iterator[PostgresTx]:
        with self._connection(doing) as conn:
            conn.execute(begin)
            try:
                yield PostgresTx(conn)
            except BaseException:
                if not conn.closed and not conn.broken:
                    try:
                        conn.execute("ROLLBACK")
                    except Exception:  # pragma: no cover - keep the first error
                        logger.exception("rollback on %s failed", self.where)
                raise
            try:
                conn.execute("COMMIT")
            except Exception as exc:
                if not _is_pg_error(exc):
                    raise
                error = storage_error(exc, self.where, "committing to")
                if isinstance(error, StorageUnavailableError):
                    error = StorageUnavailableError(
                        f"committing to {self.where} failed: the connection dropped during "
                        "COMMIT, so whether it was written is unknown (a retry of an add "
                        "whose messages have ids stores nothing twice)"
                    )
                    error.outcome_unknown = True  # type: ignore[attr-defined]
                raise error from exc

    @contextmanager
    def write(self) -> Iterator[PostgresTx]:
        """A write transaction (re-entrant on one thread: nested calls join the outer one).

        Raises:
            StorageError: (a subclass) when Postgres fails; the transaction is
                rolled back and nothing of it is written.
        """
        outer = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        with self._transaction("BEGIN", "writing to") as tx:
            self._local.tx = tx
            try:
                yield tx
            finally:
                self._local.tx = None

    @contextmanager
    def read(self) -> Iterator[PostgresTx]:
        """A consistent read-only snapshot (inside a write on this thread: that transaction)."""
        outer = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "reading") as tx:
            yield tx

    def retrying(self, name: str, call: Callable[[], _T], *, idempotent: bool = True) -> _T:
        """``call()``, tried again (:attr:`retries` times, after 0.2 s, 0.4 s, ...) when
        its connection dropped.

        A call that failed before its ``COMMIT`` wrote nothing and is always
        retried; one whose ``COMMIT`` was cut off (outcome unknown) only if it
        is ``idempotent``. Inside an open transaction nothing is retried (the
        transaction is lost: the outermost call retries).
        """
        attempt = 0
        while True:
            try:
                return call()
            except StorageUnavailableError as exc:
                unknown = bool(getattr(exc, "outcome_unknown", False))
                if attempt >= self.retries or self.in_transaction or (unknown and not idempotent):
                    raise
                attempt += 1
                logger.warning("%s on %s failed (%s); retry %d", name, self.where, exc, attempt)
                time.sleep(0.2 * attempt)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read statement outside any transaction block (its own snapshot),
        retried after a dropped connection. Inside a write on this thread, it runs in
        that transaction."""
        outer = getattr(self._local, "tx", None)
        if outer is not None:
            return list(outer.execute(sql, params).fetchall())

        def run() -> list[tuple[Any, ...]]:
            with self._connection("reading") as conn:
                return list(PostgresTx(conn).execute(sql, params).fetchall())

        return self.retrying("a read", run)

    def run(self, statement: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one psycopg statement (``%s`` placeholders, or a ``psycopg.sql``
        composition) outside any transaction block; its rows."""
        with self._connection("reading") as conn:
            return list(conn.execute(statement, params).fetchall())

    @contextmanager
    def autocommit(self) -> Iterator[Any]:
        """A pooled connection outside any transaction (``VACUUM``, ``CREATE INDEX
        CONCURRENTLY``): statements commit one by one."""
        with self._connection("maintaining") as conn:
            yield conn

    def lock_key(self, tx: Any, key: str, *, shared: bool = False) -> None:
        """Hold an advisory lock on ``key`` until ``tx`` ends (shared or exclusive)."""
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        tx.conn.execute(f"SELECT {function}(%s)", (advisory_key(key),))

    def close(self) -> None:
        """Close every pooled connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.pool.close()

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.where!r})"
