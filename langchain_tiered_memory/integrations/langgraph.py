"""LangGraph nodes for tiered memory, and the prebuilt memory agent graph.

The work is done by small functions of a :class:`TieredMemory` and the
graph's messages (:func:`load_memory`, :func:`recall_memories`,
:func:`answer`, :func:`update_memory`); :class:`MemoryNodes` is the thin
adapter that finds the caller's memory from the run config and reads and
writes graph state. :func:`should_recall` (from :mod:`.gate`) is the
conditional edge::

    START -> load_memory -> (recall?) -> recall -> answer
          -> [tools -> answer]* -> update_memory -> END

(a run the identity rule refuses - no user, two users, another user than
the thread's owner - goes ``load_memory -> refuse``, which raises, with the
run's input taken back out of the thread's state).

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hello Ana!")]))
    >>> graph = build_memory_graph(model, store=store, context_window=4096, checkpointer=False)
    >>> out = graph.invoke({"messages": [HumanMessage("Hi, I'm Ana.")]},
    ...                    {"configurable": {"user_id": "ana", "thread_id": "t1"}})
    >>> out["messages"][-1].content, out["gate"]["recall"]
    ('Hello Ana!', False)
    >>> store.close()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import NotRequired

from langchain_tiered_memory.budget.context import ContextWindow, RecalledMemory
from langchain_tiered_memory.integrations.app_model import AppModelExtractor, memory_options_for
from langchain_tiered_memory.integrations.identity import IdentityError
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.models import require_chat_model, resolve_chat_model
from langchain_tiered_memory.recall.gate import should_recall
from langchain_tiered_memory.storage.base import StoreWithCheckpoints
from langchain_tiered_memory.storage.postgres.db import is_postgres_url
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.values.turns import message_text

__all__ = [
    "MemoryNodes",
    "MemoryState",
    "answer",
    "build_memory_graph",
    "check_owner",
    "load_memory",
    "prune_state",
    "raise_refusal",
    "recall_memories",
    "refusal",
    "rewritten_messages",
    "should_recall",
    "take_back",
    "tools_tokens",
    "update_memory",
]


class MemoryState(MessagesState):
    """Graph state: the messages plus what the memory did this turn.

    ``summary`` (running summary), ``core_memory`` (rendered core facts),
    ``recalled`` (records brought back), ``gate`` (the recall decision with
    its reason), ``token_usage`` (tokens per section of the last prompt),
    ``memory_user_id`` (the user who owns this thread), ``memory_generation``
    (the user's forget generation when the run began: a run that ends with
    another one saw a forget, and purges its checkpoints) and ``refused``
    (why the last run was refused, if it was; ``refused_error`` names the
    error it failed with).
    """

    summary: NotRequired[str]
    core_memory: NotRequired[str]
    recalled: NotRequired[list[dict[str, Any]]]
    gate: NotRequired[dict[str, Any] | None]
    token_usage: NotRequired[dict[str, int]]
    memory_user_id: NotRequired[str]
    memory_generation: NotRequired[int]
    refused: NotRequired[str | None]
    refused_error: NotRequired[str | None]


# -- pure functions of a memory and messages ---------------------------------------


def load_memory(memory: TieredMemory, messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """Store the new messages and run the recall gate on the latest user message."""
    memory.sync(messages)
    query = memory.latest_user_message()
    decision = memory.decide(query) if query else None
    memory.last_gate = decision
    return {
        "gate": decision.to_dict() if decision else None,
        "summary": memory.state.summary,
        "core_memory": memory.core.render(),
        "recalled": [],
    }


def recall_memories(memory: TieredMemory) -> dict[str, Any]:
    """Search the archive for the latest user message."""
    recalled = memory.recall(memory.latest_user_message())
    return {"recalled": [_recalled_to_dict(r) for r in recalled]}


def _recalled_to_dict(item: RecalledMemory) -> dict[str, Any]:
    data = asdict(item)
    data["created_at"] = item.created_at.isoformat() if item.created_at else None
    return data


def _recalled_from_dict(data: dict[str, Any]) -> RecalledMemory:
    from datetime import datetime

    values = dict(data)
    if values.get("created_at"):
        values["created_at"] = datetime.fromisoformat(values["created_at"])
    return RecalledMemory(**values)


def answer(
    memory: TieredMemory,
    model: Any,
    messages: Sequence[BaseMessage],
    recalled: Sequence[RecalledMemory] = (),
) -> tuple[AIMessage, ContextWindow]:
    """Call the model on the budgeted context (new messages, e.g. tool results, first)."""
    memory.sync(messages)
    context = memory.build_context(recalled=list(recalled))
    reply = model.invoke(context.messages)
    if not isinstance(reply, AIMessage):
        reply = AIMessage(message_text(reply) if isinstance(reply, BaseMessage) else str(reply))
    return reply, context


def prune_state(memory: TieredMemory, messages: Sequence[BaseMessage]) -> list[RemoveMessage]:
    """Remove from graph state the messages the memory has paged out (they are archived).

    Only messages the memory has stored and since evicted are removed; new
    messages it has not seen yet stay.
    """
    keep = memory.buffered_ids()
    seen = memory.known_ids([m.id for m in messages if m.id is not None])
    return [
        RemoveMessage(id=m.id)
        for m in messages
        if m.id is not None and m.id in seen and m.id not in keep
    ]


def update_memory(memory: TieredMemory, messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """Store the reply (compressing if due) and prune archived messages from state."""
    memory.sync(messages)
    return {
        "messages": prune_state(memory, messages),
        "summary": memory.state.summary,
        "core_memory": memory.core.render(),
    }


def check_owner(owner: str | None, user_id: str) -> None:
    """Refuse to mix users: a LangGraph thread belongs to the user who started it.

    LangGraph checkpoints are keyed by ``thread_id`` alone, so two users with
    the same thread id would share one message history.

    Raises:
        ValueError: if the thread already belongs to another user.
    """
    if owner is not None and owner != user_id:
        raise ValueError(
            f"This thread belongs to another user ({owner!r}), not {user_id!r}. LangGraph "
            "thread ids are global: give each user their own thread ids "
            "(e.g. f'{user_id}:{conversation}')."
        )


def tools_tokens(
    tools: Sequence[BaseTool | dict[str, Any] | Callable[..., Any]], memory: TieredMemory
) -> int:
    """Tokens the tools' schemas add to every prompt (counted as JSON)."""
    import json

    return sum(memory.counter.count_text(json.dumps(convert_to_openai_tool(t))) for t in tools)


