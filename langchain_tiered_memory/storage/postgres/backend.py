"""The server backend: every user's memory in one Postgres database (pgvector for vectors).

``MemoryStore("postgresql://…")`` opens it. Records with their ``tsvector``
and pgvector columns, the turn log, thread heads, core facts, users and the
audit log are tables of one database (see :mod:`.schema`), so every add,
compression, fact write and forget is one transaction across all of them -
the operations are the shared ones of
:class:`~langchain_tiered_memory.storage.sql.backend.SQLBackend`, with
advisory locks where SQLite serialises writes (see :mod:`.db`). Workers hold
no state between calls: any number of processes on any number of machines
can serve any user, each with its own connection pool.

The graph and the middleware keep LangGraph's checkpoints in the same
database: :meth:`PostgresBackend.checkpointer` (a ``PostgresSaver``) and
:meth:`PostgresBackend.acheckpointer` (an ``AsyncPostgresSaver``), whose
threads are deleted when their user (or thread) is forgotten.

Example (against a running server)::

    from langchain_tiered_memory import MemoryStore

    store = MemoryStore("postgresql://app:secret@db:5432/memory")
    memory = store.memory("ana", "chat")
    memory.add_messages([("human", "I'm allergic to peanuts.")])
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.storage.postgres.ann import SESSION_EF_SEARCH, AnnIndexes
from langchain_tiered_memory.storage.postgres.db import (
    PostgresDatabase,
    redact_url,
    storage_error,
)
from langchain_tiered_memory.storage.postgres.records import PostgresRecordStore
from langchain_tiered_memory.storage.postgres.schema import TABLES, create_schema
from langchain_tiered_memory.storage.sql.backend import CheckpointPurge, SQLBackend
from langchain_tiered_memory.storage.sql.forgets import ForgetIntent

__all__ = ["PostgresBackend", "stored_embeddings_id"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Backend operations retried after a dropped connection (see :class:`PostgresBackend`).
RETRIED = (
    "read_thread",
    "append_messages",
    "known_message_ids",
    "set_system_prompt",
    "commit_compression",
    "note_compression_attempt",
    "advance_extraction",
    "commit_extraction",
    "clear_thread",
    "forget_turns",
    "threads",
    "facts_version",
    "load_facts",
    "write_fact",
    "end_fact",
    "forget_facts",
    "retire_facts",
    "clear_facts",
    "users",
    "export_user",
    "finish_forgets",
    "recovered_forgets",
    "expired_users",
    "forget_expired",
    "idle_threads",
)


def _vector_configure(conn: Any) -> None:
    """The pool's ``configure`` callback: pgvector's types on each new connection."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.execute(f"SET hnsw.ef_search = {SESSION_EF_SEARCH}")  # see .ann


def stored_embeddings_id(url: str) -> str | None:
    """The embeddings id a database records its vectors came from (``None``: none yet).

    Reads without changing anything; a database without the backend's tables gives ``None``.

    Raises:
        StorageUnavailableError: if the server cannot be reached.
    """
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
            found = conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return None
            row = conn.execute("SELECT value FROM meta WHERE key='embeddings'").fetchone()
    except psycopg.Error as exc:
        raise storage_error(exc, redact_url(url), "reading") from exc
    return str(row[0]) if row else None


