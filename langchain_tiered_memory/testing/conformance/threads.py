"""Conformance: the turn log - views, idempotency, compression by compare-and-set, reopen."""

from __future__ import annotations

import threading

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance.backend import Backend
from langchain_tiered_memory.tiers.buffer import CompressionTriggers

WINDOW = 1024


def exchange(i: int, *, tag: str = "") -> list:
    return [
        HumanMessage(f"{tag}question {i}: tell me about trains and lamps, item {i}"),
        AIMessage(f"{tag}answer {i}: trains run on rails; lamps give light ({i})"),
    ]


def archived_turns(store: MemoryStore, user: str, thread: str) -> list[int]:
    records = store.archive.records(RecordFilter(user, thread_id=thread, kinds="turn"))
    return sorted(int(r.metadata["turn_index"]) for r in records)


def test_two_views_of_one_thread_share_every_turn(store: MemoryStore) -> None:
    a = store.memory("ana", "chat", context_window=WINDOW)
    b = store.memory("ana", "chat", context_window=WINDOW)
    for i in range(40):
        (a if i % 2 else b).add_messages(exchange(i))
    for view in (a, b):
        kept = [t.index for t in view.state.turns]
        assert archived_turns(store, "ana", "chat") + kept == list(range(40))
        assert view.state.summary  # a compression by one view is seen by the other
    texts = [m.content for m in a.messages]
    assert texts == [m.content for m in b.messages]
    assert "answer 39: trains run on rails; lamps give light (39)" in texts


def test_a_retried_add_stores_nothing_twice(store: MemoryStore) -> None:
    memory = store.memory("ana", "chat", context_window=WINDOW)
    batch = [HumanMessage("I like jazz", id="m1"), AIMessage("Noted", id="m2")]
    memory.add_messages(batch)
    memory.add_messages(batch)  # a retry after a timeout, say
    again = store.memory("ana", "chat", context_window=WINDOW)
    again.add_messages([batch[1], AIMessage("Anything else?", id="m3")])
    assert [m.id for m in memory.messages] == ["m1", "m2", "m3"]
    assert memory.sync([*batch, HumanMessage("new", id="m4")]) == [HumanMessage("new", id="m4")]
    assert [t.index for t in memory.state.turns] == [0, 1]


def test_message_likes_are_accepted(store: MemoryStore) -> None:
    memory = store.memory("ana", "chat", context_window=WINDOW)
    memory.add_messages([("human", "hi there"), {"role": "assistant", "content": "hello"}])
    memory.add_messages("plain text is a user message")
    assert [(m.type, m.content) for m in memory.messages] == [
        ("human", "hi there"),
        ("ai", "hello"),
        ("human", "plain text is a user message"),
    ]


def test_a_rejected_batch_changes_nothing(store: MemoryStore) -> None:
    memory = store.memory("ana", "chat", context_window=WINDOW, system_prompt="Be brief.")
    memory.add_messages(exchange(0))
    bad = [
        SystemMessage("You are a pirate."),
        HumanMessage("hi"),
        ToolMessage("42", tool_call_id="nobody-called"),
    ]
    with pytest.raises(ValueError, match="no matching tool call"):
        memory.add_messages(bad)
    fresh = store.memory("ana", "chat", context_window=WINDOW)
    assert fresh.system_prompt == "Be brief."
    assert [t.index for t in fresh.state.turns] == [0]
    assert len(fresh.messages) == 2


def test_compressions_racing_on_one_thread_archive_each_turn_once(store: MemoryStore) -> None:
    triggers = CompressionTriggers(every_new_tokens=1)
    views = [
        store.memory("ana", "race", context_window=WINDOW, triggers=triggers) for _ in range(4)
    ]
    errors: list[BaseException] = []
    start = threading.Barrier(len(views))

    def write(w: int) -> None:
        try:
            start.wait(timeout=30)
            for n in range(12):
                views[w].add_messages(exchange(n, tag=f"w{w}-"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=write, args=(w,)) for w in range(len(views))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors, errors[:3]
    state = store.memory("ana", "race", context_window=WINDOW).state
    archived = archived_turns(store, "ana", "race")
    assert len(archived) == len(set(archived))  # no turn archived twice
    assert archived + [t.index for t in state.turns] == list(range(48))
    texts = "\n".join(
        [r.text for r in store.archive.records(RecordFilter("ana", kinds="turn"))]
        + [t.transcript() for t in state.turns]
    )
    for w in range(4):
        for n in range(12):
            assert texts.count(f"w{w}-question {n}:") == 1


def test_a_thread_continues_after_a_reopen(backend: Backend) -> None:
    if not backend.durable:
        pytest.skip(f"{backend.name} is not durable: there is nothing to reopen")
    store = backend.open()
    memory = store.memory("ana", "chat", context_window=WINDOW, system_prompt="Be brief.")
    for i in range(30):
        memory.add_messages(exchange(i))
    before = memory.state
    store.close()
    again = backend.open().memory("ana", "chat", context_window=WINDOW)
    assert again.system_prompt == "Be brief."
    assert again.state.summary == before.summary
    assert [t.index for t in again.state.turns] == [t.index for t in before.turns]
    again.add_messages(exchange(30))
    assert again.state.turns[-1].index == 30


def test_the_head_a_write_returns_is_the_head_stored(store: MemoryStore) -> None:
    # a view takes the head commit_compression and advance_extraction return instead of
    # reading the thread back, so it must be exactly what the backend stored
    memory = store.memory("ana", "chat", context_window=WINDOW)
    for i in range(20):
        memory.add_messages(
            [HumanMessage(f"I'm allergic to peanuts, remember item {i}"), *exchange(i)[1:]]
        )
        stored = store.backend.read_thread("ana", "chat", None).head
        assert memory.head == stored, i
    assert any(e.kind == "compression" for e in memory.events)
    assert memory.head.extracted_through >= 0
    head = memory.head
    assert store.backend.advance_extraction(head, head.extracted_through) is None  # not forward


def test_unstorable_characters_in_messages_are_repaired_alike(backend: Backend) -> None:
    """Conversation text is repaired, not refused: a lone surrogate or a NUL becomes U+FFFD,
    the same on every backend (a turn is never lost to a bad escape)."""
    store = backend.open()
    memory = store.memory("ana", "chat", context_window=WINDOW)
    memory.add_messages([HumanMessage("tea\x00 and \ud800 jazz"), AIMessage("ok\x00")])
    expected = ["tea\ufffd and \ufffd jazz", "ok\ufffd"]
    assert [m.content for m in memory.messages] == expected
    if backend.durable:
        store.close()
        store = backend.open()
    fresh = store.memory("ana", "chat", context_window=WINDOW)
    assert [m.content for m in fresh.messages] == expected
    for i in range(1, 40):  # page the turn out: the archived turn holds the repaired text
        fresh.add_messages(exchange(i))
    turn = store.archive.records(RecordFilter("ana", kinds="turn"))[0]
    assert "\x00" not in turn.text and "tea\ufffd and \ufffd jazz" in turn.text
