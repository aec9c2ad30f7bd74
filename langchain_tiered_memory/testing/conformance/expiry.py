"""Conformance: expiry - nothing expired is read, and the sweep deletes it as a forget does."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance.backend import Backend, file_bytes
from langchain_tiered_memory.testing.conformance.forget import SECRET, WINDOW, chat
from langchain_tiered_memory.tiers.core import CoreFact

NOW = datetime.now(timezone.utc)


def note(user: str, text: str, id: str, expires_at: datetime | None) -> MemoryRecord:
    return MemoryRecord.new(
        user_id=user, kind="observation", text=text, id=id, expires_at=expires_at
    )


def test_expired_records_and_facts_are_never_read(store: MemoryStore) -> None:
    past, future = NOW - timedelta(minutes=1), NOW + timedelta(days=1)
    store.archive.add(
        [
            note("ana", f"the {SECRET} door code is 4711", "gone", past),
            note("ana", "the zebra lamp code is 1234", "kept", future),
            note("ana", "a zebra lamp that never expires", "forever", None),
        ]
    )
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.write_fact(CoreFact.new("door", f"code {SECRET}", expires_at=past))
    memory.write_fact(CoreFact.new("lamp", "a zebra lamp", expires_at=future))
    ids = {
        "keyword": {r.id for r, _ in store.archive.keyword_search("zebra code", "ana")},
        "dense": {r.id for r, _ in store.archive.dense_search("zebra", "ana")},
        "get": {r.id for r in store.archive.get(["gone", "kept", "forever"], user_id="ana")},
        "records": {r.id for r in store.archive.records(RecordFilter("ana", kinds="observation"))},
    }
    for where, found in ids.items():
        assert "gone" not in found and {"kept", "forever"} <= found, (where, found)
    recalled = " ".join(r.text for r in memory.recall(f"{SECRET} zebra door code", k=10))
    assert SECRET not in recalled and "1234" in recalled
    assert [f.subject for f in memory.core.active()] == ["lamp"]
    assert SECRET not in memory.core.render()
    assert SECRET not in repr(memory.build_context(query=f"{SECRET} door code").messages)
    # the expiry travels with the record and the fact
    (kept,) = store.archive.get(["kept"], user_id="ana")
    assert kept.expires_at == future
    assert store.core("ana").get("lamp").expires_at == future  # type: ignore[union-attr]


def test_the_sweep_deletes_what_expired_as_completely_as_a_forget(backend: Backend) -> None:
    store = backend.open()
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.add_messages([HumanMessage(f"The door code is {SECRET}."), AIMessage("Got it.")])
    code = CoreFact.new(
        "door_code",
        f"door code {SECRET}",
        source_turn=0,
        source_thread="t1",
        expires_at=NOW + timedelta(hours=1),
    )
    memory.write_fact(code)
    chat(memory, 30)  # the statement pages out into the archive and the summary
    store.archive.add(
        [
            note(
                "ana", f"parcel locker {SECRET}9 until friday", "locker", NOW + timedelta(hours=1)
            ),
            note("ana", "likes zebra lamps", "lamps", None),
        ]
    )
    other = store.memory("bob", "t1", context_window=WINDOW)
    other.write_fact(CoreFact.new("door_code", "bob's code", expires_at=NOW + timedelta(days=9)))
    assert any(SECRET in r.text for r in store.archive.records("ana"))
    assert store.sweep_expired(now=NOW).records == 0  # nothing has expired yet

    report = store.sweep_expired(now=NOW + timedelta(hours=2))
    assert report.facts == 1 and report.records >= 3 and report.users == ("ana",)
    assert store.core("ana").history("door_code") == []
    assert not any(SECRET in r.text for r in store.archive.records("ana"))
    assert store.archive.get(["lamps"], user_id="ana")  # what never expires stays
    assert store.core("bob").get("door_code") is not None  # and so does every other user
    assert SECRET not in memory.state.summary
    assert all(SECRET not in str(m.content) for m in memory.messages)
    assert SECRET not in repr(store.export_user("ana"))
    assert store.archive.keyword_search(SECRET, "ana") == []
    deletes = [e for e in store.audit.events("ana") if e.kind == "delete"]
    assert deletes and "locker" in deletes[-1].payload["ids"]
    if backend.files():  # nothing of it left in any byte of any file
        assert SECRET.encode() not in file_bytes(backend)
    assert store.sweep_expired(now=NOW + timedelta(hours=3)).records == 0  # idempotent


def test_idle_threads_are_swept_with_their_checkpoints(store: MemoryStore) -> None:
    saver = store.checkpointer()
    cut = None
    for thread in ("old", "new"):
        if thread == "new":
            cut = datetime.now(timezone.utc)
            time.sleep(0.01)
        chat(store.memory("ana", thread, context_window=WINDOW), 2, secret=thread == "old")
        saver.put(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            {"v": 1, "id": thread, "ts": "", "channel_values": {}, "channel_versions": {}},
            {},
            {},
        )
    assert cut is not None  # "old" was last written before it, "new" after
    report = store.sweep_expired(now=cut + timedelta(days=7), idle_threads=timedelta(days=7))
    assert report.threads == ("ana/old",)
    assert store.threads("ana") == ["new"]
    assert saver.get_tuple({"configurable": {"thread_id": "old"}}) is None
    assert saver.get_tuple({"configurable": {"thread_id": "new"}}) is not None
    assert SECRET not in repr(store.export_user("ana"))
