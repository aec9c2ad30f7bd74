"""Drop-in memory for existing LangChain chains.

Three adapters put a :class:`~langchain_tiered_memory.memory.TieredMemory`
behind the interfaces existing chains already use:

* :class:`TieredChatMessageHistory` - a ``BaseChatMessageHistory`` for
  ``RunnableWithMessageHistory``. Writes go to the tiered memory; reading
  ``.messages`` returns the *budgeted view* (core memory, running summary,
  recalled records and the recent turns that fit), not the raw log.
* :func:`tiered_history_factory` - a ``get_session_history`` callable for
  ``RunnableWithMessageHistory``, for the ``session_id`` form and for the
  ``history_factory_config`` form (``user_id`` + ``conversation_id``). One
  memory per session, cached, thread-safe; durable over a ``MemoryStore``.
* :class:`TieredConversationMemory` - the classic memory interface of
  langchain-classic's ``ConversationSummaryBufferMemory``
  (``load_memory_variables`` / ``save_context``), for ``ConversationChain``
  and ``LLMChain``. Needs ``pip install langchain-classic``; this module
  imports without it.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> history = TieredChatMessageHistory(context_window=4096,
    ...                                    system_prompt="You are a travel agent.")
    >>> history.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    >>> [m.type for m in history.messages]  # core memory, then the turn
    ['system', 'human', 'ai']
    >>> history.context.total_tokens <= history.memory.budget.input_budget
    True
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    get_buffer_string,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import BasePromptTemplate
from pydantic import PrivateAttr

from langchain_tiered_memory.budget import TokenBudget
from langchain_tiered_memory.buffer import BufferState
from langchain_tiered_memory.clipping import clip_message, clip_text
from langchain_tiered_memory.context import RECALL_HEADER, ContextWindow
from langchain_tiered_memory.identity import (
    DEFAULT_THREAD,
    IdentityError,
    check_default_user,
    given_id,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.summarize import (
    DEFAULT_SUMMARY_PROMPT,
    LLMSummarizer,
    SummarizationError,
)
from langchain_tiered_memory.tokens import TokenCounter
from langchain_tiered_memory.turns import Turn, group_turns, message_text

try:  # langchain-classic is optional: only TieredConversationMemory needs it
    from langchain_classic.base_memory import BaseMemory
except ImportError as _exc:  # pragma: no cover - exercised only without langchain-classic
    _CLASSIC_IMPORT_ERROR: ImportError | None = _exc
    BaseMemory = object  # type: ignore[assignment,misc]
else:
    _CLASSIC_IMPORT_ERROR = None

if TYPE_CHECKING:
    from langchain_tiered_memory.store import MemoryStore

logger = logging.getLogger(__name__)

__all__ = [
    "ClassicSummarizer",
    "TieredChatMessageHistory",
    "TieredConversationMemory",
    "TieredHistoryFactory",
    "auto_reserve",
    "budget_for_buffer",
    "clear_thread",
    "tiered_history_factory",
]

#: The classic ``ConversationSummaryBufferMemory.max_token_limit`` default.
CLASSIC_MAX_TOKEN_LIMIT = 2000


# --- shared helpers ----------------------------------------------------------


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


class _ViewMaker:
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
    """Room :class:`TieredChatMessageHistory` leaves for the new input by default.

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


# --- RunnableWithMessageHistory ---------------------------------------------


