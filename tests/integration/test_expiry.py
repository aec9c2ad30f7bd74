"""Expiry: schema upgrades of files and databases written before it, checkpoint pruning."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.records import MemoryRecord, utcnow
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact

FAKE = DeterministicFakeEmbedding(size=16)


def _use(store: MemoryStore) -> None:
    """An old store's data reads back, and new expiring data is kept and swept."""
    assert [r.text for r in store.archive.records(RecordFilter("ana", kinds="observation"))] == [
        "old note"
    ]
    assert store.core("ana").get("city").content == "Porto"  # type: ignore[union-attr]
    soon = utcnow() + timedelta(minutes=5)
    store.archive.add(
        [MemoryRecord.new(user_id="ana", kind="observation", text="code 4711", expires_at=soon)]
    )
    store.core("ana").upsert(CoreFact.new("gate", "code 4711", expires_at=soon))
    report = store.sweep_expired(now=soon + timedelta(seconds=1))
    assert (report.records, report.facts) == (2, 1)
    assert [r.text for r in store.archive.records(RecordFilter("ana", kinds="observation"))] == [
        "old note"
    ]


def _old_data(store: MemoryStore) -> None:
    store.archive.add([MemoryRecord.new(user_id="ana", kind="observation", text="old note")])
    store.core("ana").upsert(CoreFact.new("city", "Porto"))


def test_a_data_directory_of_schema_2_gets_the_expiry_columns(tmp_path: Path) -> None:
    path = tmp_path / "data"
    with MemoryStore(path, embeddings=FAKE) as store:
        _old_data(store)
    conn = sqlite3.connect(path / "archive.sqlite")  # back to what schema 2 wrote
    for table in ("records", "facts"):
        conn.execute(f"DROP INDEX {table}_expiry")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN expires_at")
    conn.execute("UPDATE meta SET value='2' WHERE key='schema'")
    conn.commit()
    conn.close()
    with MemoryStore(path, embeddings=FAKE) as store:
        _use(store)
    conn = sqlite3.connect(path / "archive.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("3",)
    conn.close()


def test_a_postgres_database_of_schema_2_gets_the_expiry_columns(postgres_url: str) -> None:
    import psycopg

    with MemoryStore(postgres_url, embeddings=FAKE) as store:
        _old_data(store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in ("records", "facts"):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN expires_at")  # its index goes too
        conn.execute("UPDATE meta SET value='2' WHERE key='schema'")
    with MemoryStore(postgres_url, embeddings=FAKE) as store:
        _use(store)


def test_checkpoints_of_threads_forgotten_elsewhere_are_pruned(tmp_path: Path) -> None:
    path = tmp_path / "data"
    with MemoryStore(path, embeddings=FAKE) as store:
        saver = store.checkpointer()
        for thread in ("kept", "forgotten"):
            store.memory("ana", thread).add_messages([HumanMessage(f"hello from {thread}")])
            saver.put(
                {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                {
                    "v": 1,
                    "id": thread,
                    "ts": "",
                    "channel_values": {"note": f"hello from {thread}"},
                    "channel_versions": {},
                },
                {},
                {},
            )
    # a process that never opened the checkpointer forgets a thread: its checkpoints stay
    with MemoryStore(path, embeddings=FAKE) as other:
        other.backend.forget_thread("ana", "forgotten")  # the backend alone: no checkpointer
    with MemoryStore(path, embeddings=FAKE) as store:
        assert store.prune_checkpoints(dry_run=True) == ["forgotten"]
        assert store.prune_checkpoints() == ["forgotten"]
        saver = store.checkpointer()
        assert saver.get_tuple({"configurable": {"thread_id": "forgotten"}}) is None
        assert saver.get_tuple({"configurable": {"thread_id": "kept"}}) is not None
        assert store.prune_checkpoints() == []
    assert b"hello from forgotten" not in (path / "checkpoints.sqlite").read_bytes()
