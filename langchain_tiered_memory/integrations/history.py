"""``RunnableWithMessageHistory`` over tiered memory: a chat history and its factory.

* :class:`TieredChatMessageHistory` - a ``BaseChatMessageHistory``. Writes go
  to the tiered memory; reading ``.messages`` returns the *budgeted view*
  (core memory, running summary, recalled records and the recent turns that
  fit), not the raw log.
* :func:`tiered_history_factory` - a ``get_session_history`` callable, for
  the ``session_id`` form and for the ``history_factory_config`` form
  (``user_id`` + ``conversation_id``). One memory per session, cached,
  thread-safe; durable over a ``MemoryStore``.

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
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
)

from langchain_tiered_memory.budget.context import ContextWindow
from langchain_tiered_memory.integrations.identity import (
    DEFAULT_THREAD,
    IdentityError,
    check_default_user,
    check_run_user,
    given_id,
)
from langchain_tiered_memory.memory import TieredMemory

if TYPE_CHECKING:
    from langchain_tiered_memory.store import MemoryStore

from langchain_tiered_memory.integrations.history_view import ViewMaker, clear_thread, message_cost

logger = logging.getLogger(__name__)

__all__ = ["TieredChatMessageHistory", "TieredHistoryFactory", "tiered_history_factory"]


class TieredChatMessageHistory(BaseChatMessageHistory):
    """A chat message history for ``RunnableWithMessageHistory``, backed by tiered memory.

    Writes (``add_messages``) go to the :class:`TieredMemory`: they are saved,
    facts are extracted and the buffer is compressed when due. Reading
    :attr:`messages` returns the *budgeted view* -
    ``memory.build_context().messages`` - so a chain that puts the history in
    its prompt stays within the memory's token budget however long the
    conversation gets. The running summary, core memory and recalled records
    are ``SystemMessage`` s at the head of the view.

    A history is one user's: used inside a LangGraph or LangChain run whose
    runtime context (or config) names another user, every read and write is
    an :class:`~langchain_tiered_memory.integrations.identity.IdentityError`
    (the one rule of :mod:`langchain_tiered_memory.integrations.identity`).

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
        self._views = ViewMaker(memory, include_system_prompt, reserve_tokens)

    @property
    def include_system_prompt(self) -> bool:
        """Whether the view starts with the pinned system prompt."""
        return self._views.include_system_prompt

    # -- reading ---------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The budgeted view of this thread (a fresh list on every read)."""
        self._check_run()
        views = self._views
        return views.shape(views.context(None, self.recall))

    def get_messages(self, query: str | None = None) -> list[BaseMessage]:
        """The budgeted view, with recall gated on ``query`` (default: latest user message)."""
        self._check_run()
        views = self._views
        return views.shape(views.context(query, self.recall))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages`."""
        self._check_run()
        views = self._views
        return views.shape(await views.acontext(None, self.recall))

    @property
    def context(self) -> ContextWindow:
        """The :class:`ContextWindow` behind :attr:`messages` (usage per section etc.)."""
        self._check_run()
        return self._views.context(None, self.recall)

    # -- writing ---------------------------------------------------------------

    def add_message(self, message: BaseMessage) -> None:
        """Add one message to the memory."""
        self.add_messages([message])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Add messages to the memory: saved, facts extracted, compressed when due.

        A ``SystemMessage`` replaces the memory's pinned system prompt.

        Raises:
            IdentityError: inside a run whose runtime context or config names
                another user than this history's (nothing is stored).
        """
        self._check_run()
        self._check_reserve(messages)
        self.memory.add_messages(list(messages))
        self._views.invalidate()

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`."""
        self._check_run()
        self._check_reserve(messages)
        await self.memory.aadd_messages(list(messages))
        self._views.invalidate()

    def _check_run(self) -> None:
        """The one identity rule: inside a run that names another user, refuse."""
        check_run_user(self.memory.user_id)

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
        self._check_run()
        clear_thread(self.memory)
        self._views.invalidate()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    def forget_user(self) -> None:
        """Delete everything this user has, in every tier (core, archive, every thread)."""
        self._check_run()
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
            :mod:`langchain_tiered_memory.integrations.identity`); ids must be strings.
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
        """The (cached) history of one user's thread.

        Raises:
            IdentityError: inside a run whose runtime context or config names
                another user (the rule of :mod:`.identity`); nothing is opened.
        """
        check_run_user(user_id)
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
