"""Damaged files say which file and what to do, on reads and on the schema-1 upgrade.

Opening a data directory of the first schema copies ``state.sqlite`` (the old
buffers and core memories) into the archive. A damaged copy of that file -
garbage, a cut or overwritten page, a missing table, rows that are not the
JSON it held - is a :class:`StorageDamagedError` naming ``state.sqlite`` and
the way out; nothing is copied and the file stays, so a restored file can
still be upgraded. Reads of a damaged ``archive.sqlite`` are translated too,
as writes are.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage, messages_to_dict

from langchain_tiered_memory.storage.errors import StorageDamagedError
from langchain_tiered_memory.store import MemoryStore

STATE = "state.sqlite"


def make_store(path: Path) -> MemoryStore:
    return MemoryStore(path, embeddings=DeterministicFakeEmbedding(size=16))


def _turn(index: int, text: str, created: str = "2026-01-02T10:00:00+00:00") -> dict:
    messages = messages_to_dict([HumanMessage(text, id=f"h{index}"), AIMessage("ok")])
    return {"index": index, "messages": messages, "tokens": 9, "created_at": created}


def _state(turns: list[dict]) -> dict:
    return {
        "summary": "",
        "summary_tokens": 0,
        "summarized_through": -1,
        "turns": turns,
        "unsummarized": [],
        "new_tokens": 0,
        "next_index": len(turns),
        "failures": 0,
    }


FACT = {  # a fact as the old version wrote it (CoreFact.to_dict)
    "id": "f1",
    "subject": "allergy:peanuts",
    "content": "allergic to peanuts",
    "block": "human",
    "category": "fact",
    "confidence": 1.0,
    "stated": True,
    "source_turn": 0,
    "source": "user",
    "importance": 8.0,
    "created_at": "2026-01-02T10:00:00+00:00",
    "status": "active",
    "superseded_by": None,
    "reason": None,
}


def write_state_file(
    path: Path,
    *,
    state: str | None = None,
    facts: str | None = None,
    user: str | None = "ana",
    tables: tuple[str, ...] = ("threads", "core_memory"),
) -> None:
    """A schema-1 ``state.sqlite`` as that version wrote it (its two tables)."""
    conn = sqlite3.connect(path)
    if "threads" in tables:
        conn.execute(
            "CREATE TABLE threads (user_id TEXT, thread_id TEXT NOT NULL, state TEXT NOT NULL, "
            "extra TEXT NOT NULL DEFAULT '{}', updated_at TEXT NOT NULL, "
            "PRIMARY KEY (user_id, thread_id))"
        )
        body = state or json.dumps(_state([_turn(0, "I live in Lisbon " + "and more " * 300)]))
        conn.execute("INSERT INTO threads VALUES (?, 't1', ?, '{}', '2026-01-02')", (user, body))
    if "core_memory" in tables:
        conn.execute(
            "CREATE TABLE core_memory (user_id TEXT PRIMARY KEY, facts TEXT NOT NULL, "
            "updated_at TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO core_memory VALUES ('ana', ?, '2026-01-02')",
            (facts or json.dumps([FACT]),),
        )
    conn.commit()
    conn.close()


def _bytes(change: Callable[[bytearray], bytearray]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        write_state_file(path)
        path.write_bytes(bytes(change(bytearray(path.read_bytes()))))

    return damage


def _set(data: bytearray, at: int, value: bytes) -> bytearray:
    data[at : at + len(value)] = value
    return data


def _rows(**options: object) -> Callable[[Path], None]:
    return lambda path: write_state_file(path, **options)  # type: ignore[arg-type]


#: Every way the old file turned up damaged: (case, how to damage it).
DAMAGE: dict[str, Callable[[Path], None]] = {
    # the file is not a database (SQLite: "file is not a database")
    "garbage": lambda path: path.write_bytes(b"this is no database at all " * 200),
    "zeroed header": _bytes(lambda b: bytearray(100) + b[100:]),
    "wrong magic": _bytes(lambda b: _set(b, 0, b"SQLite format 9\x00")),
    "impossible page size": _bytes(lambda b: _set(b, 16, b"\x00\x03")),
    # damaged pages (SQLite: "database disk image is malformed")
    "cut in the header": _bytes(lambda b: b[:60]),
    "cut in half": _bytes(lambda b: b[: len(b) // 2]),
    "pages overwritten": _bytes(lambda b: b[:4096] + bytearray(b"\xa5" * (len(b) - 4096))),
    # a database, but not the old layout
    "empty file": lambda path: path.write_bytes(b""),
    "no core_memory table": _rows(tables=("threads",)),
    # the old layout, rows that are not the JSON it wrote
    "state not JSON": _rows(state="{'turns': [oops"),
    "state not an object": _rows(state="[1, 2, 3]"),
    "turn without its index": _rows(state=json.dumps(_state([{"messages": []}]))),
    "unreadable timestamp": _rows(state=json.dumps(_state([_turn(0, "hi", "yesterday")]))),
    "unknown message type": _rows(
        state=json.dumps(_state([{**_turn(0, "hi"), "messages": [{"type": "x"}]}]))
    ),
    "facts not a fact list": _rows(facts=json.dumps([{"subject": 3}])),
    "thread without a user": _rows(user=None),
}


def test_an_intact_schema_1_file_is_upgraded(tmp_path: Path) -> None:
    """The fixture is what the old version wrote: undamaged, it upgrades."""
    data = tmp_path / "data"
    data.mkdir()
    write_state_file(data / STATE)
    with make_store(data) as store:
        memory = store.memory("ana", "t1", context_window=8192)
        assert memory.messages[0].content.startswith("I live in Lisbon")
        assert store.core("ana").get("allergy:peanuts").content == "allergic to peanuts"
    assert not (data / STATE).exists()


@pytest.mark.parametrize("case", DAMAGE)
def test_a_damaged_schema_1_file_names_itself_and_the_way_out(tmp_path: Path, case: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    DAMAGE[case](data / STATE)
    damaged = (data / STATE).read_bytes()
    with pytest.raises(StorageDamagedError) as caught:
        make_store(data)
    message = str(caught.value)
    assert str(data / STATE) in message
    assert "restore it from a backup" in message and "move it away" in message
    assert (data / STATE).read_bytes() == damaged  # left as it was, for a restore
    # nothing was copied: once the file is moved away the store opens empty
    (data / STATE).rename(tmp_path / "state.sqlite.damaged")
    with make_store(data) as store:
        assert store.users() == []


def test_a_damaged_page_read_later_names_the_file(tmp_path: Path) -> None:
    """A page that only a read reaches (the turn log) fails as a StorageDamagedError."""
    data = tmp_path / "data"
    with make_store(data) as store:
        memory = store.memory("ana", "t1", context_window=8192)
        memory.add_messages([HumanMessage("hello " * 50), AIMessage("hi")])
    file = data / "archive.sqlite"
    conn = sqlite3.connect(file)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='messages'").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    raw = bytearray(file.read_bytes())
    raw[(page - 1) * size : page * size] = b"\xa5" * size
    file.write_bytes(bytes(raw))
    # opening reads no page of the turn log; the first read of the thread does
    with make_store(data) as store, pytest.raises(StorageDamagedError) as caught:
        store.memory("ana", "t1", context_window=8192)
    assert str(file) in str(caught.value) and "backup" in str(caught.value)


def test_a_damaged_checkpoint_file_names_itself(tmp_path: Path) -> None:
    """The graph's own checkpointer (``checkpoints.sqlite``) is opened with the same care."""
    data = tmp_path / "data"
    make_store(data).close()
    (data / "checkpoints.sqlite").write_bytes(b"no checkpoints in here " * 100)
    with make_store(data) as store, pytest.raises(StorageDamagedError) as caught:
        store.checkpointer()
    assert str(data / "checkpoints.sqlite") in str(caught.value)
