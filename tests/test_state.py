from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory.buffer import BufferState, append_messages
from langchain_tiered_memory.core import CoreFact, CoreMemory
from langchain_tiered_memory.state import StateStore, state_from_dict, state_to_dict


def test_thread_state_round_trips_with_tool_calls(tmp_path, counter) -> None:
    state = append_messages(
        BufferState(),
        [
            HumanMessage("weather?"),
            AIMessage("", tool_calls=[{"name": "w", "args": {"city": "Oslo"}, "id": "c1"}]),
            ToolMessage("rain", tool_call_id="c1"),
            AIMessage("It rains in Oslo. 雨"),
        ],
        counter,
    )
    assert state_from_dict(state_to_dict(state)) == state
    path = tmp_path / "state.sqlite"
    store = StateStore(path)
    store.save_thread("ana", "t1", state, {"observed_through": 0})
    store.close()
    reopened = StateStore(path)
    loaded = reopened.load_thread("ana", "t1")
    assert loaded == state
    assert loaded.turns[0].messages[1].tool_calls[0]["args"] == {"city": "Oslo"}
    assert reopened.load_extra("ana", "t1") == {"observed_through": 0}
    assert reopened.load_thread("ana", "other") is None
    assert reopened.threads("ana") == ["t1"]


def test_core_memory_history_survives(tmp_path) -> None:
    store = StateStore(tmp_path / "state.sqlite")
    core = CoreMemory()
    core.upsert(CoreFact.new("home_city", "lives in Paris"))
    core.upsert(CoreFact.new("home_city", "moved to Berlin"))
    store.save_core("ana", core)
    loaded = store.load_core("ana")
    assert [f.status for f in loaded.history("home_city")] == ["superseded", "active"]
    assert store.load_core("bob").active() == []


def test_delete_user_removes_bytes_and_keeps_others(tmp_path, counter) -> None:
    path = tmp_path / "state.sqlite"
    store = StateStore(path)
    secret = "ZEBRA-PASSPHRASE-981"
    keep = "KEEP-THIS-OTHER-USER-TEXT"
    store.save_thread("ana", "t", append_messages(BufferState(), [HumanMessage(secret)], counter))
    core = CoreMemory([CoreFact.new("note", secret)])
    store.save_core("ana", core)
    store.save_thread("bob", "t", append_messages(BufferState(), [HumanMessage(keep)], counter))
    store.delete_user("ana")
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("state"))
    assert secret.encode() not in raw
    assert store.users() == ["bob"]
    assert store.load_thread("bob", "t") is not None
    assert (
        keep
        in store.export_user("bob")["threads"]["t"]["turns"][0]["messages"][0]["data"]["content"]
    )


def test_bad_path() -> None:
    with pytest.raises(ValueError, match="does not exist"):
        StateStore("/no/such/folder/state.sqlite")