class TieredChatMessageHistory(BaseChatMessageHistory):
    """A chat message history for ``RunnableWithMessageHistory``, backed by tiered memory.

    Writes (``add_messages``) go to the :class:`TieredMemory`: they are saved,
    facts are extracted and the buffer is compressed when due. Reading
    :attr:`messages` returns the *budgeted view* -
    ``memory.build_context().messages`` - so a chain that puts the history in
    its prompt stays within the memory's token budget however long the
    conversation gets. The running summary, core memory and recalled records
    are ``SystemMessage`` s at the head of the view.

    Args:
        memory: The memory to wrap; a new in-memory :class:`TieredMemory`
            built from ``memory_kwargs`` when ``None``.
        include_system_prompt: Also return the memory's pinned system prompt.
            Off by default because the chain's prompt template usually carries
            its own system message. Set the memory's ``system_prompt`` to that
            same text anyway: the budget then counts it, and the view leaves it
            out so it is not sent twice.
        reserve_tokens: Room to keep free in the view for the new input.
            ``RunnableWithMessageHistory`` reads the history *before* it adds
            the new user message, so the budget cannot count that message;
            the view leaves out older turns until it fits
            ``input_budget - reserve_tokens``. ``None`` (the default) is
            :func:`auto_reserve`: as much as the longest user message in the
            buffer, and at least 10% of the input budget (at most 1,024
            tokens). An input that did not fit after all is logged as a warning.
        recall: Force recall on or off (default: the memory's gate decides,
            on the latest user message in the memory).
        **memory_kwargs: :class:`TieredMemory` arguments, when ``memory`` is
            ``None``.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> history = TieredChatMessageHistory(context_window=2048, system_prompt="Be brief.")
        >>> history.add_user_message("I live in Lisbon.")
        >>> history.add_ai_message("Lovely city!")
        >>> [m.content for m in history.messages if m.type != "system"]
        ['I live in Lisbon.', 'Lovely city!']
        >>> history.clear()  # this thread's buffer only
        >>> [m.type for m in history.messages]  # core memory stays
        ['system']
    """

    def __init__(
        self,
        memory: TieredMemory | None = None,
        *,
        include_system_prompt: bool = False,
        reserve_tokens: int | None = None,
        recall: bool | None = None,
        **memory_kwargs: Any,
    ) -> None:
        if memory is None:
            memory = TieredMemory(**memory_kwargs)
        elif memory_kwargs:
            raise TypeError(
                "Pass either a TieredMemory or TieredMemory arguments, not both "
                f"(got memory and {sorted(memory_kwargs)})."
            )
        if not isinstance(memory, TieredMemory):
            raise TypeError(f"memory must be a TieredMemory, not {type(memory).__name__}")
        super().__init__()
        self.memory = memory
        self.recall = recall
        self._views = _ViewMaker(memory, include_system_prompt, reserve_tokens)

    @property
    def include_system_prompt(self) -> bool:
        """Whether the view starts with the pinned system prompt."""
        return self._views.include_system_prompt

    # -- reading ---------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The budgeted view of this thread (a fresh list on every read)."""
        views = self._views
        return views.shape(views.context(None, self.recall))

    def get_messages(self, query: str | None = None) -> list[BaseMessage]:
        """The budgeted view, with recall gated on ``query`` (default: latest user message)."""
        views = self._views
        return views.shape(views.context(query, self.recall))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages`."""
        views = self._views
        return views.shape(await views.acontext(None, self.recall))

    @property
    def context(self) -> ContextWindow:
        """The :class:`ContextWindow` behind :attr:`messages` (usage per section etc.)."""
        return self._views.context(None, self.recall)

    # -- writing ---------------------------------------------------------------

    def add_message(self, message: BaseMessage) -> None:
        """Add one message to the memory."""
        self.add_messages([message])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Add messages to the memory: saved, facts extracted, compressed when due.

        A ``SystemMessage`` replaces the memory's pinned system prompt.
        """
        self._check_reserve(messages)
        self.memory.add_messages(list(messages))
        self._views.invalidate()

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`."""
        self._check_reserve(messages)
        await self.memory.aadd_messages(list(messages))
        self._views.invalidate()

    def _check_reserve(self, messages: Sequence[BaseMessage]) -> None:
        """Warn when the last view plus this new input did not fit the input budget."""
        view = self._views.last_view_tokens
        if view is None:
            return
        budget = self.memory.budget.input_budget
        for message in messages:
            if isinstance(message, HumanMessage):
                cost = message_cost(message, self.memory.counter)
                if view + cost > budget:
                    logger.warning(
                        "a %d-token input came after a %d-token history view: the prompt "
                        "that carried it was about %d tokens over the input budget (%d). "
                        "Pass reserve_tokens=%d (or more) to the history or its factory.",
                        cost,
                        view,
                        view + cost - budget,
                        budget,
                        cost,
                    )

    def clear(self) -> None:
        """Clear this thread's buffer: its recent turns and running summary.

        This does **not** touch the user's long-term memory: core facts and
        the archive (with its recall) stay, as does the pinned system prompt.
        To delete everything the user has, call :meth:`forget_user`.
        """
        clear_thread(self.memory)
        self._views.invalidate()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    def forget_user(self) -> None:
        """Delete everything this user has, in every tier (core, archive, every thread)."""
        self.memory.forget_user()
        self._views.invalidate()

    def __repr__(self) -> str:
        return f"TieredChatMessageHistory({self.memory!r})"


class TieredHistoryFactory:
    """``get_session_history`` for ``RunnableWithMessageHistory``: one memory per session.

    Works with both ways ``RunnableWithMessageHistory`` calls its factory:

    * the default ``session_id`` form, called as ``factory(session_id)``: each
      session is its own user and thread (``user_id = thread_id =
      session_id``), so sessions share nothing;
    * the ``history_factory_config`` form with two ``ConfigurableFieldSpec`` s
      whose ids are ``user_key`` and ``thread_key`` (default ``user_id`` and
      ``conversation_id``), called as ``factory(user_id=..., conversation_id=...)``:
      threads belong to their user (with a store they share the user's archive
      and saved core memory, and :meth:`forget_user` deletes them all). The
      factory's signature advertises exactly these two names, which is what
      ``RunnableWithMessageHistory`` checks.

    Histories are cached per ``(user_id, thread_id)``; the factory is
    thread-safe. With a ``store`` every memory is durable and survives a
    restart; without one memories live in this process only.

    Args:
        store: A :class:`~langchain_tiered_memory.store.MemoryStore`, or ``None``.
        user_key: Name of the user parameter (the ``ConfigurableFieldSpec`` id).
        thread_key: Name of the conversation parameter.
        include_system_prompt: Passed to each :class:`TieredChatMessageHistory`.
        reserve_tokens: Passed to each :class:`TieredChatMessageHistory`.
        max_sessions: Keep at most this many histories in the cache (least
            recently used go first; they are reopened from the store on the
            next call). Needs a store: without one an evicted session would be
            lost.
        owns_store: Close ``store`` in :meth:`close`.
        default_user_id: The user of calls that name none (or an empty one).
            Without it such a call is an error (the rule of
            :mod:`langchain_tiered_memory.identity`); ids must be strings.
        **memory_kwargs: :class:`TieredMemory` arguments for every session
            (``context_window``, ``model``, ``system_prompt``, ``gate`` ...).

    Example:
        >>> factory = TieredHistoryFactory(context_window=2048)
        >>> factory("abc") is factory("abc"), factory("abc") is factory("xyz")
        (True, False)
        >>> factory(user_id="ana", conversation_id="trip").memory.user_id
        'ana'
        >>> list(inspect.signature(factory).parameters)
        ['user_id', 'conversation_id']
    """

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        user_key: str = "user_id",
        thread_key: str = "conversation_id",
        include_system_prompt: bool = False,
        reserve_tokens: int | None = None,
        max_sessions: int | None = None,
        owns_store: bool = False,
        default_user_id: str | None = None,
        **memory_kwargs: Any,
    ) -> None:
        if not user_key.isidentifier() or not thread_key.isidentifier() or user_key == thread_key:
            raise ValueError("user_key and thread_key must be two different identifiers")
        if max_sessions is not None:
            if max_sessions < 1:
                raise ValueError("max_sessions must be >= 1 (or None for no limit)")
            if store is None:
                raise ValueError(
                    "max_sessions needs a MemoryStore: without one, a session dropped "
                    "from the cache would lose its memory."
                )
        for reserved in ("store", "user_id", "thread_id"):
            if reserved in memory_kwargs:
                raise TypeError(f"{reserved!r} is set by the factory per session")
        self.store = store
        self.user_key = user_key
        self.thread_key = thread_key
        self.include_system_prompt = include_system_prompt
        self.reserve_tokens = reserve_tokens
        self.max_sessions = max_sessions
        self.owns_store = owns_store
        self.default_user_id = check_default_user(default_user_id)
        self.memory_kwargs = memory_kwargs
        self._lock = threading.RLock()
        self._histories: OrderedDict[tuple[str, str], TieredChatMessageHistory] = OrderedDict()
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(user_key, kind), inspect.Parameter(thread_key, kind, default=None)]
        )

    def _user(self, name: str, value: Any) -> str:
        """The user id (the rule of :mod:`.identity`: a string; missing -> the default)."""
        user = given_id(value, name)
        if user is None:
            if self.default_user_id is None:
                raise IdentityError(
                    f"No {name} for this history: it must be a non-empty string, got "
                    f"{value!r}. Pass it in config={{'configurable': {{'{name}': ...}}}}, or "
                    "opt into a shared default with default_user_id='<user id>'."
                )
            return self.default_user_id
        return user

    def __call__(self, *args: Any, **kwargs: Any) -> TieredChatMessageHistory:
        """Return the history of a session (``factory(session_id)``) or a user's thread."""
        if (len(args) == 1 and not kwargs) or (not args and set(kwargs) == {"session_id"}):
            raw = args[0] if args else kwargs["session_id"]
            session = given_id(raw, "session_id")
            if session is None:
                user = self._user("session_id", raw)
                return self.history(user, DEFAULT_THREAD)
            return self.history(session, session)
        if len(args) > 2:
            raise TypeError(f"expected at most 2 positional arguments, got {len(args)}")
        values = dict(zip((self.user_key, self.thread_key), args, strict=False))
        for name, value in kwargs.items():
            if name not in (self.user_key, self.thread_key):
                raise TypeError(
                    f"unexpected argument {name!r}; this factory takes {self.user_key!r} and "
                    f"{self.thread_key!r} (set user_key=/thread_key= to rename them)"
                )
            if name in values:
                raise TypeError(f"got multiple values for {name!r}")
            values[name] = value
        user = self._user(self.user_key, values.get(self.user_key))
        thread = given_id(values.get(self.thread_key), self.thread_key)
        return self.history(user, thread or DEFAULT_THREAD)

    def history(self, user_id: str, thread_id: str = DEFAULT_THREAD) -> TieredChatMessageHistory:
        """The (cached) history of one user's thread."""
        key = (user_id, thread_id)
        with self._lock:
            found = self._histories.get(key)
            if found is not None:
                self._histories.move_to_end(key)
                return found
            if self.store is not None:
                memory = self.store.memory(user_id, thread_id, **self.memory_kwargs)
            else:
                memory = TieredMemory(user_id=user_id, thread_id=thread_id, **self.memory_kwargs)
            history = TieredChatMessageHistory(
                memory,
                include_system_prompt=self.include_system_prompt,
                reserve_tokens=self.reserve_tokens,
            )
            self._histories[key] = history
            if self.max_sessions is not None and len(self._histories) > self.max_sessions:
                (old_user, old_thread), _ = self._histories.popitem(last=False)
                logger.debug("dropped session %s/%s from the cache", old_user, old_thread)
            return history

    def sessions(self) -> list[tuple[str, str]]:
        """The ``(user_id, thread_id)`` pairs currently cached."""
        with self._lock:
            return list(self._histories)

    def forget_user(self, user_id: str) -> None:
        """Delete everything a user has (every tier, every thread); other users are untouched."""
        with self._lock:
            mine = [key for key in self._histories if key[0] == user_id]
            histories = [self._histories.pop(key) for key in mine]
        if self.store is not None:
            self.store.forget_user(user_id)
        for history in histories:
            history.forget_user()

    def close(self) -> None:
        """Drop the cached sessions and close the store if this factory opened it."""
        with self._lock:
            self._histories.clear()
            if self.owns_store and self.store is not None:
                self.store.close()

    def __enter__(self) -> TieredHistoryFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = repr(self.store) if self.store is not None else "in-memory"
        return f"TieredHistoryFactory({where}, sessions={len(self._histories)})"


