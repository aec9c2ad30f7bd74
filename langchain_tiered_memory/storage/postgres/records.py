"""The Postgres record store: records, their ``tsvector`` keywords and pgvector vectors, one table.

Every evicted turn, summary, fact and observation is one row of ``records``
with its unit vector (``embedding``) and its keyword index entry (``tsv``),
so a record and both its indexes are written - and deleted - by one
statement, in the caller's transaction: there is no second index to keep in
step, to rebuild after a crash, or to catch up with other workers' writes.
Any number of workers on any number of machines see one archive.

* Keyword search (:meth:`PostgresRecordStore.keyword_search`): the
  ``tsvector`` match, scored BM25 over the user's own records (see
  :mod:`.keywords`); users with more than :attr:`~PostgresRecordStore.keyword_exact_limit`
  records get a bounded search, as on SQLite.
* Dense search (:meth:`PostgresRecordStore.dense_search`): exact per-user
  scoring (inner product of unit vectors), or a per-user HNSW index for
  very large users (see :mod:`.ann`).
* Every read takes a ``user_id`` and filters by it in SQL.

It is the record store of
:class:`~langchain_tiered_memory.storage.postgres.backend.PostgresBackend`
(the shared operations of :mod:`langchain_tiered_memory.storage.sql.backend`
call :meth:`~PostgresRecordStore.prepare`, :meth:`~PostgresRecordStore.write_prepared`,
:meth:`~PostgresRecordStore.forget_rows` ... inside their transactions).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter, check_user
from langchain_tiered_memory.storage.codec import embeddings_id, encode_record
from langchain_tiered_memory.storage.postgres.ann import (
    INDEX_BUILD_LOCK,
    SESSION_EF_SEARCH,
    AnnIndexes,
    index_build_lock,
)
from langchain_tiered_memory.storage.postgres.db import PostgresDatabase, PostgresTx
from langchain_tiered_memory.storage.postgres.keywords import (
    bm25_sql,
    bounded_matches,
    document_text,
    query_terms,
    term_sql,
)
from langchain_tiered_memory.storage.postgres.rows import (
    CHUNK,
    INSERT,
    UPSERT,
    insert_params,
    stored_vector,
)
from langchain_tiered_memory.storage.postgres.schema import (
    COVERED_MAX_DIM,
    TS_CONFIG,
    small_tsv_sql,
    vector_index_sql,
)
from langchain_tiered_memory.storage.sql import user_key
from langchain_tiered_memory.storage.sql.access import AccessTimes
from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.sql.records import (
    R_COLUMNS,
    PreparedRecords,
    Row,
    SQLRecordStore,
    audit_replaced,
    chunks,
    live_hits,
    query_unit_vector,
    same_embedder,
    settable_values,
    wrong_embedder,
)

__all__ = ["Inserted", "PostgresRecordStore"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Inserted:
    """A record :meth:`PostgresRecordStore.write_prepared` inserted, and its row id."""

    rid: int
    record: MemoryRecord


class PostgresRecordStore(SQLRecordStore[Inserted]):
    """The archive in Postgres (the record store of the Postgres backend).

    Args:
        db: The backend's database (schema created, pgvector registered).
        embeddings: Embeds records for dense search (``None``: keyword only).

    Example:
        See :class:`~langchain_tiered_memory.storage.postgres.backend.PostgresBackend`.
    """

    #: Keyword search ranks every match of a user up to this many records; a
    #: bigger user's search is bounded (each term's newest matches, as SQLite).
    keyword_exact_limit: int = 5_000
    #: In a bounded keyword search, at most this many matches are read per term.
    keyword_term_cap: int = 500
    #: Record counts per user are re-read after this many seconds (other
    #: workers' writes change them; they choose exact or bounded search and
    #: the IDFs' collection size).
    size_ttl_seconds: float = 30.0
    _id_chunk = CHUNK
    _lock_row = " FOR UPDATE"

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        embeddings: Embeddings | None,
        ann: AnnIndexes | None = None,
        access_flush_seconds: float = 1.0,
    ) -> None:
        self._db = db
        self.embeddings = embeddings
        self.audit = AuditLog(db)
        self.ann = ann or AnnIndexes(db)
        self.access = AccessTimes(self._write_access, interval=access_flush_seconds)
        self._sizes: dict[str, tuple[int, float]] = {}
        self._closed = False
        self._vector_index = False
        self._dim = self._meta_int("dim")
        self.ensure_vector_index()
        if embeddings is not None:
            self._check_embeddings_id(embeddings_id(embeddings))

    # -- meta ------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        rows = self._db.query("SELECT value FROM meta WHERE key=?", (key,))
        return str(rows[0][0]) if rows else None

    def _meta_int(self, key: str) -> int | None:
        value = self._meta(key)
        return int(value) if value is not None else None

    def _check_embeddings_id(self, wanted: str) -> None:
        """Refuse embeddings other than the ones the stored vectors came from (an
        archive without vectors takes the new ones)."""
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('embeddings', ?) ON CONFLICT DO NOTHING",
                (wanted,),
            )
            stored = tx.execute("SELECT value FROM meta WHERE key='embeddings'").fetchone()[0]
            if same_embedder(stored, wanted):
                return
            if tx.execute("SELECT 1 FROM records WHERE embedding IS NOT NULL LIMIT 1").fetchone():
                raise wrong_embedder(self._db.where, stored, wanted)
            tx.execute("UPDATE meta SET value=? WHERE key='embeddings'", (wanted,))
            tx.execute("DELETE FROM meta WHERE key='dim'")
        self._dim = None

    def ensure_vector_index(self) -> bool:
        """Create the covering index of the vectors if their dimension allows it (see
        :mod:`.schema`); True when it exists. Once per database: on a large archive
        (after ``tiered-memory migrate``) it takes a while, without blocking writes."""
        if self._vector_index or self.dim is None or self.dim > COVERED_MAX_DIM:
            return self._vector_index
        valid = self._db.query(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = 'records_user_vectors' AND i.indisvalid"
        )
        if valid:  # the usual case: no lock taken
            self._vector_index = True
            return True
        with self._db.autocommit() as conn:
            index_build_lock(conn, wait=True)
            try:
                state = conn.execute(
                    "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = 'records_user_vectors'"
                ).fetchone()
                if state is not None and not state[0]:  # an interrupted build
                    conn.execute("DROP INDEX CONCURRENTLY IF EXISTS records_user_vectors")
                if state is None or not state[0]:
                    started = time.perf_counter()
                    conn.execute(vector_index_sql())
                    logger.info(
                        "indexed the vectors of %s in %.1f s",
                        self._db.where,
                        time.perf_counter() - started,
                    )
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (INDEX_BUILD_LOCK,))
        self._vector_index = True
        return True

    def _dim_error(self, built: int, got: int) -> ValueError:
        return ValueError(
            f"this archive was built with dim {built}, got {got} - use the same embeddings "
            f"or another database ({self._db.where})"
        )

    def _set_dim(self, tx: PostgresTx, dim: int) -> None:
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('dim', ?) ON CONFLICT DO NOTHING", (str(dim),)
        )
        stored = int(tx.execute("SELECT value FROM meta WHERE key='dim'").fetchone()[0])
        if stored != dim:
            raise self._dim_error(stored, dim)

    @property
    def dim(self) -> int | None:
        """The vectors' dimension (``None`` until the first vector is stored)."""
        if self._dim is None:
            self._dim = self._meta_int("dim")
        return self._dim

    # -- embedding -------------------------------------------------------------------

    # -- writing ---------------------------------------------------------------------

    def _insert_new(
        self, tx: PostgresTx, items: Sequence[tuple[MemoryRecord, str, str, np.ndarray | None]]
    ) -> list[Inserted]:
        first = next((v for *_, v in items if v is not None), None)
        if first is not None:
            self._set_dim(tx, int(first.shape[0]))
        by_id = {r.id: r for r, *_ in items}
        inserted: list[Inserted] = []
        if items:
            with tx.conn.cursor() as cur:
                cur.executemany(INSERT, [insert_params(*item) for item in items], returning=True)
                while True:
                    found = cur.fetchone()
                    if found is not None:
                        inserted.append(Inserted(int(found[0]), by_id[str(found[1])]))
                    if not cur.nextset():
                        break
        return inserted

    def finish_write(self, entries: Sequence[Inserted]) -> None:
        """After the commit: count the new records (and index the vectors once their
        dimension is known)."""
        if entries and self._dim is None:
            self._dim = self._meta_int("dim")
            self.ensure_vector_index()
        for entry in entries:
            user = entry.record.user_id
            if user in self._sizes:
                size, at = self._sizes[user]
                self._sizes[user] = (size + 1, at)

    def _commit_add(self, prepared: PreparedRecords, *, page_out: bool) -> list[Inserted]:
        def write() -> list[Inserted]:
            with self._db.write() as tx:
                for user in sorted({r.user_id for r, *_ in prepared.items}):
                    self._db.lock_key(tx, user_key(user), shared=True)  # not across a forget
                return self.write_prepared(tx, prepared, page_out=page_out)

        entries = self._db.retrying("adding records", write)  # idempotent by id
        self.finish_write(entries)
        return entries

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        """Replace a stored record (same id, same user); a new text is re-embedded and
        re-indexed for keywords in the same statement. Writes a ``write`` audit event.

        Raises:
            KeyError: if no record has this id.
            ValueError: if the stored record belongs to another user.
        """
        sources, metadata = encode_record(record)
        current = self._stored_for_update(record)
        vector = None
        if current.text != record.text and self.embeddings is not None:
            vector = self._unit_vectors(self.embeddings.embed_documents([record.text]), 1)[0]
        with self._db.write() as tx:
            self._db.lock_key(tx, user_key(record.user_id), shared=True)
            row = tx.execute(
                "SELECT text FROM records WHERE id=? AND user_id=? FOR UPDATE",
                (record.id, record.user_id),
            ).fetchone()
            if row is None:
                raise KeyError(f"record {record.id!r} was deleted meanwhile")
            changed = row[0] != record.text
            if changed and vector is None and self.embeddings is not None:
                vector = self._unit_vectors(self.embeddings.embed_documents([record.text]), 1)[0]
            values = settable_values(record, sources, metadata)
            params: list[Any] = list(values.values())
            words = document_text(record.text)
            small = small_tsv_sql(f"to_tsvector('{TS_CONFIG}', ?)", "?::text", "?::text", "?::text")
            sets = (
                f"{', '.join(f'{c}=?' for c in values)}, text=?, "
                f"tsv=to_tsvector('{TS_CONFIG}', ?), tsv_small={small}"
            )
            params += [record.text, words, words, record.user_id, record.thread_id, record.kind]
            if changed:
                sets += ", embedding=?"
                params.append(vector)
            tx.execute(
                f"UPDATE records SET {sets} WHERE id=? AND user_id=?",
                (*params, record.id, record.user_id),
            )
            audit_replaced(self.audit, tx, record, "update", text_changed=changed)
        if changed:
            self._forget_texts([str(row[0])])
        return record

    def put_record(self, record: MemoryRecord) -> MemoryRecord:
        """Store ``record`` under its id whether or not one is stored: insert it, or
        replace the stored one (same user), in one statement.

        A key-value write: concurrent puts and deletes of one id never fail,
        and the last to commit wins (``INSERT ... ON CONFLICT (id) DO
        UPDATE``: Postgres either inserts or locks and replaces the row, even
        when a concurrent put inserted it meanwhile). The record is embedded
        before the transaction. Writes a ``write`` audit event.

        Raises:
            ValueError: for an invalid record, or an id another user owns.
        """
        sources, metadata = encode_record(record)
        embedded = self._embed([record.text])
        vector = embedded[0] if embedded is not None else None

        def write() -> tuple[bool, str | None]:
            with self._db.write() as tx:
                self._db.lock_key(tx, user_key(record.user_id), shared=True)
                if vector is not None:
                    self._set_dim(tx, int(vector.shape[0]))
                old = tx.execute(
                    "SELECT user_id, text FROM records WHERE id=? FOR UPDATE", (record.id,)
                ).fetchone()
                with tx.conn.cursor() as cur:
                    cur.execute(UPSERT, insert_params(record, sources, metadata, vector))
                    stored = cur.fetchone()
                if stored is None or (old is not None and old[0] != record.user_id):
                    raise ValueError(f"record {record.id!r} belongs to another user")
                audit_replaced(self.audit, tx, record, "put", replaced=old is not None)
                return old is None, (str(old[1]) if old is not None else None)

        inserted, old_text = self._db.retrying("putting a record", write)
        if old_text is not None and old_text != record.text:
            self._forget_texts([old_text])
        if inserted:
            self.finish_write([Inserted(0, record)])
        return record

    # -- access times ----------------------------------------------------------------

    def _write_access(self, rows: Sequence[tuple[str, str, int]]) -> int:
        done = 0
        with self._db.write() as tx:
            for chunk in chunks(list(rows), CHUNK):
                # SKIP LOCKED: never wait for (or deadlock with) a forget deleting these rows;
                # a skipped access time only ages a recency signal
                ids, users, ats = (
                    [c[0] for c in chunk],
                    [c[1] for c in chunk],
                    [c[2] for c in chunk],
                )
                done += tx.execute(
                    "WITH v AS (SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[]) AS "
                    "v(id, user_id, at)), locked AS (SELECT r.rid, v.at FROM records r JOIN v ON "
                    "r.id = v.id AND r.user_id = v.user_id FOR UPDATE OF r SKIP LOCKED) "
                    "UPDATE records r SET last_accessed_at = locked.at FROM locked "
                    "WHERE r.rid = locked.rid",
                    (ids, users, ats),
                ).rowcount
        return done

    def flush(self) -> None:
        """Write what is kept in memory now (the noted access times)."""
        self.flush_access()

    def _ids_in(self, ids: Sequence[Any], column: str = "r.id") -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(ids)]

    # -- reading ---------------------------------------------------------------------

    def user_size(self, user_id: str) -> int:
        """How many records ``user_id`` has (re-read every :attr:`size_ttl_seconds`)."""
        known = self._sizes.get(user_id)
        now = time.monotonic()
        if known is not None and now - known[1] < self.size_ttl_seconds:
            return known[0]
        size = self.count(user_id)
        self._sizes[user_id] = (size, now)
        return size

    def keyword_search(
        self, query: str, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Keyword search over a user's records; ``(record, BM25 score)``, best first.

        Any user text is safe (terms are parameters, never query syntax);
        text without terms returns ``[]``. Every match of the user is scored
        (BM25 with the user's records as the collection, each matched term
        counted once) and filters apply before ranking, so the result is
        the exact best ``n`` that pass the filter. A user with more than
        :attr:`keyword_exact_limit` records gets a bounded search instead:
        each term's newest :attr:`keyword_term_cap` matches, a record
        scoring the sum of the IDFs of the terms it contains.
        """
        flt = RecordFilter.of(where)
        terms = query_terms(query)
        if not terms or n <= 0:
            return []
        parts = [term_sql(t) for t in terms]
        size = self.user_size(flt.user_id)
        if size > self.keyword_exact_limit:
            rids, scores = bounded_matches(
                self._db, parts, flt.user_id, size, self.keyword_term_cap
            )
            return self._resolve_ranked(rids, scores, flt, n)
        sql, params = bm25_sql(parts, flt, size, int(n), R_COLUMNS)
        rows = self._db.query(sql, params)
        return live_hits((self._hydrate(row), float(row[12])) for row in rows)

    def dense_search(
        self, query: Any, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Vector search over a user's records; ``(record, cosine)``, best first.

        ``query`` is a vector (e.g. from :meth:`embed_query`) or text. Exact:
        every vector of the user that passes the filter is scored, unless the
        user has an HNSW index of their own (see :mod:`.ann`) and the search
        is by user only. An archive without embeddings finds nothing.
        """
        flt = RecordFilter.of(where)
        if n <= 0:
            return []
        if isinstance(query, str):
            if self.embeddings is None:
                return []
            vector = self.embed_query(query)
        else:
            vector = query_unit_vector(query, self.dim, self._dim_error)
        dim = self.ann.dimension(flt.user_id) if flt.user_only else None
        if dim is not None and dim == vector.size:
            statement, ef = self.ann.search_sql(flt.user_id, dim, R_COLUMNS, n)
            if ef <= SESSION_EF_SEARCH:  # set on every connection: one statement
                rows = self._db.retrying(
                    "a dense search",
                    lambda: self._db.run(statement, (vector, vector)),
                )
            else:
                with self._db.read() as tx:
                    tx.conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                    rows = tx.conn.execute(statement, (vector, vector)).fetchall()
        else:
            cond, params = flt.sql("v")
            if len(flt.user_id.encode("utf-8", "surrogatepass")) <= 512:
                cond += " AND octet_length(v.user_id) <= 512"  # the covering index's rows
            rows = self._db.query(
                "WITH top AS (SELECT v.rid, v.embedding <#> ? AS distance FROM records v WHERE "
                f"{cond} AND v.embedding IS NOT NULL ORDER BY distance LIMIT ?) "
                f"SELECT {R_COLUMNS}, top.distance FROM top JOIN records r ON r.rid = top.rid "
                "ORDER BY top.distance, r.rid",
                [vector, *params, int(n)],
            )
            if flt.user_only and self.embeddings is not None:
                self._maybe_index(flt.user_id, vector.size)
        return live_hits((self._hydrate(row), -float(row[12])) for row in rows)

    def _maybe_index(self, user_id: str, dim: int) -> None:
        if self.ann.wants(user_id, self.user_size(user_id)):
            self.ann.build_soon(user_id, dim)

    def warm_up(self, user_id: str) -> bool:
        """Prepare fast recall for ``user_id`` now; True if they have an HNSW index then.

        A very large user's index is otherwise built in the background after
        their first search (searches stay exact meanwhile). A server can call
        this at start-up for its heaviest users.
        """
        check_user(user_id)
        size = self.count(user_id)
        self._sizes[user_id] = (size, time.monotonic())
        if self.dim is None or size <= self.ann.min_records:
            return False
        if self.ann.dimension(user_id) == self.dim:
            return True
        return self.ann.build(user_id, self.dim)

    # -- forgetting ------------------------------------------------------------------

    def _delete_rows(self, tx: PostgresTx, user_id: str, rows: Sequence[Row]) -> None:
        """Delete the rows (their vectors and keyword entries go with them)."""
        self._sizes.pop(user_id, None)
        for chunk in chunks([r[0] for r in rows], CHUNK):
            tx.execute(
                "DELETE FROM records WHERE user_id=? AND rid = ANY(?)", (user_id, list(chunk))
            )

    def _purge_indexes(
        self, user_id: str, rows: Sequence[Row], *, whole_user: bool, recovered: bool
    ) -> None:
        """A whole user's HNSW index goes (the rows took their index entries with them)."""
        if whole_user:
            try:
                self.ann.drop(user_id)
            except Exception:  # committed: the index only holds rows that are gone
                logger.exception("dropping the HNSW index of user %s failed", user_id)

    def _forget(
        self, user_id: str, select: Callable[[PostgresTx], Sequence[Row]], *, whole_user: bool
    ) -> int:
        def commit() -> list[Row]:
            with self._db.write() as tx:
                # a whole user's forget excludes every write of theirs meanwhile
                self._db.lock_key(tx, user_key(user_id), shared=not whole_user)
                return self.forget_rows(tx, user_id, select(tx), whole_user=whole_user)

        rows = commit() if whole_user else self._db.retrying("deleting records", commit)
        self.finish_forget(user_id, rows, whole_user=whole_user)
        return len(rows)

    # -- export, lifecycle -----------------------------------------------------------

    def vector(self, record_id: str, *, user_id: str) -> np.ndarray | None:
        """A record's stored unit vector (``None``: none stored)."""
        rows = self._db.query(
            "SELECT embedding FROM records WHERE id=? AND user_id=?", (record_id, user_id)
        )
        if not rows or rows[0][0] is None:
            return None
        return stored_vector(rows[0][0])

    def close(self) -> None:
        """Write pending access times (idempotent; the backend closes the database)."""
        if self._closed:
            return
        self._closed = True
        if not self._db.closed:
            self.access.close()
