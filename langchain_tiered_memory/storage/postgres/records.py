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

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import EmbeddingCache, RecordFilter, check_user
from langchain_tiered_memory.storage.codec import (
    embeddings_id,
    encode_record,
    from_micros,
    to_micros,
)
from langchain_tiered_memory.storage.postgres.ann import (
    INDEX_BUILD_LOCK,
    SESSION_EF_SEARCH,
    AnnIndexes,
    index_build_lock,
)
from langchain_tiered_memory.storage.postgres.db import PostgresDatabase, PostgresTx
from langchain_tiered_memory.storage.postgres.keywords import (
    BM25_B,
    BM25_K1,
    bounded_idf,
    document_text,
    or_query,
    query_terms,
    term_sql,
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
    RecordReads,
    audit_added,
    check_owners,
    chunks,
    live_hits,
    query_unit_vector,
    same_embedder,
    wrong_embedder,
)
from langchain_tiered_memory.storage.vectors import unit_rows

__all__ = ["PostgresRecordStore", "PreparedRecords", "record_insert_sql", "stored_vector"]

logger = logging.getLogger(__name__)

_CHUNK = 1000
_COLS = (
    "r.rid, r.id, r.user_id, r.thread_id, r.kind, r.text, r.created_at, r.last_accessed_at, "
    "r.importance, r.sources, r.metadata, r.expires_at"
)


def record_insert_sql(*, with_rid: bool = False) -> str:
    """The ``INSERT`` of one record (``?`` placeholders: [rid,] id, user_id, thread_id,
    kind, text, created_at, last_accessed_at, importance, sources, metadata, expires_at,
    vector, keyword text); skips an id stored already and returns ``rid, id``."""
    names = ["id", "user_id", "thread_id", "kind", "text", "created_at", "last_accessed_at"]
    names += ["importance", "sources", "metadata", "expires_at", "embedding"]
    types = ["text", "text", "text", "text", "text", "bigint", "bigint", "float8", "text"]
    types += ["text", "bigint", "vector"]
    if with_rid:
        names, types = ["rid", *names], ["bigint", *types]
    values = ", ".join(f"?::{t} AS {n}" for n, t in zip(names, types, strict=True))
    small = small_tsv_sql("v.tsv", "v.user_id", "v.thread_id", "v.kind")
    return (
        f"INSERT INTO records ({', '.join(names)}, tsv, tsv_small) "
        f"SELECT v.*, {small} FROM (SELECT {values}, to_tsvector('{TS_CONFIG}', ?) AS tsv) v "
        "ON CONFLICT DO NOTHING RETURNING rid, id"
    )


_INSERT = record_insert_sql()
#: :data:`_INSERT` that replaces a stored row of the same id and user (``put_record``).
_UPSERT = _INSERT.replace(
    "ON CONFLICT DO NOTHING",
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(
        f"{c}=EXCLUDED.{c}"
        for c in [
            "thread_id",
            "kind",
            "text",
            "created_at",
            "last_accessed_at",
            "importance",
            "sources",
            "metadata",
            "expires_at",
            "embedding",
            "tsv",
            "tsv_small",
        ]
    )
    + " WHERE records.user_id = EXCLUDED.user_id",
)

#: A row the shared forget code handles: ``(rid, record id, text)``.
Row = Sequence[Any]


@dataclass(frozen=True)
class PreparedRecords:
    """Records checked and embedded by :meth:`PostgresRecordStore.prepare`, ready to insert.

    ``items`` are ``(record, sources JSON, metadata JSON, unit vector or None)``.
    """

    items: tuple[tuple[MemoryRecord, str, str, np.ndarray | None], ...]


@dataclass(frozen=True)
class Inserted:
    """A record :meth:`PostgresRecordStore.write_prepared` inserted, and its row id."""

    rid: int
    record: MemoryRecord


def _record(row: Sequence[Any]) -> MemoryRecord:
    sources, metadata = row[9], row[10]
    return MemoryRecord(
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        from_micros(row[6]),
        from_micros(row[7]) if row[7] is not None else None,
        float(row[8]),
        () if sources == "[]" else tuple(json.loads(sources)),
        {} if metadata == "{}" else json.loads(metadata),
        from_micros(row[11]) if row[11] is not None else None,
    )


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    return chunks(items, size)


