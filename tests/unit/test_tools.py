"""The memory tools: per-user isolation, agent APIs, core memory editing, errors."""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_tiered_memory.budget.context import RecalledMemory
from langchain_tiered_memory.ids import fact_record_id
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.integrations.tools import (
    MEMORY_TOOL_HEADER,
    create_core_memory_tools,
    create_memgpt_tools,
    create_retrieve_memory_tool,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionTriggers

HAS_RECALL = importlib.util.find_spec("langchain_tiered_memory.recall.hybrid") is not None

ANA_TEXT = "Ana flies to Lisbon on 14 April, seat 12A"
BOB_TEXT = "Bob's sister Maria lives in Lisbon near the river"
ANA: RunnableConfig = {"configurable": {"user_id": "ana", "thread_id": "t1"}}
BOB: RunnableConfig = {"configurable": {"user_id": "bob", "thread_id": "t9"}}


class KeywordRecallMemory(TieredMemory):
    """Stand-in for the real recaller: BM25 over this user's archive records."""

    def recall(self, query: str, *, k: int | None = None) -> list[RecalledMemory]:
        assert self.store is not None
        hits = self.store.archive.keyword_search(query, self.user_id, n=k or 3)
        return [
            RecalledMemory(r.text, source=r.kind, created_at=r.created_at, score=s, record_id=r.id)
            for r, s in hits
        ]


class FakeToolModel(GenericFakeChatModel):
    """A chat model that replays its messages and accepts tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:
        return self


def fake_model(tool_name: str = "retrieve_memory", query: str = "Lisbon") -> FakeToolModel:
    call = {"name": tool_name, "args": {"query": query}, "id": "call_1"}
    return FakeToolModel(
        messages=iter([AIMessage("", tool_calls=[call]), AIMessage("You fly on 14 April.")])
    )


def make_store(path: Path) -> MemoryStore:
    store = MemoryStore(path, embeddings=DeterministicFakeEmbedding(size=16))
    store.archive.add(
        [
            MemoryRecord.new(user_id="ana", kind="fact", text=ANA_TEXT),
            MemoryRecord.new(user_id="bob", kind="fact", text=BOB_TEXT),
        ]
    )
    return store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = make_store(tmp_path / "mem")
    yield s
    s.close()


def standin_source(store: MemoryStore) -> Callable[[str, str], TieredMemory]:
    return lambda user_id, thread_id: KeywordRecallMemory(
        store=store, user_id=user_id, thread_id=thread_id
    )


SOURCES = [
    pytest.param("standin", id="keyword-standin"),
    pytest.param(
        "store",
        id="store-recall",
        marks=pytest.mark.skipif(not HAS_RECALL, reason="recall.py has not landed yet"),
    ),
]


@pytest.fixture(params=SOURCES)
def retrieve_tool(request: pytest.FixtureRequest, store: MemoryStore) -> BaseTool:
    source = store if request.param == "store" else standin_source(store)
    return create_retrieve_memory_tool(source)


def tool_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


# -- isolation ----------------------------------------------------------------------


def test_one_tool_many_users_see_only_their_own(retrieve_tool: BaseTool) -> None:
    ana = retrieve_tool.invoke({"query": "Lisbon"}, config=ANA)
    bob = retrieve_tool.invoke({"query": "Lisbon"}, config=BOB)
    assert ana.startswith(MEMORY_TOOL_HEADER)
    assert "Ana flies to Lisbon" in ana and "Maria" not in ana
    assert "Maria lives in Lisbon" in bob and "Ana flies" not in bob
    assert "<memory " in ana  # quoted as data


def test_unknown_user_gets_nothing(retrieve_tool: BaseTool) -> None:
    config: RunnableConfig = {"configurable": {"user_id": "carol", "thread_id": "t1"}}
    assert retrieve_tool.invoke({"query": "Lisbon"}, config=config) == "No memories found."


def test_tool_call_artifact_and_k(store: MemoryStore) -> None:
    store.archive.add(
        [MemoryRecord.new(user_id="ana", kind="fact", text=f"Lisbon note {i}") for i in range(6)]
    )
    tool = create_retrieve_memory_tool(standin_source(store), default_k=2, max_k=4)
    call = ToolCall(name=tool.name, args={"query": "Lisbon"}, id="c1", type="tool_call")
    message = tool.invoke(call, config=ANA)
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert len(message.artifact) == 2
    assert {"record_id", "text", "source", "score", "created_at"} <= set(message.artifact[0])
    many = tool.invoke({**call, "args": {"query": "Lisbon", "k": 50}}, config=ANA)
    assert len(many.artifact) == 4  # cut to max_k


def test_result_is_bounded_by_a_token_budget(store: MemoryStore) -> None:
    dump = "Lisbon rows: " + "row;" * 55_000 + " THE END"
    store.archive.add([MemoryRecord.new(user_id="ana", kind="turn", text=dump)])

    def source(user_id: str, thread_id: str) -> TieredMemory:
        return KeywordRecallMemory(
            store=store, user_id=user_id, thread_id=thread_id, context_window=8192
        )

    counter = source("ana", "t1").counter
    assert counter.count_text(dump) > 50_000
    for tool, limit in (
        (create_retrieve_memory_tool(source), 8192 * 15 // 100),  # the recall section
        (create_retrieve_memory_tool(source, max_tokens=300), 300),
    ):
        text = tool.invoke({"query": "Lisbon"}, config=ANA)
        assert counter.count_text(text) <= limit
        assert text.startswith(MEMORY_TOOL_HEADER) and ANA_TEXT in text  # the small one, whole
        assert "tokens clipped" in text and "THE END</memory>" in text  # the dump, clipped
    with pytest.raises(ValueError, match="max_tokens"):
        create_retrieve_memory_tool(source, max_tokens=10)


@pytest.mark.parametrize("kind", SOURCES)
def test_archived_turns_are_found_per_user(store: MemoryStore, kind: str) -> None:
    for user, pet in (("ana", "Biscuit"), ("bob", "Pretzel")):
        triggers = CompressionTriggers(summary_ratio=0.01, target_ratio=0.02)
        memory = store.memory(user, "t1", context_window=4096, triggers=triggers)
        for i in range(3):
            memory.add_messages(
                [HumanMessage(f"My dog {pet} is {i + 2} years old."), AIMessage("Noted.")]
            )
        memory.compress(force=True)
        assert store.archive.records(RecordFilter(user, kinds="turn")), (
            "compression paged turns out"
        )
    tool = create_retrieve_memory_tool(store if kind == "store" else standin_source(store))
    ana = tool.invoke({"query": "dog Biscuit Pretzel"}, config=ANA)
    assert "Biscuit" in ana and "Pretzel" not in ana


async def test_async_invoke(retrieve_tool: BaseTool) -> None:
    result = await retrieve_tool.ainvoke({"query": "Lisbon"}, config=BOB)
    assert "Maria" in result and "Ana" not in result


# -- agent APIs -----------------------------------------------------------------------


def test_create_agent(retrieve_tool: BaseTool) -> None:
    from langchain.agents import create_agent

    agent = create_agent(fake_model(), tools=[retrieve_tool])
    out = agent.invoke({"messages": [HumanMessage("When do I fly to Lisbon?")]}, config=ANA)
    [result] = tool_messages(out["messages"])
    assert ANA_TEXT in result.content and "Maria" not in result.content
    assert out["messages"][-1].content == "You fly on 14 April."


@dataclass
class AppContext:
    user_id: str


def test_create_agent_runtime_context(retrieve_tool: BaseTool) -> None:
    from langchain.agents import create_agent

    agent = create_agent(fake_model(), tools=[retrieve_tool], context_schema=AppContext)
    out = agent.invoke(
        {"messages": [HumanMessage("Who lives in Lisbon?")]}, context=AppContext("bob")
    )
    [result] = tool_messages(out["messages"])
    assert "Maria" in result.content and "Ana" not in result.content


async def test_create_agent_async_runtime_context(retrieve_tool: BaseTool) -> None:
    from langchain.agents import create_agent

    agent = create_agent(fake_model(), tools=[retrieve_tool], context_schema=AppContext)
    out = await agent.ainvoke(
        {"messages": [HumanMessage("Who lives in Lisbon?")]}, context=AppContext("bob")
    )
    [result] = tool_messages(out["messages"])
    assert "Maria" in result.content and "Ana" not in result.content


def test_create_agent_conflicting_users_is_an_error(store: MemoryStore) -> None:
    from langchain.agents import create_agent

    tool = create_retrieve_memory_tool(standin_source(store))
    agent = create_agent(fake_model(), tools=[tool], context_schema=AppContext)
    out = agent.invoke(
        {"messages": [HumanMessage("Lisbon?")]}, context=AppContext("bob"), config=ANA
    )
    [result] = tool_messages(out["messages"])
    assert result.status == "error" and "different users" in result.content
    assert "Maria" not in result.content and "Ana flies" not in result.content


def test_create_react_agent(retrieve_tool: BaseTool) -> None:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(fake_model(), tools=[retrieve_tool])
    out = agent.invoke({"messages": [HumanMessage("When do I fly?")]}, config=ANA)
    [result] = tool_messages(out["messages"])
    assert ANA_TEXT in result.content and "Maria" not in result.content


def tool_graph(tools: list[BaseTool]) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def test_tool_node(retrieve_tool: BaseTool) -> None:
    call = {"name": "retrieve_memory", "args": {"query": "Lisbon"}, "id": "call_1"}
    out = tool_graph([retrieve_tool]).invoke(
        {"messages": [AIMessage("", tool_calls=[call])]}, config=ANA
    )
    [result] = tool_messages(out["messages"])
    assert ANA_TEXT in result.content and "Maria" not in result.content


# -- missing or wrong user ------------------------------------------------------------


def test_missing_user_id_is_an_error_message(store: MemoryStore) -> None:
    tool = create_retrieve_memory_tool(standin_source(store))
    text = tool.invoke({"query": "Lisbon"}, config={"configurable": {"thread_id": "t1"}})
    assert "user_id" in text and "configurable" in text
    assert "Lisbon" not in text
    call = ToolCall(name=tool.name, args={"query": "Lisbon"}, id="c1", type="tool_call")
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert "user_id" in message.content and "Lisbon" not in message.content


def test_missing_user_id_in_an_agent(store: MemoryStore) -> None:
    from langchain.agents import create_agent

    tool = create_retrieve_memory_tool(standin_source(store))
    out = create_agent(fake_model(), tools=[tool]).invoke(
        {"messages": [HumanMessage("Lisbon?")]}, config={"configurable": {"thread_id": "t1"}}
    )
    [result] = tool_messages(out["messages"])
    assert result.status == "error" and "user_id" in result.content
    assert "Lisbon" not in result.content


def test_bad_user_id_and_bound_user(store: MemoryStore) -> None:
    tool = create_retrieve_memory_tool(standin_source(store))
    assert "non-empty string" in tool.invoke(
        {"query": "Lisbon"}, config={"configurable": {"user_id": ""}}
    )
    bound = create_retrieve_memory_tool(standin_source(store), user_id="ana")
    assert ANA_TEXT in bound.invoke({"query": "Lisbon"})
    other = bound.invoke({"query": "Lisbon"}, config=BOB)
    assert "different users" in other and "Maria" not in other and "Ana" not in other


def test_source_returning_another_users_memory_is_refused(store: MemoryStore) -> None:
    tool = create_retrieve_memory_tool(lambda u, t: KeywordRecallMemory(store=store, user_id="ana"))
    text = tool.invoke({"query": "Lisbon"}, config=BOB)
    assert "Memory unavailable" in text and "Ana flies" not in text


def test_factory_validation(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="default_k"):
        create_retrieve_memory_tool(store, default_k=5, max_k=3)
    with pytest.raises(TypeError):
        create_retrieve_memory_tool("not a store")  # type: ignore[arg-type]


# -- core memory tools ----------------------------------------------------------------


def test_core_append_then_replace_keeps_history(store: MemoryStore) -> None:
    append, replace, insert = create_core_memory_tools(store, context_window=4096)
    assert [t.name for t in (append, replace, insert)] == [
        "core_memory_append",
        "core_memory_replace",
        "archival_memory_insert",
    ]
    out = append.invoke({"block": "human", "subject": "Diet", "content": "vegetarian"}, config=ANA)
    assert out == "Saved to core memory [human] diet: vegetarian"
    refused = append.invoke({"subject": "diet", "content": "vegan"}, config=ANA)
    assert "core_memory_replace" in refused
    out = replace.invoke({"subject": "diet", "new_content": "vegan since May"}, config=ANA)
    assert out.startswith("Replaced core memory [human] diet")

    core = store.core("ana")
    history = core.history("diet")
    assert [(f.content, f.status) for f in history] == [
        ("vegetarian", "superseded"),
        ("vegan since May", "active"),
    ]
    assert history[0].superseded_by == history[1].id
    assert all(f.source == "agent_tool" and not f.stated for f in history)
    assert store.core("bob").active() == []

    old, new = store.archive.get([fact_record_id("ana", f.id) for f in history])
    assert old.metadata["superseded"] is True
    assert old.metadata["superseded_by"] == history[1].id
    assert new.text == "diet: vegan since May" and not new.metadata.get("superseded")

    prompt = store.memory("ana", "t1", context_window=4096).build_context(recall=False)
    text = "\n".join(str(m.content) for m in prompt.messages)
    assert "vegan since May" in text and "vegetarian" not in text


def test_core_replace_without_fact_and_bad_block(store: MemoryStore) -> None:
    _, replace, _ = create_core_memory_tools(store)
    out = replace.invoke({"subject": "diet", "new_content": "vegan"}, config=ANA)
    assert "core_memory_append" in out
    assert store.core("ana").history() == []
    append = create_core_memory_tools(store)[0]
    call = ToolCall(
        name="core_memory_append",
        args={"block": "secrets", "subject": "x", "content": "y"},
        id="c1",
        type="tool_call",
    )
    with pytest.raises(ValueError):  # schema validation: the model sees the allowed blocks
        append.invoke(call, config=ANA)


def test_core_append_missing_user(store: MemoryStore) -> None:
    append = create_core_memory_tools(store)[0]
    before = store.users()  # the seeded archive's users
    out = append.invoke({"subject": "diet", "content": "vegan"})
    assert out.startswith("Memory unavailable") and "user_id" in out
    assert store.users() == before == ["ana", "bob"]


def test_parallel_core_appends_are_not_lost(store: MemoryStore) -> None:
    tools = create_core_memory_tools(store)
    calls = [
        {
            "name": "core_memory_append",
            "args": {"subject": f"s{i}", "content": f"c{i}"},
            "id": f"call_{i}",
        }
        for i in range(4)
    ]
    tool_graph(tools).invoke({"messages": [AIMessage("", tool_calls=calls)]}, config=ANA)
    assert sorted(f.subject for f in store.core("ana").active()) == [
        "s0",
        "s1",
        "s2",
        "s3",
    ]


def test_core_tools_share_a_resolvers_memory(store: MemoryStore) -> None:
    resolver = MemoryResolver(store, context_window=4096)
    live = resolver.get("ana", "t1")  # e.g. the one a middleware builds prompts from
    append, replace, _ = create_core_memory_tools(resolver)
    append.invoke({"subject": "home_city", "content": "lives in Paris"}, config=ANA)
    replace.invoke({"subject": "home_city", "new_content": "moved to Berlin"}, config=ANA)
    text = "\n".join(str(m.content) for m in live.build_context(recall=False).messages)
    assert "moved to Berlin" in text and "Paris" not in text
    assert store.core("ana").get("home_city") is not None
    assert resolver.get("bob", "t1").core.active() == []
    search = create_retrieve_memory_tool(resolver)
    assert search.name == "retrieve_memory"


def test_archival_insert_is_per_user_and_searchable(store: MemoryStore) -> None:
    _, _, insert = create_core_memory_tools(store)
    assert insert.invoke({"content": "Ana's passport expires in 2031"}, config=ANA) == (
        "Saved to archival memory."
    )
    [record] = store.archive.records(RecordFilter("ana", kinds="observation"))
    assert record.text == "Ana's passport expires in 2031" and record.thread_id == "t1"
    assert record.metadata["source"] == "agent_tool"
    assert store.archive.records(RecordFilter("bob", kinds="observation")) == []
    search = create_retrieve_memory_tool(standin_source(store))
    assert "passport" in search.invoke({"query": "passport"}, config=ANA)
    assert "passport" not in search.invoke({"query": "passport"}, config=BOB)
    assert "empty" in insert.invoke({"content": "   "}, config=ANA)


async def test_core_tools_async(store: MemoryStore) -> None:
    append = create_core_memory_tools(store)[0]
    out = await append.ainvoke({"subject": "home_city", "content": "Porto"}, config=BOB)
    assert out.startswith("Saved")
    assert store.core("bob").get("home_city") is not None


def test_memgpt_tools_in_create_agent(store: MemoryStore) -> None:
    from langchain.agents import create_agent

    tools = create_memgpt_tools(standin_source(store))
    model = FakeToolModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "core_memory_append",
                            "args": {"subject": "allergy", "content": "peanuts"},
                            "id": "c1",
                        },
                        {"name": "archival_memory_search", "args": {"query": "Lisbon"}, "id": "c2"},
                    ],
                ),
                AIMessage("ok"),
            ]
        )
    )
    out = create_agent(model, tools=tools).invoke(
        {"messages": [HumanMessage("I'm allergic to peanuts.")]}, config=ANA
    )
    results = {m.name: m.text for m in tool_messages(out["messages"])}
    assert results["core_memory_append"].startswith("Saved")
    assert ANA_TEXT in results["archival_memory_search"]
    assert store.core("ana").get("allergy") is not None


# -- LangChain standard tool tests ------------------------------------------------------

_STANDARD: dict[str, MemoryStore] = {}


@pytest.fixture(scope="module", autouse=True)
def _standard_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _STANDARD["store"] = make_store(tmp_path_factory.mktemp("standard"))
    yield
    _STANDARD.pop("store").close()


class _StandardParams:
    @property
    def tool_constructor(self) -> Any:
        return create_retrieve_memory_tool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        # bound to one user: the standard tests invoke without a run config
        return {"source": standin_source(_STANDARD["store"]), "user_id": "ana"}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": "Lisbon", "k": 2}


class TestRetrieveToolStandardUnit(_StandardParams, ToolsUnitTests):
    pass


class TestRetrieveToolStandardIntegration(_StandardParams, ToolsIntegrationTests):
    pass
