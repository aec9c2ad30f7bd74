"""The default vector index: FAISS in this process, cached in a file beside the archive.

:class:`FaissIndex` holds every record's unit vector in an exact
``IndexIDMap2(IndexFlatIP)`` (ids are SQLite row ids); big users also get a
per-user approximate index (:mod:`.ivf`). SQLite keeps every vector too, so
the file is a cache: written now and then, caught up from SQLite on open,
and - because each process holds its own copy - caught up before each
search with what other processes added or deleted (see
:class:`~langchain_tiered_memory.storage.sqlite.archive.BaseSQLiteArchive`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from langchain_tiered_memory.storage.faiss.ivf import InvertedLists, top_k
from langchain_tiered_memory.storage.vectors import DenseQuery, VectorEntry, VectorKey

__all__ = ["FaissIndex"]

logger = logging.getLogger(__name__)


class FaissIndex:
    """FAISS vector index: ``IndexIDMap2(IndexFlatIP)`` over unit float32 vectors.

    Inner product of unit vectors is cosine similarity. Ids are the SQLite row
    ids. The index is written in FAISS's own format (``faiss.serialize_index``;
    never pickled) to a temporary file that is fsynced and then
    ``os.replace``-d over ``path``, so the file on disk is always a complete
    index.

    Filtered search scores only the row ids that pass the SQL filter (user,
    thread, kinds, time): up to :attr:`direct_limit` of them directly from
    their stored vectors, more through
    ``SearchParameters(sel=IDSelectorBatch(ids))``. Both are exact: the true
    top ``k`` of the user's filtered records - no over-fetching, no "too few
    passed the filter" retries, and another user's vector can never be a
    result.

    A user with more than :attr:`ann_min_vectors` vectors gets an approximate
    index of their own (:class:`~langchain_tiered_memory.storage.faiss.ivf.InvertedLists`,
    built in a background thread on their first search, or at once by
    :meth:`warm_user`): a search that filters by user only then scores about
    :attr:`ann_probe_rows` of their vectors, those in the k-means cells
    closest to the query. Until it is ready, and for searches with more
    filters, search stays exact.

    Args:
        path: The index file (``None``: in memory only, never written).
        dim: Expected dimension (``None`` until the first vectors arrive).
        save_every: Write the file after this many added vectors - or after
            ``ntotal // save_fraction`` of them, if that is more (deletes and
            :meth:`flush` ``(force=True)`` always write). Writing the file
            costs time in proportion to its size (about 5 s for a million
            384-dimension vectors), so a big index is written less often; a
            crash only leaves the file behind the records, and the next open
            adds the missing vectors from SQLite (no re-embedding).
    """

    needs_vectors = True
    exact_filter = True
    needs_outbox = False
    # An InProcessIndex (add_vectors): each process holds its own copy, and the
    # archive catches it up with the adds and deletes other processes commit.

    #: A big index is written after ``ntotal // save_fraction`` adds at least
    #: (see ``save_every``), so rewriting it costs at most a bounded share of
    #: the adds' time.
    save_fraction = 64

    #: A user with at least this many vectors gets an approximate index.
    ann_min_vectors = 50_000
    #: About this many of a big user's vectors are scored per search.
    ann_probe_rows = 16_384

    def __init__(self, path: Path | None, *, dim: int | None, save_every: int = 1) -> None:
        import faiss

        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self._faiss: Any = faiss
        self.path = path
        self.dim = dim
        self.save_every = save_every
        self._lock = threading.RLock()
        self._index: Any = None
        self._unsaved = 0
        self._load_error: str | None = None
        # per-user approximate indexes, and the builds under way (their log of
        # the adds and removes made meanwhile, replayed when the build ends)
        self._ivf: dict[str, InvertedLists] = {}
        self._ivf_jobs: dict[str, _IvfJob] = {}
        # file writes happen outside _lock, one at a time, never older over newer
        self._write_lock = threading.Lock()
        self._snapshots = 0  # states copied for writing
        self._written = 0  # the newest of them on disk
        if path is not None and path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        try:
            index = self._faiss.read_index(str(self.path))
        except RuntimeError as exc:
            first = (str(exc).strip().splitlines() or ["unreadable"])[-1][:200]
            self._load_error = f"cannot read {self.path.name}: {first}"
            return
        if not isinstance(index, self._faiss.IndexIDMap2):
            self._load_error = f"{self.path.name} holds a {type(index).__name__}, not IndexIDMap2"
        elif self.dim is not None and index.d != self.dim:
            self._load_error = f"{self.path.name} has dim {index.d}, the archive {self.dim}"
        else:
            self._index = index
            self.dim = int(index.d)

    def _new(self, dim: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dim))

    @property
    def ntotal(self) -> int:
        """Number of indexed vectors."""
        with self._lock:
            return 0 if self._index is None else int(self._index.ntotal)

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """Add entries (their vectors must be set)."""
        if not entries:
            return
        if any(e.vector is None for e in entries):
            raise ValueError("FaissIndex needs a vector for every entry")
        vectors = np.stack([cast(np.ndarray, e.vector) for e in entries])
        ids = np.fromiter((e.rowid for e in entries), dtype=np.int64, count=len(entries))
        self.add_vectors(ids, [e.record.user_id for e in entries], vectors)

    def add_vectors(self, ids: np.ndarray, users: Sequence[str], vectors: np.ndarray) -> None:
        """Add unit ``vectors`` under row ``ids``, owned by ``users`` (one each)."""
        if len(ids) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        with self._lock:
            if self._index is None:
                self.dim = int(vectors.shape[1])
                self._index = self._new(self.dim)
            self._index.add_with_ids(vectors, ids)
            self._unsaved += len(ids)
            if self._ivf or self._ivf_jobs:
                self._ivf_add(users, ids, vectors)

    def _ivf_add(self, users: Sequence[str], ids: np.ndarray, vectors: np.ndarray) -> None:
        """File new vectors in their users' approximate indexes (call under the lock)."""
        owners = np.asarray(users, dtype=object)
        for user in set(users) & (self._ivf.keys() | self._ivf_jobs.keys()):
            mask = owners == user
            if (job := self._ivf_jobs.get(user)) is not None:
                job.log.append((ids[mask], vectors[mask]))
            if (lists := self._ivf.get(user)) is not None:
                lists.add(ids[mask], vectors[mask])
                if len(lists) > 2 * lists.built_size and user not in self._ivf_jobs:
                    self._start_ivf_build(user, lists.ids())  # grown: re-cluster

    #: Up to this many candidates are scored directly from their stored vectors.
    direct_limit = 50_000
    #: FAISS's ``reconstruct_batch`` runs an OpenMP parallel loop above 1,000
    #: ids; on a busy machine waking its threads cost 8-12 ms per query
    #: (serially, 1,000 vectors take 0.1 ms), so vectors are fetched in
    #: chunks of at most this many.
    reconstruct_chunk = 1000

    def _reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids`` (row ids), one row each (call under the lock)."""
        step = self.reconstruct_chunk
        if ids.size <= step:
            return cast(np.ndarray, self._index.reconstruct_batch(ids))
        out = np.empty((ids.size, int(self._index.d)), dtype=np.float32)
        for start in range(0, ids.size, step):
            out[start : start + step] = self._index.reconstruct_batch(ids[start : start + step])
        return out

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """Top ``k`` among the query's candidate row ids (cosine, best first).

        Exact, except for a big user's search by user only once their
        approximate index is ready (see the class docstring).
        """
        if query.vector is None:
            raise ValueError("FaissIndex searches by vector; embed the query first")
        if self.ntotal == 0 or k <= 0:
            return []
        xq = np.ascontiguousarray(query.vector.reshape(1, -1), dtype=np.float32)
        user = query.filter.user_id
        if query.filter.user_only and user in self._ivf:
            approximate = self._search_ivf(user, xq[0], k)
            if approximate is not None:
                return approximate
        candidates = np.ascontiguousarray(query.candidates(), dtype=np.int64)
        if candidates.size == 0:
            return []
        if query.filter.user_only and candidates.size >= self.ann_min_vectors:
            with self._lock:
                if user not in self._ivf_jobs:
                    self._start_ivf_build(user, candidates)
        with self._lock:
            if self._index is None:
                return []
            if candidates.size <= self.direct_limit:
                # a user's own records: score just those vectors, not the whole index
                try:
                    vectors = self._reconstruct(candidates)
                except RuntimeError:  # an id missing from the index: fall back to a scan
                    vectors = None
                if vectors is not None:
                    scores = vectors @ xq[0]
                    top = top_k(scores, k)
                    return [(int(candidates[i]), float(scores[i])) for i in top]
            kk = int(min(k, candidates.size, self._index.ntotal))
            if candidates.size == self._index.ntotal:
                # one user owns every vector: a plain scan (the hits are SQL-checked anyway)
                scores, ids = self._index.search(xq, kk)
            else:
                selector = self._faiss.IDSelectorBatch(candidates)
                params = self._faiss.SearchParameters(sel=selector)
                scores, ids = self._index.search(xq, kk, params=params)
        return [(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """Remove the vectors of these row ids."""
        if not keys:
            return
        ids = np.fromiter((key.rowid for key in keys), dtype=np.int64, count=len(keys))
        with self._lock:
            if self._index is not None:
                self._index.remove_ids(ids)
            self._unsaved += 1
            for lists in self._ivf.values():
                lists.remove(ids)
            for job in self._ivf_jobs.values():
                job.log.append((ids, None))

    # ---- per-user approximate indexes

    def _search_ivf(self, user: str, query: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """Top ``k`` of ``user``'s vectors in the cells nearest ``query`` (``None``: no index)."""
        with self._lock:
            lists = self._ivf.get(user)
            if lists is None or self._index is None:
                return None
            ids, scores = lists.search(query, k, self.ann_probe_rows)
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def _start_ivf_build(self, user: str, ids: np.ndarray) -> _IvfJob:
        """Build ``user``'s approximate index from ``ids`` in a thread (call under the lock)."""
        job = _IvfJob()
        self._ivf_jobs[user] = job
        job.thread = threading.Thread(
            target=self._build_ivf, args=(user, np.array(ids, dtype=np.int64), job), daemon=True
        )
        job.thread.start()
        return job

    def _build_ivf(self, user: str, ids: np.ndarray, job: _IvfJob) -> None:
        started = time.perf_counter()
        try:
            with self._lock:
                if self._index is None or self._ivf_jobs.get(user) is not job:
                    return
                vectors = self._reconstruct(ids)
            lists = InvertedLists.build(ids, vectors)
            with self._lock:
                if self._ivf_jobs.get(user) is not job:
                    return  # the index was rebuilt meanwhile
                for changed, new_vectors in job.log:
                    if new_vectors is None:
                        lists.remove(changed)
                    else:
                        lists.add(changed, new_vectors)
                self._ivf[user] = lists
            logger.info(
                "approximate vector index for a user with %d vectors built in %.1f s (%d cells)",
                len(lists),
                time.perf_counter() - started,
                lists.cells,
            )
        except Exception as exc:  # noqa: BLE001 - searches stay exact; the next big one retries
            logger.warning("building a user's approximate vector index failed: %r", exc)
        finally:
            with self._lock:
                if self._ivf_jobs.get(user) is job:
                    del self._ivf_jobs[user]

    def warm_user(self, user: str, candidates: Callable[[], np.ndarray]) -> bool:
        """Build ``user``'s approximate index now if they are big enough; True if they have one.

        ``candidates`` returns the user's row ids (called only when needed).
        """
        with self._lock:
            job = self._ivf_jobs.get(user)
            if job is None and user not in self._ivf:
                ids = np.asarray(candidates(), dtype=np.int64)
                if ids.size >= self.ann_min_vectors:
                    job = self._start_ivf_build(user, ids)
        if job is not None and job.thread is not None:
            job.thread.join()
        return user in self._ivf

    def _drop_ivf(self) -> None:
        """Forget every approximate index and build (call under the lock)."""
        self._ivf.clear()
        self._ivf_jobs.clear()

    def ids(self) -> set[int]:
        """The indexed row ids."""
        with self._lock:
            if self._index is None:
                return set()
            return set(self._faiss.vector_to_array(self._index.id_map).tolist())

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """Compare with the records: readable file, same count, same id set, sample vectors."""
        if self._load_error is not None:
            return self._load_error
        with self._lock:
            if self._index is None:
                name = self.path.name if self.path is not None else "the index"
                return f"{name} is missing" if expected else None
            if self._index.ntotal != len(expected):
                return f"{self._index.ntotal} vectors for {len(expected)} records"
            indexed = self.ids()
            if indexed != set(expected):
                return f"{len(indexed.symmetric_difference(expected))} ids differ"
            for entry in sample:
                if entry.vector is None:
                    return f"record {entry.record.id!r} has no stored vector"
                stored = self._index.reconstruct(entry.rowid)
                if not np.allclose(stored, entry.vector, atol=1e-5):
                    return f"the vector of record {entry.record.id!r} differs"
        return None

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Replace the index with ``entries``."""
        with self._lock:
            self._drop_ivf()
            self._index = None
            self._load_error = None
            if entries:
                self.add(entries)
            elif self.dim is not None:
                self._index = self._new(self.dim)
            self._unsaved += 1

    def flush(self, *, force: bool = False) -> None:
        """Atomically write the index file if there are unsaved changes.

        The index is copied under the lock (``faiss.serialize_index``, at
        memory speed) and the copy is written to disk outside it, so searches
        and adds wait for the copy but not for the disk: about 0.5 s instead
        of 5 s for a million 384-dimension vectors. When this returns, the
        file holds this state or a newer one.
        """
        with self._lock:
            due = max(self.save_every, self.ntotal // self.save_fraction)
            if self._unsaved == 0 or (not force and self._unsaved < due):
                return
            if self.path is None:  # in memory only
                self._unsaved = 0
                return
            pending, self._unsaved = self._unsaved, 0
            self._snapshots += 1
            snapshot = self._snapshots
            data = None if self._index is None else self._faiss.serialize_index(self._index)
        try:
            with self._write_lock:
                if snapshot < self._written:
                    return  # a newer state is on disk already
                if data is None:
                    if self.path.exists():
                        os.remove(self.path)
                else:
                    self._write(data)
                self._written = snapshot
        except BaseException:
            with self._lock:
                self._unsaved += pending  # written by a later flush
            raise

    def _write(self, data: np.ndarray) -> None:
        assert self.path is not None
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data.data)  # serialize_index: one contiguous uint8 array
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if tmp.exists():
                tmp.unlink()
            raise
        try:
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError:  # pragma: no cover - platforms without directory fds
            return
        try:
            os.fsync(dir_fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        """Write pending changes (after any approximate-index build has ended)."""
        with self._lock:
            threads = [job.thread for job in self._ivf_jobs.values() if job.thread is not None]
        for thread in threads:
            thread.join()
        self.flush(force=True)


@dataclass
class _IvfJob:
    """A per-user approximate-index build under way.

    ``log`` holds the adds ``(ids, vectors)`` and removes ``(ids, None)``
    made while it runs, replayed in order when it ends.
    """

    log: list[tuple[np.ndarray, np.ndarray | None]] = field(default_factory=list)
    thread: threading.Thread | None = None


# --------------------------------------------------------------------------- archive
