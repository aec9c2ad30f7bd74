"""The SQL record stores' contract and what they share (SQLite + FAISS, Postgres + pgvector).

:class:`SQLRecordStore` is the base both record stores subclass: the archive's
public API and what the backend's shared operations call inside their
transactions, with everything the two dialects do alike written once. Beside
it, pure functions over records and the audit log: the owner check that keeps
record ids unique across users, the audit events an add writes, batching of
id lists, and the query-vector check of a dense search.

Example:
    >>> list(chunks([1, 2, 3, 4, 5], 2))
    [[1, 2], [3, 4], [5]]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.expiry import is_expired
from langchain_tiered_memory.records import MemoryRecord, RecordKind
from langchain_tiered_memory.storage.base import (
    EmbeddingCache,
    RecordFilter,
    RecordStore,
    check_user,
)
from langchain_tiered_memory.storage.codec import (
    encode_record,
    from_micros,
    record_to_dict,
    to_micros,
)
from langchain_tiered_memory.storage.sql import Tx
from langchain_tiered_memory.storage.sql.access import AccessTimes
from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.vectors import unit_rows

__all__ = [
    "COLUMNS",
    "RECORD_COLUMNS",
    "R_COLUMNS",
    "PreparedRecords",
    "Row",
    "SQLRecordStore",
    "audit_added",
    "audit_replaced",
    "check_owners",
    "chunks",
    "live_hits",
    "live_records",
    "query_unit_vector",
    "record_values",
    "row_record",
    "same_embedder",
    "settable_values",
    "wrong_embedder",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


def chunks(items: Sequence[_T], size: int) -> Iterable[Sequence[_T]]:
    """``items`` in consecutive slices of at most ``size`` (for ``IN``/``ANY`` lists)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def live_records(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` without the expired ones (every read of a record store goes through this
    or :func:`live_hits`, so nothing expired is returned before the sweep deletes it).

    Example:
        >>> from datetime import datetime, timezone
        >>> old = MemoryRecord.new(user_id="ana", kind="observation", text="x",
        ...                        expires_at=datetime(2000, 1, 1, tzinfo=timezone.utc))
        >>> new = MemoryRecord.new(user_id="ana", kind="observation", text="y")
        >>> [r.text for r in live_records([old, new])]
        ['y']
    """
    now = datetime.now(timezone.utc)
    return [r for r in records if r.expires_at is None or not is_expired(r.expires_at, now)]


def live_hits(hits: Iterable[tuple[MemoryRecord, float]]) -> list[tuple[MemoryRecord, float]]:
    """Search hits ``(record, score)`` without the expired records (see :func:`live_records`)."""
    now = datetime.now(timezone.utc)
    return [(r, s) for r, s in hits if r.expires_at is None or not is_expired(r.expires_at, now)]


def same_embedder(built: str, given: str) -> bool:
    """Whether two embeddings ids name one embedder (see :func:`~..codec.embeddings_id`).

    A class defined in a script is ``__main__.Name`` there and ``script.Name``
    when another process imports the script: the same embedder.

    Example:
        >>> same_embedder("__main__.Hash:size=8", "worker.Hash:size=8")
        True
        >>> same_embedder("a.MiniLM", "b.WordLlama"), same_embedder("a.Hash", "b.Hash")
        (False, False)
    """
    if built == given:
        return True
    for mine, theirs in ((built, given), (given, built)):
        if mine.startswith("__main__."):
            return theirs.endswith("." + mine.removeprefix("__main__."))
    return False


def wrong_embedder(where: str, built: str, given: str) -> ValueError:
    """The error of an archive opened with embeddings other than its vectors came from.

    Example:
        >>> str(wrong_embedder("./memory", "a.MiniLM", "b.WordLlama"))[:60]
        './memory was built with the embeddings a.MiniLM, not b.WordL'
    """
    return ValueError(
        f"{where} was built with the embeddings {built}, not {given}: its vectors could not "
        "be compared with the new ones. Open it with the embedder it was built with "
        "(MemoryStore(path) picks a local one by itself), or start a new directory or "
        "database for the other embedder."
    )


def check_owners(records: Iterable[MemoryRecord], owners: Mapping[str, str]) -> None:
    """Refuse records whose id is already another user's record (``owners``: id -> user).

    Raises:
        ValueError: naming the first such id.
    """
    for record in records:
        owner = owners.get(record.id)
        if owner is not None and owner != record.user_id:
            raise ValueError(
                f"record id {record.id!r} is already used by another user's record; record "
                "ids must be unique across the archive"
            )


def audit_added(
    audit: AuditLog, tx: Tx, records: Sequence[MemoryRecord], *, page_out: bool
) -> None:
    """Write the audit events of an add, one per (user, thread): ``page_out`` for turns
    leaving the buffer (their turn indexes), ``write`` otherwise (ids and kinds)."""
    groups: dict[tuple[str, str | None], list[MemoryRecord]] = {}
    for record in records:
        groups.setdefault(record.namespace, []).append(record)
    for (user_id, thread_id), group in groups.items():
        if page_out:
            payload: dict[str, Any] = {
                "turns": [int(r.metadata.get("turn_index", -1)) for r in group],
                "ids": [r.id for r in group],
            }
            audit.insert(tx, "page_out", user_id=user_id, thread_id=thread_id, payload=payload)
        else:
            kinds: dict[str, int] = {}
            for r in group:
                kinds[r.kind] = kinds.get(r.kind, 0) + 1
            payload = {"op": "add", "ids": [r.id for r in group], "kinds": kinds}
            audit.insert(tx, "write", user_id=user_id, thread_id=thread_id, payload=payload)


#: A record's columns in the ``records`` table of both stores (after its row id, ``rid``),
#: in the order of :func:`record_values` and :func:`row_record`.
RECORD_COLUMNS: tuple[str, ...] = (
    "id",
    "user_id",
    "thread_id",
    "kind",
    "text",
    "created_at",
    "last_accessed_at",
    "importance",
    "sources",
    "metadata",
    "expires_at",
)
#: The columns a record is read from (its row id first), in :func:`row_record`'s order.
COLUMNS = ", ".join(("rid", *RECORD_COLUMNS))
#: :data:`COLUMNS` of the table aliased ``r``.
R_COLUMNS = ", ".join(f"r.{c}" for c in ("rid", *RECORD_COLUMNS))


def row_record(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read with :data:`COLUMNS` (more columns may follow).

    Example:
        >>> row = (1, "r1", "ana", "t1", "fact", "likes tea", 1_700_000_000_000_000, None,
        ...        5.0, "[]", "{}", None)
        >>> row_record(row).text
        'likes tea'
    """
    # recall hydrates a few hundred rows per query: positional arguments (in field
    # order, checked by the round-trip tests) and no JSON parser for empty values
    sources, metadata = row[9], row[10]
    return MemoryRecord(
        row[1],  # id
        row[2],  # user_id
        row[3],  # thread_id
        row[4],  # kind
        row[5],  # text
        from_micros(row[6]),  # created_at
        from_micros(row[7]) if row[7] is not None else None,  # last_accessed_at
        float(row[8]),  # importance
        () if sources == "[]" else tuple(json.loads(sources)),
        {} if metadata == "{}" else json.loads(metadata),
        from_micros(row[11]) if row[11] is not None else None,  # expires_at
    )


def record_values(record: MemoryRecord, sources: str, metadata: str) -> dict[str, Any]:
    """A record's values by column (:data:`RECORD_COLUMNS`; ``sources`` and ``metadata``
    its JSON from :func:`~..codec.encode_record`): what both stores insert. All but
    ``id``, ``user_id`` and ``text`` are what an update in place sets.

    Example:
        >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="tea", id="r1")
        >>> list(record_values(r, "[]", "{}"))[:6]
        ['id', 'user_id', 'thread_id', 'kind', 'text', 'created_at']
    """
    values = (
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
    )
    return dict(zip(RECORD_COLUMNS, values, strict=True))


def settable_values(record: MemoryRecord, sources: str, metadata: str) -> dict[str, Any]:
    """:func:`record_values` an update in place sets (all but the id, user and text)."""
    values = record_values(record, sources, metadata)
    for key in ("id", "user_id", "text"):
        del values[key]
    return values


def audit_replaced(audit: AuditLog, tx: Tx, record: MemoryRecord, op: str, **facts: bool) -> None:
    """Write the ``write`` audit event of an update (``op`` ``update``) or a put (``put``)
    of one record, with ``facts`` such as ``text_changed`` or ``replaced``."""
    payload: dict[str, Any] = {"op": op, "ids": [record.id], **facts}
    audit.insert(tx, "write", user_id=record.user_id, thread_id=record.thread_id, payload=payload)


def query_unit_vector(
    query: Any, dim: int | None, dim_error: Callable[[int, int], ValueError]
) -> np.ndarray:
    """A query vector as a unit float32 row, checked against the archive's dimension."""
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    if dim is not None and vector.size != dim:
        raise dim_error(dim, int(vector.size))
    return unit_rows(vector.reshape(1, -1))[0]


class HasRecord(Protocol):
    """What a record store's write returns per inserted record (its row and record)."""

    @property
    def record(self) -> MemoryRecord:
        """The record inserted."""
        ...


_Entry = TypeVar("_Entry", bound=HasRecord)

#: A row the forget code handles: ``(row id, record id, text)``.
Row = Sequence[Any]


@dataclass(frozen=True)
class PreparedRecords:
    """Records checked and embedded by :meth:`SQLRecordStore.prepare`, ready to insert.

    ``items`` are ``(record, sources JSON, metadata JSON, unit vector or None)``.
    """

    items: tuple[tuple[MemoryRecord, str, str, np.ndarray | None], ...]


class SQLRecordStore(RecordStore, Generic[_Entry]):
    """The contract of a SQL record store, and everything the two dialects do alike.

    Both record stores (:class:`~..sqlite.archive.BaseSQLiteArchive`: SQLite + a
    vector index; :class:`~..postgres.records.PostgresRecordStore`: Postgres +
    pgvector) subclass it. It is the archive's public API
    (:class:`~langchain_tiered_memory.storage.base.RecordStore`) and what the
    shared operations of :class:`~.backend.SQLBackend` call inside their
    transactions: :meth:`prepare` (outside), :meth:`write_prepared`,
    :meth:`set_metadata`, :meth:`find_rows`, :meth:`user_rows`,
    :meth:`forget_rows` (inside), :meth:`finish_write` and
    :meth:`finish_forget` (after the commit).

    Written once here: the reads (by id, a user's records, counts, the
    export), the checks and embedding of an add, the lookups a forget
    makes, metadata patches, access times, the audit events of a forget,
    the ranked hits' records. A dialect gives its database, its columns and
    decoder, its id-list and owner tests, and the parts that differ: how rows
    are inserted and deleted (and what else they index), how a write commits
    (locks, retries), and the searches. ``tests/conformance/test_record_stores.py``
    runs one set of cases on both.
    """

    _db: Any
    audit: AuditLog
    access: AccessTimes
    #: Embeds records for dense search (``None``: keyword search only).
    embeddings: Embeddings | None = None
    #: The largest id list per statement.
    _id_chunk: int
    #: What locks a row read before it is changed (Postgres: ``FOR UPDATE``).
    _lock_row: str = ""
    #: How hits are looked up by row id (SQLite: ``NOT INDEXED``, see :meth:`_resolve`).
    _by_rid: str = ""
    #: A search over-fetches this many times ``n`` when a filter may drop hits.
    overfetch: int = 4
    _closed: bool = False
    _dim: int | None = None

    # -- the dialect -------------------------------------------------------------------

    def _ids_in(self, ids: Sequence[Any], column: str = "r.id") -> tuple[str, list[Any]]:
        """The dialect's ``column`` in ``ids`` test and its parameters."""
        raise NotImplementedError

    def _owner_is(self, column: str = "r.user_id") -> str:
        """The owner test of a lookup by id (SQLite's ``+`` keeps its planner on the id
        index)."""
        return f"{column}=?"

    def _insert_new(
        self, tx: Any, items: Sequence[tuple[MemoryRecord, str, str, np.ndarray | None]]
    ) -> list[_Entry]:
        """Insert prepared records none of which is stored, inside ``tx``."""
        raise NotImplementedError

    def _commit_add(self, prepared: PreparedRecords, *, page_out: bool) -> list[_Entry]:
        """Write prepared records in a transaction of their own, then :meth:`finish_write`."""
        raise NotImplementedError

    def finish_write(self, entries: Sequence[_Entry]) -> None:
        """After :meth:`write_prepared`'s transaction committed: index what it inserted."""
        raise NotImplementedError

    def _delete_rows(self, tx: Any, user_id: str, rows: Sequence[Row]) -> None:
        """Delete a user's rows and their index entries inside ``tx``."""
        raise NotImplementedError

    def _forget(
        self, user_id: str, select: Callable[[Any], Sequence[Row]], *, whole_user: bool
    ) -> int:
        """Forget the rows ``select`` picks in a transaction of its own (:meth:`forget_rows`),
        then :meth:`finish_forget`; returns how many."""
        raise NotImplementedError

    def _purge_indexes(
        self, user_id: str, rows: Sequence[Row], *, whole_user: bool, recovered: bool
    ) -> None:
        """After a forget committed: purge what the dialect's indexes keep of the rows."""
        raise NotImplementedError

    def _write_access(self, rows: Sequence[tuple[str, str, int]]) -> int:
        """Write noted ``(record id, user id, micros)`` times; only the user's own records."""
        raise NotImplementedError

    def _dim_error(self, built: int, got: int) -> ValueError:
        """The error of a vector whose size is not the archive's."""
        raise NotImplementedError

    def keyword_search(
        self, query: str, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """BM25 keyword hits ``(record, score)`` among the records ``where`` admits (a user
        id: all of theirs), best first; text without terms finds nothing."""
        raise NotImplementedError

    def dense_search(
        self, query: Any, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Vector hits ``(record, cosine)`` for a query vector or text among the records
        ``where`` admits, best first."""
        raise NotImplementedError

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        """Replace a stored record (same id, same user), re-indexed for both searches.

        Raises:
            KeyError: if no record has this id.
            ValueError: if the stored record belongs to another user.
        """
        raise NotImplementedError

    def put_record(self, record: MemoryRecord) -> MemoryRecord:
        """Insert ``record``, or replace the stored one with its id (same user), in one
        transaction: concurrent puts and deletes of one id never fail, the last to commit
        wins.

        Raises:
            ValueError: for an invalid record, or an id another user owns.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Write what is kept in memory and release what the store holds (idempotent)."""
        raise NotImplementedError

    # -- vectors -----------------------------------------------------------------------

    @property
    def dim(self) -> int | None:
        """The vectors' dimension (``None`` until the first vector is stored)."""
        return self._dim

    def _unit_vectors(self, raw: Any, expected: int) -> np.ndarray:
        """The embedder's answer for ``expected`` texts as unit float32 rows, checked."""
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ValueError(
                f"the embeddings returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {expected} texts"
            )
        dim = self.dim
        if dim is not None and vectors.shape[1] != dim:
            raise self._dim_error(dim, int(vectors.shape[1]))
        return unit_rows(vectors)

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """The unit vectors of new records' texts, in one ``embed_documents`` batch
        (``None``: this store keeps none)."""
        if self.embeddings is None:
            return None
        return self._unit_vectors(self.embeddings.embed_documents(list(texts)), len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector for ``text`` (``embeddings.embed_query``): embed once,
        then search with the vector (recall also needs it for scoring)."""
        if self.embeddings is None:
            raise ValueError("this archive has no embeddings (keyword search only)")
        raw = np.asarray(self.embeddings.embed_query(text), dtype=np.float32).reshape(1, -1)
        return self._unit_vectors(raw, 1)[0]

    # -- reading -----------------------------------------------------------------------

    def _hydrate(self, row: Sequence[Any]) -> MemoryRecord:
        """The record of a row, with any access time noted but not written yet."""
        record = row_record(row)
        if self.access.any_pending:
            noted = self.access.pending(record.id)
            if noted is not None and noted[0] == record.user_id:
                record = replace(record, last_accessed_at=from_micros(noted[1]))
        return record

    def get(self, ids: Sequence[str], *, user_id: str | None = None) -> list[MemoryRecord]:
        """The stored records with these ids, in the given order (missing ids skipped)."""
        found: dict[str, MemoryRecord] = {}
        for chunk in chunks(list(dict.fromkeys(ids)), self._id_chunk):
            test, params = self._ids_in(chunk)
            sql = f"SELECT {R_COLUMNS} FROM records r WHERE {test}"
            if user_id is not None:
                sql += f" AND {self._owner_is()}"
                params.append(user_id)
            for row in self._db.query(sql, params):
                found[row[1]] = self._hydrate(row)
        return live_records(found[i] for i in ids if i in found)

    def records(self, where: RecordFilter | str) -> list[MemoryRecord]:
        """The records ``where`` admits (a user id: all of theirs), oldest first."""
        flt = RecordFilter.of(where)
        where, params = flt.sql("r")
        rows = self._db.query(
            f"SELECT {R_COLUMNS} FROM records r WHERE {where} ORDER BY r.created_at, r.rid",
            params,
        )
        return live_records(self._hydrate(row) for row in rows)

    def count(self, user_id: str | None = None) -> int:
        """Number of records (of one user, or all)."""
        if user_id is None:
            return int(self._db.query("SELECT count(*) FROM records")[0][0])
        return int(self._db.query("SELECT count(*) FROM records WHERE user_id=?", [user_id])[0][0])

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about ``user_id``, JSON-ready: records and audit events.

        Returns ``{"user_id", "exported_at", "records": [record_to_dict(...)],
        "audit_events": [AuditEvent.to_dict()]}`` (vectors are not included).
        """
        check_user(user_id)
        return {
            "user_id": user_id,
            "exported_at": datetime.now(timezone.utc).isoformat(),
            "records": [record_to_dict(r) for r in self.records(user_id)],
            "audit_events": [e.to_dict() for e in self.audit.events(user_id)],
        }

    def _stored_for_update(self, record: MemoryRecord) -> MemoryRecord:
        """The stored record ``record`` replaces (same id, same user).

        Raises:
            KeyError: if no record has this id.
            ValueError: if the stored record belongs to another user.
        """
        current = self.get([record.id])
        if not current:
            raise KeyError(f"no record with id {record.id!r}; add() it first")
        if current[0].user_id != record.user_id:
            raise ValueError(f"record {record.id!r} belongs to another user")
        return current[0]

    def _resolve(
        self, hits: Sequence[tuple[int, float]], flt: RecordFilter
    ) -> list[tuple[MemoryRecord, float]]:
        """The records of ``(row id, score)`` hits that pass ``flt`` (checked in SQL), in hit
        order: every search's hits go through this, so another user's record never comes
        back."""
        best: dict[int, float] = {}
        for rid, score in hits:
            best.setdefault(int(rid), float(score))
        where, params = flt.sql("r")
        found: dict[int, MemoryRecord] = {}
        for chunk in chunks(list(best), self._id_chunk):
            test, ids = self._ids_in(chunk, "r.rid")
            rows = self._db.query(
                f"SELECT {R_COLUMNS} FROM records r{self._by_rid} WHERE {test} AND {where}",
                [*ids, *params],
            )
            found.update((int(row[0]), self._hydrate(row)) for row in rows)
        return live_hits((found[rid], score) for rid, score in best.items() if rid in found)

    def _resolve_ranked(
        self, rids: np.ndarray, scores: np.ndarray, flt: RecordFilter, n: int
    ) -> list[tuple[MemoryRecord, float]]:
        """The best ``n`` records passing ``flt`` of hits ranked best first (a bounded
        keyword search's), read a slice at a time until ``n`` pass."""
        found: list[tuple[MemoryRecord, float]] = []
        step = int(n) if flt.user_only else int(n) * max(1, self.overfetch)
        for start in range(0, rids.size, step):
            part = slice(start, start + step)
            chunk = zip(rids[part].tolist(), scores[part].tolist(), strict=True)
            found += self._resolve(list(chunk), flt)
            if len(found) >= n:
                break
        return found[:n]

    # -- writing -----------------------------------------------------------------------

    def _owners(self, ids: Sequence[str], tx: Any = None) -> dict[str, str]:
        """Who owns the stored ones of these record ids (id -> user; inside ``tx`` if given)."""
        owners: dict[str, str] = {}
        for chunk in chunks(list(ids), self._id_chunk):
            test, params = self._ids_in(chunk, "id")
            sql = f"SELECT id, user_id FROM records WHERE {test}"
            rows = (
                tx.execute(sql, params).fetchall()
                if tx is not None
                else self._db.query(sql, params)
            )
            owners.update((str(i), str(u)) for i, u in rows)
        return owners

    def prepare(self, records: Sequence[MemoryRecord]) -> PreparedRecords:
        """Check records and embed the new ones, outside any transaction.

        The slow half of an add; :meth:`write_prepared` is the other half,
        inside a write transaction that may also hold other stores' changes.

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
        vectors = self._embed([r.text for r, _, _ in new]) if new else None
        return PreparedRecords(
            tuple(
                (record, sources, metadata, vectors[i] if vectors is not None else None)
                for i, (record, sources, metadata) in enumerate(new)
            )
        )

    def write_prepared(
        self, tx: Any, prepared: PreparedRecords, *, page_out: bool = False
    ) -> list[_Entry]:
        """Insert prepared records inside ``tx`` (ids stored meanwhile are skipped) with
        their audit events; returns what was inserted. Call :meth:`finish_write` after
        the commit."""
        if not prepared.items:
            return []
        owners = self._owners([item[0].id for item in prepared.items], tx)
        check_owners([item[0] for item in prepared.items], owners)
        entries = self._insert_new(tx, [i for i in prepared.items if i[0].id not in owners])
        audit_added(self.audit, tx, [e.record for e in entries], page_out=page_out)
        return entries

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Store records (idempotent by id) and index them for both searches, in one commit.

        Texts of new records are embedded in one ``embed_documents`` batch
        first. A record whose id is already stored is skipped (use
        :meth:`update_record` to change it).

        Raises:
            ValueError: for an invalid record, an id owned by another user, or
                embeddings of the wrong dimension (nothing is stored).
        """
        self._add(records, page_out=False)

    def _add(self, records: Sequence[MemoryRecord], *, page_out: bool) -> list[MemoryRecord]:
        self._before_write()
        prepared = self.prepare(records)
        if not prepared.items:
            return []
        return [e.record for e in self._commit_add(prepared, page_out=page_out)]

    def _before_write(self) -> None:
        """What a write outside the shared operations does first (nothing here)."""

    def set_metadata(self, tx: Any, record_id: str, user_id: str, patch: Mapping[str, Any]) -> bool:
        """Merge ``patch`` into a record's metadata inside ``tx`` (no re-embedding); False
        when the user has no record with this id."""
        owner = self._owner_is("user_id")
        row = tx.execute(
            f"SELECT metadata FROM records WHERE id=? AND {owner}{self._lock_row}",
            (record_id, user_id),
        ).fetchone()
        if row is None:
            return False
        metadata = {**json.loads(row[0]), **patch}
        tx.execute(
            f"UPDATE records SET metadata=? WHERE id=? AND {owner}",
            (json.dumps(metadata, ensure_ascii=False), record_id, user_id),
        )
        return True

    # -- access times ------------------------------------------------------------------

    def touch(
        self, ids: Sequence[str], at: datetime | None = None, *, user_id: str | None = None
    ) -> int:
        """Set ``last_accessed_at`` (default: now) on these records; returns how many.

        Written before returning; see :meth:`note_access` for the batched form
        recall uses.
        """
        when = to_micros(at or datetime.now(timezone.utc))
        wanted = list(dict.fromkeys(ids))
        self.access.drop(user_id or "", wanted)  # this later, explicit time wins over a noted one
        done = 0
        with self._db.write() as tx:
            for chunk in chunks(wanted, self._id_chunk):
                test, ids_params = self._ids_in(chunk, "id")
                sql = f"UPDATE records SET last_accessed_at=? WHERE {test}"
                params: list[Any] = [when, *ids_params]
                if user_id is not None:
                    sql += f" AND {self._owner_is('user_id')}"
                    params.append(user_id)
                done += tx.execute(sql, params).rowcount
        return done

    def note_access(self, ids: Sequence[str], at: datetime | None = None, *, user_id: str) -> None:
        """Mark ``user_id``'s records as accessed at ``at`` (default: now), without waiting.

        What recall calls for the records it returns. Unlike :meth:`touch`, the
        caller does not wait for a write transaction: the access times are
        kept in memory, written in one batch by a background thread within
        about :attr:`access_flush_seconds`, and applied meanwhile to every
        record this store returns (searches, :meth:`get`, :meth:`records`).
        Access times only drive recall's recency signal; a crash loses at
        most the last second or so of them, never a record. Ids of other users
        are ignored when written.

        Raises:
            ValueError: for an invalid ``user_id`` or a closed store.
        """
        check_user(user_id)
        if self.closed:
            raise ValueError(f"the archive {self._db.where} is closed")
        self.access.note(ids, user_id, to_micros(at or datetime.now(timezone.utc)))

    @property
    def access_flush_seconds(self) -> float:
        """Seconds between the background writes of noted access times."""
        return self.access.interval

    @access_flush_seconds.setter
    def access_flush_seconds(self, seconds: float) -> None:
        self.access.interval = seconds

    def flush_access(self) -> int:
        """Write the access times noted by :meth:`note_access` now; returns how many rows.

        On failure the noted times are kept for the next attempt.
        """
        return self.access.flush()

    # -- forgetting --------------------------------------------------------------------

    def find_rows(
        self,
        tx: Any,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        kinds: Sequence[RecordKind] = (),
    ) -> list[tuple[Row, MemoryRecord]]:
        """A user's ``(rid, id, text)`` rows with their records, inside ``tx``.

        By ``ids`` (missing ones skipped), else of ``kinds``, else all of them.
        """
        found: list[Sequence[Any]] = []
        columns = R_COLUMNS
        if ids is not None:
            for chunk in chunks(list(dict.fromkeys(ids)), self._id_chunk):
                test, params = self._ids_in(chunk)
                found += tx.execute(
                    f"SELECT {columns} FROM records r WHERE {self._owner_is()} AND {test}",
                    [user_id, *params],
                ).fetchall()
        else:
            where, params = RecordFilter(user_id, kinds=kinds or None).sql("r")
            found = tx.execute(f"SELECT {columns} FROM records r WHERE {where}", params).fetchall()
        return [((int(r[0]), str(r[1]), str(r[5])), row_record(r)) for r in found]

    def user_rows(self, tx: Any, user_id: str, *, thread_id: str | None = None) -> list[Row]:
        """Every ``(rid, id, text)`` row of a user (or of one of their threads), inside ``tx``."""
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
        self, tx: Any, user_id: str, rows: Sequence[Row], *, whole_user: bool
    ) -> list[Row]:
        """Delete a user's ``(rid, id, text)`` rows and every index entry of them inside
        ``tx``; with ``whole_user`` their audit events too (one ``delete`` event that counts
        the records stays). Call :meth:`finish_forget` after the commit."""
        rows = list(rows)
        self._delete_rows(tx, user_id, rows)
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
        """After a forget committed: purge the indexes of the deleted rows, their noted
        access times and their texts' embedding-cache entries.

        ``recovered`` (the forget's process died after the commit): there are
        no rows; the indexes catch up by themselves and the cache entries go by
        ``cache_keys``. Every step may run twice.
        """
        self._purge_indexes(user_id, rows, whole_user=whole_user, recovered=recovered)
        self.access.drop(user_id, None if whole_user else [str(r[1]) for r in rows])
        self._forget_texts([str(r[2]) for r in rows if r[2] is not None], cache_keys)
        logger.info("deleted %d records of user %s", len(rows), user_id)

    def delete(self, ids: Sequence[str], *, user_id: str) -> int:
        """Forget these records of ``user_id`` (ids of other users are ignored): the rows,
        their keyword and vector index entries, their embedding-cache entries. Writes a
        ``delete`` audit event with the ids only. Returns how many were deleted."""
        check_user(user_id)
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0

        def select(tx: Any) -> list[Row]:
            return [row for row, _ in self.find_rows(tx, user_id, ids=wanted)]

        return self._forget(user_id, select, whole_user=False)

    def delete_user(self, user_id: str) -> int:
        """Forget every record of ``user_id`` with their index entries, and their audit
        events (one ``delete`` event that counts the records stays); returns how many
        records. The record store only: :meth:`~.backend.SQLBackend.forget_user` forgets
        everything."""
        check_user(user_id)
        return self._forget(user_id, lambda tx: self.user_rows(tx, user_id), whole_user=True)

    def cache_keys(self, texts: Sequence[str]) -> list[str]:
        """The keys the embedder's disk cache keeps these texts' vectors under (digests;
        none without such a cache)."""
        cache = self.embeddings
        return list(cache.cache_keys(texts)) if isinstance(cache, EmbeddingCache) and texts else []

    def _forget_texts(self, texts: Sequence[str], cache_keys: Sequence[str] = ()) -> None:
        """Drop forgotten texts' vectors from the embedder's cache (memory and disk)."""
        cache = self.embeddings
        if not isinstance(cache, EmbeddingCache):
            return
        if texts:
            cache.forget_texts(list(texts))
        if cache_keys:
            cache.forget_cache_keys(cache_keys)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed or self._db.closed

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._db.where!r})"
