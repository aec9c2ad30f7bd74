"""Record-store logic both SQL record stores share (SQLite + FAISS, Postgres + pgvector).

Pure functions over records and the audit log: the owner check that keeps
record ids unique across users, the audit events an add writes, batching of
id lists, and the query-vector check of a dense search.

Example:
    >>> list(chunks([1, 2, 3, 4, 5], 2))
    [[1, 2], [3, 4], [5]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import numpy as np

from langchain_tiered_memory.expiry import is_expired
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sql import Tx
from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.vectors import unit_rows

__all__ = [
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