class PostgresBackend(SQLBackend):
    """Every user's memory in one Postgres database with pgvector.

    Args:
        url: The database (``postgresql://user:password@host:5432/dbname``).
            Its role needs to create tables (and the ``vector`` extension,
            unless it is installed already) on first use.
        embeddings: Embeds records for dense search (``None``: keywords only).
        pool_size: Most connections of this process's pool: one per
            concurrent call (a worker's threads, async tasks).
        pool_min_size: Connections kept open.
        pool_timeout: Seconds a call waits for a free connection.
        ann_min_records: Users with more records get an HNSW index of their
            own (see :mod:`.ann`); others are scored exactly.
        retries: Times an operation is retried after a dropped connection.
        prepare_threshold: psycopg's server-side prepare threshold (``None``
            behind pgbouncer in transaction mode).
        vacuum_after_forget: Run ``VACUUM (ANALYZE)`` on the backend's
            tables after each forget (see :meth:`vacuum`).

    Note:
        A connection that died while idle (a restarted or failed-over
        server) is replaced before use. A call whose connection drops
        mid-way was rolled back by the server - nothing of it is written -
        and is retried (``retries`` times, after 0.2 s, 0.4 s, ...). When the
        connection drops during ``COMMIT`` itself the outcome is unknown; the
        call is retried only if that is harmless (every operation here is,
        except an add of messages without ids, which could be stored twice:
        then :class:`~..errors.StorageUnavailableError` says so).

    Raises:
        StorageUnavailableError: if the server cannot be reached.
        StorageError: if pgvector is missing and cannot be created.
    """

    def __init__(
        self,
        url: str,
        *,
        embeddings: Embeddings | None,
        pool_size: int = 10,
        pool_min_size: int = 1,
        pool_timeout: float = 30.0,
        ann_min_records: int = 20_000,
        retries: int = 2,
        prepare_threshold: int | None = 5,
        vacuum_after_forget: bool = False,
    ) -> None:
        import psycopg

        where = redact_url(url)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=int(pool_timeout)) as conn:
                create_schema(conn, where)
        except psycopg.Error as exc:
            raise storage_error(exc, where, "opening") from exc
        db = PostgresDatabase(
            url,
            min_size=pool_min_size,
            max_size=pool_size,
            timeout=pool_timeout,
            configure=_vector_configure,
            prepare_threshold=prepare_threshold,
            retries=retries,
        )
        try:
            records = PostgresRecordStore(
                db, embeddings=embeddings, ann=AnnIndexes(db, min_records=ann_min_records)
            )
        except BaseException:
            db.close()
            raise
        self.url = url
        self.vacuum_after_forget = vacuum_after_forget
        self._saver: Any = None
        self._saver_pool: Any = None
        super().__init__(db, records, where=where)

    # -- retries ---------------------------------------------------------------------

    def _retrying(self, name: str, call: Callable[[], _T], *, idempotent: bool = True) -> _T:
        return self.db.retrying(name, call, idempotent=idempotent)  # type: ignore[attr-defined]

    # -- forgetting ------------------------------------------------------------------

    def _transaction(self, name: str, call: Callable[[], _T]) -> _T:
        """A forget's transaction, retried after a dropped connection (before the commit
        nothing was written; after it, the retry finds nothing left and writes nothing)."""
        return self._retrying(name, call)

    def _carry_out(
        self,
        intent: ForgetIntent,
        rows: Sequence[Any],
        purge: CheckpointPurge | None,
        *,
        recovered: bool = False,
    ) -> None:
        """The shared steps after a forget's commit, then ``VACUUM`` if asked for."""
        super()._carry_out(intent, rows, purge, recovered=recovered)
        if intent.whole_user or intent.threads:
            self._after_forget()

    def _after_forget(self) -> None:
        if self.vacuum_after_forget:
            try:
                self.vacuum()
            except StorageError:
                logger.exception("VACUUM after a forget failed")

    def vacuum(self, *, full: bool = False) -> None:
        """Reclaim what forgotten rows leave in the database files, and refresh statistics.

        ``VACUUM (ANALYZE)`` of the backend's tables (and the checkpoint
        tables, if this database has them): the deleted rows' space is freed
        for reuse and their index entries removed, and the planner statistics
        - which sample column values, forgotten text included - are rebuilt
        from the rows that remain. Online: reads and writes go on.

        With ``full``: ``VACUUM FULL`` rewrites each table and its indexes
        into new files without the deleted rows, rewrites the statistics
        catalog (``pg_statistic``: its old rows sampled the forgotten values,
        and ``ANALYZE`` keeps the statistics of a table it finds empty, so
        those are deleted)
        and runs a ``CHECKPOINT`` so the old files go: afterwards no data file
        of the database holds a forgotten value (the write-ahead log,
        replicas and backups keep theirs until they are recycled). The last
        two need a superuser (``pg_statistic``) and ``pg_checkpoint``; without
        them a warning is logged. It locks each table while it is
        rewritten: a maintenance-window operation.
        """
        tables = [*TABLES, *self._checkpoint_tables()]
        statement = "VACUUM (FULL, ANALYZE) " if full else "VACUUM (ANALYZE) "
        with self.db.autocommit() as conn:  # type: ignore[attr-defined]
            conn.execute(statement + ", ".join(tables))
            if not full:
                return
            # the old statistics rows (samples of the forgotten values) are dead rows of a
            # catalog, and ANALYZE leaves an emptied table's statistics as they were: clearing
            # and rewriting the catalog needs a superuser, checkpointing pg_checkpoint too
            empty = [t for t in tables if not conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
            steps = [
                *(f"DELETE FROM pg_statistic WHERE starelid = '{t}'::regclass" for t in empty),
                "VACUUM FULL pg_statistic",
                "CHECKPOINT",
            ]
            for step in steps:
                try:
                    conn.execute(step)
                except Exception as exc:  # noqa: BLE001 - a warning: the tables are done
                    logger.warning("%s was refused (%s); see vacuum()'s docstring", step, exc)

    def has_checkpoints(self) -> bool:
        """Whether this database holds LangGraph's checkpoint tables (any worker made them)."""
        return bool(self._checkpoint_tables())

    def _checkpoint_tables(self) -> list[str]:
        rows = self.db.query(  # type: ignore[attr-defined]
            "SELECT c FROM unnest(ARRAY['checkpoints', 'checkpoint_blobs', "
            "'checkpoint_writes']) AS c WHERE to_regclass(c) IS NOT NULL"
        )
        return [str(r[0]) for r in rows]

    # -- LangGraph checkpoints in the same database ----------------------------------

    def checkpointer(self, *, pool_size: int = 4) -> Any:
        """LangGraph's ``PostgresSaver`` on this database (tables created once), whose
        threads are deleted when their user or thread is forgotten.

        One saver per backend (later calls return it), with its own small pool
        (``PostgresSaver`` needs autocommit, dict-row connections).

        Raises:
            ImportError: without ``langgraph-checkpoint-postgres``
                (the ``postgres`` extra: ``pip install -e '.[postgres]'`` in a checkout).
        """
        if self._saver is None:
            try:
                from langgraph.checkpoint.postgres import PostgresSaver
            except ImportError as exc:  # pragma: no cover - a dependency of the extra
                raise ImportError(
                    "the Postgres checkpointer needs langgraph-checkpoint-postgres: "
                    f"{install_hint('postgres')}"
                ) from exc
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(
                self.url,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                check=ConnectionPool.check_connection,
                open=True,
                name="tiered-memory-checkpoints",
            )
            saver = PostgresSaver(pool)  # type: ignore[arg-type]
            saver.setup()
            self._saver, self._saver_pool = saver, pool
        return self._saver

    async def acheckpointer(self, *, pool_size: int = 4) -> Any:
        """LangGraph's ``AsyncPostgresSaver`` on this database (for ``ainvoke``/``astream``),
        bound to the running event loop.

        Its threads are deleted on a forget too (through :meth:`checkpointer`'s
        saver: the same tables).
        """
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        await asyncio.to_thread(self.checkpointer)  # the tables, and the purge on forget
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            check=AsyncConnectionPool.check_connection,
            open=False,
            name="tiered-memory-checkpoints-async",
        )
        await pool.open()
        return AsyncPostgresSaver(pool)

    def close(self) -> None:
        """Close the pools (the sync checkpointer's too) and write pending access times.

        An :meth:`acheckpointer` saver's pool (``saver.conn``) belongs to its
        event loop: close it there (``await saver.conn.close()``).
        """
        try:
            super().close()
        finally:
            if self._saver_pool is not None:
                self._saver_pool.close()
                self._saver_pool = None


def _retried(name: str) -> Callable[..., Any]:
    method = getattr(SQLBackend, name)

    @functools.wraps(method)
    def call(self: PostgresBackend, *args: Any, **kwargs: Any) -> Any:
        idempotent = True
        if name == "append_messages":
            messages = args[2] if len(args) > 2 else kwargs.get("messages", ())
            idempotent = all(getattr(m, "id", None) for m in messages)
        return self._retrying(name, lambda: method(self, *args, **kwargs), idempotent=idempotent)

    return call


for _name in RETRIED:
    if _name not in PostgresBackend.__dict__:
        setattr(PostgresBackend, _name, _retried(_name))
