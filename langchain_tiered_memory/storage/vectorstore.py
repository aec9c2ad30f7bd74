"""An archive whose vectors live in any LangChain ``VectorStore``.

:class:`VectorStoreArchive` is
:class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive` with the
FAISS file swapped for a vector store (Chroma, PGVector, ...): records, the FTS5
keyword index and the audit log stay in SQLite (the shared
:class:`~langchain_tiered_memory.storage.sqlite.archive.BaseSQLiteArchive`), the
vectors go through :class:`VectorStoreIndex`, a small
:class:`~langchain_tiered_memory.storage.vectors.VectorIndex` adapter.
``MemoryStore(path, vector_store=...)`` builds the whole memory on it.

Each record is stored with ``add_texts([text], metadatas=[{"record_id",
"user_id", "thread_id", "kind", "rowid"}], ids=[record id])`` (``thread_id``
is left out when ``None``, which Chroma rejects) and removed with
``delete([record id])``. The store embeds the texts itself.

Example:
    >>> import tempfile, pathlib
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    >>> archive = VectorStoreArchive(store, pathlib.Path(tmp.name) / "records.sqlite")
    >>> archive.add([MemoryRecord.new(user_id="ana", kind="fact", id="f1",
    ...                               text="Ana is allergic to peanuts")])
    >>> [r.id for r, _ in archive.dense_search("Ana is allergic to peanuts", "ana")]
    ['f1']
    >>> archive.dense_search("Ana is allergic to peanuts", "bob")
    []
    >>> archive.delete(["f1"], user_id="ana"), len(store.store)
    (1, 0)
    >>> archive.close(); tmp.cleanup()
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sql.records import query_unit_vector
from langchain_tiered_memory.storage.sqlite.archive import BaseSQLiteArchive
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.storage.vectors import (
    DenseQuery,
    VectorEntry,
    VectorIndex,
    VectorKey,
)

__all__ = [
    "FilterBuilder",
    "ScoresByVector",
    "VectorStoreArchive",
    "VectorStoreIndex",
    "callable_filter",
    "metadata_filter",
]

logger = logging.getLogger(__name__)

FilterBuilder = Callable[[RecordFilter], Any]


@runtime_checkable
class ScoresByVector(Protocol):
    """A vector store that searches by a query vector with scores (not every store can).

    With one, recall embeds the query once and searches by that vector;
    without, it passes the query text.
    """

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents nearest ``embedding`` with their scores."""
        ...


def callable_filter(flt: RecordFilter) -> Callable[[Document], bool]:
    """A ``filter=`` for stores that take a predicate (``InMemoryVectorStore``).

    Filters by user, thread and kinds from the document metadata (time
    windows are checked against the records afterwards).

    Example:
        >>> keep = callable_filter(RecordFilter("ana", kinds="fact"))
        >>> keep(Document("x", metadata={"user_id": "ana", "kind": "fact"}))
        True
        >>> keep(Document("x", metadata={"user_id": "bob", "kind": "fact"}))
        False
    """

    def keep(doc: Document) -> bool:
        meta = doc.metadata
        return (
            meta.get("user_id") == flt.user_id
            and (flt.thread_id is None or meta.get("thread_id") == flt.thread_id)
            and (flt.kinds is None or meta.get("kind") in flt.kinds)
        )

    return keep


