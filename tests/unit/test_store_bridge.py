"""TieredMemoryStore: a LangGraph BaseStore over our memory (langmem's tools, create_agent)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langmem import create_manage_memory_tool, create_search_memory_tool

from langchain_tiered_memory.integrations.langgraph_store import TieredMemoryStore, item_record_id
from langchain_tiered_memory.store import MemoryStore

NAMESPACE = ("memories", "{langgraph_user_id}")


class ScriptedModel(GenericFakeChatModel):
    """A fake chat model that accepts tools and replies from a script."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self


def call(name: str, args: dict, id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": id, "type": "tool_call"}])


def cfg(user: str, thread: str) -> dict:
    return {"configurable": {"langgraph_user_id": user, "thread_id": thread}}


@pytest.fixture
def memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=32)) as store:
        yield store


def tool_results(result: dict) -> list[str]:
    return [str(m.content) for m in result["messages"] if isinstance(m, ToolMessage)]


def test_langmem_tools_write_and_search_our_archive_per_user(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory)
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]
    script = iter(
        [
            call(
                "manage_memory", {"content": "Ana is allergic to peanuts", "action": "create"}, "c1"
            ),
            AIMessage("Saved."),
            call("manage_memory", {"content": "Bob plays the cello", "action": "create"}, "c2"),
            AIMessage("Saved."),
            call("search_memory", {"query": "peanuts allergy"}, "c3"),
            AIMessage("Found it."),
            call("search_memory", {"query": "peanuts allergy"}, "c4"),
            AIMessage("Nothing."),
        ]
    )
    agent = create_agent(ScriptedModel(messages=script), tools=tools, store=store)
    agent.invoke({"messages": [HumanMessage("Remember my allergy.")]}, cfg("ana", "t1"))
    agent.invoke({"messages": [HumanMessage("Remember my instrument.")]}, cfg("bob", "t2"))
    found = tool_results(agent.invoke({"messages": [HumanMessage("?")]}, cfg("ana", "t3")))
    assert "Ana is allergic to peanuts" in found[0] and "cello" not in found[0]
    other = tool_results(agent.invoke({"messages": [HumanMessage("?")]}, cfg("bob", "t4")))
    assert "peanuts" not in other[0]
    # the items are records of their users: our own recall sees them ...
    recalled = memory.memory("ana", "chat").recall("peanuts")
    assert any("allergic to peanuts" in r.text for r in recalled)
    assert all("cello" not in r.text for r in recalled)
    # ... and a forget takes them with the rest of the user
    memory.forget_user("ana")
    assert store.search(("memories", "ana"), query="peanuts") == []
    assert [i.value["content"] for i in store.search(("memories", "bob"))] == [
        "Bob plays the cello"
    ]


def test_put_get_update_delete_and_search(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory, user_index=0)
    ns = ("ana", "notes")
    store.put(ns, "a", {"content": "likes green tea", "kind": "drink", "rank": 2})
    store.put(ns, "b", {"content": "owns a black cat", "kind": "pet", "rank": 5})
    store.put(("ana", "other"), "c", {"content": "tea in the other namespace", "rank": 1})
    store.put(("bob", "notes"), "a", {"content": "bob likes tea too"})
    assert store.get(ns, "a").value["kind"] == "drink"  # type: ignore[union-attr]
    assert store.get(("bob", "notes"), "a").value["content"] == "bob likes tea too"  # type: ignore[union-attr]
    store.put(ns, "a", {"content": "likes black coffee now", "kind": "drink", "rank": 3})
    item = store.get(ns, "a")
    assert item is not None and item.value["content"] == "likes black coffee now"
    assert item.updated_at >= item.created_at
    assert memory.archive.keyword_search("green", "ana") == []  # re-indexed
    assert [i.key for i in store.search(ns, query="coffee")][:1] == ["a"]
    assert [i.key for i in store.search(ns, filter={"kind": "pet"})] == ["b"]
    assert [i.key for i in store.search(ns, filter={"rank": {"$gte": 3}})] == ["a", "b"]
    assert len(store.search(("ana",))) == 3 and len(store.search(("ana",), limit=1, offset=1)) == 1
    assert store.list_namespaces(prefix=("ana",)) == [("ana", "notes"), ("ana", "other")]
    store.delete(ns, "b")
    assert store.get(ns, "b") is None
    assert memory.archive.get([item_record_id(ns, "b")]) == []


def test_bad_namespaces_and_ttls_are_clear_errors(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory, user_index=1)
    with pytest.raises(ValueError, match="no user id"):
        store.put(("memories",), "k", {"content": "x"})
    with pytest.raises(ValueError, match="user id"):
        store.put(("memories", "bad\ud800id"), "k", {"content": "x"})
    with pytest.raises(ValueError, match="ttl"):
        store.put(("memories", "ana"), "k", {"content": "x"}, ttl=-5)
    assert memory.users() == []


