"""Storage failures say what happened and change nothing.

A full disk, a read-only or locked database and a damaged file each surface
as the matching :class:`StorageError` naming the file; an add either
completes or leaves no trace (so a retry stores a turn once); caches (the
embedding cache, the FAISS file) are rebuilt rather than fatal; invalid ids
are a clear ``ValueError`` (an error message from the tools).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.integrations.tools import (
    create_core_memory_tools,
    create_retrieve_memory_tool,
)
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.errors import (
    StorageDamagedError,
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
)
from langchain_tiered_memory.store import MemoryStore

BIG = "a long message about trains " * 4000  # ~100 kB: the file must grow to hold it


def make_store(path: Path) -> MemoryStore:
    return MemoryStore(path, embeddings=DeterministicFakeEmbedding(size=16))


def writer_connection(store: MemoryStore) -> sqlite3.Connection:
    return store.backend.db._writer  # type: ignore[attr-defined]


def fill_the_disk(store: MemoryStore) -> None:
    """Let the database file grow no more (SQLite then fails writes as on a full disk)."""
    conn = writer_connection(store)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")


def free_the_disk(store: MemoryStore) -> None:
    writer_connection(store).execute("PRAGMA max_page_count=1073741823")


def test_a_full_disk_is_reported_and_the_add_leaves_no_trace(tmp_path: Path) -> None:
    with make_store(tmp_path / "data") as store:
        memory = store.memory("ana", "t1", context_window=4096)
        memory.add_messages([HumanMessage("hello"), AIMessage("hi")])
        fill_the_disk(store)
        with pytest.raises(StorageFullError, match=r"archive\.sqlite.*full"):
            memory.add_messages([HumanMessage(BIG)])
        fresh = store.memory("ana", "t1", context_window=4096)
        assert [m.content for m in fresh.messages] == ["hello", "hi"]  # nothing half-written
        free_the_disk(store)
        memory.add_messages([HumanMessage(BIG)])  # the retry stores it, once
        contents = [m.content for m in store.memory("ana", "t1", context_window=4096).messages]
        assert contents.count(BIG) == 1


def test_a_full_disk_during_a_compression_keeps_the_turns_and_does_not_fail_the_add(
    tmp_path: Path,
) -> None:
    with make_store(tmp_path / "data") as store:
        memory = store.memory("ana", "t1", context_window=1024)
        for i in range(6):
            memory.add_messages([HumanMessage(f"turn {i} " + "trains " * 40), AIMessage("ok")])
        before = [t.index for t in memory.state.turns]
        conn = writer_connection(store)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages + 3}")  # room for a turn, not an archive
        events = []
        for i in range(6, 30):
            try:
                events += memory.add_messages([HumanMessage(f"turn {i} trains"), AIMessage("ok")])
            except StorageFullError:
                break  # the log itself filled up: fine, this add stored nothing
        kinds = {e.kind for e in events}
        assert "archive_failed" in kinds and "compression" not in kinds
        fresh = store.memory("ana", "t1", context_window=1024)
        assert [t.index for t in fresh.state.turns][: len(before)] == before  # nothing lost
        assert store.archive.count("ana") == 0
        free_the_disk(store)
        memory.add_messages([HumanMessage("one more"), AIMessage("ok")])
        assert any(e.kind == "compression" for e in memory.events)  # retried, now it works


def test_a_read_only_database_is_reported(tmp_path: Path) -> None:
    with make_store(tmp_path / "data") as store:
        memory = store.memory("ana", "t1")
        memory.add_messages([HumanMessage("hello")])
        writer_connection(store).execute("PRAGMA query_only=ON")
        with pytest.raises(StorageReadOnlyError, match=r"archive\.sqlite.*read-only"):
            memory.add_messages([HumanMessage("again")])
        writer_connection(store).execute("PRAGMA query_only=OFF")
        assert [m.content for m in memory.messages] == ["hello"]


def test_a_locked_database_is_reported(tmp_path: Path) -> None:
    with make_store(tmp_path / "data") as store:
        memory = store.memory("ana", "t1")
        writer_connection(store).execute("PRAGMA busy_timeout=100")
        other = sqlite3.connect(tmp_path / "data" / "archive.sqlite", isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StorageLockedError, match="another process"):
                memory.add_messages([HumanMessage("hello")])
        finally:
            other.execute("ROLLBACK")
            other.close()
        memory.add_messages([HumanMessage("hello")])
        assert [m.content for m in memory.messages] == ["hello"]


def test_a_damaged_database_names_the_file_and_the_way_out(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_store(data).close()
    (data / "archive.sqlite").write_bytes(b"this is no database at all " * 200)
    for suffix in ("-wal", "-shm"):
        (data / f"archive.sqlite{suffix}").unlink(missing_ok=True)
    with pytest.raises(StorageDamagedError) as caught:
        make_store(data)
    message = str(caught.value)
    assert str(data / "archive.sqlite") in message
    assert "backup" in message and "move it away" in message


def test_a_damaged_embedding_cache_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "embeddings.sqlite").write_bytes(b"garbage " * 500)
    with MemoryStore(data) as store:  # the default (local) embedder, cached in the file
        store.archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="likes tea")])
        assert [r.text for r, _ in store.archive.dense_search("tea", "ana")] == ["likes tea"]
    assert "damaged" in caplog.text


@pytest.mark.parametrize("bad", ["ana\ud800", "ana\x00bob"])
def test_tools_answer_invalid_ids_with_an_error_message(tmp_path: Path, bad: str) -> None:
    with make_store(tmp_path / "data") as store:
        config = {"configurable": {"user_id": bad, "thread_id": "t1"}}
        retrieve = create_retrieve_memory_tool(store)
        append = create_core_memory_tools(store)[0]
        call = {
            "name": "retrieve_memory",
            "args": {"query": "tea"},
            "id": "c1",
            "type": "tool_call",
        }
        out = retrieve.invoke(call, config=config)
        assert out.status == "error" and "user_id" in out.content
        text = append.invoke({"subject": "diet", "content": "vegan"}, config=config)
        assert "user_id" in text
        assert store.users() == []


def test_summary_ids_cannot_collide_across_users(tmp_path: Path) -> None:
    with make_store(tmp_path / "data") as store:
        first = store.memory("a:b", "c", context_window=1024)
        second = store.memory("a", "b:c", context_window=1024)
        for i in range(20):
            for memory in (first, second):
                memory.add_messages([HumanMessage(f"turn {i} " + "trains " * 30), AIMessage("ok")])
        for user in ("a:b", "a"):
            summaries = store.archive.records(RecordFilter(user, kinds="summary"))
            assert summaries, user  # each user's summaries were archived
            assert all(r.user_id == user for r in summaries)


@pytest.mark.subprocess
def test_a_postgres_url_without_the_extra_names_the_install_command(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "psycopg"  # an environment where psycopg is not installed
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    code = (
        "from langchain_tiered_memory.store import MemoryStore\n"
        "try:\n"
        "    MemoryStore('postgresql://app:hunter2@localhost/memory')\n"
        "except ImportError as exc:\n"
        "    print('ImportError:', exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(shim.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "ImportError: a postgresql:// store needs the Postgres extra (psycopg is missing)" in (
        done.stdout
    )
    assert "pip install -e '.[postgres]'" in done.stdout
    assert "hunter2" not in done.stdout
