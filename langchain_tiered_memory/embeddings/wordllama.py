"""WordLlama ``l2_supercat`` (English, 256 dimensions): averaged static token vectors, read
from the ``wordllama`` wheel with ``safetensors`` and ``tokenizers``."""

from __future__ import annotations

import importlib.util
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.embeddings.base import LocalEmbeddings
from langchain_tiered_memory.embeddings.cache import file_sha256

logger = logging.getLogger(__name__)

__all__ = ["WORDLLAMA_INSTALL", "WORDLLAMA_WEIGHTS_SHA256", "WordLlamaEmbeddings"]

WORDLLAMA_INSTALL = "pip install wordllama"
# Bundled in the wordllama 0.4.0.post1 wheel (l2_supercat, 256 dims, float16).
WORDLLAMA_WEIGHTS_FILE = "l2_supercat_256.safetensors"
WORDLLAMA_WEIGHTS_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
WORDLLAMA_TOKENIZER_FILE = "l2_supercat_tokenizer_config.json"

_load_lock = threading.Lock()


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
            f"WordLlamaEmbeddings needs the wordllama package (weights): {WORDLLAMA_INSTALL}"
        )
    return Path(locations[0])


def _load_static(
    weights: Path, tokenizer_path: Path, dims: int, tokenizer_cls: Any
) -> _StaticModel:
    """Read (once per file pair and dims) a safetensors embedding table."""
    from safetensors.numpy import load_file

    stat = weights.stat()
    key = (str(weights.resolve()), str(tokenizer_path.resolve()), dims, stat.st_size, stat.st_mtime)
    with _load_lock:
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
            sha256=file_sha256(weights),
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

    __module__ = "langchain_tiered_memory.embeddings"  # its public home (archives record this name)

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
                f"WordLlamaEmbeddings needs safetensors and tokenizers: {WORDLLAMA_INSTALL}"
            ) from exc
        packaged = weights_path is None
        if weights_path is None or tokenizer_path is None:
            root = _wordllama_dir()
            if weights_path is None:
                weights_path = root / "weights" / WORDLLAMA_WEIGHTS_FILE
            if tokenizer_path is None:
                # The wheel ships ``tokenizers/``; wordllama's own loader looks in
                # ``tokenizer/`` and then goes to the Hugging Face hub.
                candidates = [
                    root / d / WORDLLAMA_TOKENIZER_FILE for d in ("tokenizers", "tokenizer")
                ]
                tokenizer_path = next((p for p in candidates if p.exists()), candidates[0])
        self.weights_path = Path(weights_path)
        self.tokenizer_path = Path(tokenizer_path)
        for path in (self.weights_path, self.tokenizer_path):
            if not path.exists():
                raise FileNotFoundError(f"{path} not found (reinstall: {WORDLLAMA_INSTALL})")
        self.dims = dims
        self.max_length = max_length
        self._model = _load_static(self.weights_path, self.tokenizer_path, dims, Tokenizer)
        if packaged and self._model.sha256 != WORDLLAMA_WEIGHTS_SHA256:
            logger.warning(
                "%s: sha256 %s differs from the reviewed file %s; vectors may differ",
                self.weights_path,
                self._model.sha256,
                WORDLLAMA_WEIGHTS_SHA256,
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
