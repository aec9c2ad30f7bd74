"""One identity rule in every adapter: graph, middleware, pre-model hook, tools, chains.

The same bad runs go through each adapter and must fail the same way: no user
id is an error unless the app opted into ``default_user_id=``; ``0`` and
``False`` are type errors; config and runtime context naming different users
(or threads) is an error; the thread id comes from the same place everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_tiered_memory.integrations.agents import (
    TieredMemoryMiddleware,
    create_pre_model_hook,
)
from langchain_tiered_memory.integrations.history import TieredHistoryFactory
from langchain_tiered_memory.integrations.identity import IdentityError, resolve_identity
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.integrations.tools import (
    create_core_memory_tools,
    create_retrieve_memory_tool,
)
from langchain_tiered_memory.store import MemoryStore


@pytest.fixture
def store(tmp_path):
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as s:
        yield s


def fake() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(f"ok {i}") for i in range(20)]))


# -- one runner per adapter: run(store, config, context, **options) -> the (user, thread) used


class Opened:
    """A memory source that records which (user, thread) each adapter opened."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.calls: list[tuple[str, str]] = []

    def __call__(self, user_id: str, thread_id: str) -> Any:
        self.calls.append((user_id, thread_id))
        return self.store.memory(user_id, thread_id, context_window=4096)

    def last(self) -> tuple[str, str]:
        assert len(set(self.calls)) == 1, self.calls  # one memory per run, whoever asks
        return self.calls[-1]


def run_graph(store: MemoryStore, config: Any, context: Any, **options: Any) -> tuple[str, str]:
    source = Opened(store)
    graph = build_memory_graph(fake(), store=source, checkpointer=False, **options)
    out = graph.invoke({"messages": [HumanMessage("I live in Lisbon.")]}, config, context=context)
    assert out["memory_user_id"] == source.last()[0]
    return source.last()


def run_middleware(
    store: MemoryStore, config: Any, context: Any, **options: Any
) -> tuple[str, str]:
    source = Opened(store)
    agent = create_agent(fake(), middleware=[TieredMemoryMiddleware(source, **options)])
    out = agent.invoke({"messages": [HumanMessage("I live in Lisbon.")]}, config, context=context)
    assert out["memory_user_id"] == source.last()[0]
    return source.last()


def run_hook(store: MemoryStore, config: Any, context: Any, **options: Any) -> tuple[str, str]:
    source = Opened(store)
    builder = StateGraph(MessagesState)
    builder.add_node("hook", create_pre_model_hook(source, **options))
    builder.add_edge(START, "hook")
    builder.compile().invoke(
        {"messages": [HumanMessage("I live in Lisbon.", id="m1")]}, config, context=context
    )
    return source.last()


def run_tool(store: MemoryStore, config: Any, context: Any, **options: Any) -> tuple[str, str]:
    source = Opened(store)
    append = create_core_memory_tools(source, **options)[0]
    builder = StateGraph(MessagesState)
    builder.add_node("tool", lambda state: {"messages": [append.invoke(_call())]})
    builder.add_edge(START, "tool")
    out = builder.compile().invoke({"messages": []}, config, context=context)
    [result] = out["messages"]
    if result.status == "error":
        raise ToolFailure(result.content)
    return source.last()


def _call() -> ToolCall:
    return ToolCall(
        name="core_memory_append",
        args={"subject": "home_city", "content": "lives in Lisbon"},
        id="c1",
        type="tool_call",
    )


class ToolFailure(Exception):
    """The tool answered with an error message (tools never raise into the agent)."""


RUNNERS: dict[str, Callable[..., tuple[str, str]]] = {
    "graph": run_graph,
    "middleware": run_middleware,
    "pre_model_hook": run_hook,
    "tools": run_tool,
}


def _errors(name: str) -> tuple[type[Exception], ...]:
    return (ToolFailure,) if name == "tools" else (IdentityError,)


@pytest.mark.parametrize("name", RUNNERS)
def test_a_run_without_a_user_is_an_error(store, name) -> None:
    with pytest.raises(_errors(name), match="No user id"):
        RUNNERS[name](store, {"configurable": {"thread_id": "t1"}}, None)
    with pytest.raises(_errors(name), match="empty"):
        RUNNERS[name](store, {"configurable": {"user_id": "  ", "thread_id": "t1"}}, None)
    assert store.users() == []  # nothing was written for anybody


