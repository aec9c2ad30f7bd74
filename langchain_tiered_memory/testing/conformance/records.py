"""Conformance: the archive - isolation, filters, idempotency, updates, deletes."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone

import pytest

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)


def rec(user: str, text: str, id: str, **kw: object) -> MemoryRecord:
    return MemoryRecord.new(user_id=user, kind=kw.pop("kind", "fact"), text=text, id=id, **kw)  # type: ignore[arg-type]


def test_users_never_see_each_others_records(store: MemoryStore) -> None:
    store.archive.add(
        [
            rec("ana", "ana is allergic to peanuts", "a1"),
            rec("bob", "bob is allergic to peanuts too", "b1"),
            rec("bob", "bob likes jazz", "b2"),
        ]
    )
    for user, mine in (("ana", {"a1"}), ("bob", {"b1", "b2"})):
        keyword = {r.id for r, _ in store.archive.keyword_search("allergic peanuts", user)}
        dense = {r.id for r, _ in store.archive.dense_search("peanut allergy", user)}
        assert keyword <= mine and keyword, (user, keyword)
        assert dense <= mine and dense, (user, dense)
        assert {r.id for r in store.archive.records(user)} == mine
        assert {r.id for r in store.archive.get(["a1", "b1", "b2"], user_id=user)} == mine
        assert store.archive.count(user) == len(mine)
    assert store.archive.keyword_search("peanuts", "carol") == []
    assert store.archive.dense_search("peanuts", "carol") == []


def test_filters_by_thread_kind_and_time(store: MemoryStore) -> None:
    store.archive.add(
        [
            rec("ana", "tea in paris", "r1", kind="turn", thread_id="t1", created_at=T0),
            rec("ana", "tea in berlin", "r2", kind="turn", thread_id="t2", created_at=T0),
            rec("ana", "tea lover", "r3", created_at=T0 + timedelta(days=2)),
        ]
    )
    search = store.archive.keyword_search
    assert {r.id for r, _ in search("tea", RecordFilter("ana", thread_id="t1"))} == {"r1"}
    assert {r.id for r, _ in search("tea", RecordFilter("ana", kinds="fact"))} == {"r3"}
    # since inclusive, until exclusive
    day = search("tea", RecordFilter("ana", since=T0, until=T0 + timedelta(days=1)))
    assert {r.id for r, _ in day} == {"r1", "r2"}
    dense = store.archive.dense_search("tea", RecordFilter("ana", thread_id="t2", kinds="turn"))
    assert [r.id for r, _ in dense] == ["r2"]
    assert [
        r.id for r in store.archive.records(RecordFilter("ana", since=T0 + timedelta(days=1)))
    ] == ["r3"]


def test_adds_are_idempotent_and_ids_belong_to_one_user(store: MemoryStore) -> None:
    first = rec("ana", "ana owns a cat", "same")
    store.archive.add([first])
    store.archive.add([rec("ana", "a different text, same id", "same")])  # skipped
    assert [r.text for r in store.archive.records("ana")] == ["ana owns a cat"]
    with pytest.raises(ValueError, match="another user"):
        store.archive.add([rec("bob", "bob's record", "new"), rec("bob", "steal", "same")])
    assert store.archive.records("bob") == []  # the whole batch was rejected
    assert store.archive.count() == 1


def test_an_update_reindexes_both_searches(store: MemoryStore) -> None:
    store.archive.add([rec("ana", "ana drinks coffee", "r1")])
    old = store.archive.get(["r1"])[0]
    store.archive.update_record(MemoryRecord(**{**old.__dict__, "text": "ana drinks tea now"}))
    assert [r.id for r, _ in store.archive.keyword_search("tea", "ana")] == ["r1"]
    assert store.archive.keyword_search("coffee", "ana") == []
    top = store.archive.dense_search("tea", "ana", n=1)
    assert [r.text for r, _ in top] == ["ana drinks tea now"]


def test_a_put_inserts_or_replaces_and_never_fails_racing_deletes(store: MemoryStore) -> None:
    store.archive.put_record(rec("ana", "ana drinks coffee", "p1"))  # inserts
    store.archive.put_record(rec("ana", "ana drinks tea now", "p1"))  # replaces
    assert [r.text for r in store.archive.records("ana")] == ["ana drinks tea now"]
    assert [r.id for r, _ in store.archive.keyword_search("tea", "ana")] == ["p1"]
    assert store.archive.keyword_search("coffee", "ana") == []
    with pytest.raises(ValueError, match="another user"):
        store.archive.put_record(rec("bob", "steal", "p1"))
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        for step in range(20):
            try:
                if (worker + step) % 3 == 0:
                    store.archive.delete(["p1"], user_id="ana")
                else:
                    store.archive.put_record(rec("ana", f"ana note {worker} {step}", "p1"))
            except BaseException as error:  # noqa: BLE001 - every failure is counted
                errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [], errors[:3]
    store.archive.put_record(rec("ana", "ana's last word", "p1"))
    assert [r.text for r in store.archive.records("ana")] == ["ana's last word"]
    assert [r.id for r, _ in store.archive.dense_search("last word", "ana")] == ["p1"]


def test_deletes_touch_only_the_named_users_records(store: MemoryStore) -> None:
    store.archive.add([rec("ana", "ana lamp", "a1"), rec("bob", "bob lamp", "b1")])
    assert store.archive.delete(["a1", "b1"], user_id="ana") == 1
    assert [r.id for r in store.archive.records("bob")] == ["b1"]
    assert store.archive.keyword_search("lamp", "ana") == []
    assert store.archive.dense_search("lamp", "ana") == []
    assert [r.id for r, _ in store.archive.dense_search("lamp", "bob")] == ["b1"]


def test_the_tools_and_recall_search_what_the_memory_archived(store: MemoryStore) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool

    memory = store.memory("ana", "t1", context_window=1024)
    memory.add_messages([HumanMessage("My zebra lamp is broken."), AIMessage("Oh no.")])
    for i in range(30):
        memory.add_messages([HumanMessage(f"turn {i} about trains " * 3), AIMessage("ok")])
    assert memory.state.turns[0].index > 0  # the lamp turn was paged out
    tool = create_retrieve_memory_tool(store)
    out = tool.invoke(
        {
            "name": "retrieve_memory",
            "args": {"query": "zebra lamp"},
            "id": "c",
            "type": "tool_call",
        },
        config={"configurable": {"user_id": "ana", "thread_id": "t1"}},
    )
    assert "zebra lamp is broken" in out.content
    async_found = asyncio.run(store.aexport_user("ana"))
    assert any("zebra lamp" in r["text"] for r in async_found["records"])


@pytest.mark.parametrize(
    ("bad", "what"), [("a\ud800b", "lone UTF-16 surrogate"), ("a\x00b", "NUL character")]
)
def test_a_record_no_backend_can_store_is_rejected_and_stores_nothing(
    store: MemoryStore, bad: str, what: str
) -> None:
    good = rec("ana", "ana likes jazz", "ok1")
    refused = [rec("ana", f"ana likes {bad}", "t1"), rec("ana", "ana likes tea", f"id{bad}")]
    if "\x00" not in bad:  # JSON escapes a NUL: metadata and sources may hold one
        refused += [
            rec("ana", "ana likes tea", "m1", metadata={"note": f"x{bad}"}),
            rec("ana", "ana likes tea", "s1", sources=(f"turn:{bad}",)),
        ]
    for record in refused:
        with pytest.raises(ValueError, match=what):
            store.archive.add([good, record])  # the whole batch is refused
    assert store.archive.count("ana") == 0
    store.archive.add([good])
    assert [r.id for r in store.archive.records("ana")] == ["ok1"]