NS = ("memories", "ana")
BAD_CALLS: list[tuple[str, str, tuple, dict, type[Exception], str]] = [
    ("put", "aput", (NS, "k", [1, 2]), {}, TypeError, "value is a dict"),
    ("put", "aput", (NS, "k", "text"), {}, TypeError, "value is a dict"),
    ("put", "aput", (NS, "k", {1: "x"}), {}, TypeError, "string keys"),
    ("put", "aput", (NS, "k", {"content": "x"}, "content"), {}, TypeError, "index is False"),
    ("put", "aput", (NS, "k", {"content": "x"}, ["content", 3]), {}, TypeError, "index is"),
    ("search", "asearch", ((),), {"query": 5}, TypeError, "query is a string"),
    ("search", "asearch", ((),), {"filter": [1]}, TypeError, "filter is a dict"),
    ("search", "asearch", ((),), {"limit": -1}, ValueError, "limit must be"),
    ("search", "asearch", ((),), {"offset": -1}, ValueError, "offset must be"),
    ("search", "asearch", ("memories",), {}, ValueError, "tuple of non-empty strings"),
    ("list_namespaces", "alist_namespaces", (), {"prefix": "memories"}, TypeError, "prefix"),
    ("list_namespaces", "alist_namespaces", (), {"max_depth": 0}, ValueError, "max_depth"),
    ("list_namespaces", "alist_namespaces", (), {"limit": -1}, ValueError, "limit must be"),
]


@pytest.mark.parametrize(
    ("sync", "twin", "args", "kwargs", "error", "says"),
    BAD_CALLS,
    ids=[f"{c[0]}-{c[5]}-{i}" for i, c in enumerate(BAD_CALLS)],
)
def test_bad_arguments_are_clear_errors_and_the_async_twin_agrees(
    memory: MemoryStore,
    sync: str,
    twin: str,
    args: tuple,
    kwargs: dict,
    error: type[Exception],
    says: str,
) -> None:
    store = TieredMemoryStore(memory)
    store.put(NS, "kept", {"content": "Ana rides trains"})
    with pytest.raises(error, match=says) as raised:
        getattr(store, sync)(*args, **kwargs)
    with pytest.raises(error) as raised_async:
        asyncio.run(getattr(store, twin)(*args, **kwargs))
    assert str(raised_async.value) == str(raised.value)
    assert [(i.key, i.value) for i in store.search(())] == [
        ("kept", {"content": "Ana rides trains"})
    ]  # nothing changed


def test_empty_prefix_searches_agree(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory)
    store.put(NS, "k", {"content": "Ana rides trains"})
    for query in (None, "trains"):
        sync = [(i.key, i.score) for i in store.search((), query=query)]
        assert sync == [(i.key, i.score) for i in asyncio.run(store.asearch((), query=query))]
        assert [k for k, _ in sync] == ["k"]


def test_async_twins(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory)

    async def run() -> list[str]:
        await store.aput(("memories", "ana"), "k", {"content": "ana rides trains"})
        found = await store.asearch(("memories", "ana"), query="trains")
        item = await store.aget(("memories", "ana"), "k")
        assert item is not None
        return [i.key for i in found]

    assert asyncio.run(run()) == ["k"]


def test_a_lone_hit_has_an_absolute_score(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory)
    store.put(("memories", "ana"), "m1", {"content": "Ana is allergic to peanuts"})
    (hit,) = store.search(("memories", "ana"), query="Ana is allergic to peanuts")
    assert hit.score is not None and hit.score > 0.9  # the same text: cosine ~1, not 0.0
    store.put(("memories", "ana"), "m2", {"content": "Ana plays the cello on Sundays"})
    ranked = store.search(("memories", "ana"), query="Ana is allergic to peanuts")
    assert ranked[0].key == "m1"
    again = next(i for i in ranked if i.key == "m1")
    assert again.score == pytest.approx(hit.score, abs=1e-6)  # another item changes nothing


def test_deep_namespaces_stay_isolated_and_belong_to_their_user(memory: MemoryStore) -> None:
    store = TieredMemoryStore(memory)  # user_index=1: ("org", "<user>", ...)
    store.put(("org1", "ana", "memories"), "m1", {"content": "Ana's flight to Porto is May 3"})
    store.put(("org1", "cara", "memories"), "m2", {"content": "Cara's flight to Oslo is May 9"})
    store.put(("org2", "bob", "memories"), "m3", {"content": "Bob's flight to Rome is May 1"})
    org1 = store.search(("org1",), query="flight")
    assert sorted(i.key for i in org1) == ["m1", "m2"]
    assert [i.key for i in store.search(("org1", "ana"), query="flight")] == ["m1"]
    assert [i.key for i in store.search(("org2",), query="flight")] == ["m3"]
    assert store.list_namespaces(prefix=("org1",)) == [
        ("org1", "ana", "memories"),
        ("org1", "cara", "memories"),
    ]
    # the item is ana's memory: her recall finds it, and forgetting her deletes it
    assert any("Porto" in r.text for r in memory.memory("ana", "chat").recall("flight Porto"))
    assert not any("Porto" in r.text for r in memory.memory("cara", "chat").recall("flight Porto"))
    memory.forget_user("ana")
    assert [i.key for i in store.search(("org1",), query="flight")] == ["m2"]
