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
"""

from langchain_tiered_memory.archive import InMemoryTurnArchive
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
    acompress,
    append_messages,
    compress,
)
from langchain_tiered_memory.clipping import clip_message, clip_text
from langchain_tiered_memory.context import ContextWindow, RecalledMemory, assemble_context
from langchain_tiered_memory.memory import TieredMemory
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

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RATIOS",
    "SECTIONS",
    "ApproximateTokenCounter",
    "BufferState",
    "CallableTokenCounter",
    "ChatModelTokenCounter",
    "CompressionEvent",
    "CompressionTriggers",
    "ContextWindow",
    "ExtractiveSummarizer",
    "InMemoryTurnArchive",
    "LLMSummarizer",
    "OpenAITokenCounter",
    "RecalledMemory",
    "SummarizationError",
    "Summarizer",
    "TieredMemory",
    "TokenBudget",
    "TokenCounter",
    "Turn",
    "__version__",
    "acompress",
    "append_messages",
    "assemble_context",
    "clip_message",
    "clip_text",
    "compress",
    "context_window_for_model",
    "ensure_offline_encodings",
    "group_turns",
    "resolve_token_counter",
]