def tiered_history_factory(
    store_or_path: MemoryStore | str | os.PathLike[str] | None = None,
    *,
    context_window: int | None = None,
    model: str | BaseChatModel | None = "gpt-4o-mini",
    embeddings: Any = None,
    user_key: str = "user_id",
    thread_key: str = "conversation_id",
    include_system_prompt: bool = False,
    reserve_tokens: int | None = None,
    max_sessions: int | None = None,
    default_user_id: str | None = None,
    **memory_kwargs: Any,
) -> TieredHistoryFactory:
    """A ``get_session_history`` for ``RunnableWithMessageHistory``.

    Args:
        store_or_path: A ``MemoryStore``, a data directory (a store is opened
            there and closed by ``factory.close()``), or ``None`` for
            in-process memory.
        context_window: The model's window in tokens (default: looked up from
            ``model``).
        model: Model name or chat model for the token counter and the default window.
        embeddings: Embeddings for a store opened from a path (default: the
            store's offline default).
        user_key, thread_key, include_system_prompt, reserve_tokens, max_sessions:
            See :class:`TieredHistoryFactory`.
        default_user_id: See :class:`TieredHistoryFactory`.
        **memory_kwargs: More :class:`TieredMemory` arguments for every session.

    Returns:
        A callable :class:`TieredHistoryFactory`.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
        >>> from langchain_core.runnables.history import RunnableWithMessageHistory
        >>> prompt = ChatPromptTemplate([("system", "Be brief."),
        ...     MessagesPlaceholder("history"), ("human", "{input}")])
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hi Ana!")] * 3))
        >>> factory = tiered_history_factory(context_window=4096, system_prompt="Be brief.")
        >>> chain = RunnableWithMessageHistory(prompt | model, factory,
        ...     input_messages_key="input", history_messages_key="history")
        >>> chain.invoke({"input": "I'm Ana."},
        ...              config={"configurable": {"session_id": "s1"}}).content
        'Hi Ana!'
        >>> [m.type for m in factory("s1").messages]
        ['system', 'human', 'ai']
    """
    store: MemoryStore | None
    owns = False
    if store_or_path is None:
        store = None
        if embeddings is not None:
            raise ValueError("embeddings= only applies when a store path is given")
    elif isinstance(store_or_path, str | os.PathLike):
        from langchain_tiered_memory.store import MemoryStore

        store = MemoryStore(Path(store_or_path), embeddings=embeddings)
        owns = True
    else:
        store = store_or_path
        if embeddings is not None:
            raise ValueError("embeddings= only applies when a store path is given")
    return TieredHistoryFactory(
        store,
        user_key=user_key,
        thread_key=thread_key,
        include_system_prompt=include_system_prompt,
        reserve_tokens=reserve_tokens,
        max_sessions=max_sessions,
        owns_store=owns,
        default_user_id=default_user_id,
        context_window=context_window,
        model=model,
        **memory_kwargs,
    )


