"""Text no backend can store - a lone UTF-16 surrogate, a NUL - at every entry point.

The rule (see :func:`langchain_tiered_memory.ids.check_text` and
:func:`langchain_tiered_memory.values.turns.clean_text`):

* conversation text (``add_messages``, the chat history, the classic memory,
  the graph, the middleware) is **repaired**: each such character becomes
  U+FFFD, the same on every backend, so a turn is never lost to a bad escape;
* text an application or an agent stores directly (``archive.add``,
  ``TieredMemoryStore.put``, the memory-editing tools) is **refused** with a
  ``ValueError`` naming the field and the position - a tool error message for
  the tools - before anything is read or written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.classic import TieredConversationMemory
from langchain_tiered_memory.integrations.history import TieredChatMessageHistory
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.integrations.langgraph_store import TieredMemoryStore
from langchain_tiered_memory.integrations.tools import create_core_memory_tools
from langchain_tiered_memory.store import MemoryStore

BAD = {"surrogate": ("jazz \ud800 club", "lone UTF-16 surrogate"), "nul": ("jazz \x00 club", "NUL")}
REPAIRED = "jazz \ufffd club"


@pytest.fixture
def store(tmp_path: Path):
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as s:
        yield s


def fake() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(f"ok {i}") for i in range(10)]))


CONFIG = {"configurable": {"user_id": "ana", "thread_id": "t1"}}


# -- refused: what is stored directly ----------------------------------------------------


@pytest.mark.parametrize("case", BAD)
def test_a_store_item_is_refused_before_anything_is_read_or_replaced(store, case) -> None:
    bad, what = BAD[case]
    items = TieredMemoryStore(store)
    items.put(("memories", "ana"), "k1", {"content": "ana likes tea"})
    for namespace, key, value in (
        (("memories", "ana"), "k1", {"content": bad}),  # a replacement
        (("memories", "ana"), "k2", {"content": "x", "tags": [bad]} if case != "nul" else None),
        (("memories", "ana"), f"k{bad}", {"content": "x"}),
        ((f"memories{bad}", "ana"), "k3", {"content": "x"}),
    ):
        if value is None:
            continue  # JSON escapes a NUL: a field that is not the item's text may hold one
        with pytest.raises(ValueError, match=what):
            items.put(namespace, key, value)
    assert items.get(("memories", "ana"), "k1").value == {"content": "ana likes tea"}
    assert [r.text for r in store.archive.records("ana")] == ["ana likes tea"]


@pytest.mark.parametrize("case", BAD)
def test_the_editing_tools_answer_with_an_error_and_store_nothing(store, case) -> None:
    bad, what = BAD[case]
    append, replace_, insert = create_core_memory_tools(store)
    calls = [
        (insert, {"content": bad}),
        (append, {"subject": "music", "content": bad}),
        (append, {"subject": f"music{bad}", "content": "likes jazz"}),
        (replace_, {"subject": "music", "new_content": bad}),
    ]
    for i, (tool, args) in enumerate(calls):
        call = {"name": tool.name, "args": args, "id": f"c{i}", "type": "tool_call"}
        out = tool.invoke(call, config=CONFIG)  # never raises into the agent loop
        assert isinstance(out, ToolMessage) and out.status == "error", out
        assert what in out.content and "Nothing was stored" in out.content
    assert store.archive.count("ana") == 0 and store.core("ana").active() == []


# -- repaired: conversation text ---------------------------------------------------------


def _stored_texts(store: MemoryStore, thread: str = "t1") -> list[str]:
    return [str(m.content) for m in store.memory("ana", thread, context_window=4096).messages]


@pytest.mark.parametrize("case", BAD)
def test_the_chat_history_and_the_classic_memory_repair_it(store, case) -> None:
    bad, _ = BAD[case]
    history = TieredChatMessageHistory(store.memory("ana", "t1", context_window=4096))
    history.add_messages([HumanMessage(bad), AIMessage("ok")])
    assert _stored_texts(store, "t1") == [REPAIRED, "ok"]
    classic = TieredConversationMemory(memory=store.memory("ana", "t2", context_window=4096))
    classic.save_context({"input": bad}, {"response": "ok"})
    assert _stored_texts(store, "t2") == [REPAIRED, "ok"]


@pytest.mark.parametrize("case", BAD)
def test_the_graph_and_the_middleware_repair_it(store, case) -> None:
    bad, _ = BAD[case]
    graph = build_memory_graph(fake(), store=store, context_window=4096, checkpointer=False)
    graph.invoke({"messages": [HumanMessage(bad)]}, CONFIG)
    assert _stored_texts(store, "t1") == [REPAIRED, "ok 0"]
    agent = create_agent(fake(), middleware=[TieredMemoryMiddleware(store, context_window=4096)])
    agent.invoke(
        {"messages": [HumanMessage(bad)]},
        {"configurable": {**CONFIG["configurable"], "thread_id": "t2"}},
    )
    assert _stored_texts(store, "t2") == [REPAIRED, "ok 0"]
