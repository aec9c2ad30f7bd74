"""The vector half of a SQLite archive: the :class:`VectorIndex` strategy and its values.

The SQLite archive keeps records, their keyword index and their vectors (as
blobs) in SQLite; a :class:`VectorIndex` answers dense searches over them:
:class:`~langchain_tiered_memory.storage.faiss.index.FaissIndex` (the default,
an in-process FAISS index cached in a file) or
:class:`~langchain_tiered_memory.storage.vectorstore.VectorStoreIndex` (any
LangChain ``VectorStore``). :class:`NoVectorIndex` searches nothing: an
archive without embeddings recalls by keywords only.

What an index can do beyond the protocol is a protocol of its own, checked
with ``isinstance``: :class:`InProcessIndex` (this process's own copy, caught
up from SQLite with every process's writes) and :class:`WarmableIndex` (an
approximate per-user index built ahead of a big user's first search).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter

__all__ = [
    "DenseQuery",
    "InProcessIndex",
    "NoVectorIndex",
    "VectorEntry",
    "VectorIndex",
    "VectorKey",
    "WarmableIndex",
    "unit_rows",
]


class VectorKey(NamedTuple):
    """Identifies one stored vector: the SQLite row id and the record id."""

    rowid: int
    record_id: str


@dataclass(frozen=True)
class VectorEntry:
    """A record to index: its row id, the record, and its unit vector.

    ``vector`` is ``None`` for indexes that embed the text themselves
    (``VectorIndex.needs_vectors`` is False).
    """

    rowid: int
    record: MemoryRecord
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class DenseQuery:
    """A dense search request handed to a :class:`VectorIndex`.

    Attributes:
        filter: The records that may be returned.
        text: The query text, when the caller gave text.
        vector: The unit query vector, when known.
        candidates: Returns the row ids passing ``filter`` (a SQL query; only
            called by indexes that filter by id).
    """

    filter: RecordFilter
    text: str | None
    vector: np.ndarray | None
    candidates: Callable[[], np.ndarray]


@runtime_checkable
class VectorIndex(Protocol):
    """The vector half of an archive (the SQLite half is shared).

    Row ids are SQLite's ``rid`` (``AUTOINCREMENT``: never reused, and a record
    whose text changes gets a new one), so "same id set" means "same vectors".

    Attributes:
        needs_vectors: The archive must embed texts and pass vectors.
        exact_filter: ``search`` returns only rows passing the filter (the
            best ``k`` of them); otherwise the archive over-fetches and filters.
        needs_outbox: Index writes can fail independently of SQLite (a remote
            store), so the archive keeps an outbox of pending adds/deletes and
            replays it.
    """

    needs_vectors: bool
    exact_filter: bool
    needs_outbox: bool

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """Index new entries (row ids not indexed yet)."""
        ...

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(rowid, score)`` pairs, best first, higher is better."""
        ...

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """Remove these vectors (unknown keys are ignored)."""
        ...

    def ids(self) -> set[int] | None:
        """The indexed row ids, or ``None`` if the index cannot list them."""
        ...

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """Why the index does not match the records (``None`` if it does)."""
        ...

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Replace the whole index with ``entries``."""
        ...

    def flush(self, *, force: bool = False) -> None:
        """Persist pending changes (``force``: now, whatever the save policy)."""
        ...

    def close(self) -> None:
        """Release resources (after a final flush)."""
        ...


@runtime_checkable
class InProcessIndex(VectorIndex, Protocol):
    """A :class:`VectorIndex` that is this process's own copy of the vectors (FAISS).

    The archive catches it up from SQLite - every process's adds (their
    vectors are stored there) and deletes (the ``deleted_vectors`` log) -
    before each dense search and before its file is written, and writes the
    file under a lock shared by processes.
    """

    def add_vectors(self, ids: np.ndarray, users: Sequence[str], vectors: np.ndarray) -> None:
        """Index unit ``vectors`` under new row ``ids``, owned by ``users`` (one each)."""
        ...


@runtime_checkable
class WarmableIndex(Protocol):
    """An index that can prepare a big user's approximate search ahead of their first recall."""

    def warm_user(self, user: str, candidates: Callable[[], np.ndarray]) -> bool:
        """Build ``user``'s approximate index now if they need one; True if it was built.

        ``candidates`` returns the user's row ids (a SQL query).
        """
        ...


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as contiguous float32.

    Raises:
        ValueError: for NaN or infinite values.

    Example:
        >>> unit_rows(np.array([[3.0, 4.0]])).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    if not np.all(np.isfinite(vectors)):
        raise ValueError("the embeddings returned NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


class NoVectorIndex:
    """A :class:`VectorIndex` that holds nothing: dense search finds nothing.

    What an archive without embeddings uses (recall then runs on keywords).
    """

    needs_vectors = False
    exact_filter = True
    needs_outbox = False

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """Nothing to index."""

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """No hits."""
        return []

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """Nothing to delete."""

    def ids(self) -> set[int] | None:
        """Unknown (nothing to compare)."""
        return None

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """Always consistent."""
        return None

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Nothing to rebuild."""

    def flush(self, *, force: bool = False) -> None:
        """Nothing to write."""

    def close(self) -> None:
        """Nothing to release."""
