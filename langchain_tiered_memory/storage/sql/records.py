"""Record-store logic both SQL record stores share (SQLite + FAISS, Postgres + pgvector).

Pure functions over records and the audit log: the owner check that keeps
record ids unique across users, the audit events an add writes, batching of
id lists, and the query-vector check of a dense search; and :class:`RecordReads`,
the reads the two stores run the same way (by id, a user's records, counts,
the export, the check before an update), each store giving its dialect's id
and owner tests.

Example:
    >>> list(chunks([1, 2, 3, 4, 5], 2))
    [[1, 2], [3, 4], [5]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar

import numpy as np

from langchain_tiered_memory.expiry import is_expired
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter, check_user
from langchain_tiered_memory.storage.codec import from_micros, record_to_dict
from langchain_tiered_memory.storage.sql import Tx
from langchain_tiered_memory.storage.sql.access import AccessTimes
from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.vectors import unit_rows

__all__ = [
    "RecordReads",
    "audit_added",
    "check_owners",
    "chunks",
    "live_hits",
    "live_records",
    "query_unit_vector",
    "same_embedder",
    "wrong_embedder",
]

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


def query_unit_vector(
    query: Any, dim: int | None, dim_error: Callable[[int, int], ValueError]
) -> np.ndarray:
    """A query vector as a unit float32 row, checked against the archive's dimension."""
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    if dim is not None and vector.size != dim:
        raise dim_error(dim, int(vector.size))
    return unit_rows(vector.reshape(1, -1))[0]


class RecordReads:
    """The reads both SQL record stores share, over a ``records r`` table.

    A store provides ``_db`` (with ``query(sql, params)``), ``audit``,
    ``access`` (its :class:`~langchain_tiered_memory.storage.sql.access.AccessTimes`),
    the columns of a row (:attr:`_record_columns`, qualified with ``r.``) and
    their decoder (:meth:`_decode`), the largest id list per statement
    (:attr:`_id_chunk`) and its dialect's id-list and owner tests
    (:meth:`_ids_in`, :attr:`_owner_is`).
    """

    _db: Any
    audit: AuditLog
    access: AccessTimes
    _record_columns: str
    _id_chunk: int
    #: The owner test of a lookup by id (``r.user_id=?``, or SQLite's
    #: ``+r.user_id=?`` that keeps its planner on the id index).
    _owner_is: str = "r.user_id=?"

    @staticmethod
    def _decode(row: Sequence[Any]) -> MemoryRecord:
        """The record of a row of :attr:`_record_columns`."""
        raise NotImplementedError

    def _hydrate(self, row: Sequence[Any]) -> MemoryRecord:
        """The record of a row, with any access time noted but not written yet."""
        record = self._decode(row)
        if self.access.any_pending:
            noted = self.access.pending(record.id)
            if noted is not None and noted[0] == record.user_id:
                record = replace(record, last_accessed_at=from_micros(noted[1]))
        return record

    def _ids_in(self, ids: Sequence[str]) -> tuple[str, list[Any]]:
        """The dialect's ``r.id`` in ``ids`` test and its parameters."""
        raise NotImplementedError

    def get(self, ids: Sequence[str], *, user_id: str | None = None) -> list[MemoryRecord]:
        """The stored records with these ids, in the given order (missing ids skipped)."""
        found: dict[str, MemoryRecord] = {}
        for chunk in chunks(list(dict.fromkeys(ids)), self._id_chunk):
            test, params = self._ids_in(chunk)
            sql = f"SELECT {self._record_columns} FROM records r WHERE {test}"
            if user_id is not None:
                sql += f" AND {self._owner_is}"
                params.append(user_id)
            for row in self._db.query(sql, params):
                found[row[1]] = self._hydrate(row)
        return live_records(found[i] for i in ids if i in found)

    def records(self, where: RecordFilter | str) -> list[MemoryRecord]:
        """The records ``where`` admits (a user id: all of theirs), oldest first."""
        flt = RecordFilter.of(where)
        where, params = flt.sql("r")
        rows = self._db.query(
            f"SELECT {self._record_columns} FROM records r WHERE {where} "
            "ORDER BY r.created_at, r.rid",
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