@pytest.mark.parametrize("name", RUNNERS)
def test_default_user_is_opt_in(store, name) -> None:
    user, thread = RUNNERS[name](
        store, {"configurable": {"thread_id": "t1"}}, None, default_user_id="demo"
    )
    assert (user, thread) == ("demo", "t1")


@pytest.mark.parametrize("name", RUNNERS)
@pytest.mark.parametrize("bad", [0, False, 7.5])
def test_ids_that_are_not_strings_are_type_errors(store, name, bad) -> None:
    errors = (ToolFailure,) if name == "tools" else (TypeError,)
    with pytest.raises(errors, match="must be a string"):
        RUNNERS[name](store, {"configurable": {"user_id": bad, "thread_id": "t1"}}, None)
    with pytest.raises(errors, match="must be a string"):
        RUNNERS[name](store, {"configurable": {"user_id": "ana", "thread_id": bad}}, None)
    assert store.users() == []


@pytest.mark.parametrize("name", RUNNERS)
def test_config_and_context_must_agree(store, name) -> None:
    with pytest.raises(_errors(name), match="different users"):
        RUNNERS[name](store, {"configurable": {"user_id": "ana"}}, {"user_id": "bob"})
    with pytest.raises(_errors(name), match="different threads"):
        RUNNERS[name](
            store, {"configurable": {"user_id": "ana", "thread_id": "t1"}}, {"thread_id": "t2"}
        )
    assert store.users() == []


@pytest.mark.parametrize("name", RUNNERS)
def test_one_place_for_user_and_thread(store, name) -> None:
    # the user from the context, the thread from the config: every adapter agrees
    assert RUNNERS[name](store, {"configurable": {"thread_id": "t7"}}, {"user_id": "ana"}) == (
        "ana",
        "t7",
    )


@pytest.mark.parametrize("name", RUNNERS)
def test_the_thread_from_the_context_alone(store, name) -> None:
    assert RUNNERS[name](store, {"configurable": {"user_id": "ana"}}, {"thread_id": "t3"}) == (
        "ana",
        "t3",
    )


def test_the_server_s_authenticated_user_counts(store) -> None:
    auth = {"configurable": {"langgraph_auth_user_id": "ana", "thread_id": "t1"}}
    assert resolve_identity(auth, None).user_id == "ana"
    with pytest.raises(IdentityError, match="different users"):
        resolve_identity({"configurable": {**auth["configurable"], "user_id": "bob"}}, None)
    # the dev server without auth sets it to "": that names nobody
    assert (
        resolve_identity(
            {"configurable": {"langgraph_auth_user_id": "", "user_id": "bob"}}, None
        ).user_id
        == "bob"
    )


def test_tools_bound_user_must_agree_and_is_not_a_default(store) -> None:
    tool = create_retrieve_memory_tool(store, user_id="ana")
    assert tool.invoke({"query": "x"}) == "No memories found."  # bound: the run needs none
    out = tool.invoke({"query": "x"}, config={"configurable": {"user_id": "bob"}})
    assert out.startswith("Memory unavailable") and "different users" in out
    with pytest.raises(ValueError, match="non-empty"):
        create_retrieve_memory_tool(store, default_user_id="")
    with pytest.raises(TypeError, match="must be a string"):
        create_retrieve_memory_tool(store, user_id=0)  # type: ignore[arg-type]


def test_tool_errors_reach_the_model_as_tool_messages(store) -> None:
    [append, *_] = create_core_memory_tools(store)
    message = append.invoke(_call())
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert "No user id" in message.content and "default_user_id" in message.content


# -- the chains follow the same rule ---------------------------------------------------


def test_history_factory_ids_are_strings_and_a_user_is_required() -> None:
    factory = TieredHistoryFactory(context_window=2048)
    with pytest.raises(TypeError, match="must be a string"):
        factory(0)
    with pytest.raises(TypeError, match="must be a string"):
        factory(user_id=False, conversation_id="c")
    with pytest.raises(TypeError, match="must be a string"):
        factory(user_id="ana", conversation_id=3)
    with pytest.raises(IdentityError, match="default_user_id"):
        factory(user_id="", conversation_id="c")
    with pytest.raises(IdentityError, match="No session_id"):
        factory("")
    shared = TieredHistoryFactory(context_window=2048, default_user_id="demo")
    assert shared(user_id="", conversation_id="c").memory.user_id == "demo"
    assert shared(user_id="ana").memory.thread_id == "default"


