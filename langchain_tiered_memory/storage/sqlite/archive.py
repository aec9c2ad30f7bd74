"""The SQLite archive: records, their FTS5 keyword index and their vectors, in one file.

:class:`BaseSQLiteArchive` is the SQLite half every SQLite archive shares:
records (every evicted turn, summary and fact as a
:class:`~langchain_tiered_memory.records.MemoryRecord`), the FTS5 keyword
index sharded by user, the vectors as blobs, the audit events, forgetting.
The vector half is a :class:`~langchain_tiered_memory.storage.vectors.VectorIndex`:
:class:`SQLiteArchive` uses FAISS
(:class:`~langchain_tiered_memory.storage.faiss.index.FaissIndex`),
:class:`~langchain_tiered_memory.storage.vectorstore.VectorStoreArchive` any
LangChain ``VectorStore``.

The jobs live apart, as Postgres's do, each an object the archive holds: the
keyword index's shards (:class:`~.keywords.KeywordShards`, ``archive.keywords``),
keeping the vector index in step with the records - the outbox, catch-up,
rebuild (:class:`~.outbox.VectorIndexSync`, ``archive.index_sync``) - and the
access times recall notes (``archive.access``); the table's columns are in
:mod:`.rows`, and what both SQL record stores share - the reads, the access
times - in :mod:`langchain_tiered_memory.storage.sql`. This module writes,
forgets and searches.

It works alone (``SQLiteArchive(path, embeddings=...)``, what the retrieval
benches use) or as the record store of the SQLite backend, sharing that
backend's database so a compression or a forget commits in one transaction
with the turn log and the facts (:meth:`~BaseSQLiteArchive.prepare`,
:meth:`~BaseSQLiteArchive.write_prepared`, :meth:`~BaseSQLiteArchive.finish_write`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.records import MemoryRecord, turn_record
from langchain_tiered_memory.storage.base import RecordFilter, check_user
from langchain_tiered_memory.storage.codec import embeddings_id as codec_embeddings_id
from langchain_tiered_memory.storage.codec import (
    encode_record,
)
from langchain_tiered_memory.storage.faiss.index import FaissIndex
from langchain_tiered_memory.storage.fts import fts_terms
from langchain_tiered_memory.storage.sql.access import AccessTimes
from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.sql.records import (
    PreparedRecords,
    Row,
    SQLRecordStore,
    audit_replaced,
    check_owners,
    query_unit_vector,
    record_values,
    settable_values,
)
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase, SQLiteTx
from langchain_tiered_memory.storage.sqlite.keywords import KeywordShards
from langchain_tiered_memory.storage.sqlite.meta import stored_dim, take_embedder
from langchain_tiered_memory.storage.sqlite.outbox import VectorIndexSync
from langchain_tiered_memory.storage.sqlite.rows import (
    CHUNK,
    id_chunks,
    marks,
)
from langchain_tiered_memory.storage.sqlite.schema import create_schema, write_meta
from langchain_tiered_memory.storage.vectors import (
    DenseQuery,
    NoVectorIndex,
    VectorEntry,
    VectorIndex,
    VectorKey,
    WarmableIndex,
)
from langchain_tiered_memory.values.turns import Turn

__all__ = [
    "ArchiveTurnHook",
    "BaseSQLiteArchive",
    "SQLiteArchive",
]

logger = logging.getLogger(__name__)


_ArchiveT = TypeVar("_ArchiveT", bound="BaseSQLiteArchive")


class BaseSQLiteArchive(SQLRecordStore[VectorEntry]):
    """The SQLite half of an archive: records, FTS5 keyword index, audit log, forgetting.

    Subclasses supply the vector half as a :class:`VectorIndex`
    (:meth:`_make_index`) and, when it ``needs_vectors``, the embedding
    (:meth:`_embed_documents`, :meth:`embed_query`).

    Crash safety: every change commits to SQLite first (records, FTS rows,
    stored vectors, audit event, outbox entries in one transaction), then the
    vector index is updated. SQLite is the source of truth; on open the index
    is checked against it and rebuilt from it when they differ.

    Keyword search uses FTS5 with ``porter unicode61 remove_diacritics 2`` and
    CJK text indexed as character bigrams (see :func:`fts_document`). The
    ``trigram`` tokenizer was rejected: it cannot match terms shorter than
    three characters, i.e. most Chinese words (``花生``) and short numbers and
    names (``42``, ``NY``) - exactly what keyword search is for.

    Search cost follows the user's records, not the archive's: the keyword
    index is split into :attr:`fts_shards` FTS5 tables by user
    (:class:`~.keywords.KeywordShards`), dense search scores only the user's vectors, and
    only the returned hits are read back from SQLite (by row id). Recall
    marks what it returns as accessed with :meth:`note_access`, which writes
    in the background instead of on the query's path.
    """

    index: VectorIndex
    #: Keyword-index shards of a new archive; an existing archive keeps the
    #: number it was built with (``keywords.count``). Each shard that holds
    #: records is one FTS5 table (five SQLite tables), parsed by every new
    #: connection, so more shards make connections slower to open.
    fts_shards: int = 128
    _id_chunk = CHUNK
    # look hits up by row id; left to itself the planner walks the user's whole
    # (user_id, ...) index and reads every one of their rows
    _by_rid = " NOT INDEXED"
    #: Access times noted by :meth:`note_access` are written by a background
    #: thread at most about this many seconds later (:attr:`access_flush_seconds`).
    default_access_flush_seconds: float = 1.0
    #: Keyword search ranks a user's matches exactly (FTS5 ``bm25``) up to this
    #: many records; a bigger user's search is bounded (see :meth:`keyword_search`).
    keyword_exact_limit: int = 5_000
    #: In a bounded keyword search, at most this many matches are read per term.
    keyword_term_cap: int = 500

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        db: SQLiteDatabase | None = None,
        dim: int | None = None,
        embeddings_id: str | None = None,
    ) -> None:
        if db is not None and path is not None:
            raise ValueError("pass path= or db=, not both")
        self._owns_db = db is None
        if db is None:
            db = SQLiteDatabase(path)
        self._db = db
        #: The SQLite file (``None`` for an in-memory archive).
        self.path = db.path
        self._user_sizes: dict[str, int] = {}  # records per user, counted once, kept current
        #: Access times noted by :meth:`note_access`, written in the background.
        self.access = AccessTimes(self._write_access, interval=self.default_access_flush_seconds)
        #: The keyword index (FTS5 tables sharded by user).
        self.keywords = KeywordShards(db, shards=self.fts_shards)
        self._closed = False
        try:
            if self._owns_db:
                create_schema(self._db)
            self.audit = AuditLog(self._db)
            self._dim = stored_dim(self._db, dim, self._dim_error)
            if embeddings_id is not None and take_embedder(self._db, embeddings_id):
                self._dim = None
            self.index = self._make_index()
            #: Keeps :attr:`index` in step with the records (outbox, catch-up, rebuild).
            self.index_sync = VectorIndexSync(
                db,
                self.index,
                audit=self.audit,
                lock_path=None
                if self.path is None
                else self.path.with_name(self.path.name + ".lock"),
                vector_size=lambda: self._dim,
                fill_vectors=self._fill_vectors,
            )
            self.keywords.open()
            self.index_sync.open()
        except BaseException:
            if self._owns_db:
                self._db.close()
            raise

    # ---- to override

    def _make_index(self) -> VectorIndex:
        raise NotImplementedError

    def _embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super()._embed(texts)
        if vectors is None:
            raise ValueError("this archive has no embeddings (keyword search only)")
        return vectors

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """New records' vectors (``None`` when the vector index embeds by itself or keeps
        none)."""
        return self._embed_documents(texts) if self.index.needs_vectors else None

    # ---- the vectors' size and embedder

    def _dim_error(self, built: int, got: int) -> ValueError:
        return ValueError(
            f"this archive was built with dim {built}, got {got} — use the same embeddings "
            f"or a new path ({self._db.where})"
        )

    def _fill_vectors(self, entries: list[VectorEntry]) -> list[VectorEntry]:
        """Embed and store the vectors ``entries`` lack (for a rebuild of the index)."""
        missing = [i for i, e in enumerate(entries) if e.vector is None]
        if not missing:
            return entries
        filled = list(entries)
        vectors = self._embed_documents([entries[i].record.text for i in missing])
        with self._db.write() as conn:
            for i, vector in zip(missing, vectors, strict=True):
                conn.execute(
                    "UPDATE records SET vector=? WHERE rid=?", (vector.tobytes(), entries[i].rowid)
                )
                filled[i] = VectorEntry(entries[i].rowid, entries[i].record, vector)
            if self._dim is None:
                write_meta(conn, "dim", str(vectors.shape[1]))
        self._dim = self._dim or int(vectors.shape[1])
        return filled

    # ---- the vector index

    def sync_index(self) -> None:
        """Catch this process's vector index up with the records (any process's writes).

        See :meth:`~.outbox.VectorIndexSync.sync`: what every dense search does first.
        """
        self.index_sync.sync()

    def rebuild_index(self) -> None:
        """Rebuild the vector index from the records in SQLite (stored vectors reused;
        records without one embedded again)."""
        self.index_sync.rebuild()

    # ---- writing

    def _insert(
        self,
        conn: SQLiteTx,
        record: MemoryRecord,
        sources: str,
        metadata: str,
        vector: np.ndarray | None,
    ) -> int:
        values = record_values(record, sources, metadata)
        values["vector"] = vector.tobytes() if vector is not None else None
        rid = conn.insert(
            f"INSERT INTO records ({', '.join(values)}) VALUES ({marks(len(values))})",
            list(values.values()),
        )
        self.keywords.add(conn, rid, record.text, record.user_id)
        if self.index.needs_outbox:
            conn.execute(
                "INSERT OR REPLACE INTO vector_outbox (rid, record_id, op) VALUES (?, ?, 'add')",
                (rid, record.id),
            )
        return rid

    def remove_rows(self, conn: SQLiteTx, rows: Sequence[Sequence[Any]]) -> set[str]:
        """Delete ``(rid, id, text)`` rows with their FTS entries (inside ``conn``'s tx).

        Their row ids go to the deletion log (so every process's vector index
        drops them). Returns the FTS tables they were removed from.
        """
        owners: dict[int, str] = {}
        for chunk in id_chunks([r[0] for r in rows]):
            owners.update(
                conn.execute(
                    f"SELECT rid, user_id FROM records WHERE rid IN ({marks(len(chunk))})", chunk
                ).fetchall()
            )
        tables = self.keywords.remove(conn, [(rid, text, owners[rid]) for rid, _id, text in rows])
        for chunk in id_chunks([r[0] for r in rows]):
            conn.execute(f"DELETE FROM records WHERE rid IN ({marks(len(chunk))})", chunk)
        conn.executemany("INSERT INTO deleted_vectors (rid) VALUES (?)", ((r[0],) for r in rows))
        if self.index.needs_outbox:
            conn.executemany(
                "INSERT OR REPLACE INTO vector_outbox (rid, record_id, op) VALUES (?, ?, 'delete')",
                ((rid, rec_id) for rid, rec_id, _t in rows),
            )
        for rid in owners:
            self._user_sizes.pop(owners[rid], None)
        return tables

    def _before_write(self) -> None:
        self.index_sync.before_write()

    def _commit_add(self, prepared: PreparedRecords, *, page_out: bool) -> list[VectorEntry]:
        with self._db.lock:
            with self._db.write() as conn:
                entries = self.write_prepared(conn, prepared, page_out=page_out)
            self.finish_write(entries)
        return entries

    def _insert_new(
        self, conn: SQLiteTx, items: Sequence[tuple[MemoryRecord, str, str, np.ndarray | None]]
    ) -> list[VectorEntry]:
        first = next((v for *_, v in items if v is not None), None)
        if first is not None and self._dim is None:
            write_meta(conn, "dim", str(first.shape[0]))
        return [VectorEntry(self._insert(conn, r, s, m, v), r, v) for r, s, m, v in items]

    def finish_write(self, entries: Sequence[VectorEntry]) -> None:
        """Index what :meth:`write_prepared` inserted, once its transaction committed."""
        if not entries:
            return
        first = next((e.vector for e in entries if e.vector is not None), None)
        if first is not None and self._dim is None:
            self._dim = int(first.shape[0])
        for entry in entries:
            if entry.record.user_id in self._user_sizes:
                self._user_sizes[entry.record.user_id] += 1

        def update() -> None:
            self.index.add(list(entries))
            self.index.flush()

        self.index_sync.after_commit(
            [e.rowid for e in entries], [e.record.user_id for e in entries], update
        )

    def _add(self, records: Sequence[MemoryRecord], *, page_out: bool) -> list[MemoryRecord]:
        self.index_sync.before_write()
        prepared = self.prepare(records)
        if not prepared.items:
            return []
        with self._db.lock:
            with self._db.write() as conn:
                entries = self.write_prepared(conn, prepared, page_out=page_out)
            self.finish_write(entries)
        return [e.record for e in entries]

    def archive_turns(
        self, turns: Sequence[Turn], *, user_id: str, thread_id: str
    ) -> list[MemoryRecord]:
        """Archive evicted turns as ``turn`` records; returns the newly stored ones.

        Idempotent: record ids are :func:`~langchain_tiered_memory.ids.turn_record_id`
        ``(user_id, thread_id, turn.index)``, so a retried compression stores nothing twice.
        Writes one ``page_out`` audit event with the new turn indices.
        """
        check_user(user_id)
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
        records = [turn_record(t, user_id=user_id, thread_id=thread_id) for t in turns]
        return self._add(records, page_out=True)

    def hook(self, user_id: str, thread_id: str) -> ArchiveTurnHook:
        """An archive hook for one user's thread (for :func:`~langchain_tiered_memory.tiers.buffer.compress`)."""  # noqa: E501
        check_user(user_id)
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
        return ArchiveTurnHook(self, user_id, thread_id)

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        """Replace a stored record (same id, same user) with ``record``.

        When the text changes, the record is re-embedded and gets a new row id
        (so a stale vector index is always detectable on open); other fields
        are updated in place. Writes a ``write`` audit event.

        Raises:
            KeyError: if no record has this id.
            ValueError: if the stored record belongs to another user.
        """
        sources, metadata = encode_record(record)
        self.index_sync.before_write()
        changed = self._stored_for_update(record).text != record.text
        vector = None
        if changed and self.index.needs_vectors:
            vector = self._embed_documents([record.text])[0]
        with self._db.lock:
            with self._db.write() as conn:
                row = conn.execute(
                    "SELECT rid, id, text FROM records WHERE id=?", (record.id,)
                ).fetchone()
                if row is None:
                    raise KeyError(f"record {record.id!r} was deleted meanwhile")
                changed = row[2] != record.text
                if changed and vector is None and self.index.needs_vectors:
                    vector = self._embed_documents([record.text])[0]  # changed meanwhile
                if changed:
                    self.remove_rows(conn, [row])
                    rid = self._insert(conn, record, sources, metadata, vector)
                else:
                    rid = int(row[0])
                    sets = settable_values(record, sources, metadata)
                    conn.execute(
                        f"UPDATE records SET {', '.join(f'{c}=?' for c in sets)} WHERE rid=?",
                        [*sets.values(), rid],
                    )
                audit_replaced(self.audit, conn, record, "update", text_changed=changed)
            if changed:
                old = VectorKey(int(row[0]), record.id)

                def update() -> None:
                    self.index.delete([old])
                    self.index.add([VectorEntry(rid, record, vector)])
                    self.index.flush()

                self.index_sync.after_commit([old.rowid, rid], [record.user_id], update)
        return record

    def put_record(self, record: MemoryRecord) -> MemoryRecord:
        """Store ``record`` under its id whether or not one is stored: insert it, or
        replace the stored one (same user), in one write transaction.

        A key-value write: concurrent puts and deletes of one id never fail,
        and the last to commit wins. The record is embedded before the
        transaction; the replaced row leaves every index. Writes a ``write``
        audit event.

        Raises:
            ValueError: for an invalid record, or an id another user owns.
        """
        sources, metadata = encode_record(record)
        self.index_sync.before_write()
        vector = self._embed_documents([record.text])[0] if self.index.needs_vectors else None
        with self._db.lock:
            with self._db.write() as conn:
                check_owners([record], self._owners([record.id], conn))
                row = conn.execute(
                    "SELECT rid, id, text FROM records WHERE id=?", (record.id,)
                ).fetchone()
                if row is not None:
                    self.remove_rows(conn, [row])
                if vector is not None and self._dim is None:
                    write_meta(conn, "dim", str(vector.shape[0]))
                rid = self._insert(conn, record, sources, metadata, vector)
                audit_replaced(self.audit, conn, record, "put", replaced=row is not None)
            if vector is not None and self._dim is None:
                self._dim = int(vector.shape[0])
            self._user_sizes.pop(record.user_id, None)
            old = [VectorKey(int(row[0]), record.id)] if row is not None else []

            def update() -> None:
                self.index.delete(old)
                self.index.add([VectorEntry(rid, record, vector)])
                self.index.flush()

            self.index_sync.after_commit([*(k.rowid for k in old), rid], [record.user_id], update)
        return record

    def _write_access(self, rows: Sequence[tuple[str, str, int]]) -> int:
        """Write noted ``(record id, user id, micros)`` times; only the user's own records."""
        groups: dict[tuple[str, int], list[str]] = {}
        for record_id, user, when in rows:
            groups.setdefault((user, when), []).append(record_id)
        done = 0
        with self._db.write() as conn:
            for (user, when), ids in groups.items():
                for chunk in id_chunks(ids):
                    done += conn.execute(
                        f"UPDATE records SET last_accessed_at=? WHERE +user_id=? AND id "
                        f"IN ({marks(len(chunk))})",
                        [when, user, *chunk],
                    ).rowcount
        return done

    def _ids_in(self, ids: Sequence[Any], column: str = "r.id") -> tuple[str, list[Any]]:
        return f"{column} IN ({marks(len(ids))})", list(ids)

    def _owner_is(self, column: str = "r.user_id") -> str:
        return f"+{column}=?"  # +: see the note in .rows

    # ---- forgetting

    def _forget(
        self,
        user_id: str,
        select: Callable[[SQLiteTx], Sequence[Row]],
        *,
        whole_user: bool,
    ) -> int:
        """Forget the rows ``select`` picks: the rows, their FTS entries (the FTS index is
        then merged so no segment keeps the old terms), their stored vectors and their
        index entries; with ``secure_delete`` the freed bytes are zeroed, the WAL is
        checkpointed and truncated, and the index file is rewritten."""
        self.index_sync.before_write()
        with self._db.lock:
            with self._db.write() as conn:
                rows = self.forget_rows(conn, user_id, select(conn), whole_user=whole_user)
            self.finish_forget(user_id, rows, whole_user=whole_user)
        return len(rows)

    #: The deletion log keeps this many entries; a process whose vector index
    #: fell further behind compares its ids with the records instead.
    deleted_log_keep: int = 100_000

    def _delete_rows(self, conn: SQLiteTx, user_id: str, rows: Sequence[Row]) -> None:
        """Delete the rows with their FTS entries, merge the shard's segments, log the row
        ids for every process's vector index (pruning the log)."""
        self._user_sizes.pop(user_id, None)
        if rows:
            # merge the shard's segments so none keeps the forgotten terms
            self.keywords.optimize(conn, self.remove_rows(conn, rows))
            newest = conn.execute("SELECT max(seq) FROM deleted_vectors").fetchone()[0] or 0
            cut = int(newest) - self.deleted_log_keep
            if (
                cut > 0
                and conn.execute(
                    "SELECT 1 FROM deleted_vectors WHERE seq<=? LIMIT 1", (cut,)
                ).fetchone()
            ):
                conn.execute("DELETE FROM deleted_vectors WHERE seq<=?", (cut,))
                write_meta(conn, "vectors_pruned_through", str(cut))

    def _purge_indexes(
        self, user_id: str, rows: Sequence[Row], *, whole_user: bool, recovered: bool
    ) -> None:
        """Drop the vectors, rewrite the index file and truncate the WAL (``recovered``:
        the index catches up from the deletion log and is rewritten)."""
        keys = [VectorKey(int(r[0]), str(r[1])) for r in rows]

        def update() -> None:
            self.index.delete(keys)
            self.index.flush(force=True)

        try:
            if keys or recovered:
                self.index_sync.after_commit([k.rowid for k in keys], [user_id], update, force=True)
        finally:
            if rows or whole_user or recovered:
                self._db.checkpoint()

    # ---- reading

    def keyword_search(
        self, query: str, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """BM25 keyword search over a user's records; ``(record, score)``, best first.

        The score is FTS5's ``bm25()`` negated (higher is better). Any user
        text is safe: it is turned into quoted terms ORed together
        (:func:`fts_query`); text without terms returns ``[]``.

        FTS5 ranks the user's matches inside the user's shard and returns the
        best ``n`` row ids; only those records are read. Thread, kind and time
        filters are applied to the ranked ids (over-fetching ``overfetch``
        times, then fourfold, until ``n`` pass or the matches run out), so
        the result is the exact best ``n`` that pass the filter.

        A user with more than :attr:`keyword_exact_limit` records gets a
        bounded search instead, since exact BM25 must score every match (a
        word in a quarter of a million records costs a quarter of a second):
        each term's matches are read newest first, at most
        :attr:`keyword_term_cap` of them, and a record scores the sum of the
        BM25 IDFs of the terms it contains. A term with no more matches than
        the cap (a name, a number, a rare word: what keyword search is for)
        is searched completely; a commoner one only among its newest matches,
        and weighs little anyway. Term frequency and record length are
        ignored there.
        """
        flt = RecordFilter.of(where)
        terms = fts_terms(query)
        if not terms or n <= 0:
            return []
        if not self.keywords.ready(flt.user_id):
            return []  # nobody in this shard has records yet
        if self._user_size(flt.user_id) > self.keyword_exact_limit:
            rids, scores = self.keywords.bounded(
                flt.user_id, terms, total=self._user_size(flt.user_id), cap=self.keyword_term_cap
            )
            return self._resolve_ranked(rids, scores, flt, n)
        limit = int(n) if flt.user_only else int(n) * max(1, self.overfetch)
        while True:
            hits = self.keywords.ranked(flt.user_id, terms, limit=limit)
            found = self._resolve(hits, flt)
            if len(found) >= n or len(hits) < limit:
                return found[:n]
            limit *= 4

    def _user_size(self, user_id: str) -> int:
        """How many records ``user_id`` has (counted once, then kept current by writes)."""
        size = self._user_sizes.get(user_id)
        if size is None:
            size = self.count(user_id)
            self._user_sizes[user_id] = size
        return size

    def _candidates(self, flt: RecordFilter) -> np.ndarray:
        where, params = flt.sql("r")
        # one comma-separated string instead of a Python tuple per row (3x faster; the
        # rows come in the same order, that of the index the filter uses)
        rows = self._db.query(f"SELECT group_concat(r.rid) FROM records r WHERE {where}", params)
        text = rows[0][0] if rows else None
        if not text:
            return np.empty(0, dtype=np.int64)
        return np.fromstring(text, dtype=np.int64, sep=",")

    def dense_search(
        self, query: str | Sequence[float] | np.ndarray, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Vector search over a user's records; ``(record, score)``, best first.

        Exact, except for a user with more records than the index's
        ``ann_min_vectors`` (FAISS: 50,000): their searches by user only use
        an approximate per-user index once it is built (see :meth:`warm_up`).

        ``query`` is a query vector (e.g. from :meth:`embed_query`, so recall
        embeds once) or text. Only records passing the filter are returned:
        indexes with ``exact_filter`` (FAISS) search just the filtered row ids;
        others are asked for ``n * overfetch`` hits, growing fourfold until
        ``n`` pass the filter or the index has no more. Either way every hit is
        re-checked against the records in SQL, so another user's record can
        never come back.
        """
        flt = RecordFilter.of(where)
        if n <= 0:
            return []
        if isinstance(query, str):
            text: str | None = query
            vector = self.embed_query(query) if self.index.needs_vectors else None
        else:
            text, vector = None, query_unit_vector(query, self._dim, self._dim_error)
        self.sync_index()  # take other processes' adds and deletes first
        dense = DenseQuery(flt, text, vector, lambda: self._candidates(flt))
        if self.index.exact_filter:
            return self._resolve(self.index.search(dense, n), flt)[:n]
        total = self.count()
        k = max(n * self.overfetch, n)
        while True:
            hits = self.index.search(dense, k)
            found = self._resolve(hits, flt)
            if len(found) >= n or len(hits) < k or k >= total:
                return found[:n]
            k = min(k * 4, max(total, n))

    def warm_up(self, user_id: str) -> bool:
        """Prepare fast recall for ``user_id`` now; True if an approximate index was built.

        A user with a very large archive (see :meth:`dense_search` and
        :meth:`keyword_search`) is otherwise prepared on their first recall:
        their record count is read then, and their approximate vector index
        is built in a background thread while searches stay exact (and slow)
        meanwhile. A server can call this at start-up for its heaviest users.
        """
        self._user_size(user_id)
        if not isinstance(self.index, WarmableIndex):
            return False
        flt = RecordFilter(user_id)
        return bool(self.index.warm_user(user_id, lambda: self._candidates(flt)))

    # ---- export, lifecycle

    def flush(self) -> None:
        """Write pending access times and the vector index file now (the archive stays open).

        What a server calls when it is told to stop: the next open finds the
        index file complete instead of rebuilding it.
        """
        if self.closed:
            return
        self.flush_access()
        with self._db.lock:
            self.index_sync.write_file(force=True)

    def close(self) -> None:
        """Write pending access times and the vector index, close the database (idempotent)."""
        # before taking the database lock: a flush takes its own lock first
        self.access.close(write=not self._db.closed)
        with self._db.lock:
            if self._db.closed:
                return
            try:
                with self.index_sync.file_lock():
                    self.index_sync.sync()
                    self.index.close()
            finally:
                if self._owns_db:
                    self._db.close()
                self._closed = True

    def __enter__(self: _ArchiveT) -> _ArchiveT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ArchiveTurnHook:
    """The buffer's archive hook bound to one user's thread (see :meth:`BaseSQLiteArchive.hook`).

    Idempotent: turns already archived are skipped, so a retried compression
    may pass the same turn twice.
    """

    archive: BaseSQLiteArchive
    user_id: str
    thread_id: str

    def __call__(self, turns: Sequence[Turn]) -> None:
        """Archive ``turns`` before they leave the buffer."""
        self.archive.archive_turns(turns, user_id=self.user_id, thread_id=self.thread_id)


class SQLiteArchive(BaseSQLiteArchive):
    """The durable archive: records, keyword index and audit log in SQLite, vectors in FAISS.

    Args:
        path: The SQLite file (its directory must exist; ``None``: in memory).
            The FAISS index is ``<path>.faiss`` next to it.
        db: A database to share instead of ``path`` (a backend's; its schema
            already created).
        embeddings: Any LangChain ``Embeddings`` (documents are embedded in
            one ``embed_documents`` batch per :meth:`add`), or ``None``.
        dim: The embedding dimension, if known (checked against an existing
            archive; otherwise learnt from the first batch).
        save_every: Write the FAISS file after this many added vectors
            (default 1: after every add). Deletes always write it at once.

    Raises:
        ValueError: for a path whose directory does not exist, or a ``dim``
            that differs from the one the archive was built with.

    Note:
        Each record's unit vector is also stored in SQLite, so the FAISS file
        is a cache: if it is missing, unreadable or does not hold exactly the
        records' ids (say after a crash between the SQLite commit and the file
        write), it is rebuilt on open from SQLite, without re-embedding.

        Safe for any number of threads and processes on one file: each
        process holds its own FAISS copy and catches it up with the others'
        writes before every dense search and before writing the file (see
        :meth:`~BaseSQLiteArchive.sync_index`).

        ``embeddings=None`` keeps no vectors: dense search finds nothing and
        recall runs on keywords (what a memory without a data directory uses).

    Example:
        >>> import tempfile, pathlib
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = pathlib.Path(tmp.name) / "memory.sqlite"
        >>> archive = SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32))
        >>> archive.add([
        ...     MemoryRecord.new(user_id="ana", kind="fact", text="Ana is allergic to peanuts",
        ...                      id="f1"),
        ...     MemoryRecord.new(user_id="bob", kind="fact", text="Bob is allergic to cats",
        ...                      id="f2"),
        ... ])
        >>> [(r.id, s > 0) for r, s in archive.keyword_search("allergic", "ana")]
        [('f1', True)]
        >>> [r.id for r, _ in archive.dense_search("Bob is allergic to cats", "bob", n=1)]
        ['f2']
        >>> from langchain_core.messages import HumanMessage
        >>> hook = archive.hook("bob", "t1")  # the buffer's archive hook
        >>> hook([Turn(0, (HumanMessage("I adopted a cat"),))])
        >>> hook([Turn(0, (HumanMessage("I adopted a cat"),))])  # a retry stores nothing twice
        >>> [(r.id, r.kind, r.text) for r in archive.records(RecordFilter("bob", kinds="turn"))]
        [('bob:t1:turn:0', 'turn', 'user: I adopted a cat')]
        >>> [e.kind for e in archive.audit.events("bob")]
        ['write', 'page_out']
        >>> sorted(archive.export_user("bob"))
        ['audit_events', 'exported_at', 'records', 'user_id']
        >>> archive.delete_user("ana"), archive.count()
        (1, 2)
        >>> archive.close()
        >>> with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32)) as again:
        ...     [r.text for r in again.records(RecordFilter("bob", kinds="fact"))]
        ['Bob is allergic to cats']
        >>> tmp.cleanup()
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | None,
        db: SQLiteDatabase | None = None,
        dim: int | None = None,
        save_every: int = 1,
    ) -> None:
        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self.embeddings = embeddings
        self._save_every = save_every
        embeddings_id = codec_embeddings_id(embeddings) if embeddings is not None else None
        super().__init__(path, db=db, dim=dim, embeddings_id=embeddings_id)

    @property
    def index_path(self) -> Path | None:
        """The FAISS index file (``<path>.faiss``; ``None`` in memory)."""
        if self.path is None:
            return None
        return self.path.with_name(self.path.name + ".faiss")

    def _make_index(self) -> VectorIndex:
        if self.embeddings is None:
            return NoVectorIndex()
        return FaissIndex(self.index_path, dim=self._dim, save_every=self._save_every)