# --- the classic summariser --------------------------------------------------


class ClassicSummarizer(LLMSummarizer):
    """A :class:`~langchain_tiered_memory.summarize.Summarizer` from a classic ``llm``.

    Accepts any LangChain language model - a chat model or a completion
    ``LLM`` - and, optionally, the classic summary prompt with ``{summary}``
    and ``{new_lines}`` (as ``ConversationSummaryBufferMemory(prompt=...)``).
    Without a prompt it uses the package's entity-keeping
    :data:`~langchain_tiered_memory.summarize.DEFAULT_SUMMARY_PROMPT`.

    Args:
        llm: The model that writes summaries.
        prompt: Classic prompt with exactly ``summary`` and ``new_lines``.
        counter: Clips an over-long summary to ``max_tokens`` when given.
        human_prefix, ai_prefix: Speaker names for ``new_lines``.
        timeout: Seconds before a call counts as failed.

    Raises (from ``summarize``):
        SummarizationError: on an exception, a timeout or an empty reply; the
            memory then keeps its buffer unchanged and retries later.

    Example:
        >>> from langchain_core.language_models.fake import FakeListLLM
        >>> s = ClassicSummarizer(FakeListLLM(responses=["Ana flies to Lisbon."]))
        >>> s.summarize("", [Turn(0, (HumanMessage("I'm Ana."),))], max_tokens=50)
        'Ana flies to Lisbon.'
    """

    def __init__(
        self,
        llm: BaseLanguageModel,
        *,
        prompt: BasePromptTemplate | None = None,
        counter: TokenCounter | None = None,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        timeout: float = 60.0,
    ) -> None:
        if prompt is not None and set(prompt.input_variables) != {"summary", "new_lines"}:
            raise ValueError(
                "The summary prompt must have exactly the input variables 'summary' and "
                f"'new_lines', got {sorted(prompt.input_variables)}."
            )
        self.llm = llm
        self.model = llm  # type: ignore[assignment]  # LLMSummarizer invokes it
        self.classic_prompt = prompt
        self.counter = counter
        self.human_prefix = human_prefix
        self.ai_prefix = ai_prefix
        self.timeout = timeout
        self.calls = 0

    def _input(self, summary: str, turns: Sequence[Turn], max_tokens: int) -> str | PromptValue:
        if self.classic_prompt is not None:
            new_lines = get_buffer_string(
                [m for t in turns for m in t.messages],
                human_prefix=self.human_prefix,
                ai_prefix=self.ai_prefix,
            )
            return self.classic_prompt.format_prompt(summary=summary, new_lines=new_lines)
        rendered = "\n\n".join(f"[t{t.index}]\n{t.transcript()}" for t in turns)
        return DEFAULT_SUMMARY_PROMPT.format(
            summary=summary or "(none yet)",
            turns=rendered,
            max_words=max(20, int(max_tokens * 0.7)),
        )

    def _text(self, reply: object, max_tokens: int) -> str:
        if isinstance(reply, str):
            text = reply
        elif isinstance(reply, BaseMessage):
            text = message_text(reply)
        else:
            text = ""
        text = text.strip()
        if not text:
            raise SummarizationError("The summariser returned an empty summary.")
        if self.counter is not None:
            text = clip_text(text, max_tokens, self.counter, note="; summary clipped")
        return text

    # LLMSummarizer runs the call (worker thread, timeout, errors); these two
    # hooks adapt it to completion models and the classic prompt
    def _messages(self, summary: str, turns: Sequence[Turn], max_tokens: int) -> Any:
        return self._input(summary, turns, max_tokens)

    def _check(self, reply: object, max_tokens: int) -> str:
        return self._text(reply, max_tokens)


