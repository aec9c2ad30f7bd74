"""The budgeted view both chain adapters hand out: the prompt, trimmed to leave room for the input.

:class:`~langchain_tiered_memory.integrations.history.TieredChatMessageHistory`
and :class:`~langchain_tiered_memory.integrations.classic.TieredConversationMemory`
read the memory's assembled context through :class:`ViewMaker`: cached until
the memory changes, and trimmed (older turns left out, the newest clipped,
recalled records given way) so the caller's new input still fits the budget.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
)

from langchain_tiered_memory.budget.clipping import clip_message
from langchain_tiered_memory.budget.context import RECALL_HEADER, ContextWindow
from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.buffer import BufferState
from langchain_tiered_memory.values.turns import group_turns, message_text

logger = logging.getLogger(__name__)

__all__ = [
    "AUTO_RESERVE_MAX",
    "AUTO_RESERVE_SHARE",
    "ViewMaker",
    "auto_reserve",
    "clear_thread",
    "message_cost",
]


def clear_thread(memory: TieredMemory) -> None:
    """Empty one thread's buffer: its turns and running summary.

    The user's long-term memory - core facts and archived turns - is kept,
    and so is the pinned system prompt; turn numbers keep counting up. Use
    ``memory.forget_user()`` to delete what the user has in every tier.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> memory = TieredMemory(context_window=4096)
        >>> _ = memory.add_messages([HumanMessage("I live in Lisbon."), AIMessage("Nice!")])
        >>> clear_thread(memory)
        >>> memory.messages, memory.core.get("home_city") is not None
        ([], True)
    """
    memory.clear_thread()
    logger.info("cleared the buffer of thread %s/%s", memory.user_id, memory.thread_id)


def _build_context(memory: TieredMemory, query: str | None, recall: bool | None) -> ContextWindow:
    return memory.build_context(query=query, recall=recall)


async def _abuild_context(
    memory: TieredMemory, query: str | None, recall: bool | None
) -> ContextWindow:
    return await memory.abuild_context(query=query, recall=recall)


@dataclass(frozen=True)
class _CachedView:
    state: BufferState
    core: str
    system_prompt: str
    query: str | None
    context: ContextWindow


class ViewMaker:
    """Builds (and caches) the budgeted view of one memory.

    The context is cached until the memory changes, so reading the view twice
    between two writes gives the same messages (``RunnableWithMessageHistory``
    reads the history again after the call to tell old messages from new
    ones) and runs recall and its audit only once.
    """

    def __init__(
        self, memory: TieredMemory, include_system_prompt: bool, reserve_tokens: int | None
    ) -> None:
        if reserve_tokens is not None and (
            not isinstance(reserve_tokens, int) or isinstance(reserve_tokens, bool)
        ):
            raise TypeError(f"reserve_tokens must be an int or None, got {reserve_tokens!r}")
        if reserve_tokens is not None and reserve_tokens < 0:
            raise ValueError("reserve_tokens must be >= 0 (or None for the automatic reserve)")
        self.memory = memory
        self.include_system_prompt = include_system_prompt
        self.reserve_tokens = reserve_tokens
        self.last_view_tokens: int | None = None
        self._lock = threading.Lock()
        self._cached: _CachedView | None = None

    def reserve(self) -> int:
        """Tokens to keep free for the new input: ``reserve_tokens``, or the automatic one."""
        if self.reserve_tokens is not None:
            return self.reserve_tokens
        return auto_reserve(self.memory)

    def _lookup(self, query: str | None) -> ContextWindow | None:
        memory = self.memory
        with self._lock:
            hit = self._cached
        if (
            hit is not None
            and hit.state is memory.state
            and hit.query == query
            and hit.system_prompt == memory.system_prompt
            and hit.core == memory.core.render()
        ):
            return hit.context
        return None

    def _store(
        self, state: BufferState, query: str | None, context: ContextWindow
    ) -> ContextWindow:
        memory = self.memory
        cached = _CachedView(state, memory.core.render(), memory.system_prompt, query, context)
        with self._lock:
            self._cached = cached
        return context

    def invalidate(self) -> None:
        with self._lock:
            self._cached = None

    def context(self, query: str | None, recall: bool | None) -> ContextWindow:
        hit = self._lookup(query)
        if hit is not None:
            return hit
        state = self.memory.state
        return self._store(state, query, _build_context(self.memory, query, recall))

    async def acontext(self, query: str | None, recall: bool | None) -> ContextWindow:
        hit = self._lookup(query)
        if hit is not None:
            return hit
        state = self.memory.state
        return self._store(state, query, await _abuild_context(self.memory, query, recall))

    def shape(self, context: ContextWindow, extra_reserve: int = 0) -> list[BaseMessage]:
        """The messages to hand out: memory at the head, trimmed for the reserve,
        pinned prompt dropped.

        These chains put the history ahead of the new input, so the per-turn
        memory block goes to the head of the view (where the chain's prompt
        expects memory), not into an earlier user message.
        """
        memory = self.memory
        messages = context.memory_first()
        reserve = self.reserve() + extra_reserve
        if reserve or messages != context.messages:
            messages = _trim_to(
                messages, memory.budget.input_budget - reserve, memory.counter, memory.tools_tokens
            )
        self.last_view_tokens = memory.counter.count_messages(messages) + memory.tools_tokens
        if (
            not self.include_system_prompt
            and memory.system_prompt
            and messages
            and isinstance(messages[0], SystemMessage)
            and message_text(messages[0]) == memory.system_prompt
        ):
            messages = messages[1:]
        return messages


#: The automatic reserve's floor: this share of the input budget ...
AUTO_RESERVE_SHARE = 0.10
#: ... but at most this many tokens.
AUTO_RESERVE_MAX = 1024


def message_cost(message: BaseMessage, counter: TokenCounter) -> int:
    """Tokens one message adds to a prompt (its share, without the per-prompt priming)."""
    return counter.count_messages([message]) - counter.count_messages([])


def auto_reserve(memory: TieredMemory) -> int:
    """Room the chat history leaves for the new input by default.

    ``RunnableWithMessageHistory`` reads the history before it appends the
    new message, so the view cannot count it. It leaves room for a message
    as long as the longest user message still in the buffer, and at least
    :data:`AUTO_RESERVE_SHARE` of the input budget (at most
    :data:`AUTO_RESERVE_MAX` tokens) - so an input up to that size never
    pushes the prompt over the budget.

    Example:
        >>> auto_reserve(TieredMemory(context_window=1024))
        87
    """
    counter = memory.counter
    floor = min(AUTO_RESERVE_MAX, math.ceil(AUTO_RESERVE_SHARE * memory.budget.input_budget))
    longest = max(
        (
            message_cost(m, counter)
            for turn in memory.state.turns
            for m in turn.messages
            if isinstance(m, HumanMessage)
        ),
        default=0,
    )
    return max(floor, longest)


def _trim_to(
    messages: list[BaseMessage], limit: int, counter: TokenCounter, tools_tokens: int
) -> list[BaseMessage]:
    """Fit a view into ``limit`` tokens: drop the oldest whole turns, then clip the newest.

    The leading system messages (system prompt, core, summary, recall) and
    the newest turn always stay; if the newest turn alone is still too large
    (a long reply), its largest messages are clipped with a marker (the full
    text stays in the memory and its archive).
    """
    head = 0
    while head < len(messages) and isinstance(messages[head], SystemMessage):
        head += 1
    groups = group_turns(messages[head:])
    dropped = 0
    while len(groups) > 1:
        flat = [*messages[:head], *(m for g in groups for m in g)]
        if counter.count_messages(flat) + tools_tokens <= limit:
            return flat
        groups.pop(0)
        dropped += 1
    if dropped:
        logger.debug("left %d older turn(s) out of the view to keep reserve room", dropped)
    tail = [m for g in groups for m in g]
    lead = list(messages[:head])
    clipped = _clip_tail(lead, tail, limit, counter, tools_tokens)
    if counter.count_messages([*lead, *clipped]) + tools_tokens > limit:
        # the recalled records are this turn's extra: they give way before the newest turn
        kept = [m for m in lead if not message_text(m).startswith(RECALL_HEADER)]
        if len(kept) < len(lead):
            logger.debug("left the recalled records out of the view to keep reserve room")
            lead = kept
            clipped = _clip_tail(lead, tail, limit, counter, tools_tokens)
    return [*lead, *clipped]


def _clip_tail(
    head: list[BaseMessage],
    tail: list[BaseMessage],
    limit: int,
    counter: TokenCounter,
    tools_tokens: int,
) -> list[BaseMessage]:
    """Clip the largest messages of ``tail`` until ``head + tail`` fits ``limit``."""
    note = "; clipped to leave room for the new input, the full text is in the memory"
    tail = list(tail)
    for _ in range(4 * len(tail) + 4):
        over = counter.count_messages([*head, *tail]) + tools_tokens - limit
        if over <= 0:
            break
        sizes = [message_cost(m, counter) for m in tail]
        i = max(range(len(tail)), key=sizes.__getitem__, default=None)
        if i is None:
            break
        base = message_cost(tail[i].model_copy(update={"content": ""}), counter)
        target = max(base, sizes[i] - over)
        if target >= sizes[i]:
            break  # nothing left to cut: the framing alone does not fit
        tail[i] = clip_message(tail[i], target, counter, note=note)
    return tail