# -- the thin LangGraph adapter ------------------------------------------------------


class MemoryNodes:
    """LangGraph node adapters over one :class:`MemoryResolver`.

    Args:
        resolver: Finds each run's memory from its config.
        model: The chat model for :meth:`answer`: a chat model, an
            ``init_chat_model`` string, ``"local"`` or ``"echo"`` (see
            :mod:`langchain_tiered_memory.models`), resolved now; ``None``:
            chosen per run via ``config["configurable"]["model"]`` or
            ``$TIERED_MEMORY_MODEL`` (resolved once per name).
        tools: Tools bound to the model (their schemas count in the budget).

    A model given here is also the fact extractor of the resolver's memories
    unless their options chose one
    (:class:`~langchain_tiered_memory.integrations.app_model.AppModelExtractor`);
    a model chosen per run is not (its thread's memory outlives the run).
    """

    def __init__(
        self,
        resolver: MemoryResolver,
        model: BaseChatModel | str | None = None,
        tools: Sequence[BaseTool] = (),
    ) -> None:
        self.resolver = resolver
        self.model = resolve_chat_model(model)
        self.tools = list(tools)
        self.extractors = AppModelExtractor.of(resolver)
        self._per_run: dict[str, BaseChatModel] = {}
        self._lock = threading.Lock()
        fallback = os.environ.get("TIERED_MEMORY_MODEL")
        if self.model is None and fallback:  # a bad $TIERED_MEMORY_MODEL fails here, not per turn
            self._per_run[fallback] = require_chat_model(fallback, what="TIERED_MEMORY_MODEL")

    def _memory(self, config: RunnableConfig) -> TieredMemory:
        memory = self.resolver.for_config(config)
        if self.model is not None:
            self.extractors.hand(memory, self.model)
        if self.tools and not memory.tools_tokens:
            memory.tools_tokens = tools_tokens(self.tools, memory)
        return memory

    def _model(self, config: RunnableConfig) -> Any:
        model: Any = self.model
        if model is None:
            name = (config.get("configurable") or {}).get("model") or os.environ.get(
                "TIERED_MEMORY_MODEL"
            )
            if not name:
                raise ValueError(
                    "No chat model: pass model=... to build_memory_graph, set "
                    "config['configurable']['model'] (an init_chat_model string such as "
                    "'openai:gpt-4o-mini', 'local' or 'echo'), or set TIERED_MEMORY_MODEL."
                )
            with self._lock:
                model = self._per_run.get(name)
                if model is None:
                    model = require_chat_model(name, what="the run's model")
                    self._per_run[name] = model
        return model.bind_tools(self.tools) if self.tools else model

    def load_memory(self, state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        """Node: check the thread's owner, sync messages, run the gate.

        A run the identity rule refuses - no user id, two sources naming
        different users, or another user than the thread's owner - has its
        input taken out of the thread's state again (:func:`take_back`: no
        later run, of any user, can sync it), and fails in the ``refuse``
        node with the same error.
        """
        owner = state.get("memory_user_id")
        try:
            who = self.resolver.identity(config)
            check_owner(owner, who.user_id)
        except (ValueError, TypeError) as exc:  # IdentityError is a ValueError
            return {**refusal(exc), "messages": take_back(self.resolver, owner, config, state)}
        memory = self._memory(config)
        generation = memory.generation  # before the sync: this input may forget the user
        update = load_memory(memory, state["messages"])
        if memory.generation != generation:  # a forget said in this input (all, or by words)
            update["messages"] = prune_state(memory, state["messages"])  # out of what is saved
        return {
            **update,
            "memory_user_id": memory.user_id,
            "memory_generation": generation,
            "refused": None,
            "refused_error": None,
        }

    def recall(self, state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        """Node: recall for the latest user message."""
        return recall_memories(self._memory(config))

    def answer(self, state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        """Node: the model answers from the budgeted context."""
        recalled = [_recalled_from_dict(r) for r in state.get("recalled") or []]
        reply, context = answer(
            self._memory(config), self._model(config), state["messages"], recalled
        )
        return {"messages": [reply], "token_usage": dict(context.usage)}

    def update_memory(self, state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        """Node: save the reply, compress, prune archived messages from state.

        When the user was forgotten during this run (a "forget everything" or a
        forget by words in its input, or another process), the checkpoints the run saved hold
        the forgotten messages: the thread is deleted from every checkpointer
        once they are saved (:meth:`~langchain_tiered_memory.store.MemoryStore.purge_checkpoints_after_run`),
        and this node's state - without them - is the one checkpoint left.
        """  # noqa: E501
        memory = self._memory(config)
        update = update_memory(memory, state["messages"])
        began, now = state.get("memory_generation"), memory.generation
        if began is None or now == began:
            return update
        if isinstance(memory.store, StoreWithCheckpoints):
            memory.store.purge_checkpoints_after_run(memory.thread_id, config)
        return {**_whole_state(memory, state, update), "memory_generation": now}


def rewritten_messages(memory: TieredMemory, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """A ``messages`` update that writes the whole list again, without what
    :func:`prune_state` removes: for the step after a checkpoint purge, which is then the
    thread's only checkpoint (a saver that stores only what a step changed, as Postgres
    does, would otherwise keep nothing of the messages)."""
    removed = {m.id for m in prune_state(memory, messages)}
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *(m for m in messages if m.id not in removed)]


def _whole_state(
    memory: TieredMemory, state: MemoryState, update: dict[str, Any]
) -> dict[str, Any]:
    """The state after ``update`` with every key written again (see
    :func:`rewritten_messages`). What this turn recalled and the gate's reason are
    dropped: they may quote what was forgotten."""
    return {
        **update,
        "messages": rewritten_messages(memory, state["messages"]),
        "recalled": [],
        "gate": None,
        "token_usage": dict(state.get("token_usage") or {}),
        "memory_user_id": memory.user_id,
        "refused": None,
        "refused_error": None,
    }


def _after_load(state: MemoryState) -> str:
    return "refuse" if state.get("refused") else should_recall(state)


#: The errors a refused run fails with, by name (the state keeps the name between steps).
_REFUSALS: dict[str, type[Exception]] = {
    "IdentityError": IdentityError,
    "TypeError": TypeError,
    "ValueError": ValueError,
}


def refusal(exc: Exception, key: str = "refused") -> dict[str, Any]:
    """The state keys (``key`` and ``<key>_error``) that record why a run was refused,
    for :func:`raise_refusal` to fail the run with the same error in a later step.

    Example:
        >>> refusal(IdentityError("No user id for this run"))
        {'refused': 'No user id for this run', 'refused_error': 'IdentityError'}
    """
    kind = type(exc).__name__
    return {key: str(exc), f"{key}_error": kind if kind in _REFUSALS else "ValueError"}


def raise_refusal(state: Any, key: str = "refused") -> None:
    """Fail the run with the error :func:`refusal` recorded in ``state``, if any."""
    message = state.get(key)
    if message:
        raise _REFUSALS.get(state.get(f"{key}_error") or "", ValueError)(message)


def take_back(
    resolver: MemoryResolver, owner: str | None, config: RunnableConfig, state: Any
) -> list[RemoveMessage]:
    """Removals of a refused run's input: every message of the state the thread's owner
    has not stored - all of them on a thread nobody owns yet - so that no later run, of
    the owner or of anyone, syncs what the refused run brought in.

    LangGraph saves the run's input in the thread before any node runs; this
    takes it out again in the refused run's own next checkpoint.
    """
    messages = state["messages"]
    ids = [m.id for m in messages if m.id is not None]
    seen: set[str] = set()
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    if owner is not None and ids and isinstance(thread, str):
        try:
            seen = resolver.get(owner, thread).known_ids(ids)
        except (ValueError, TypeError):  # a thread id no store holds: nothing of it is stored
            seen = set()
    return [RemoveMessage(id=m.id) for m in messages if m.id is not None and m.id not in seen]


def _refuse(state: MemoryState) -> dict[str, Any]:
    raise_refusal(state)
    raise ValueError("This run was refused.")


def _after_answer(state: MemoryState) -> str:
    last = state["messages"][-1] if state["messages"] else None
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tools"
    return "update_memory"


def build_memory_graph(
    model: BaseChatModel | str | None = None,
    *,
    store: Any = None,
    tools: Sequence[BaseTool] = (),
    checkpointer: Any = None,
    default_user_id: str | None = None,
    **memory_kwargs: Any,
) -> Any:
    """Build and compile the memory agent graph.

    Args:
        model: The chat model: a LangChain chat model, an ``init_chat_model``
            string (``"openai:gpt-4o-mini"``), ``"local"`` (offline SmolLM2) or
            ``"echo"`` (no LLM), resolved now so a bad one fails here; ``None``:
            chosen per run from ``config["configurable"]["model"]`` or
            ``$TIERED_MEMORY_MODEL``. Unless you size the memory yourself
            (``context_window=``, ``budget=``, ``token_counter=`` or
            ``model=`` among the memory options), the memory takes its window
            and token counter from this model where it can tell them. It is
            also the fact extractor
            (:class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor`:
            one structured-output call per ``extract_every`` turns, in the
            background - a run never waits for it) when it can give structured
            output; ``extractor="rules"`` among the memory options opts out,
            and a model without structured output (``"echo"``, LangChain's
            fake models) leaves the offline default running. A model chosen per run
            (``None`` here) answers only: the memory of a thread outlives a
            run, so facts are then written by the offline default (or by
            ``extractor=`` among the memory options).
        store: A :class:`~langchain_tiered_memory.store.MemoryStore`, a
            :class:`MemoryResolver`, or ``None`` for one at ``$TIERED_MEMORY_HOME``
            (a data directory, default ``.tiered-memory``, or a ``postgresql://`` URL).
        tools: Tools the model may call (a ``retrieve_memory`` tool among them
            for self-directed recall).
        checkpointer: A LangGraph checkpointer (forgetting a user deletes
            their threads from it); ``None`` for the store's own
            (:meth:`~langchain_tiered_memory.store.MemoryStore.checkpointer`:
            SQLite in the data directory, or LangGraph's ``PostgresSaver`` in
            a Postgres store's database, so conversations survive restarts);
            ``False`` for none (what the LangGraph server wants: it brings
            its own persistence).
        default_user_id: The user of runs that name none (opt-in; without it
            such a run is an error, see :mod:`langchain_tiered_memory.integrations.identity`).
        **memory_kwargs: Budget and memory options (``context_window``, ``model``...).

    Returns:
        The compiled graph; ``user_id`` and ``thread_id`` come from
        ``config["configurable"]`` or the runtime context.
    """
    chat_model = resolve_chat_model(model)
    if isinstance(store, MemoryResolver):
        if memory_kwargs or default_user_id is not None:
            raise TypeError(
                "Given a MemoryResolver as store=, configure it directly: memory options "
                "and default_user_id= apply only when the resolver is built here."
            )
        resolver = store
    else:
        if store is None:
            home = os.environ.get("TIERED_MEMORY_HOME", ".tiered-memory")  # or a postgresql:// URL
            store = MemoryStore(home if is_postgres_url(home) else Path(home))
        options = memory_options_for(chat_model, memory_kwargs)
        resolver = MemoryResolver(store, default_user_id=default_user_id, **options)
    nodes = MemoryNodes(resolver, chat_model, tools)
    builder = StateGraph(MemoryState)
    builder.add_node("load_memory", nodes.load_memory)
    builder.add_node("recall", nodes.recall)
    builder.add_node("answer", nodes.answer)
    builder.add_node("update_memory", nodes.update_memory)
    builder.add_node("refuse", _refuse)
    builder.add_edge(START, "load_memory")
    builder.add_conditional_edges(
        "load_memory", _after_load, {"recall": "recall", "answer": "answer", "refuse": "refuse"}
    )
    builder.add_edge("recall", "answer")
    if tools:
        from langgraph.prebuilt import ToolNode

        builder.add_node("tools", ToolNode(list(tools)))
        builder.add_conditional_edges(
            "answer", _after_answer, {"tools": "tools", "update_memory": "update_memory"}
        )
        builder.add_edge("tools", "answer")
    else:
        builder.add_edge("answer", "update_memory")
    builder.add_edge("update_memory", END)
    builder.add_edge("refuse", END)
    owner = resolver.source if isinstance(resolver.source, MemoryStore) else None
    if checkpointer is None:
        if owner is None:
            raise ValueError(
                "No checkpointer: the memory source is not a MemoryStore, so there is no "
                "default one. Pass checkpointer=<a LangGraph checkpointer> (or False for none)."
            )
        checkpointer = owner.checkpointer()  # in the store's directory: forgets reach it
    elif checkpointer is not False and owner is not None:
        owner.attach_checkpointer(checkpointer)
    return builder.compile(checkpointer=checkpointer or None)
