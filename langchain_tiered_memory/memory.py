"""The facade: :class:`TieredMemory`.

One object per conversation thread that keeps the pinned system prompt, the
summary buffer, and hands evicted turns to the archive; ``build_context``
assembles a prompt that always fits the budget.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> memory = TieredMemory(model="gpt-4o-mini", context_window=4096,
    ...                       system_prompt="You are a helpful assistant.")
    >>> _ = memory.add_messages([HumanMessage("I'm allergic to peanuts."),
    ...                          AIMessage("Noted - no peanuts.")])
    >>> ctx = memory.build_context()
    >>> ctx.messages[0].content
    'You are a helpful assistant.'
    >>> ctx.total_tokens <= memory.budget.input_budget
    True
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from langchain_tiered_memory.archive import InMemoryTurnArchive
from langchain_tiered_memory.budget import TokenBudget
from langchain_tiered_memory.buffer import (
    ArchiveHook,
    BufferState,
    CompressionEvent,
    CompressionResult,
    CompressionTriggers,
    acompress,
    append_messages,
    compress,
)
from langchain_tiered_memory.context import ContextWindow, RecalledMemory, assemble_context
from langchain_tiered_memory.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from langchain_tiered_memory.tokens import TokenCounterLike, resolve_token_counter
from langchain_tiered_memory.turns import message_text

logger = logging.getLogger(__name__)

__all__ = ["TieredMemory"]


class TieredMemory:
    """Short-term tiered memory for one conversation thread.

    Args:
        model: Model name; gives the default context window and exact counter
            (``"gpt-4o-mini"``). Ignored for either when given explicitly.
        context_window: The model's window in tokens (overrides the lookup).
        budget: A ready :class:`TokenBudget` (overrides ``context_window``).
        ratios: Section ratios, when building the budget here.
        token_counter: Counter override: model name, chat model, callable or
            :class:`~langchain_tiered_memory.tokens.TokenCounter`.
        system_prompt: The pinned system prompt.
        tools_tokens: Tokens of tool schemas sent with every prompt.
        summarizer: A :class:`Summarizer`, a chat model (wrapped in
            :class:`LLMSummarizer`), or ``None`` for the extractive one.
        triggers: Compression triggers.
        archive: Hook receiving evicted turns (default: an in-memory list,
            available as ``memory.archive``).
        on_event: Called with every compression event.

    Raises:
        ValueError: for a bad budget or a system prompt larger than its section.
    """

    def __init__(
        self,
        *,
        model: str | None = "gpt-4o-mini",
        context_window: int | None = None,
        budget: TokenBudget | None = None,
        ratios: dict[str, float] | None = None,
        token_counter: TokenCounterLike | None = None,
        system_prompt: str = "",
        tools_tokens: int = 0,
        summarizer: Summarizer | BaseChatModel | None = None,
        triggers: CompressionTriggers | None = None,
        archive: ArchiveHook | None = None,
        on_event: Callable[[CompressionEvent], None] | None = None,
    ) -> None:
        if budget is None:
            if context_window is None and model is None:
                raise ValueError("Give model=..., context_window=... or budget=...")
            if context_window is not None:
                budget = TokenBudget(context_window=context_window, ratios=dict(ratios or {}))
            else:
                assert model is not None
                budget = TokenBudget.for_model(model, ratios=ratios)
        self.budget = budget
        self.counter = resolve_token_counter(token_counter, model=model)
        if summarizer is None:
            summarizer = ExtractiveSummarizer(self.counter)
        elif isinstance(summarizer, BaseChatModel):
            summarizer = LLMSummarizer(summarizer, counter=self.counter)
        self.summarizer: Summarizer = summarizer
        self.triggers = triggers or CompressionTriggers()
        self.archive: ArchiveHook = archive if archive is not None else InMemoryTurnArchive()
        self.on_event = on_event
        self.tools_tokens = tools_tokens
        self.events: list[CompressionEvent] = []
        self._state = BufferState()
        self._lock = threading.RLock()
        self._system_prompt = ""
        self.system_prompt = system_prompt

    # -- state ---------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        """The pinned system prompt (first message of every prompt, verbatim)."""
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("system_prompt must be a string")
        # validates that it fits its section (raises ValueError naming the fix)
        assemble_context(
            budget=self.budget,
            counter=self.counter,
            system_prompt=value,
            tools_tokens=self.tools_tokens,
        )
        self._system_prompt = value

    @property
    def state(self) -> BufferState:
        """The buffer's current (immutable) state."""
        return self._state

    @property
    def buffer_cap(self) -> int:
        """Tokens the buffer section may hold."""
        return self.budget.caps["buffer"]

    @property
    def messages(self) -> list[BaseMessage]:
        """Every buffered message, oldest first (the summary not included)."""
        return [m for turn in self._state.turns for m in turn.messages]

    # -- writing -------------------------------------------------------------

    def _split_system(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        rest: list[BaseMessage] = []
        for message in messages:
            if not isinstance(message, BaseMessage):
                raise TypeError(
                    f"add_messages takes LangChain messages, got {type(message).__name__}"
                )
            if isinstance(message, SystemMessage):
                self.system_prompt = message_text(message)
            else:
                rest.append(message)
        return rest

    def _record(self, result: CompressionResult) -> list[CompressionEvent]:
        self._state = result.state
        if result.event is None:
            return []
        self.events.append(result.event)
        if self.on_event is not None:
            try:
                self.on_event(result.event)
            except Exception:
                logger.exception("on_event callback failed")
        return [result.event]

    def add_messages(self, messages: Sequence[BaseMessage]) -> list[CompressionEvent]:
        """Add messages (whole or partial turns) and compress if a trigger fires.

        A ``SystemMessage`` replaces the pinned system prompt.

        Returns:
            The compression events this call caused (often none).

        Raises:
            ValueError: for a tool result without its call, or a system prompt
                too large for its section. Nothing is stored in that case.
        """
        with self._lock:
            rest = self._split_system(messages)
            self._state = append_messages(self._state, rest, self.counter)
            return self._record(
                compress(
                    self._state,
                    cap=self.buffer_cap,
                    triggers=self.triggers,
                    summarizer=self.summarizer,
                    archive=self.archive,
                    counter=self.counter,
                )
            )

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> list[CompressionEvent]:
        """Async twin of :meth:`add_messages`."""
        with self._lock:
            rest = self._split_system(messages)
            self._state = append_messages(self._state, rest, self.counter)
            state = self._state
        result = await acompress(
            state,
            cap=self.buffer_cap,
            triggers=self.triggers,
            summarizer=self.summarizer,
            archive=self.archive,
            counter=self.counter,
        )
        with self._lock:
            if self._state is state:
                return self._record(result)
        # another writer changed the buffer meanwhile: keep its state; the
        # compression is retried at the next trigger (archiving is idempotent)
        logger.debug("buffer changed during async compression; retrying later")
        return []

    def compress(self, *, force: bool = True) -> list[CompressionEvent]:
        """Compress now (by default even if no trigger fires)."""
        with self._lock:
            return self._record(
                compress(
                    self._state,
                    cap=self.buffer_cap,
                    triggers=self.triggers,
                    summarizer=self.summarizer,
                    archive=self.archive,
                    counter=self.counter,
                    force=force,
                )
            )

    # -- reading -------------------------------------------------------------

    def build_context(
        self, *, core: str = "", recalled: Sequence[RecalledMemory] = ()
    ) -> ContextWindow:
        """Assemble the budgeted prompt for the next model call.

        Args:
            core: Rendered core memory to include.
            recalled: Recalled records, best first.
        """
        with self._lock:
            state = self._state
        return assemble_context(
            budget=self.budget,
            counter=self.counter,
            system_prompt=self._system_prompt,
            core=core,
            summary=state.summary,
            summarized_through=state.summarized_through,
            turns=state.turns,
            recalled=recalled,
            tools_tokens=self.tools_tokens,
        )

    async def abuild_context(
        self, *, core: str = "", recalled: Sequence[RecalledMemory] = ()
    ) -> ContextWindow:
        """Async twin of :meth:`build_context` (pure CPU work)."""
        return self.build_context(core=core, recalled=recalled)

    def __repr__(self) -> str:
        s = self._state
        return (
            f"TieredMemory(window={self.budget.context_window}, turns={len(s.turns)}, "
            f"buffer_tokens={s.tokens}/{self.buffer_cap}, counter={self.counter.name})"
        )
