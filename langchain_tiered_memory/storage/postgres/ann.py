"""Approximate dense search for users with very large archives: one HNSW index per such user.

Dense search scores a user's vectors exactly: the ``(user_id, ...)`` index
finds their rows and Postgres ranks them by inner product (the vectors are
unit length, so that is the cosine). That reads every vector of the user, so
its cost grows with the user's archive, not the database's: about 1,000
records (the typical user) cost a few milliseconds whatever the number of
users. A user with more than :attr:`AnnIndexes.min_records` records gets a
partial HNSW index of their own::

    CREATE INDEX CONCURRENTLY records_ann_<hash> ON records
        USING hnsw ((embedding::vector(<dim>)) vector_ip_ops) WHERE user_id = '<user>'

(pgvector 0.6 filters an HNSW search only after it, so one shared index
would return other users' neighbours and too few of the user's own; a
partial index holds only the user's vectors). It is built in the background
the first time such a user searches (or by :meth:`AnnIndexes.build`, e.g.
from ``warm_up``), by one worker at a time (an advisory lock), without
blocking writes; until it is valid, searches stay exact. Searches by user
only use it; a search with a thread, kind or time filter stays exact.
Forgetting the user drops the index.

The threshold is measured: exact and HNSW searches cost about the same near
15,000 records, so users past 20,000 get an index (the figures are in the
documentation's "What the benchmarks found", ``docs/explanation/benchmarks.md``,
from ``benchmarks/README.md``, "exact or HNSW").
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any

from psycopg import sql

__all__ = [
    "INDEX_BUILD_LOCK",
    "SESSION_EF_SEARCH",
    "AnnIndexes",
    "ann_index_name",
    "index_build_lock",
]

logger = logging.getLogger(__name__)


#: ``hnsw.ef_search`` set on every pooled connection (recall asks for 200 candidates).
SESSION_EF_SEARCH = 200

#: The advisory lock every index build of the package holds (one build at a time).
INDEX_BUILD_LOCK = 0x746D_696E_6465_7800  # "tmindex"


def index_build_lock(conn: Any, *, wait: bool, poll: float = 0.2) -> bool:
    """Take :data:`INDEX_BUILD_LOCK` on an autocommit connection (a session lock: release
    it with ``pg_advisory_unlock``); without ``wait``, False if another build holds it.

    Waiting polls with ``pg_try_advisory_lock`` rather than blocking in
    ``pg_advisory_lock``: ``CREATE INDEX CONCURRENTLY`` waits for every open
    transaction, a blocked lock call included, so blocking would deadlock.
    """
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (INDEX_BUILD_LOCK,)).fetchone()
        if row is not None and row[0]:
            return True
        if not wait:
            return False
        time.sleep(poll)


def ann_index_name(user_id: str) -> str:
    """The name of ``user_id``'s HNSW index.

    Example:
        >>> ann_index_name("ana")
        'records_ann_72019bbac0b3dac8'
    """
    digest = hashlib.sha1(user_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"records_ann_{digest[:16]}"


class AnnIndexes:
    """The per-user HNSW indexes of one database.

    Args:
        db: The :class:`~.db.PostgresDatabase`.
        min_records: Users with more records get an index.
        ef_search: ``hnsw.ef_search`` of a search (at least the results wanted);
            :data:`SESSION_EF_SEARCH` is set on every connection, so searches
            up to it need no ``SET`` of their own.
        m, ef_construction: HNSW build parameters.
        maintenance_work_mem: For the build (HNSW builds fast while the
            graph fits in it).
        refresh_seconds: How often the list of valid indexes is re-read
            (indexes built by other workers).
    """

    def __init__(
        self,
        db: Any,
        *,
        min_records: int = 20_000,
        ef_search: int = 200,
        m: int = 16,
        ef_construction: int = 64,
        maintenance_work_mem: str = "512MB",
        refresh_seconds: float = 30.0,
    ) -> None:
        self.db = db
        self.min_records = min_records
        self.ef_search = ef_search
        self.m = m
        self.ef_construction = ef_construction
        self.maintenance_work_mem = maintenance_work_mem
        self.refresh_seconds = refresh_seconds
        self._valid: dict[str, int] = {}  # index name -> dimension
        self._read_at = 0.0
        self._building: set[str] = set()
        self._lock = threading.Lock()

    def _refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._read_at < self.refresh_seconds:
            return
        rows = self.db.query(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname = 'records' AND c.relname LIKE 'records_ann_%' AND i.indisvalid"
        )
        valid: dict[str, int] = {}
        for name, definition in rows:
            dim = definition.split("::vector(", 1)[-1].split(")", 1)[0]
            if dim.isdigit():
                valid[str(name)] = int(dim)
        with self._lock:
            self._valid = valid
            self._read_at = time.monotonic()

    def dimension(self, user_id: str) -> int | None:
        """The dimension of ``user_id``'s valid index, or ``None`` when they have none."""
        self._refresh()
        return self._valid.get(ann_index_name(user_id))

    def search_sql(self, user_id: str, dim: int, columns: str, n: int) -> tuple[Any, int]:
        """The statement of an approximate search of ``user_id`` (query vector: ``%s``)."""
        query = sql.SQL(
            "SELECT {columns}, (r.embedding::vector({dim})) <#> %s::vector({dim}) AS distance "
            "FROM records r WHERE r.user_id = {user} "
            "ORDER BY (r.embedding::vector({dim})) <#> %s::vector({dim}) LIMIT {n}"
        ).format(
            columns=sql.SQL(columns),
            dim=sql.Literal(dim),
            user=sql.Literal(user_id),
            n=sql.Literal(int(n)),
        )
        return query, max(self.ef_search, int(n))

    def wants(self, user_id: str, size: int) -> bool:
        """Whether ``user_id`` (with ``size`` records) should have an index and lacks one."""
        return size > self.min_records and self.dimension(user_id) is None

    def build_soon(self, user_id: str, dim: int) -> None:
        """Build ``user_id``'s index in a background thread (once per process at a time)."""
        name = ann_index_name(user_id)
        with self._lock:
            if name in self._building:
                return
            self._building.add(name)

        def run() -> None:
            try:
                self.build(user_id, dim, wait=False)
            except Exception:
                logger.exception("building the HNSW index of user %s failed", user_id)
            finally:
                with self._lock:
                    self._building.discard(name)

        threading.Thread(target=run, name=f"hnsw-{name}", daemon=True).start()

    def build(self, user_id: str, dim: int, *, wait: bool = True) -> bool:
        """Build ``user_id``'s index now (``CREATE INDEX CONCURRENTLY``); True once it is valid.

        While another worker (or thread) builds it, waits for that build - or,
        without ``wait``, returns False at once.
        """
        name = ann_index_name(user_id)
        with self.db.autocommit() as conn:
            if not index_build_lock(conn, wait=wait):
                return False
            try:
                invalid = conn.execute(
                    "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = %s AND NOT i.indisvalid",
                    (name,),
                ).fetchone()
                if invalid:  # left by a build that was interrupted
                    conn.execute(
                        sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name))
                    )
                conn.execute(
                    sql.SQL("SET maintenance_work_mem = {}").format(
                        sql.Literal(self.maintenance_work_mem)
                    )
                )
                started = time.perf_counter()
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON records USING hnsw "
                        "((embedding::vector({dim})) vector_ip_ops) WITH (m = {m}, "
                        "ef_construction = {ef}) WHERE user_id = {user}"
                    ).format(
                        name=sql.Identifier(name),
                        dim=sql.Literal(int(dim)),
                        m=sql.Literal(int(self.m)),
                        ef=sql.Literal(int(self.ef_construction)),
                        user=sql.Literal(user_id),
                    )
                )
                conn.execute("RESET maintenance_work_mem")
                conn.execute("ANALYZE records")  # so the planner knows how many rows are theirs
                logger.info(
                    "built the HNSW index of user %s in %.1f s",
                    user_id,
                    time.perf_counter() - started,
                )
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (INDEX_BUILD_LOCK,))
        self._refresh(force=True)
        return self.dimension(user_id) is not None

    def drop(self, user_id: str) -> None:
        """Drop ``user_id``'s index, if any (after a forget)."""
        name = ann_index_name(user_id)
        exists = self.db.query("SELECT 1 FROM pg_class WHERE relname = ?", (name,))
        if not exists:
            return
        with self.db.autocommit() as conn:
            conn.execute(
                sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name))
            )
        with self._lock:
            self._valid.pop(name, None)