class PostgresRecordStore(RecordReads):
    """The archive in Postgres (the record store of the Postgres backend).

    Args:
        db: The backend's database (schema created, pgvector registered).
        embeddings: Embeds records for dense search (``None``: keyword only).

    Example:
        See :class:`~langchain_tiered_memory.storage.postgres.backend.PostgresBackend`.
    """

    #: A keyword search over- fetches this many times ``n`` when a filter may drop hits.
    overfetch: int = 4
    #: Keyword search ranks every match of a user up to this many records; a
    #: bigger user's search is bounded (each term's newest matches, as SQLite).
    keyword_exact_limit: int = 5_000
    #: In a bounded keyword search, at most this many matches are read per term.
    keyword_term_cap: int = 500
    #: Record counts per user are re-read after this many seconds (other
    #: workers' writes change them; they choose exact or bounded search and
    #: the IDFs' collection size).
    size_ttl_seconds: float = 30.0
    _record_columns = _COLS
    _id_chunk = _CHUNK

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

    def _unit(self, raw: Any, expected: int) -> np.ndarray:
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ValueError(
                f"the embeddings returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {expected} texts"
            )
        if self.dim is not None and vectors.shape[1] != self.dim:
            raise self._dim_error(self.dim, int(vectors.shape[1]))
        return unit_rows(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector for ``text`` (embed once, search with the vector)."""
        if self.embeddings is None:
            raise ValueError("this archive has no embeddings (keyword search only)")
        return self._unit(np.asarray(self.embeddings.embed_query(text)).reshape(1, -1), 1)[0]

    # -- writing ---------------------------------------------------------------------

    def _owners(self, ids: Sequence[str], tx: PostgresTx | None = None) -> dict[str, str]:
        owners: dict[str, str] = {}
        for chunk in _chunks(list(ids)):
            sql = "SELECT id, user_id FROM records WHERE id = ANY(?)"
            rows = (
                tx.execute(sql, (list(chunk),)).fetchall()
                if tx
                else self._db.query(sql, (list(chunk),))
            )
            owners.update((str(i), str(u)) for i, u in rows)
        return owners

    def prepare(self, records: Sequence[MemoryRecord]) -> PreparedRecords:
        """Check records and embed the new ones, outside any transaction.

        Raises:
            ValueError: for an invalid record or an id owned by another user.
        """
        batch: dict[str, tuple[MemoryRecord, str, str]] = {}
        for record in records:
            sources, metadata = encode_record(record)
            batch.setdefault(record.id, (record, sources, metadata))
        if not batch:
            return PreparedRecords(())
        owners = self._owners(list(batch))
        check_owners([r for r, _, _ in batch.values()], owners)
        new = [item for key, item in batch.items() if key not in owners]
        vectors = None
        if new and self.embeddings is not None:
            texts = [r.text for r, _, _ in new]
            vectors = self._unit(self.embeddings.embed_documents(texts), len(texts))
        return PreparedRecords(
            tuple(
                (record, sources, metadata, vectors[i] if vectors is not None else None)
                for i, (record, sources, metadata) in enumerate(new)
            )
        )

    def write_prepared(
        self, tx: PostgresTx, prepared: PreparedRecords, *, page_out: bool = False
    ) -> list[Inserted]:
        """Insert prepared records inside ``tx`` (ids stored meanwhile are skipped) and
        write their audit events; returns what was inserted."""
        if not prepared.items:
            return []
        owners = self._owners([r.id for r, _, _, _ in prepared.items], tx)
        check_owners([r for r, _, _, _ in prepared.items], owners)
        first = next((v for _, _, _, v in prepared.items if v is not None), None)
        if first is not None:
            self._set_dim(tx, int(first.shape[0]))
        rows = [
            (
                record.id,
                record.user_id,
                record.thread_id,
                record.kind,
                record.text,
                to_micros(record.created_at),
                to_micros(record.last_accessed_at) if record.last_accessed_at else None,
                float(record.importance),
                sources,
                metadata,
                to_micros(record.expires_at) if record.expires_at else None,
                vector,
                document_text(record.text),
            )
            for record, sources, metadata, vector in prepared.items
            if record.id not in owners
        ]
        by_id = {r.id: r for r, _, _, _ in prepared.items}
        inserted: list[Inserted] = []
        if rows:
            with tx.conn.cursor() as cur:
                cur.executemany(_sql(_INSERT), [_clean_row(r) for r in rows], returning=True)
                while True:
                    found = cur.fetchone()
                    if found is not None:
                        inserted.append(Inserted(int(found[0]), by_id[str(found[1])]))
                    if not cur.nextset():
                        break
        audit_added(self.audit, tx, [e.record for e in inserted], page_out=page_out)
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

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Store records (idempotent by id) with both their index entries, in one commit.

        New texts are embedded in one ``embed_documents`` batch first. A
        record whose id is stored already is skipped (see :meth:`update_record`).

        Raises:
            ValueError: for an invalid record, an id owned by another user, or
                embeddings of the wrong dimension (nothing is stored).
        """
        prepared = self.prepare(records)
        if not prepared.items:
            return

        def write() -> list[Inserted]:
            with self._db.write() as tx:
                for user in sorted({r.user_id for r, _, _, _ in prepared.items}):
                    self._db.lock_key(tx, user_key(user), shared=True)  # not across a forget
                return self.write_prepared(tx, prepared)

        self.finish_write(self._db.retrying("adding records", write))  # idempotent by id

    def set_metadata(
        self, tx: PostgresTx, record_id: str, user_id: str, patch: Mapping[str, Any]
    ) -> bool:
        """Merge ``patch`` into a record's metadata inside ``tx`` (no re-embedding)."""
        row = tx.execute(
            "SELECT metadata FROM records WHERE id=? AND user_id=? FOR UPDATE",
            (record_id, user_id),
        ).fetchone()
        if row is None:
            return False
        metadata = {**json.loads(row[0]), **patch}
        tx.execute(
            "UPDATE records SET metadata=? WHERE id=? AND user_id=?",
            (json.dumps(metadata, ensure_ascii=False), record_id, user_id),
        )
        return True

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
            vector = self._unit(self.embeddings.embed_documents([record.text]), 1)[0]
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
                vector = self._unit(self.embeddings.embed_documents([record.text]), 1)[0]
            params: list[Any] = [
                record.thread_id,
                record.kind,
                to_micros(record.created_at),
                to_micros(record.last_accessed_at) if record.last_accessed_at else None,
                float(record.importance),
                sources,
                metadata,
                to_micros(record.expires_at) if record.expires_at else None,
            ]
            words = document_text(record.text)
            small = small_tsv_sql(f"to_tsvector('{TS_CONFIG}', ?)", "?::text", "?::text", "?::text")
            sets = (
                "thread_id=?, kind=?, created_at=?, last_accessed_at=?, importance=?, "
                f"sources=?, metadata=?, expires_at=?, text=?, tsv=to_tsvector('{TS_CONFIG}', ?), "
                f"tsv_small={small}"
            )
            params += [record.text, words, words, record.user_id, record.thread_id, record.kind]
            if changed:
                sets += ", embedding=?"
                params.append(vector)
            tx.execute(
                f"UPDATE records SET {sets} WHERE id=? AND user_id=?",
                (*params, record.id, record.user_id),
            )
            self.audit.insert(
                tx,
                "write",
                user_id=record.user_id,
                thread_id=record.thread_id,
                payload={"op": "update", "ids": [record.id], "text_changed": changed},
            )
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
        vector = None
        if self.embeddings is not None:
            vector = self._unit(self.embeddings.embed_documents([record.text]), 1)[0]
        row = (
            record.id,
            record.user_id,
            record.thread_id,
            record.kind,
            record.text,
            to_micros(record.created_at),
            to_micros(record.last_accessed_at) if record.last_accessed_at else None,
            float(record.importance),
            sources,
            metadata,
            to_micros(record.expires_at) if record.expires_at else None,
            vector,
            document_text(record.text),
        )

        def write() -> tuple[bool, str | None]:
            with self._db.write() as tx:
                self._db.lock_key(tx, user_key(record.user_id), shared=True)
                if vector is not None:
                    self._set_dim(tx, int(vector.shape[0]))
                old = tx.execute(
                    "SELECT user_id, text FROM records WHERE id=? FOR UPDATE", (record.id,)
                ).fetchone()
                with tx.conn.cursor() as cur:
                    cur.execute(_sql(_UPSERT), _clean_row(row))
                    stored = cur.fetchone()
                if stored is None or (old is not None and old[0] != record.user_id):
                    raise ValueError(f"record {record.id!r} belongs to another user")
                self.audit.insert(
                    tx,
                    "write",
                    user_id=record.user_id,
                    thread_id=record.thread_id,
                    payload={"op": "put", "ids": [record.id], "replaced": old is not None},
                )
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
            for chunk in _chunks(list(rows)):
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

    def note_access(self, ids: Sequence[str], at: datetime | None = None, *, user_id: str) -> None:
        """Mark ``user_id``'s records as accessed at ``at`` (default now), without waiting.

        Written by a background thread within about a second; meanwhile
        applied to every record this store returns. Ids of other users are
        never changed.

        Raises:
            ValueError: for an invalid ``user_id`` or a closed store.
        """
        check_user(user_id)
        if self._closed:
            raise ValueError(f"the record store of {self._db.where} is closed")
        self.access.note(ids, user_id, to_micros(at or datetime.now(timezone.utc)))

    def touch(
        self, ids: Sequence[str], at: datetime | None = None, *, user_id: str | None = None
    ) -> int:
        """Set ``last_accessed_at`` (default now) on these records now; returns how many."""
        when = to_micros(at or datetime.now(timezone.utc))
        wanted = list(dict.fromkeys(ids))
        self.access.drop(user_id or "", wanted)
        sql = "UPDATE records SET last_accessed_at=? WHERE id = ANY(?)"
        done = 0
        with self._db.write() as tx:
            for chunk in _chunks(wanted):
                params: list[Any] = [when, list(chunk)]
                if user_id is not None:
                    params.append(user_id)
                done += tx.execute(
                    sql + (" AND user_id=?" if user_id is not None else ""), params
                ).rowcount
        return done

    def flush_access(self) -> int:
        """Write noted access times now; returns how many records changed."""
        return self.access.flush()

    def flush(self) -> None:
        """Write what is kept in memory now (the noted access times)."""
        self.flush_access()

    _decode = staticmethod(_record)

    def _ids_in(self, ids: Sequence[str]) -> tuple[str, list[Any]]:
        return "r.id = ANY(?)", [list(ids)]

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

    def _resolve(
        self, hits: Sequence[tuple[int, float]], flt: RecordFilter
    ) -> list[tuple[MemoryRecord, float]]:
        """The records of ``(rid, score)`` hits that pass ``flt``, in hit order."""
        best: dict[int, float] = {}
        for rid, score in hits:
            best.setdefault(int(rid), float(score))
        if not best:
            return []
        where, params = flt.sql("r")
        found: dict[int, MemoryRecord] = {}
        for chunk in _chunks(list(best)):
            rows = self._db.query(
                f"SELECT {_COLS} FROM records r WHERE r.rid = ANY(?) AND {where}",
                [list(chunk), *params],
            )
            found.update((int(row[0]), self._hydrate(row)) for row in rows)
        return live_hits((found[rid], score) for rid, score in best.items() if rid in found)

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
            return self._bounded_keyword_search(parts, flt, size, n)
        sql, params = _bm25_sql(parts, flt, size, int(n))
        rows = self._db.query(sql, params)
        return live_hits((self._hydrate(row), float(row[12])) for row in rows)

    def _bounded_keyword_search(
        self, parts: Sequence[tuple[str, str]], flt: RecordFilter, size: int, n: int
    ) -> list[tuple[MemoryRecord, float]]:
        cap = max(1, int(self.keyword_term_cap))
        found: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for sql, param in parts:
            branch = (
                f"(SELECT r.rid FROM records r WHERE r.user_id = ? AND r.tsv_small = {{}} AND "
                f"r.tsv @@ {sql} ORDER BY r.rid DESC LIMIT ?)"
            )
            rows = self._db.query(
                f"SELECT rid FROM ({branch.format('true')} UNION ALL {branch.format('false')}) m "
                "ORDER BY rid DESC LIMIT ?",
                (flt.user_id, param, cap + 1, flt.user_id, param, cap + 1, cap + 1),
            )
            if not rows:
                continue
            rids = np.array([r[0] for r in rows], dtype=np.int64)
            found.append(rids[:cap])
            weights.append(np.full(min(cap, rids.size), bounded_idf(rids.size, size)))
        if not found:
            return []
        rids, where = np.unique(np.concatenate(found), return_inverse=True)
        scores = np.bincount(where, weights=np.concatenate(weights))
        order = np.lexsort((-rids, -scores))
        rids, scores = rids[order], scores[order]
        out: list[tuple[MemoryRecord, float]] = []
        step = int(n) if flt.user_only else int(n) * max(1, self.overfetch)
        for start in range(0, rids.size, step):
            part = slice(start, start + step)
            out += self._resolve(
                list(zip(rids[part].tolist(), scores[part].tolist(), strict=True)), flt
            )
            if len(out) >= n:
                break
        return out[:n]

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
            statement, ef = self.ann.search_sql(flt.user_id, dim, _COLS, n)
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
                f"SELECT {_COLS}, top.distance FROM top JOIN records r ON r.rid = top.rid "
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

    def find_rows(
        self,
        tx: PostgresTx,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
    ) -> list[tuple[Row, MemoryRecord]]:
        """A user's ``(rid, id, text)`` rows with their records, inside ``tx``.

        By ``ids`` (missing ones skipped), else of ``kinds``, else all of them.
        """
        found: list[Sequence[Any]] = []
        if ids is not None:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                found += tx.execute(
                    f"SELECT {_COLS} FROM records r WHERE r.user_id=? AND r.id = ANY(?)",
                    (user_id, list(chunk)),
                ).fetchall()
        elif kinds:
            found = tx.execute(
                f"SELECT {_COLS} FROM records r WHERE r.user_id=? AND r.kind = ANY(?)",
                (user_id, list(kinds)),
            ).fetchall()
        else:
            found = tx.execute(
                f"SELECT {_COLS} FROM records r WHERE r.user_id=?", (user_id,)
            ).fetchall()
        return [((int(r[0]), str(r[1]), str(r[5])), _record(r)) for r in found]

    def user_rows(self, tx: PostgresTx, user_id: str, *, thread_id: str | None = None) -> list[Row]:
        """Every ``(rid, id, text)`` row of a user (or of one of their threads)."""
        if thread_id is None:
            rows = tx.execute(
                "SELECT rid, id, text FROM records WHERE user_id=?", (user_id,)
            ).fetchall()
        else:
            rows = tx.execute(
                "SELECT rid, id, text FROM records WHERE user_id=? AND thread_id=?",
                (user_id, thread_id),
            ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def forget_rows(
        self, tx: PostgresTx, user_id: str, rows: Sequence[Row], *, whole_user: bool
    ) -> list[Row]:
        """Delete a user's rows (their vectors and keyword entries go with them) inside
        ``tx``; with ``whole_user`` their audit events too (one ``delete`` event stays)."""
        rows = list(rows)
        self._sizes.pop(user_id, None)
        for chunk in _chunks([r[0] for r in rows]):
            tx.execute(
                "DELETE FROM records WHERE user_id=? AND rid = ANY(?)", (user_id, list(chunk))
            )
        if whole_user:
            self.audit.delete_user(tx, user_id)
            payload: dict[str, Any] = {"forgotten": True, "records": len(rows)}
            self.audit.insert(tx, "delete", user_id=user_id, payload=payload)
        elif rows:
            self.audit.insert(tx, "delete", user_id=user_id, payload={"ids": [r[1] for r in rows]})
        return rows

    def finish_forget(
        self,
        user_id: str,
        rows: Sequence[Row],
        *,
        whole_user: bool,
        cache_keys: Sequence[str] = (),
        recovered: bool = False,
    ) -> None:
        """After a forget committed: drop noted access times, the texts' embedding-cache
        entries and (for a whole user) their HNSW index. ``recovered``: again, after
        the forget's process died (no rows; the cache entries by ``cache_keys``)."""
        self.access.drop(user_id, None if whole_user else [r[1] for r in rows])
        self._forget_texts([r[2] for r in rows if r[2] is not None])
        if isinstance(self.embeddings, EmbeddingCache) and cache_keys:
            self.embeddings.forget_cache_keys(cache_keys)
        if whole_user:
            try:
                self.ann.drop(user_id)
            except Exception:  # committed: the index only holds rows that are gone
                logger.exception("dropping the HNSW index of user %s failed", user_id)
        logger.info("deleted %d records of user %s", len(rows), user_id)

    def cache_keys(self, texts: Sequence[str]) -> list[str]:
        """The keys the embedder's disk cache keeps these texts' vectors under (digests)."""
        cache = self.embeddings
        return list(cache.cache_keys(texts)) if isinstance(cache, EmbeddingCache) and texts else []

    def _forget_texts(self, texts: Sequence[str]) -> None:
        if isinstance(self.embeddings, EmbeddingCache) and texts:
            self.embeddings.forget_texts(list(texts))

    def delete(self, ids: Sequence[str], *, user_id: str) -> int:
        """Forget these records of ``user_id`` (ids of other users are ignored); returns
        how many. Writes a ``delete`` audit event with the ids only."""
        check_user(user_id)
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0

        def forget() -> list[Row]:
            with self._db.write() as tx:
                self._db.lock_key(tx, user_key(user_id), shared=True)
                rows = [row for row, _ in self.find_rows(tx, user_id, ids=wanted)]
                return self.forget_rows(tx, user_id, rows, whole_user=False)

        rows = self._db.retrying("deleting records", forget)
        self.finish_forget(user_id, rows, whole_user=False)
        return len(rows)

    def delete_user(self, user_id: str) -> int:
        """Forget every record of ``user_id`` and their audit events (the record store
        only; :meth:`~..sql.backend.SQLBackend.forget_user` forgets everything)."""
        check_user(user_id)
        with self._db.write() as tx:
            self._db.lock_key(tx, user_key(user_id))
            rows = self.user_rows(tx, user_id)
            self.forget_rows(tx, user_id, rows, whole_user=True)
        self.finish_forget(user_id, rows, whole_user=True)
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

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Write pending access times (idempotent; the backend closes the database)."""
        if self._closed:
            return
        self._closed = True
        if not self._db.closed:
            self.access.close()

    def __repr__(self) -> str:
        return f"PostgresRecordStore({self._db.where!r})"


#: A user's ``(rid, tsv, filter columns)``: the covering index's entries, and the long ones.
_USER_KEYWORDS = (
    "(SELECT rid, tsv, user_id, thread_id, kind, created_at FROM records WHERE user_id = ? "
    "AND tsv_small OFFSET 0) UNION ALL (SELECT rid, tsv, user_id, thread_id, kind, created_at "
    "FROM records WHERE user_id = ? AND NOT tsv_small OFFSET 0)"
)


def _bm25_sql(
    parts: Sequence[tuple[str, str]], flt: RecordFilter, size: int, n: int
) -> tuple[str, list[Any]]:
    """One statement: a user's keyword matches scored BM25, the best ``n`` passing ``flt``
    returned as whole records with their scores (see :mod:`.keywords`).

    The user's rows are read from the covering keyword index (see
    :mod:`.schema`; ``OFFSET 0`` keeps the planner from intersecting with the
    GIN index, whose posting lists of common words span every user), each
    term's matches counted among them for its IDF, and only then filtered
    and ranked.
    """
    where, filter_params = flt.sql("r")
    terms = [sql for sql, _ in parts]
    words = [word for _, word in parts]
    k = range(len(parts))
    matches = ", ".join(f"(r.tsv @@ {t})::int AS m{i}" for i, t in zip(k, terms, strict=True))
    counts = ", ".join(f"sum(m{i})::float8 AS df{i}" for i in k)
    total = "GREATEST(?, s.hits)"
    idf = " + ".join(f"h.m{i} * ln(1 + ({total} - s.df{i} + 0.5) / (s.df{i} + 0.5))" for i in k)
    norm = f"({BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * h.dl / s.avgdl)))"
    sql = (
        f"WITH h AS MATERIALIZED (SELECT r.rid, length(r.tsv)::float8 AS dl, ({where}) AS ok, "
        f"{matches} FROM ({_USER_KEYWORDS}) r WHERE r.tsv @@ {or_query(terms)}), "
        f"s AS (SELECT count(*)::float8 AS hits, avg(dl) AS avgdl, {counts} FROM h), "
        f"top AS (SELECT h.rid, ({idf}) * {norm} AS score FROM h, s WHERE h.ok "
        "ORDER BY score DESC, h.rid DESC LIMIT ?) "
        f"SELECT {_COLS}, top.score FROM top JOIN records r ON r.rid = top.rid "
        "ORDER BY top.score DESC, top.rid DESC"
    )
    params: list[Any] = [
        *filter_params,
        *words,
        flt.user_id,
        flt.user_id,
        *words,
        *([size] * len(parts)),
        n,
    ]
    return sql, params


def stored_vector(value: Any) -> np.ndarray:
    """A ``vector`` column's value (pgvector's ``Vector``, or an array) as float32."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


def _sql(statement: str) -> str:
    from langchain_tiered_memory.storage.postgres.db import postgres_sql

    return postgres_sql(statement, True)


def _clean_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v for v in row
    )
