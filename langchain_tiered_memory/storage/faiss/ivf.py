"""An inverted file over one user's row ids: approximate dense search at scale.

Scoring every vector of a user is exact and fast up to tens of thousands of
records (see :class:`~langchain_tiered_memory.storage.faiss.index.FaissIndex`). A user
with hundreds of thousands of records needs an approximate search:
:class:`InvertedLists` clusters the user's vectors with spherical k-means
(``faiss.Kmeans``) into about ``sqrt(n)`` cells and keeps, per cell, the row
ids and a contiguous copy of the vectors. A query scores the cell centroids,
then the vectors of the closest cells until about ``rows`` vectors are
scored, reading each cell's block once (gathering scattered vectors from the
main index costs several times more memory traffic).

This is the IVF scheme of Jégou et al. (FAISS's ``IndexIVFFlat``), kept per
user so that one user's search never reads another user's vectors. The price
is memory: a big user's vectors are held twice (1.5 GB per million
384-dimension vectors).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(8, 16))
    >>> vectors = np.repeat(centres, 50, axis=0) + 0.05 * rng.normal(size=(400, 16))
    >>> vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype("float32")
    >>> ids = np.arange(1000, 1400)
    >>> lists = InvertedLists.build(ids, vectors)
    >>> len(lists), lists.cells >= 8
    (400, True)
    >>> found, scores = lists.search(vectors[0], k=3, rows=60)
    >>> int(found[0]), bool(scores[0] > 0.99)
    (1000, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["InvertedLists", "assign_cells", "top_k"]

#: Vectors scored per chunk when assigning cells (bounds the temporary matrix).
_ASSIGN_CHUNK = 65_536


def assign_cells(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The index of the closest centroid (largest inner product) of each row of ``vectors``.

    Example:
        >>> import numpy as np
        >>> assign_cells(np.eye(3, dtype="float32"), np.eye(3, dtype="float32")[::-1]).tolist()
        [2, 1, 0]
    """
    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), _ASSIGN_CHUNK):
        block = vectors[start : start + _ASSIGN_CHUNK] @ centroids.T
        out[start : start + len(block)] = np.argmax(block, axis=1)
    return out


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``scores``, highest first (ties: lower position first).

    A partial sort: linear in ``len(scores)``, then only ``k`` values sorted.

    Example:
        >>> import numpy as np
        >>> top_k(np.array([0.1, 0.9, 0.5, 0.9]), 3).tolist()
        [1, 3, 2]
    """
    kk = min(int(k), scores.size)
    if kk <= 0:
        return np.empty(0, dtype=np.int64)
    top = np.argpartition(-scores, kk - 1)[:kk] if kk < scores.size else np.arange(kk)
    return top[np.lexsort((top, -scores[top]))]


class InvertedLists:
    """Row ids grouped by their closest k-means centroid (an inverted file).

    Build it with :meth:`build`; keep it current with :meth:`add` and
    :meth:`remove`; query it with :meth:`search`. Not thread-safe: the owner
    (:class:`~langchain_tiered_memory.storage.faiss.index.FaissIndex`) holds its lock.

    Attributes:
        centroids: ``(cells, dim)`` unit float32 centroids.
        built_size: How many ids it was built from (the owner rebuilds it
            once it has grown well past that, so cells stay balanced).
    """

    def __init__(
        self,
        centroids: np.ndarray,
        lists: list[np.ndarray],
        vectors: list[np.ndarray],
        built_size: int,
    ) -> None:
        if len(lists) != len(vectors) or len(lists) != len(centroids):
            raise ValueError("need one id list and one vector block per centroid")
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self._lists = lists
        self._vectors = vectors
        self.built_size = built_size
        self._size = sum(len(ids) for ids in lists)

    @classmethod
    def build(
        cls,
        ids: np.ndarray,
        vectors: np.ndarray,
        *,
        cells: int | None = None,
        niter: int = 10,
        seed: int = 0,
    ) -> InvertedLists:
        """Cluster ``vectors`` (unit rows, one per id) and group ``ids`` by cell.

        Args:
            ids: Row ids, one per vector.
            vectors: ``(len(ids), dim)`` float32 unit vectors.
            cells: Number of cells (default ``sqrt(len(ids))``, 16 to 4,096).
            niter: k-means iterations.
            seed: k-means seed (builds are reproducible).

        Raises:
            ValueError: if ``ids`` and ``vectors`` differ in length or are empty.
        """
        import faiss

        ids = np.asarray(ids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(ids) == 0 or len(ids) != len(vectors):
            raise ValueError(f"need one vector per id, got {len(ids)} ids, {len(vectors)} vectors")
        n, dim = vectors.shape
        if cells is None:
            cells = min(4096, max(16, int(math.sqrt(n))))
        cells = max(1, min(int(cells), n))
        # 40 training points per cell is FAISS's own floor; more buys little
        sample = min(n, cells * 64)
        rng = np.random.default_rng(seed)
        picks = np.sort(rng.choice(n, size=sample, replace=False)) if sample < n else None
        train = vectors if picks is None else vectors[picks]
        kmeans = faiss.Kmeans(dim, cells, niter=niter, spherical=True, seed=seed, verbose=False)
        kmeans.cp.min_points_per_centroid = 1  # small builds: no warning, same result
        kmeans.train(train)
        centroids = np.asarray(kmeans.centroids, dtype=np.float32)
        cell_of = assign_cells(vectors, centroids)
        order = np.argsort(cell_of, kind="stable")
        bounds = np.searchsorted(cell_of[order], np.arange(cells + 1))
        parts = [order[bounds[c] : bounds[c + 1]] for c in range(cells)]
        return cls(centroids, [ids[p] for p in parts], [vectors[p] for p in parts], n)

    @property
    def cells(self) -> int:
        """Number of cells."""
        return len(self._lists)

    def __len__(self) -> int:
        return self._size

    def ids(self) -> np.ndarray:
        """Every id held, in cell order."""
        if not self._lists:
            return np.empty(0, dtype=np.int64)
        return np.concatenate(self._lists)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """File new ids under their closest centroids."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        cell_of = assign_cells(vectors, self.centroids)
        for cell in np.unique(cell_of):
            mask = cell_of == cell
            self._lists[cell] = np.concatenate([self._lists[cell], ids[mask]])
            self._vectors[cell] = np.concatenate([self._vectors[cell], vectors[mask]])
        self._size += len(ids)

    def remove(self, ids: Iterable[int]) -> int:
        """Drop these ids where present; returns how many were held."""
        drop = np.fromiter(ids, dtype=np.int64)
        if drop.size == 0 or self._size == 0:
            return 0
        removed = 0
        for cell, held in enumerate(self._lists):
            keep = ~np.isin(held, drop)
            if not keep.all():
                removed += int(held.size - keep.sum())
                self._lists[cell] = held[keep]
                self._vectors[cell] = self._vectors[cell][keep]
        self._size -= removed
        return removed

    def search(self, query: np.ndarray, k: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` ``(ids, scores)`` (inner product, best first) in the closest cells.

        Cells are taken whole, closest centroid first, until at least
        ``rows`` vectors have been scored.

        Example:
            >>> import numpy as np
            >>> lists = InvertedLists(
            ...     np.eye(2, dtype="float32"),
            ...     [np.array([1, 2]), np.array([3])],
            ...     [np.array([[1, 0], [0.6, 0.8]], dtype="float32"),
            ...      np.array([[0, 1]], dtype="float32")],
            ...     built_size=3)
            >>> ids, scores = lists.search(np.array([0.0, 1.0], dtype="float32"), k=5, rows=1)
            >>> ids.tolist(), scores.tolist()
            ([3], [1.0])
            >>> lists.search(np.array([0.0, 1.0], dtype="float32"), k=2, rows=2)[0].tolist()
            [3, 2]
        """
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        order = np.argsort(-(self.centroids @ query))
        ids: list[np.ndarray] = []
        scores: list[np.ndarray] = []
        scored = 0
        for cell in order:
            if scored >= max(1, rows):
                break
            if len(self._lists[cell]):
                ids.append(self._lists[cell])
                scores.append(self._vectors[cell] @ query)
                scored += len(self._lists[cell])
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        all_ids, all_scores = np.concatenate(ids), np.concatenate(scores)
        top = top_k(all_scores, k)
        return all_ids[top], all_scores[top]
