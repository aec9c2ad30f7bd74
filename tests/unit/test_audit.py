"""AuditLog: typed events, per-user reads, same-transaction writes, archive events."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.codec import from_micros, to_micros
from langchain_tiered_memory.storage.sql.audit import AUDIT_KINDS, AuditEvent, AuditLog
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.storage.sqlite.schema import create_schema
from langchain_tiered_memory.values.turns import Turn


@pytest.fixture
def log(tmp_path: Path) -> AuditLog:
    db = SQLiteDatabase(tmp_path / "audit.sqlite")
    create_schema(db)
    return AuditLog(db)


def test_kinds_are_the_documented_ones() -> None:
    assert {"page_out", "page_in", "compression", "recall", "write", "delete", "error"} == (
        AUDIT_KINDS
    )


def test_record_and_read_back_typed_events(log: AuditLog) -> None:
    before = datetime.now(timezone.utc)
    event = log.record(
        "compression", user_id="ana", thread_id="t1", tokens_before=900, evicted=(1, 2)
    )
    assert isinstance(event, AuditEvent)
    assert event.payload == {"tokens_before": 900, "evicted": [1, 2]}
    log.record("recall", user_id="ana", thread_id="t2", scores=[0.5], reason="refers back")
    log.record("page_in", user_id="bob", ids=["r1"])
    events = log.events("ana")
    assert [e.kind for e in events] == ["compression", "recall"]
    assert events[0] == event
    assert events[0].at >= before.replace(microsecond=0) and events[0].at.tzinfo is not None
    assert [e.kind for e in log.events("ana", kinds=["recall"])] == ["recall"]
    assert [e.kind for e in log.events("ana", thread_id="t1")] == ["compression"]
    assert [e.kind for e in log.events("ana", limit=1)] == ["recall"]  # newest, oldest first
    assert log.events("ana", kinds=[]) == []
    assert [e.user_id for e in log.events("bob")] == ["bob"]
    assert log.count() == 3 and log.count("ana") == 2
    json.dumps([e.to_dict() for e in events])


def test_bad_input_is_rejected(log: AuditLog) -> None:
    with pytest.raises(ValueError, match="unknown audit event kind"):
        log.record("gossip", user_id="ana")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_id"):
        log.record("write", user_id="")
    with pytest.raises(ValueError, match="user_id"):
        log.events("")
    with pytest.raises(TypeError, match="JSON"):
        log.record("write", user_id="ana", thing=object())
    with pytest.raises(ValueError, match="limit"):
        log.events("ana", limit=-1)
    assert log.count() == 0


def test_events_persist_and_share_the_transaction(tmp_path: Path) -> None:
    db = SQLiteDatabase(tmp_path / "shared.sqlite")
    create_schema(db)
    log = AuditLog(db)
    with pytest.raises(RuntimeError), db.write() as conn:
        log.insert(conn, "write", user_id="ana", payload={"ids": ["x"]})
        raise RuntimeError("the write failed")
    assert log.count() == 0  # rolled back with the write it described
    with db.write() as conn:
        log.insert(conn, "write", user_id="ana", payload={"ids": ["y"]})
        log.record("page_out", user_id="ana", turns=[3])  # nested: joins the transaction
    db.close()
    again = SQLiteDatabase(tmp_path / "shared.sqlite")
    assert [e.kind for e in AuditLog(again).events("ana")] == ["write", "page_out"]
    again.close()


def test_time_conversion_is_exact() -> None:
    at = datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=timezone.utc)
    assert from_micros(to_micros(at)) == at
    assert to_micros(at.replace(tzinfo=None)) == to_micros(at)


def test_archive_writes_events_without_memory_text(tmp_path: Path) -> None:
    with SQLiteArchive(
        tmp_path / "m.sqlite", embeddings=DeterministicFakeEmbedding(size=8)
    ) as archive:
        archive.add(
            [MemoryRecord.new(user_id="ana", kind="fact", text="secret peanut thing", id="f1")]
        )
        archive.hook("ana", "t1")([Turn(5, (HumanMessage("secret turn text"),))])
        archive.delete(["f1"], user_id="ana")
        events = archive.audit.events("ana")
        assert [e.kind for e in events] == ["write", "page_out", "delete"]
        assert events[0].payload == {"op": "add", "ids": ["f1"], "kinds": {"fact": 1}}
        assert events[1].payload == {"turns": [5], "ids": ["ana:t1:turn:5"]}
        assert events[1].thread_id == "t1"
        assert events[2].payload == {"ids": ["f1"]}
        assert "secret" not in json.dumps([e.to_dict() for e in events])

        archive.audit.record("recall", user_id="bob", hits=0)
        archive.delete_user("ana")
        assert [(e.kind, e.payload) for e in archive.audit.events("ana")] == [
            ("delete", {"forgotten": True, "records": 1})
        ]
        assert [e.kind for e in archive.audit.events("bob")] == ["recall"]


def test_reads_survive_tables_created_by_another_connection(tmp_path: Path) -> None:
    """Reading an FTS5 table while another connection commits new ones never fails.

    SQLite reports ``SQLITE_SCHEMA`` ("vtable constructor failed") when a
    reader connects a virtual table while the schema changes under it; the
    archive creates keyword-shard tables on first use while others recall.
    """
    db = SQLiteDatabase(tmp_path / "x.sqlite")
    created: list[str] = []
    errors: list[BaseException] = []
    rows: list[int] = []
    done = threading.Event()

    def create_tables() -> None:
        try:
            for i in range(150):
                with db.write() as conn:
                    conn.execute(f"CREATE VIRTUAL TABLE t{i} USING fts5(text, content='')")
                    conn.execute(f"INSERT INTO t{i} (rowid, text) VALUES (1, 'hello world')")
                created.append(f"t{i}")
        finally:
            done.set()

    def read_tables() -> None:
        while not done.is_set():
            if not created:
                time.sleep(0.001)
                continue
            table = created[-1]
            try:
                rows.extend(
                    r[0] for r in db.query(f"SELECT rowid FROM {table} WHERE {table} MATCH 'hello'")
                )
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=read_tables) for _ in range(4)]
    threads.append(threading.Thread(target=create_tables))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    db.close()
    assert not errors, errors[:3]
    assert rows and set(rows) == {1}
