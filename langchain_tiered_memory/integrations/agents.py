"""Tiered memory for agents: a ``create_agent`` middleware and a
``pre_model_hook`` for LangGraph's ``create_react_agent``.

Both do the same thing before each model call: store the agent's new
messages in the caller's memory (found from ``config["configurable"]`` or the
runtime context: ``user_id``, ``thread_id``), assemble the budgeted context
(system prompt, core memory, running summary, recalled records, recent whole
turns) and send that to the model instead of the whole history. Messages the
memory has archived are removed from the agent's state, so checkpoints stay
small too. Add :func:`~langchain_tiered_memory.integrations.tools.create_retrieve_memory_tool`
to the agent's tools for self-directed (ReAct/MemGPT-style) recall.

Example:
    >>> import tempfile
    >>> from langchain.agents import create_agent
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("Hi Ana")])),
    ...                      middleware=[TieredMemoryMiddleware(store, context_window=4096)])
    >>> out = agent.invoke({"messages": [HumanMessage("I'm allergic to peanuts.")]},
    ...                    {"configurable": {"user_id": "ana", "thread_id": "t1"}})
    >>> out["messages"][-1].content
    'Hi Ana'
    >>> store.memory("ana", "t1").core.get("allergy:peanuts").content
    'allergic to peanuts'
    >>> store.close()
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from typing_extensions import NotRequired

from langchain_tiered_memory.budget.context import ContextWindow
from langchain_tiered_memory.integrations.app_model import AppModelExtractor, memory_options_for
from langchain_tiered_memory.integrations.langgraph import (
    check_owner,
    prune_state,
    raise_refusal,
    refusal,
    rewritten_messages,
    take_back,
    tools_tokens,
)
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.base import StoreWithCheckpoints
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.values.turns import message_text

__all__ = ["TieredMemoryMiddleware", "create_pre_model_hook", "split_system"]


def split_system(context: ContextWindow) -> tuple[SystemMessage | None, list[BaseMessage]]:
    """Merge the context's leading system messages into one, for agent APIs that
    take the system message apart from the conversation.

    The pinned system prompt comes first, unchanged; core memory and the
    summary follow as labelled blocks. That system message changes only at a
    compression, so a provider's prompt cache keeps it; the per-turn memory
    (recalled records, facts from the recent turns) travels in the newest
    user message, which stays in ``rest``.
    """
    system_parts: list[str] = []
    rest: list[BaseMessage] = []
    for message in context.messages:
        if isinstance(message, SystemMessage) and not rest:
            system_parts.append(message_text(message))
        else:
            rest.append(message)
    system = SystemMessage("\n\n".join(p for p in system_parts if p)) if system_parts else None
    return system, rest


def _resolver(
    source: Any, default_user_id: str | None, memory_kwargs: dict[str, Any]
) -> MemoryResolver:
    if isinstance(source, MemoryResolver):
        if memory_kwargs or default_user_id is not None:
            given = sorted([*memory_kwargs, *(["default_user_id"] if default_user_id else [])])
            raise TypeError(
                f"Given a MemoryResolver, configure it directly: {given} apply only when "
                "the resolver is built here (from a MemoryStore)."
            )
        return source
    return MemoryResolver(source, default_user_id=default_user_id, **memory_kwargs)


def _ensure_ids(messages: Sequence[BaseMessage]) -> None:
    for message in messages:
        if message.id is None:
            message.id = f"tm-{uuid.uuid4().hex}"


class TieredMemoryState(AgentState[Any]):
    """Agent state plus the user who owns the thread, their forget generation when the
    run began (a run that ends with another one saw a forget), and why the run was
    refused, if it was."""

    memory_user_id: NotRequired[str]
    memory_generation: NotRequired[int]
    memory_refused: NotRequired[str | None]
    memory_refused_error: NotRequired[str | None]


#: The state key of the middleware's refusal (why the run was refused).
_REFUSED = "memory_refused"


def _run_config() -> RunnableConfig | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:
        return None


class TieredMemoryMiddleware(AgentMiddleware[TieredMemoryState, Any, Any]):
    """``create_agent`` middleware: budgeted context before, memory update after.

    The run's user and thread are found by the one rule of
    :mod:`langchain_tiered_memory.integrations.identity` (runtime context and
    ``config["configurable"]`` must agree; no user id is an error unless
    ``default_user_id`` is given).

    Args:
        source: A :class:`~langchain_tiered_memory.store.MemoryStore` or a
            :class:`MemoryResolver`.
        default_user_id: The user of runs that name none (opt-in).
        checkpointer: The agent's checkpointer (``create_agent(checkpointer=...)``):
            forgetting a user then deletes their threads from it too.
        **memory_kwargs: Memory options (``context_window``, ``model``, ...).

    The agent's chat model (the one each model call goes to) is the fact
    extractor of the memories the middleware opens
    (:class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor`:
    one structured-output call per ``extract_every`` turns, in the background -
    a model call never waits for it) when it can give structured output.
    ``extractor=`` among the memory options (``"rules"`` to opt out) - or
    among a :class:`MemoryResolver` source's - is what runs instead, and so is
    whatever a callable source's memories run. A model without structured
    output (LangChain's fake models, the echo model) leaves the offline default running,
    with a log line.
    A memory keeps the first such model it met (see
    :class:`~langchain_tiered_memory.integrations.app_model.AppModelExtractor`).
    """

    state_schema = TieredMemoryState

    def __init__(
        self,
        source: Any,
        *,
        default_user_id: str | None = None,
        checkpointer: Any = None,
        **memory_kwargs: Any,
    ) -> None:
        super().__init__()
        self.resolver = _resolver(source, default_user_id, memory_kwargs)
        self.extractors = AppModelExtractor.of(self.resolver)
        if checkpointer is not None:
            store = self.resolver.source
            if not isinstance(store, MemoryStore):
                raise TypeError(
                    "checkpointer= needs a MemoryStore source (forgets are the store's); "
                    "attach it with store.attach_checkpointer(...) instead"
                )
            store.attach_checkpointer(checkpointer)

    def _memory(self, request: ModelRequest) -> TieredMemory:
        runtime = getattr(request, "runtime", None)
        memory = self.resolver.for_config(_run_config(), getattr(runtime, "context", None))
        if request.tools:
            memory.tools_tokens = tools_tokens(request.tools, memory)
        if request.system_message is not None and not memory.system_prompt:
            memory.system_prompt = message_text(request.system_message)
        self.extractors.hand(memory, request.model)
        return memory

    def _prepare(self, request: ModelRequest) -> tuple[TieredMemory, ModelRequest]:
        memory = self._memory(request)
        _ensure_ids(request.messages)
        memory.sync(request.messages)
        system, rest = split_system(memory.build_context())
        return memory, request.override(system_message=system, messages=rest)  # type: ignore[arg-type]

    @staticmethod
    def _save(memory: TieredMemory, response: Any) -> None:
        messages = response.result if isinstance(response, ModelResponse) else [response]
        replies = [m for m in messages if isinstance(m, AIMessage)]
        _ensure_ids(replies)
        memory.sync(replies)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Send the budgeted context; store the reply."""
        memory, budgeted = self._prepare(request)
        response = handler(budgeted)
        self._save(memory, response)
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        import asyncio

        memory, budgeted = await asyncio.to_thread(self._prepare, request)
        response = await handler(budgeted)
        await asyncio.to_thread(self._save, memory, response)
        return response

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Check the run's user (the identity rule, and the thread's owner) and note their
        forget generation (see :meth:`after_agent`).

        A refused run has its input taken back out of the thread's state
        (:func:`~langchain_tiered_memory.integrations.langgraph.take_back`: no
        later run, of any user, syncs it); :meth:`before_model` then fails
        it with the error.
        """
        config = _run_config()
        owner = state.get("memory_user_id")
        try:
            memory = self.resolver.for_config(config, getattr(runtime, "context", None))
            check_owner(owner, memory.user_id)
        except (ValueError, TypeError) as exc:  # IdentityError is a ValueError
            return {
                **refusal(exc, _REFUSED),
                "messages": take_back(self.resolver, owner, config or {}, state),
            }
        return {
            "memory_user_id": memory.user_id,
            "memory_generation": memory.generation,
            _REFUSED: None,
            f"{_REFUSED}_error": None,
        }

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """After a run during which its user was forgotten ("forget everything" in its
        input, or another process): delete the thread from the checkpointers once the
        run's checkpoints are saved - they hold the forgotten messages - and leave a
        state without them as the one checkpoint
        (:meth:`~langchain_tiered_memory.store.MemoryStore.purge_checkpoints_after_run`;
        pass ``checkpointer=`` so the store knows the agent's)."""
        if state.get(_REFUSED):
            return None
        config = _run_config()
        memory = self.resolver.for_config(config, getattr(runtime, "context", None))
        began, now = state.get("memory_generation"), memory.generation
        if began is None or began == now:
            return None
        if isinstance(memory.store, StoreWithCheckpoints):
            memory.store.purge_checkpoints_after_run(memory.thread_id, config)
        return {
            "messages": rewritten_messages(memory, state["messages"]),
            "memory_user_id": memory.user_id,
            "memory_generation": now,
        }

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Remove archived messages from the agent's state (they live in the archive);
        fail a run :meth:`before_agent` refused."""
        raise_refusal(state, _REFUSED)
        config = _run_config()
        memory = self.resolver.for_config(config, getattr(runtime, "context", None))
        check_owner(state.get("memory_user_id"), memory.user_id)
        update: dict[str, Any] = {"memory_user_id": memory.user_id}
        removals = prune_state(memory, state["messages"]) if memory.messages else []
        if removals:
            update["messages"] = removals
        return update


def create_pre_model_hook(
    source: Any,
    *,
    model: BaseChatModel | str | None = None,
    tools: Sequence[BaseTool | dict[str, Any] | Callable[..., Any]] = (),
    default_user_id: str | None = None,
    **memory_kwargs: Any,
) -> Callable[..., dict[str, Any]]:
    """A ``pre_model_hook`` for ``langgraph.prebuilt.create_react_agent``.

    The hook stores new messages, prunes archived ones from state, and hands
    the model the budgeted context as ``llm_input_messages``. The agent's own
    reply is stored at the next call (or call ``memory.sync`` after the run).

    Args:
        source: A :class:`~langchain_tiered_memory.store.MemoryStore` or a
            :class:`MemoryResolver`.
        model: The agent's chat model - the one you give ``create_react_agent``
            (a pre-model hook cannot see it otherwise). It is the fact extractor
            (:class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor`:
            one structured-output call per ``extract_every`` turns, in the
            background - the hook never waits for it) when it can give structured
            output, and it sizes the memory as in
            :func:`~langchain_tiered_memory.integrations.langgraph.build_memory_graph`
            (its window and token counter, where it can tell them and no other
            sizing option is given). ``extractor=`` among the memory options
            (``"rules"`` to opt out) is what runs instead; without a model, or
            with one without structured output, the offline default runs. With a
            :class:`MemoryResolver` source the model only extracts, for the
            memories whose options chose no extractor. A model name
            (``"gpt-4o-mini"``) sizes the memory only, as the memory option
            ``model=`` does.
        tools: The agent's tools - the same list you give ``create_react_agent``.
            ``create_react_agent`` binds their schemas to the model, so they are
            sent with every prompt; the hook counts them in the budget (a
            pre-model hook cannot see them otherwise).
        default_user_id: The user of runs that name none (opt-in).
        **memory_kwargs: Memory options (``context_window``, ``model``, ...).

    Example:
        >>> import tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_tiered_memory.store import MemoryStore
        >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
        >>> hook = create_pre_model_hook(store, context_window=4096)
        >>> from langchain_core.messages import HumanMessage
        >>> out = hook({"messages": [HumanMessage("hi", id="1")]},
        ...            {"configurable": {"user_id": "ana", "thread_id": "t"}})
        >>> [m.type for m in out["llm_input_messages"]]
        ['human']
        >>> store.close()
    """
    agent_model = model if isinstance(model, BaseChatModel) else None
    if agent_model is not None and not isinstance(source, MemoryResolver):
        memory_kwargs = memory_options_for(agent_model, memory_kwargs)
    elif model is not None and agent_model is None:
        memory_kwargs = {**memory_kwargs, "model": model}  # a name: the size only
    resolver = _resolver(source, default_user_id, memory_kwargs)
    extractors = AppModelExtractor.of(resolver)
    tool_list = list(tools)

    def pre_model_hook(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        memory = resolver.for_config(config)
        if agent_model is not None:  # a resolver's memories, unless they chose an extractor
            extractors.hand(memory, agent_model)
        if tool_list:
            memory.tools_tokens = tools_tokens(tool_list, memory)
        messages = list(state["messages"])
        _ensure_ids(messages)
        memory.sync(messages)
        context = memory.build_context()
        update: dict[str, Any] = {"llm_input_messages": context.messages}
        removals = prune_state(memory, messages)
        if removals:
            update["messages"] = removals
        return update

    return pre_model_hook
