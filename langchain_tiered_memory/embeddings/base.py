"""The local embedders' shared base: batching, the in-process LRU, the disk cache, async twins."""

from __future__ import annotations

import logging
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from langchain_tiered_memory.embeddings.cache import VectorCache, text_key

logger = logging.getLogger(__name__)

__all__ = ["LocalEmbeddings", "available_cores", "l2_normalise"]


def available_cores() -> int:
    """CPU cores this process may run on (affinity-aware where supported)."""
    sched_getaffinity = getattr(os, "sched_getaffinity", None)
    if sched_getaffinity is not None:
        return max(1, len(sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class LocalEmbeddings(Embeddings, ABC):
    """Base class of the local embedders: batching, caching, normalisation.

    Subclasses implement :meth:`_embed_batch` (one model call on a batch) and
    :attr:`cache_namespace`. Everything else (the LRU, the disk cache, the
    async twins) lives here.

    Args:
        batch_size: Texts per model call.
        cache_size: Entries kept in the in-process LRU (0 disables it).
        cache_path: SQLite file for a persistent cache (created if missing);
            ``None`` keeps vectors in memory only.

    Attributes:
        texts_embedded: How many texts went through the model so far (cache
            hits are not counted).
        model_calls: How many batches went through the model so far.
    """

    #: Model name (informational; the cache key is :attr:`cache_namespace`).
    model_name: str = ""
    #: True when queries and documents are embedded the same way.
    symmetric: bool = True

    def __init__(
        self,
        *,
        batch_size: int = 32,
        cache_size: int = 8192,
        cache_path: str | Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size}")
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.cache_path = Path(cache_path).expanduser() if cache_path is not None else None
        self.texts_embedded = 0
        self.model_calls = 0
        self._lru: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.RLock()
        self._disk = VectorCache(self.cache_path) if self.cache_path is not None else None

    # -- to implement ---------------------------------------------------------

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector."""

    @property
    @abstractmethod
    def cache_namespace(self) -> str:
        """The model and every setting that changes its vectors (a cache key)."""

    @abstractmethod
    def _embed_batch(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """Embed one batch with the model: an ``(len(texts), dimensions)`` array."""

    # -- LangChain interface --------------------------------------------------

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (stored items) as L2-normalised vectors."""
        return self.embed_array(texts, is_query=False).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query as an L2-normalised vector."""
        return self.embed_array([text], is_query=True)[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (runs in a worker thread)."""
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query` (runs in a worker thread)."""
        return await run_in_executor(None, self.embed_query, text)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed several queries in batches (what :meth:`embed_query` does one by one)."""
        return self.embed_array(texts, is_query=True).tolist()

    # -- core -----------------------------------------------------------------

    def embed_array(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Embed texts as a float32 ``(n, dimensions)`` array (rows L2-normalised).

        Cached vectors are reused; the rest are embedded in batches, each
        distinct text once.
        """
        if isinstance(texts, str):
            raise TypeError("expected a sequence of strings, got a single str")
        texts = list(texts)
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        kind = self._kind(is_query)
        with self._lock:
            missing: dict[str, list[int]] = {}
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
                cached = self._lru_get((kind, text))
                if cached is None:
                    missing.setdefault(text, []).append(i)
                else:
                    out[i] = cached
            if missing and self._disk is not None:
                self._fill_from_disk(missing, out, kind)
            if missing:
                todo = list(missing)
                vectors = self._compute(todo, is_query=is_query)
                for text, vector in zip(todo, vectors, strict=True):
                    out[missing[text]] = vector
                    self._lru_put((kind, text), vector)
                if self._disk is not None and not is_query:
                    # documents only: a query (what a user asked) is not stored data, so
                    # nothing of it stays on disk
                    self._disk.put_many(
                        self._disk_namespace(kind),
                        ((text_key(t), v) for t, v in zip(todo, vectors, strict=True)),
                    )
        return out

    def forget_texts(self, texts: Iterable[str]) -> int:
        """Remove these texts' vectors from the cache, in memory and on disk.

        What a forget calls for every text it deletes, so the cache cannot
        confirm a guessed sentence afterwards. Returns the disk entries removed.

        Example:
            >>> from langchain_tiered_memory.embeddings import MiniLMEmbeddings
            >>> e = MiniLMEmbeddings()
            >>> _ = e.embed_documents(["I am allergic to peanuts"])
            >>> e.forget_texts(["I am allergic to peanuts"]), len(e._lru)
            (0, 0)
        """
        texts = [t for t in texts if isinstance(t, str)]
        if not texts:
            return 0
        wanted = set(texts)
        with self._lock:
            for key in [k for k in self._lru if k[1] in wanted]:
                del self._lru[key]
            if self._disk is None:
                return 0
            return self._disk.forget([text_key(t) for t in wanted])

    def cache_keys(self, texts: Iterable[str]) -> list[str]:
        """The keys the disk cache keeps these texts' vectors under (SHA-256 digests).

        What a forget writes down to finish after a crash, instead of the
        texts. Empty without a disk cache.

        Example:
            >>> from langchain_tiered_memory.embeddings import MiniLMEmbeddings
            >>> MiniLMEmbeddings().cache_keys(["I am allergic to peanuts"])  # no disk cache
            []
        """
        if self._disk is None:
            return []
        return sorted({text_key(t) for t in texts if isinstance(t, str)})

    def forget_cache_keys(self, keys: Iterable[str]) -> int:
        """Remove the vectors the disk cache keeps under these keys (a forget finished
        after a crash: the texts are gone, their keys were written down). Returns the
        entries removed."""
        keys = list(keys)
        with self._lock:
            if self._disk is None or not keys:
                return 0
            return self._disk.forget(keys)

    def _kind(self, is_query: bool) -> str:
        if self.symmetric:
            return ""
        return "query" if is_query else "passage"

    def _disk_namespace(self, kind: str) -> str:
        return f"{self.cache_namespace}/{kind}" if kind else self.cache_namespace

    def _fill_from_disk(self, missing: dict[str, list[int]], out: np.ndarray, kind: str) -> None:
        assert self._disk is not None
        digests = {text: text_key(text) for text in missing}
        found = self._disk.get_many(self._disk_namespace(kind), list(digests.values()))
        for text, digest in digests.items():
            vector = found.get(digest)
            if vector is not None and vector.shape == (self.dimensions,):
                out[missing.pop(text)] = vector
                self._lru_put((kind, text), vector)

    def _compute(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [texts[i] for i in idx]
            result = np.asarray(self._embed_batch(batch, is_query=is_query), dtype=np.float32)
            if result.shape != (len(batch), self.dimensions):
                raise RuntimeError(
                    f"{type(self).__name__}: model returned shape {result.shape},"
                    f" expected {(len(batch), self.dimensions)}"
                )
            vectors[idx] = l2_normalise(result)
            self.texts_embedded += len(batch)
            self.model_calls += 1
        logger.debug("%s embedded %d texts", type(self).__name__, len(texts))
        return vectors

    def _lru_get(self, key: tuple[str, str]) -> np.ndarray | None:
        vector = self._lru.get(key)
        if vector is not None:
            self._lru.move_to_end(key)
        return vector

    def _lru_put(self, key: tuple[str, str], vector: np.ndarray) -> None:
        if self.cache_size == 0:
            return
        self._lru[key] = vector
        self._lru.move_to_end(key)
        while len(self._lru) > self.cache_size:
            self._lru.popitem(last=False)

    def clear_cache(self) -> None:
        """Empty the in-process LRU (the disk cache, if any, is kept)."""
        with self._lock:
            self._lru.clear()

    def close(self) -> None:
        """Close the disk cache, if any."""
        with self._lock:
            if self._disk is not None:
                self._disk.close()
                self._disk = None

    def __enter__(self) -> LocalEmbeddings:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(namespace={self.cache_namespace!r})"
