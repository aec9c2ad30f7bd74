"""langchain-tiered-memory: memory for LangChain and LangGraph agents that lasts
for months of conversation while every prompt stays inside a fixed token budget.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory import TieredMemory
    >>> memory = TieredMemory(model="gpt-4o-mini", context_window=8192,
    ...                       system_prompt="You are a travel assistant.")
    >>> _ = memory.add_messages([HumanMessage("I'm allergic to peanuts."),
    ...                          AIMessage("Noted.")])
    >>> ctx = memory.build_context()
    >>> sorted(ctx.usage)
    ['buffer', 'core', 'recall', 'system']

The package root has the names most users need: the memory and its store,
its configuration, the values it returns, the storage errors, and - imported
on first use - the adapters:

* LangGraph: :func:`build_memory_graph`, :class:`MemoryNodes`,
  :class:`TieredMemoryStore` (a ``BaseStore``);
* agents: :class:`TieredMemoryMiddleware`, :func:`create_pre_model_hook`;
* tools: :func:`create_retrieve_memory_tool`, :func:`create_core_memory_tools`,
  :func:`create_memgpt_tools`;
* chains: :func:`tiered_history_factory`, :class:`TieredChatMessageHistory`,
  :class:`TieredConversationMemory`.

Everything else lives in its module: ``budget`` (sections, tokens, context
assembly), ``tiers`` (turns, buffer, summarisers, core memory), ``write``
(extraction and the write policy), ``recall`` (the gate and hybrid recall),
``storage`` (the backends), ``integrations`` (the adapters), ``cli``.
"""

from __future__ import annotations

import importlib
from typing import Any

from langchain_tiered_memory.budget.context import ContextWindow, RecalledMemory
from langchain_tiered_memory.budget.sections import TokenBudget, context_window_for_model
from langchain_tiered_memory.budget.tokens import ensure_offline_encodings
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.recall.gate import GateConfig, LLMGate
from langchain_tiered_memory.recall.hybrid import RecallWeights
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.errors import (
    StorageDamagedError,
    StorageError,
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
    StorageUnavailableError,
)
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionEvent, CompressionTriggers
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.tiers.summarize import LLMSummarizer
from langchain_tiered_memory.version import __version__
from langchain_tiered_memory.write.extraction import LLMExtractor

#: Adapters, imported when first used (``from langchain_tiered_memory import X``).
_LAZY = {
    "build_memory_graph": "integrations.langgraph",
    "MemoryNodes": "integrations.langgraph",
    "TieredMemoryStore": "integrations.langgraph_store",
    "TieredMemoryMiddleware": "integrations.agents",
    "create_pre_model_hook": "integrations.agents",
    "create_retrieve_memory_tool": "integrations.tools",
    "create_core_memory_tools": "integrations.tools",
    "create_memgpt_tools": "integrations.tools",
    "tiered_history_factory": "integrations.history",
    "TieredChatMessageHistory": "integrations.history",
    "TieredConversationMemory": "integrations.classic",
    "MemoryResolver": "integrations.resolver",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_tiered_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"langchain_tiered_memory.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CompressionEvent",
    "CompressionTriggers",
    "ContextWindow",
    "CoreFact",
    "CoreMemory",
    "GateConfig",
    "LLMExtractor",
    "LLMGate",
    "LLMSummarizer",
    "MemoryNodes",
    "MemoryRecord",
    "MemoryResolver",
    "MemoryStore",
    "RecallWeights",
    "RecalledMemory",
    "StorageDamagedError",
    "StorageError",
    "StorageFullError",
    "StorageLockedError",
    "StorageReadOnlyError",
    "StorageUnavailableError",
    "TieredChatMessageHistory",
    "TieredConversationMemory",
    "TieredMemory",
    "TieredMemoryMiddleware",
    "TieredMemoryStore",
    "TokenBudget",
    "__version__",
    "build_memory_graph",
    "context_window_for_model",
    "create_core_memory_tools",
    "create_memgpt_tools",
    "create_pre_model_hook",
    "create_retrieve_memory_tool",
    "ensure_offline_encodings",
    "tiered_history_factory",
]
