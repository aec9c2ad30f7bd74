"""The application's chat model in an integration's memories: their size and their fact
extractor.

An integration that is given the chat model the application answers with (the
prebuilt graph, the ``create_react_agent`` pre-model hook) opens its memories
with :func:`memory_options_for`: sized from that model where the memory can
take its window and exact token counter from it, and with it as the fact
extractor (a :class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor`,
batched off the add's thread) when it can give structured output. An
integration that meets the model only at a call (the ``create_agent``
middleware), or is given a :class:`~langchain_tiered_memory.integrations.resolver.MemoryResolver`
whose memories it does not open itself, hands it to each memory with
:class:`AppModelExtractor`. Either
way, ``extractor=`` among the memory options (``"rules"``, ``"learned"``, a
model, an ``Extractor``) is what runs, and a model without structured output
(the echo model, LangChain's fake models) leaves the offline default running, with a
log line.

Example:
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> options = memory_options_for(GenericFakeChatModel(messages=iter([])), {"context_window": 4096})
    >>> options  # no structured output, no window to tell: the options as given
    {'context_window': 4096}
"""  # noqa: E501

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.budget.tokens import memory_model_for
from langchain_tiered_memory.write.model_extractor import ModelExtractor, model_extractor_for

if TYPE_CHECKING:
    from langchain_tiered_memory.integrations.resolver import MemoryResolver
    from langchain_tiered_memory.memory import TieredMemory

__all__ = ["SIZING_OPTIONS", "AppModelExtractor", "memory_options_for"]

#: Memory options that size the memory (the application's model then does not).
SIZING_OPTIONS = frozenset({"model", "context_window", "budget", "token_counter"})


def memory_options_for(model: BaseChatModel | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` for the memories of an integration given the application's chat model.

    * ``model=`` that model, when no sizing option is given and the memory can
      take its window and exact counter from it
      (:func:`~langchain_tiered_memory.budget.tokens.memory_model_for`);
    * ``extractor=`` its :class:`ModelExtractor`, when no ``extractor`` is given and
      it can give structured output (one extractor for all the memories).
    """
    chosen = dict(options)
    if model is None:
        return chosen
    if not SIZING_OPTIONS & set(chosen):
        sizing = memory_model_for(model)
        if sizing is not None:
            chosen["model"] = sizing
    if "extractor" not in chosen:
        extractor = model_extractor_for(None, model)
        if extractor is not None:
            chosen["extractor"] = extractor
    return chosen


class AppModelExtractor:
    """Hands the application's chat model, met at a model call, to a memory as its fact
    extractor - unless the memory options chose one.

    Args:
        chosen: Whether the memory options chose the extractor (``extractor=`` given,
            or memories the application builds itself): then nothing is handed over.

    One :class:`ModelExtractor` per model object (and none for a model without
    structured output); a memory is handed the model once. A memory that already
    extracts with a model (``model=`` a chat model among its options) keeps it.
    """

    @classmethod
    def of(cls, resolver: MemoryResolver) -> AppModelExtractor:
        """For the memories of ``resolver``: chosen when its options name an
        ``extractor``, or when the application builds its memories (a callable source)."""
        source = resolver.source
        builds_its_own = not hasattr(source, "memory")
        return cls(chosen="extractor" in resolver.memory_kwargs or builds_its_own)

    def __init__(self, *, chosen: bool) -> None:
        self.chosen = chosen
        self._lock = threading.Lock()
        self._extractors: dict[int, tuple[Any, ModelExtractor | None]] = {}
        self._handed: weakref.WeakKeyDictionary[TieredMemory, int] = weakref.WeakKeyDictionary()

    def extractor_for(self, model: Any) -> ModelExtractor | None:
        """The extractor on ``model`` (``None``: not a chat model with structured output)."""
        if not isinstance(model, BaseChatModel):
            return None
        with self._lock:
            known = self._extractors.get(id(model))
            if known is not None and known[0] is model:
                return known[1]
        extractor = model_extractor_for(None, model)
        with self._lock:  # the model is kept, so its id is not reused while it is known
            self._extractors[id(model)] = (model, extractor)
        return extractor

    def hand(self, memory: TieredMemory, model: Any) -> None:
        """Make ``model`` the extractor of ``memory`` if nothing else was chosen."""
        if self.chosen or memory.model_extractor is not None:
            return
        with self._lock:
            if self._handed.get(memory) == id(model):
                return
            self._handed[memory] = id(model)
        extractor = self.extractor_for(model)
        if extractor is not None:
            memory.use_model_extractor(extractor)