# --- the classic memory interface ---------------------------------------------


def budget_for_buffer(
    max_token_limit: int, ratios: Mapping[str, float] | None = None
) -> TokenBudget:
    """The smallest budget whose ``buffer`` section holds ``max_token_limit`` tokens.

    This is how ``TieredConversationMemory(max_token_limit=N)`` maps the
    classic limit: the context window becomes ``N / ratios["buffer"]``
    (``2 * N`` with the default 50% buffer), so the buffer - running summary
    plus recent turns - gets exactly ``N`` tokens, and the other sections
    (system prompt, core memory, recall, the reply) get their usual shares
    on top.

    Raises:
        ValueError: if the resulting window would be too small (under 256 tokens).

    Example:
        >>> budget = budget_for_buffer(650)
        >>> budget.context_window, budget.caps["buffer"]
        (1300, 650)
    """
    if not isinstance(max_token_limit, int) or max_token_limit < 1:
        raise ValueError(f"max_token_limit must be a positive int, got {max_token_limit!r}")
    share = TokenBudget(context_window=100_000, ratios=dict(ratios or {})).ratios["buffer"]
    window = math.ceil(max_token_limit / share)
    if window < 256:
        raise ValueError(
            f"max_token_limit={max_token_limit} is too small: with a {share:.0%} buffer the "
            f"context window would be {window} tokens, and it must be at least 256. Use "
            f"max_token_limit >= {math.ceil(256 * share)}."
        )
    for candidate in range(max(256, window - 2), window + 3):
        budget = TokenBudget(context_window=candidate, ratios=dict(ratios or {}))
        if budget.caps["buffer"] >= max_token_limit:
            return budget
    return TokenBudget(context_window=window + 3, ratios=dict(ratios or {}))