def metadata_filter(flt: RecordFilter) -> dict[str, Any]:
    """A Mongo-style ``filter=`` dict (Chroma, langchain-postgres PGVector, ...).

    Example:
        >>> metadata_filter(RecordFilter("ana"))
        {'user_id': {'$eq': 'ana'}}
        >>> metadata_filter(RecordFilter("ana", thread_id="t1", kinds=("fact",)))
        {'$and': [{'user_id': {'$eq': 'ana'}}, {'thread_id': {'$eq': 't1'}}, {'kind': {'$in': ['fact']}}]}
    """  # noqa: E501
    clauses: list[dict[str, Any]] = [{"user_id": {"$eq": flt.user_id}}]
    if flt.thread_id is not None:
        clauses.append({"thread_id": {"$eq": flt.thread_id}})
    if flt.kinds is not None:
        clauses.append({"kind": {"$in": list(flt.kinds)}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _identity(score: float) -> float:
    return score


class VectorStoreIndex:
    """A :class:`~langchain_tiered_memory.storage.vectors.VectorIndex` over a LangChain store.

    Search asks the store for ``k`` hits with the store's own filter (when a
    ``filter_builder`` is set) and returns them with the row id kept in their
    metadata; the archive re-checks every hit against SQLite and over-fetches
    when too few pass (``exact_filter`` is False), so a store without filter
    support still never leaks another user's records.

    Args:
        store: The vector store (it embeds texts itself).
        filter_builder: Turns a :class:`RecordFilter` into the store's
            ``filter=`` argument, or ``None`` to filter only in Python.
        score_fn: Maps the store's raw score to higher-is-better. Default: the
            store's own relevance function when it has one (Chroma, PGVector
            return distances), else the raw score (``InMemoryVectorStore``
            returns cosine similarity).
        batch_size: Texts per ``add_texts``/``delete`` call.
        verify: Check on open that every record's id is in the store (one
            ``get_by_ids`` per batch; off by default because it reads the
            whole store).
    """

    needs_vectors = False
    exact_filter = False
    needs_outbox = True

    def __init__(
        self,
        store: VectorStore,
        *,
        filter_builder: FilterBuilder | None,
        score_fn: Callable[[float], float] | None = None,
        batch_size: int = 256,
        verify: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.store = store
        self.filter_builder = filter_builder
        self.batch_size = batch_size
        self.verify = verify
        if score_fn is None:
            try:
                score_fn = store._select_relevance_score_fn()
            except NotImplementedError:
                score_fn = _identity
        self.score_fn = score_fn

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """``add_texts`` the records (ids = record ids; re-adding overwrites)."""
        for start in range(0, len(entries), self.batch_size):
            batch = entries[start : start + self.batch_size]
            metadatas = []
            for e in batch:
                meta: dict[str, Any] = {
                    "record_id": e.record.id,
                    "user_id": e.record.user_id,
                    "kind": e.record.kind,
                    "rowid": e.rowid,
                }
                if e.record.thread_id is not None:
                    meta["thread_id"] = e.record.thread_id
                metadatas.append(meta)
            self.store.add_texts(
                [e.record.text for e in batch],
                metadatas=metadatas,
                ids=[e.record.id for e in batch],
            )

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` hits ``(rowid, score)`` from the store, best first."""
        kwargs: dict[str, Any] = {}
        if self.filter_builder is not None:
            kwargs["filter"] = self.filter_builder(query.filter)
        if query.text is not None:
            pairs = self.store.similarity_search_with_score(query.text, k=k, **kwargs)
        else:
            if not isinstance(self.store, ScoresByVector) or query.vector is None:
                raise TypeError(
                    f"{type(self.store).__name__} cannot search by vector with scores; pass the "
                    "query text to dense_search instead"
                )
            pairs = self.store.similarity_search_with_score_by_vector(
                query.vector.tolist(), k=k, **kwargs
            )
        hits = []
        for doc, raw in pairs:
            rowid = doc.metadata.get("rowid")
            if not isinstance(rowid, (int, float)) or isinstance(rowid, bool):
                rowid = -1  # not ours; kept so the caller sees the store is not exhausted
            hits.append((int(rowid), float(self.score_fn(float(raw)))))
        return hits

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """``delete`` these record ids from the store."""
        ids = list(dict.fromkeys(key.record_id for key in keys))
        for start in range(0, len(ids), self.batch_size):
            self.store.delete(ids[start : start + self.batch_size])

    def ids(self) -> set[int] | None:
        """``None``: a generic vector store cannot list its ids."""
        return None

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """With ``verify``: are all records' ids in the store (``get_by_ids``)?"""
        if not self.verify or not expected:
            return None
        wanted = list(expected.values())
        found: set[str] = set()
        try:
            for start in range(0, len(wanted), self.batch_size):
                docs = self.store.get_by_ids(wanted[start : start + self.batch_size])
                found.update(d.id for d in docs if d.id is not None)
        except NotImplementedError:
            logger.warning("%s has no get_by_ids; cannot verify", type(self.store).__name__)
            return None
        missing = len(set(wanted) - found)
        return f"{missing} records are missing from the vector store" if missing else None

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Delete the records' ids from the store and add them all again."""
        self.delete([VectorKey(e.rowid, e.record.id) for e in entries])
        self.add(entries)

    def flush(self, *, force: bool = False) -> None:
        """Nothing to do: the store persists its own writes."""

    def close(self) -> None:
        """Nothing to do: the store is the caller's."""


class VectorStoreArchive(BaseSQLiteArchive):
    """The archive with its vectors in a LangChain ``VectorStore``.

    Same interface as :class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive`
    (``add``, ``hook``, ``dense_search``, ``keyword_search``, ``delete``,
    ``delete_user``, ``export_user``, ...).

    Args:
        vectorstore: Any LangChain vector store; it embeds the texts.
        records_path: The SQLite file for records, keyword index and audit log
            (``None`` with ``db=``, or for an in-memory archive).
        db: A database to share instead of ``records_path`` (a backend's).
        filter_builder: ``"auto"`` (a predicate for ``InMemoryVectorStore``,
            otherwise no store-side filter), ``None`` (filter only in Python,
            over-fetching), or a callable such as :func:`metadata_filter` for
            Chroma and PGVector.
        score_fn: See :class:`VectorStoreIndex`.
        overfetch: Hits asked for per wanted result when filtering in Python.
        batch_size: Texts per store call.
        verify_on_open: Check that every record is in the store on open and
            re-add the store's vectors if not (reads the whole store).

    Note:
        Writes commit to SQLite first, together with an *outbox* row per
        vector to add or delete; the outbox row is cleared once the store
        confirms. If the store call fails (or the process dies), the pending
        writes are replayed on the next write or on open, so a vector is
        never lost and a deleted record's vector never lingers.
        ``delete``/``delete_user`` wipe the SQLite side securely (as in
        ``SQLiteArchive``); what the store keeps on disk after its own
        ``delete`` is up to the store.
    """

    def __init__(
        self,
        vectorstore: VectorStore,
        records_path: str | os.PathLike[str] | None = None,
        *,
        db: SQLiteDatabase | None = None,
        filter_builder: FilterBuilder | Literal["auto"] | None = "auto",
        score_fn: Callable[[float], float] | None = None,
        overfetch: int = 4,
        batch_size: int = 256,
        verify_on_open: bool = False,
    ) -> None:
        if overfetch < 1:
            raise ValueError(f"overfetch must be >= 1, got {overfetch}")
        if filter_builder == "auto":
            builder: FilterBuilder | None = (
                callable_filter if isinstance(vectorstore, InMemoryVectorStore) else None
            )
        else:
            builder = filter_builder
        self.vectorstore = vectorstore
        self.overfetch = overfetch
        self._vector_index = VectorStoreIndex(
            vectorstore,
            filter_builder=builder,
            score_fn=score_fn,
            batch_size=batch_size,
            verify=verify_on_open,
        )
        super().__init__(records_path, db=db)

    def _make_index(self) -> VectorIndex:
        return self._vector_index

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector, from the store's embeddings (if it exposes them)."""
        embeddings = self.vectorstore.embeddings
        if embeddings is None:
            raise ValueError(
                f"{type(self.vectorstore).__name__} does not expose its embeddings; pass the "
                "query text to dense_search"
            )
        return query_unit_vector(embeddings.embed_query(text), self._dim, self._dim_error)