def test_resolver_takes_default_user_id_and_refuses_the_removed_option(store) -> None:
    with pytest.raises(TypeError, match="require_user= was removed"):
        MemoryResolver(store, require_user=True)
    with pytest.raises(ValueError, match="non-empty"):
        MemoryResolver(store, default_user_id="")
    resolver = MemoryResolver(store, default_user_id="demo", context_window=4096)
    assert resolver.for_config({}, None).user_id == "demo"
    with pytest.raises(ValueError, match="non-empty"):
        resolver.get("", "t")
    with pytest.raises(TypeError, match="configure it directly"):
        TieredMemoryMiddleware(resolver, context_window=1024)
    with pytest.raises(TypeError, match="configure it directly"):
        build_memory_graph(fake(), store=resolver, default_user_id="x", checkpointer=False)


def _history_chain(factory: TieredHistoryFactory) -> Any:
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import ConfigurableFieldSpec
    from langchain_core.runnables.history import RunnableWithMessageHistory

    prompt = ChatPromptTemplate([MessagesPlaceholder("history"), ("human", "{input}")])
    return RunnableWithMessageHistory(
        prompt | fake(),
        factory,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=[
            ConfigurableFieldSpec(id="user_id", annotation=str),
            ConfigurableFieldSpec(id="conversation_id", annotation=str, default="c1"),
        ],
    )


def _in_a_graph(step: Callable[[Any], Any]) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("chain", lambda state, config: {"messages": [step(config)]})
    builder.add_edge(START, "chain")
    return builder.compile()


@pytest.mark.filterwarnings("ignore:.*RunnableWithMessageHistory is deprecated")
def test_the_chat_history_in_a_graph_node_follows_the_runtime_context(store) -> None:
    chain = _history_chain(TieredHistoryFactory(store, context_window=4096))
    graph = _in_a_graph(lambda config: chain.invoke({"input": "I'm allergic to kiwis."}, config))
    config = {"configurable": {"user_id": "ana", "conversation_id": "c1"}}
    with pytest.raises(IdentityError, match="different users"):
        graph.invoke({"messages": []}, config, context={"user_id": "bob"})
    assert store.users() == []  # nothing stored as ana's (nor as bob's)
    graph.invoke({"messages": []}, config, context={"user_id": "ana"})  # agreeing: fine
    assert store.core("ana").get("allergy:kiwis") is not None


def test_a_history_of_one_user_refuses_a_run_of_another(store) -> None:
    from langchain_tiered_memory.integrations.history import TieredChatMessageHistory

    history = TieredChatMessageHistory(store.memory("ana", "c1", context_window=4096))
    history.add_messages([HumanMessage("I live in Lisbon."), AIMessage("Nice.")])

    def read(config: Any) -> AIMessage:
        return AIMessage(str(len(history.messages)))

    def write(config: Any) -> AIMessage:
        history.add_messages([HumanMessage("I'm allergic to kiwis.")])
        return AIMessage("stored")

    for step in (read, write):
        with pytest.raises(IdentityError, match="different users"):
            _in_a_graph(step).invoke({"messages": []}, {}, context={"user_id": "bob"})
    assert store.core("ana").get("allergy:kiwis") is None
    out = _in_a_graph(read).invoke({"messages": []}, {}, context={"user_id": "ana"})
    assert out["messages"][-1].content != "0"


def test_the_classic_memory_refuses_a_run_of_another_user(store) -> None:
    from langchain_tiered_memory.integrations.classic import TieredConversationMemory

    classic = TieredConversationMemory(memory=store.memory("ana", "c1", context_window=4096))

    def save(config: Any) -> AIMessage:
        classic.save_context({"input": "I'm allergic to kiwis."}, {"response": "Noted."})
        return AIMessage("saved")

    with pytest.raises(IdentityError, match="different users"):
        _in_a_graph(save).invoke({"messages": []}, {}, context={"user_id": "bob"})
    assert store.users() == []