def get_prompt_input_key(inputs: Mapping[str, Any], memory_variables: Sequence[str]) -> str:
    """The one input key that is not a memory variable (as langchain-classic resolves it).

    Raises:
        ValueError: unless exactly one such key exists (``"stop"`` is ignored).

    Example:
        >>> get_prompt_input_key({"input": "hi", "history": ""}, ["history"])
        'input'
    """
    keys = list(set(inputs).difference([*memory_variables, "stop"]))
    if len(keys) != 1:
        raise ValueError(f"One input key expected got {keys}")
    return keys[0]


def _require_classic() -> None:
    if _CLASSIC_IMPORT_ERROR is not None:
        raise ImportError(
            "TieredConversationMemory plugs into langchain-classic chains and needs it: "
            "pip install langchain-classic"
        ) from _CLASSIC_IMPORT_ERROR


class TieredConversationMemory(BaseMemory):
    """``ConversationSummaryBufferMemory``'s interface over a :class:`TieredMemory`.

    Swap the class name and keep the rest: ``TieredConversationMemory(llm=llm,
    max_token_limit=650, return_messages=True)`` works where
    ``ConversationSummaryBufferMemory(...)`` did - in ``ConversationChain``,
    ``LLMChain`` or by hand with ``load_memory_variables`` / ``save_context``.

    What the classic arguments become:

    * ``llm`` writes the running summary (a :class:`ClassicSummarizer`; any
      chat or completion model). Without it the memory uses the
      :class:`~langchain_tiered_memory.summarize.ExtractiveSummarizer` (no LLM
      calls). ``prompt`` - the classic ``{summary}`` / ``{new_lines}``
      template - is honoured when given.
    * ``max_token_limit`` is the size of the buffer section (summary plus
      recent turns): the context window becomes ``max_token_limit /
      ratios["buffer"]`` (see :func:`budget_for_buffer`). When neither it nor
      ``context_window`` / ``budget`` is given, the classic default of 2000
      applies. ``model`` only picks the tokenizer here.
    * ``memory_key``, ``input_key``, ``output_key``, ``return_messages``,
      ``human_prefix`` and ``ai_prefix`` behave as in the classic class.

    * Without ``store=`` the memory keeps to what the classic class did -
      the summary and the recent turns, plus core facts - and recalls
      nothing (``gate="never"``); with a :class:`~langchain_tiered_memory.store.MemoryStore`
      it is durable and recalls from its archive.

    ``load_memory_variables(inputs)`` knows the new input, so recall is gated
    on it and the history leaves room for it: older turns are left out of
    this prompt (not out of the memory) until history plus input fit the
    input budget.

    ``return_messages=False`` renders the view as text like the classic class:
    the summary, core-memory and recall sections as plain lines first, then
    ``get_buffer_string`` of the turns with the prefixes.

    Args:
        memory: The memory to wrap; built from the other arguments when ``None``.
        llm: The classic summariser model.
        max_token_limit: Tokens of the buffer section.
        prompt: Classic summary prompt (``summary`` and ``new_lines``).
        memory_key: Name of the chain input the history goes to.
        input_key: Which chain input is the user's message (default: the one
            input that is not a memory variable).
        output_key: Which chain output is the reply (default: the only one, or
            ``"output"``).
        return_messages: Give messages instead of a string.
        human_prefix, ai_prefix: Speaker names in the string form.
        include_system_prompt: Include the memory's pinned system prompt.
        **tiered_memory_kwargs: More :class:`TieredMemory` arguments.

    After construction, ``max_token_limit`` reports the buffer section's cap
    and ``llm`` the summariser model given (if any).

    Raises:
        ImportError: when langchain-classic is not installed.

    Example:
        >>> memory = TieredConversationMemory(max_token_limit=650)
        >>> memory.memory.budget.caps["buffer"]
        650
        >>> memory.save_context({"input": "I live in Lisbon."}, {"response": "Lovely!"})
        >>> print(memory.load_memory_variables({})["history"])  # doctest: +ELLIPSIS
        Core memory from the recent turns - more facts about the user ...
        - home_city: lives in Lisbon (stated, turn 0, ...)
        Human: I live in Lisbon.
        AI: Lovely!
    """

    memory: TieredMemory
    llm: BaseLanguageModel | None = None
    max_token_limit: int | None = None
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    include_system_prompt: bool = False

    _views: _ViewMaker = PrivateAttr()
    _history: TieredChatMessageHistory | None = PrivateAttr(default=None)

    def __init__(
        self,
        memory: TieredMemory | None = None,
        *,
        llm: BaseLanguageModel | None = None,
        max_token_limit: int | None = None,
        prompt: BasePromptTemplate | None = None,
        memory_key: str = "history",
        input_key: str | None = None,
        output_key: str | None = None,
        return_messages: bool = False,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        include_system_prompt: bool = False,
        **tiered_memory_kwargs: Any,
    ) -> None:
        _require_classic()
        if memory is None:
            memory = self._make_memory(
                llm, max_token_limit, prompt, human_prefix, ai_prefix, tiered_memory_kwargs
            )
        elif llm is not None or max_token_limit is not None or prompt is not None:
            raise TypeError(
                "Given a ready TieredMemory, configure it directly: llm=, max_token_limit= "
                "and prompt= apply only when the memory is built here."
            )
        elif tiered_memory_kwargs:
            raise TypeError(
                "Given a ready TieredMemory, configure it directly: TieredMemory arguments "
                f"({sorted(tiered_memory_kwargs)}) apply only when the memory is built here."
            )
        fields: dict[str, Any] = {
            "memory": memory,
            "llm": llm,
            "max_token_limit": memory.budget.caps["buffer"],
            "memory_key": memory_key,
            "input_key": input_key,
            "output_key": output_key,
            "return_messages": return_messages,
            "human_prefix": human_prefix,
            "ai_prefix": ai_prefix,
            "include_system_prompt": include_system_prompt,
        }
        super().__init__(**fields)
        self._views = _ViewMaker(memory, include_system_prompt, 0)  # the input is counted exactly

    @staticmethod
    def _make_memory(
        llm: BaseLanguageModel | None,
        max_token_limit: int | None,
        prompt: BasePromptTemplate | None,
        human_prefix: str,
        ai_prefix: str,
        kwargs: dict[str, Any],
    ) -> TieredMemory:
        sized = "context_window" in kwargs or "budget" in kwargs
        if max_token_limit is not None and sized:
            raise ValueError(
                "Give max_token_limit= (the buffer size) or context_window=/budget=, not both."
            )
        if max_token_limit is None and not sized:
            max_token_limit = CLASSIC_MAX_TOKEN_LIMIT
        if max_token_limit is not None:
            kwargs["budget"] = budget_for_buffer(max_token_limit, kwargs.pop("ratios", None))
        if llm is not None and kwargs.get("summarizer") is not None:
            raise ValueError("Give llm= (the classic summariser) or summarizer=, not both.")
        if prompt is not None and llm is None:
            raise ValueError("prompt= is the summary prompt of llm=; give llm= too.")
        if kwargs.get("store") is None:
            # the drop-in keeps to what ConversationSummaryBufferMemory did - summary, recent
            # turns (and core facts): recall, of a durable archive, comes with store=
            kwargs.setdefault("gate", "never")
        memory = TieredMemory(**kwargs)
        if llm is not None:
            memory.summarizer = ClassicSummarizer(
                llm,
                prompt=prompt,
                counter=memory.counter,
                human_prefix=human_prefix,
                ai_prefix=ai_prefix,
            )
        return memory

    # -- the classic surface ---------------------------------------------------

    @property
    def memory_variables(self) -> list[str]:
        """The one chain input this memory fills: ``[memory_key]``."""
        return [self.memory_key]

    @property
    def buffer(self) -> str | list[BaseMessage]:
        """The history as ``load_memory_variables({})`` gives it."""
        value: str | list[BaseMessage] = self.load_memory_variables({})[self.memory_key]
        return value

    @property
    def moving_summary_buffer(self) -> str:
        """The running summary of the evicted turns (read-only)."""
        return self.memory.state.summary

    @property
    def chat_memory(self) -> TieredChatMessageHistory:
        """A chat-history view of the same memory (``add_user_message`` etc.)."""
        if self._history is None:
            self._history = TieredChatMessageHistory(
                self.memory, include_system_prompt=self.include_system_prompt
            )
        return self._history

    def _query(self, inputs: Mapping[str, Any]) -> str | None:
        if self.input_key is not None:
            value = inputs.get(self.input_key)
        else:
            try:
                value = inputs[get_prompt_input_key(inputs, self.memory_variables)]
            except ValueError:
                return None
        return value if isinstance(value, str) and value.strip() else None

    def _variables(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        if self.return_messages:
            return {self.memory_key: list(messages)}
        head = 0
        while head < len(messages) and isinstance(messages[head], SystemMessage):
            head += 1
        lines = [message_text(m).strip() for m in messages[:head]]
        turns = get_buffer_string(
            list(messages[head:]), human_prefix=self.human_prefix, ai_prefix=self.ai_prefix
        )
        text = "\n".join(part for part in [*lines, turns] if part)
        return {self.memory_key: text}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The budgeted history under ``memory_key``; recall is gated on the new input."""
        query = self._query(inputs)
        views = self._viewer()
        return self._variables(views.shape(views.context(query, None), self._reserve(query)))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async twin of :meth:`load_memory_variables`."""
        query = self._query(inputs)
        views = self._viewer()
        context = await views.acontext(query, None)
        return self._variables(views.shape(context, self._reserve(query)))

    def _viewer(self) -> _ViewMaker:
        views = self._views
        if views.include_system_prompt != self.include_system_prompt:
            views.include_system_prompt = self.include_system_prompt
        return views

    def _reserve(self, query: str | None) -> int:
        """Room for the new input, which the chain adds after the history."""
        if not query:
            return 0
        counter = self.memory.counter
        return counter.count_messages([HumanMessage(query)]) - counter.count_messages([])

    def _get_input_output(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> tuple[Any, Any]:
        if self.input_key is None:
            prompt_input_key = get_prompt_input_key(inputs, self.memory_variables)
        else:
            prompt_input_key = self.input_key
        if self.output_key is None:
            if len(outputs) == 1:
                output_key = next(iter(outputs))
            elif "output" in outputs:
                output_key = "output"
                warnings.warn(
                    f"'{type(self).__name__}' got multiple output keys: {outputs.keys()}. "
                    "The default 'output' key is being used. If this is not desired, "
                    "please manually set 'output_key'.",
                    stacklevel=3,
                )
            else:
                raise ValueError(
                    f"Got multiple output keys: {outputs.keys()}, cannot determine which to "
                    "store in memory. Please set the 'output_key' explicitly."
                )
        else:
            output_key = self.output_key
        return inputs[prompt_input_key], outputs[output_key]

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Save the exchange: facts extracted, compressed when due (summary by ``llm``)."""
        question, answer = self._get_input_output(inputs, outputs)
        self.memory.add_messages([HumanMessage(content=question), AIMessage(content=answer)])
        self._views.invalidate()

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async twin of :meth:`save_context`."""
        question, answer = self._get_input_output(inputs, outputs)
        await self.memory.aadd_messages([HumanMessage(content=question), AIMessage(content=answer)])
        self._views.invalidate()

    def prune(self) -> None:
        """Compress now if a trigger is due (the classic ``prune``)."""
        self.memory.compress(force=False)
        self._views.invalidate()

    def clear(self) -> None:
        """Clear this thread's buffer (recent turns and running summary).

        The user's long-term memory - core facts and the archive - stays; use
        :meth:`forget_user` to delete it.
        """
        clear_thread(self.memory)
        self._views.invalidate()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    def forget_user(self) -> None:
        """Delete everything this user has, in every tier."""
        self.memory.forget_user()
        self._views.invalidate()
