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

Integrations live in their own modules (imported on use):
``langchain_tiered_memory.graph`` (LangGraph nodes and the prebuilt graph),
``.agents`` (``create_agent`` middleware, ``pre_model_hook``), ``.tools``
(``retrieve_memory`` and core memory tools), ``.chains`` (drop-in chat history
and ``ConversationSummaryBufferMemory`` replacement).
"""

from langchain_tiered_memory.budget import (
    DEFAULT_RATIOS,
    SECTIONS,
    TokenBudget,
    context_window_for_model,
)
from langchain_tiered_memory.buffer import (
    BufferState,
    CompressionEvent,
    CompressionTriggers,
    InMemoryTurnArchive,
    acompress,
    append_messages,
    compress,
)
from langchain_tiered_memory.clipping import clip_message, clip_text
from langchain_tiered_memory.context import ContextWindow, RecalledMemory, assemble_context
from langchain_tiered_memory.core import CoreFact, CoreMemory
from langchain_tiered_memory.extraction import LLMExtractor, RuleBasedExtractor
from langchain_tiered_memory.gate import (
    GateConfig,
    GateDecision,
    LLMGate,
    decide_recall,
    should_recall,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.recall import Recaller, RecallWeights
from langchain_tiered_memory.records import MemoryRecord, ScoredRecord
from langchain_tiered_memory.resolver import MemoryResolver
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.storage.sql.audit import AuditEvent, AuditLog
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.storage.vectorstore import VectorStoreArchive
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    SummarizationError,
    Summarizer,
)
from langchain_tiered_memory.tokens import (
    ApproximateTokenCounter,
    CallableTokenCounter,
    ChatModelTokenCounter,
    OpenAITokenCounter,
    TokenCounter,
    ensure_offline_encodings,
    resolve_token_counter,
)
from langchain_tiered_memory.turns import Turn, group_turns
from langchain_tiered_memory.writer import MemoryWriter

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RATIOS",
    "SECTIONS",
    "ApproximateTokenCounter",
    "AuditEvent",
    "AuditLog",
    "BufferState",
    "CallableTokenCounter",
    "ChatModelTokenCounter",
    "CompressionEvent",
    "CompressionTriggers",
    "ContextWindow",
    "CoreFact",
    "CoreMemory",
    "ExtractiveSummarizer",
    "GateConfig",
    "GateDecision",
    "InMemoryTurnArchive",
    "LLMExtractor",
    "LLMGate",
    "LLMSummarizer",
    "MemoryRecord",
    "MemoryResolver",
    "MemoryStore",
    "MemoryWriter",
    "OpenAITokenCounter",
    "RecallWeights",
    "RecalledMemory",
    "Recaller",
    "RuleBasedExtractor",
    "SQLiteArchive",
    "ScoredRecord",
    "StorageError",
    "SummarizationError",
    "Summarizer",
    "TieredMemory",
    "TokenBudget",
    "TokenCounter",
    "Turn",
    "VectorStoreArchive",
    "__version__",
    "acompress",
    "append_messages",
    "assemble_context",
    "clip_message",
    "clip_text",
    "compress",
    "context_window_for_model",
    "decide_recall",
    "ensure_offline_encodings",
    "group_turns",
    "resolve_token_counter",
    "should_recall",
]
