"""SQLiteArchive: durability, index consistency, isolation, filters, forgetting, CJK."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.budget.tokens import ApproximateTokenCounter
from langchain_tiered_memory.ids import turn_record_id
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.faiss.index import FaissIndex
from langchain_tiered_memory.storage.fts import fts_document, fts_query
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.storage.vectors import VectorEntry
from langchain_tiered_memory.tiers.buffer import (
    BufferState,
    CompressionTriggers,
    InMemoryTurnArchive,
    append_messages,
)
from langchain_tiered_memory.tiers.buffer import compress as compress_buffer
from langchain_tiered_memory.tiers.summarize import ExtractiveSummarizer
from langchain_tiered_memory.values.turns import Turn

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


class AxisEmbeddings(Embeddings):
    """Each vocabulary word is an axis: cosine similarity = shared topic words."""

    VOCAB = ("peanut", "cat", "tokyo", "piano", "stock", "coffee", "hiking", "python")

    def __init__(self) -> None:
        self.document_calls: list[int] = []

    def _embed(self, text: str) -> list[float]:
        low = text.lower()
        return [1.0 if word in low else 0.0 for word in self.VOCAB] + [0.05]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(len(texts))
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def fact(user: str, text: str, id: str, **kw: object) -> MemoryRecord:
    return MemoryRecord.new(user_id=user, kind="fact", text=text, id=id, **kw)  # type: ignore[arg-type]


def raw_bytes(directory: Path) -> bytes:
    """Every byte of every file in the archive's directory (db, -wal, -shm, .faiss, tmp)."""
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file())


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite"


@pytest.fixture
def axis() -> AxisEmbeddings:
    return AxisEmbeddings()


@pytest.fixture
def archive(path: Path, axis: AxisEmbeddings) -> Iterator[SQLiteArchive]:
    with SQLiteArchive(path, embeddings=axis) as a:
        yield a


def test_in_memory_turn_archive_still_idempotent() -> None:
    hook = InMemoryTurnArchive()
    hook([Turn(0, (HumanMessage("hi"),)), Turn(1, (HumanMessage("yo"),))])
    hook([Turn(1, (HumanMessage("yo"),))])
    assert [t.index for t in hook.turns] == [0, 1]


def test_roundtrip_keeps_every_field(archive: SQLiteArchive) -> None:
    record = MemoryRecord(
        id="r1",
        user_id="ana",
        thread_id="t1",
        kind="observation",
        text="Ana drinks coffee at 7:30 in Tokyo",
        created_at=T0,
        last_accessed_at=T0 + timedelta(hours=1, microseconds=7),
        importance=8.5,
        sources=("turn:3", "D1:4"),
        metadata={"stated": True, "confidence": 0.9, "tags": ["x"]},
    )
    archive.add([record])
    assert archive.get(["r1"]) == [record]
    assert archive.get(["missing", "r1"], user_id="bob") == []


def test_add_is_idempotent_and_embeds_one_batch(
    archive: SQLiteArchive, axis: AxisEmbeddings
) -> None:
    records = [fact("ana", f"fact {i} about coffee", f"f{i}") for i in range(5)]
    archive.add(records)
    archive.add(records)
    archive.add([*records, fact("ana", "new one about cats", "f9"), records[0]])
    assert archive.count("ana") == 6
    assert axis.document_calls == [5, 1]  # one batch per add, only new texts
    assert isinstance(archive.index, FaissIndex)
    assert archive.index.ntotal == 6
    writes = archive.audit.events("ana", kinds=["write"])
    assert [len(e.payload["ids"]) for e in writes] == [5, 1]


def test_record_id_of_another_user_is_rejected(archive: SQLiteArchive) -> None:
    archive.add([fact("ana", "coffee", "shared-id")])
    with pytest.raises(ValueError, match="another user"):
        archive.add([fact("bob", "cats", "shared-id")])
    assert archive.records("bob") == []


def test_invalid_input_gives_clear_errors(archive: SQLiteArchive, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="user_id"):
        archive.keyword_search("x", "")
    with pytest.raises(ValueError, match="kind"):
        archive.records(RecordFilter("ana", kinds=["gossip"]))  # type: ignore[list-item]
    bad = MemoryRecord("x", "ana", None, "fact", "t", metadata={"when": T0})
    with pytest.raises(ValueError, match="JSON"):
        archive.add([bad])
    with pytest.raises(ValueError, match="does not exist"):
        SQLiteArchive(tmp_path / "nope" / "m.sqlite", embeddings=AxisEmbeddings())
    with pytest.raises(ValueError, match="directory"):
        SQLiteArchive(tmp_path, embeddings=AxisEmbeddings())
    with pytest.raises(ValueError, match="memory"):
        SQLiteArchive(":memory:", embeddings=AxisEmbeddings())


def test_reopen_brings_back_records_fts_and_vectors(
    path: Path, axis: AxisEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    with SQLiteArchive(path, embeddings=axis) as a:
        a.add([fact("ana", "allergic to peanut butter", "f1"), fact("ana", "plays piano", "f2")])
    with caplog.at_level(logging.WARNING), SQLiteArchive(path, embeddings=axis) as b:
        assert [r.id for r in b.records("ana")] == ["f1", "f2"]
        assert [r.id for r, _ in b.keyword_search("peanut", "ana")] == ["f1"]
        hits = b.dense_search("piano lessons", "ana", n=1)
        assert [r.id for r, _ in hits] == ["f2"]
        assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert "rebuild" not in caplog.text


@pytest.mark.parametrize(
    "damage", ["deleted", "garbage", "fewer_ids", "wrong_vectors", "wrong_dim"]
)
def test_index_rebuilt_when_missing_or_stale(
    path: Path, axis: AxisEmbeddings, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    with SQLiteArchive(path, embeddings=axis) as a:
        a.add([fact("ana", f"{w} fact", f"f{i}") for i, w in enumerate(AxisEmbeddings.VOCAB)])
        index_path = a.index_path
        rids = sorted(a.index.ids() or ())
    if damage == "deleted":
        index_path.unlink()
    elif damage == "garbage":
        index_path.write_bytes(b"not a faiss index")
    else:
        dim = 4 if damage == "wrong_dim" else 9
        wrong = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        ids = np.array(rids[:-1] if damage == "fewer_ids" else rids, dtype=np.int64)
        vectors = np.random.default_rng(0).random((len(ids), dim)).astype(np.float32)
        wrong.add_with_ids(vectors, ids)
        faiss.write_index(wrong, str(index_path))
    with caplog.at_level(logging.WARNING), SQLiteArchive(path, embeddings=axis) as b:
        assert "rebuilding" in caplog.text
        assert b.index.ids() == set(rids)
        for i, word in enumerate(AxisEmbeddings.VOCAB):
            assert b.dense_search(word, "ana", n=1)[0][0].id == f"f{i}"
    caplog.clear()
    with caplog.at_level(logging.WARNING), SQLiteArchive(path, embeddings=axis):
        assert "rebuilding" not in caplog.text  # the rebuilt file was saved


def test_crash_before_index_write_is_repaired(path: Path, axis: AxisEmbeddings) -> None:
    a = SQLiteArchive(path, embeddings=axis, save_every=1000)  # defer FAISS writes
    a.add([fact("ana", "peanut", "f1")])
    a.close()
    b = SQLiteArchive(path, embeddings=axis, save_every=1000)
    b.add([fact("ana", "cat", "f2"), fact("ana", "tokyo", "f3")])
    b._db.close()  # "crash": SQLite committed, FAISS file never written
    with SQLiteArchive(path, embeddings=axis) as c:
        assert c.index.ids() is not None and len(c.index.ids() or ()) == 3
        assert c.dense_search("tokyo", "ana", n=1)[0][0].id == "f3"


def test_index_file_behind_the_records_is_caught_up_not_rebuilt(
    path: Path, axis: AxisEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    """A crash between index saves: missing vectors come from SQLite, deleted ones go."""
    with SQLiteArchive(path, embeddings=axis) as a:
        a.add([fact("ana", f"{w} fact", f"f{i}") for i, w in enumerate(AxisEmbeddings.VOCAB[:4])])
        old_file = a.index_path.read_bytes()  # the file as saved before the crash
        gone = a.dense_search("peanut", "ana", n=1)[0][0]
        a.delete([gone.id], user_id="ana")
        a.add(
            [fact("ana", f"{w} fact", f"f{i + 4}") for i, w in enumerate(AxisEmbeddings.VOCAB[4:])]
        )
        rids = a.index.ids()
        index_path = a.index_path
    index_path.write_bytes(old_file)  # 4 vectors newer than the file, 1 deleted since
    calls_before = len(axis.document_calls)
    with caplog.at_level(logging.INFO), SQLiteArchive(path, embeddings=axis) as b:
        assert "caught up with its records: 4 added, 1 removed" in caplog.text
        assert "rebuilding" not in caplog.text
        assert b.index.ids() == rids
        assert len(axis.document_calls) == calls_before  # vectors came from SQLite
        for i, word in enumerate(AxisEmbeddings.VOCAB[1:], start=1):
            assert b.dense_search(word, "ana", n=1)[0][0].id == f"f{i}"
        assert all(r.id != "f0" for r, _ in b.dense_search("peanut", "ana", n=8))
    reread = faiss.read_index(str(index_path))  # the repaired index was saved at once
    assert set(faiss.vector_to_array(reread.id_map).tolist()) == rids


def test_big_index_file_is_written_less_often(tmp_path: Path) -> None:
    """Saves come every ``max(save_every, ntotal // save_fraction)`` adds."""
    index = FaissIndex(tmp_path / "v.faiss", dim=4, save_every=1)
    vectors = np.eye(4, dtype=np.float32)

    def entries(start: int, n: int) -> list[VectorEntry]:
        return [
            VectorEntry(rid, fact("ana", "x", f"r{rid}"), vectors[rid % 4])
            for rid in range(start, start + n)
        ]

    def saved() -> int:
        return int(faiss.read_index(str(index.path)).ntotal)

    index.add(entries(0, 640))
    index.flush()
    assert saved() == 640  # 640 >= max(1, 0 // 64)
    index.add(entries(640, 9))
    index.flush()
    assert saved() == 640  # 9 < 649 // 64 = 10: not yet
    index.add(entries(649, 1))
    index.flush()
    assert saved() == 650
    index.add(entries(650, 1))
    index.flush(force=True)
    assert saved() == 651


def test_dimension_mismatch_with_existing_archive(path: Path) -> None:
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32)) as a:
        a.add([fact("ana", "x", "f1")])
    message = "this archive was built with dim 32, got 16 — use the same embeddings or a new path"
    with pytest.raises(ValueError, match=message):
        SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16), dim=16)
    with pytest.raises(ValueError, match="was built with the embeddings"):  # at open
        SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16))
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32)) as b:
        with pytest.raises(ValueError, match="dim 32, got 16"):
            b.dense_search([0.1] * 16, "ana")
        assert b.count() == 1


def test_user_isolation_in_both_searches(archive: SQLiteArchive) -> None:
    archive.add(
        [
            fact("ana", "Ana loves coffee in Tokyo", "a1"),
            fact("bob", "Bob loves coffee in Tokyo", "b1"),
            fact("bob", "coffee coffee coffee tokyo", "b2"),
        ]
    )
    for user, own in (("ana", {"a1"}), ("bob", {"b1", "b2"})):
        assert {r.id for r, _ in archive.keyword_search("coffee Tokyo", user)} == own
        assert {r.id for r, _ in archive.dense_search("coffee tokyo", user)} == own
        assert {r.id for r in archive.records(user)} == own
    assert archive.keyword_search("coffee", "carol") == []
    assert archive.dense_search("coffee", "carol") == []


def test_filters_kind_thread_and_time(archive: SQLiteArchive) -> None:
    def rec(id: str, kind: str, thread: str | None, hours: int) -> MemoryRecord:
        return MemoryRecord.new(
            user_id="ana",
            kind=kind,  # type: ignore[arg-type]
            text=f"coffee note {id}",
            thread_id=thread,
            id=id,
            created_at=T0 + timedelta(hours=hours),
        )

    archive.add(
        [
            rec("t1a", "turn", "t1", 0),
            rec("t1b", "summary", "t1", 1),
            rec("t2a", "turn", "t2", 2),
            rec("f", "fact", None, 3),
        ]
    )
    for search in (archive.keyword_search, archive.dense_search):

        def ids(n: int = 50, **kw: Any) -> set[str]:
            return {r.id for r, _ in search("coffee", RecordFilter("ana", **kw), n=n)}  # noqa: B023

        assert ids() == {"t1a", "t1b", "t2a", "f"}
        assert ids(kinds=["turn"]) == {"t1a", "t2a"}
        assert ids(kinds="fact") == {"f"}
        assert ids(thread_id="t1") == {"t1a", "t1b"}
        assert ids(thread_id="t1", kinds=["summary"]) == {"t1b"}
        assert ids(since=T0 + timedelta(hours=1)) == {"t1b", "t2a", "f"}
        assert ids(until=T0 + timedelta(hours=1)) == {"t1a"}  # until is exclusive
        assert ids(since=T0 + timedelta(hours=1), until=T0 + timedelta(hours=3)) == {"t1b", "t2a"}
        assert len(ids(n=2)) == 2
    naive = (T0 + timedelta(hours=2)).replace(tzinfo=None)  # naive datetimes are UTC
    assert [r.id for r in archive.records(RecordFilter("ana", since=naive))] == ["t2a", "f"]
    assert [r.id for r in archive.records(RecordFilter("ana", thread_id="t2"))] == ["t2a"]


def test_dense_search_takes_vectors_and_ranks_by_cosine(archive: SQLiteArchive) -> None:
    archive.add(
        [
            fact("ana", "peanut allergy", "p"),
            fact("ana", "peanut and cat", "pc"),
            fact("ana", "hiking", "h"),
        ]
    )
    vector = archive.embed_query("peanut")
    hits = archive.dense_search(vector, "ana")
    assert [r.id for r, _ in hits] == ["p", "pc", "h"]
    assert hits[0][1] > hits[1][1] > hits[2][1]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-3)
    assert archive.dense_search(list(vector), "ana", n=1)[0][0].id == "p"


def test_hook_archives_evicted_turns_idempotently(archive: SQLiteArchive) -> None:
    counter = ApproximateTokenCounter()  # the tokenizer does not matter here; keep it fast
    state = BufferState()
    for i in range(12):
        state = append_messages(
            state,
            [HumanMessage(f"Day {i}: I had coffee in Tokyo."), AIMessage("Noted.")],
            counter,
        )
    hook = archive.hook("ana", "t1")
    result = compress_buffer(
        state,
        cap=200,
        triggers=CompressionTriggers(),
        summarizer=ExtractiveSummarizer(counter),
        archive=hook,
        counter=counter,
    )
    evicted = result.event.evicted_turns if result.event else ()
    assert evicted
    turns = archive.records(RecordFilter("ana", thread_id="t1", kinds=["turn"]))
    assert [r.id for r in turns] == [turn_record_id("ana", "t1", i) for i in evicted]
    assert turns[0].sources == (f"turn:{evicted[0]}",)
    assert turns[0].text.startswith(f"user: Day {evicted[0]}: I had coffee")
    assert turns[0].created_at == state.turns[0].created_at
    hook(state.turns[: len(evicted) + 1])  # a retry passes the same turns again (+1 new)
    assert archive.count("ana") == len(evicted) + 1
    page_outs = archive.audit.events("ana", kinds=["page_out"])
    assert [e.payload["turns"] for e in page_outs] == [list(evicted), [len(evicted)]]
    assert all("coffee" not in json.dumps(e.payload) for e in page_outs)


def test_touch_and_update_record(archive: SQLiteArchive) -> None:
    archive.add([fact("ana", "Ana follows EV stock news", "f1")])
    assert archive.touch(["f1", "nope"], T0) == 1
    assert archive.touch(["f1"], T0, user_id="bob") == 0
    assert archive.get(["f1"])[0].last_accessed_at == T0
    old = archive.get(["f1"])[0]
    rids_before = archive.index.ids()
    # same text: fields updated in place, no re-embedding, same row
    archive.update_record(replace(old, importance=9.0))
    assert archive.get(["f1"])[0].importance == 9.0
    assert archive.index.ids() == rids_before
    # new text: re-embedded, new row id, both indexes follow
    new = replace(old, text="Ana no longer follows stocks; hiking now")
    archive.update_record(new)
    assert archive.get(["f1"])[0].text == new.text
    assert archive.index.ids() != rids_before and len(archive.index.ids() or ()) == 1
    assert archive.keyword_search("EV", "ana") == []
    assert [r.id for r, _ in archive.keyword_search("hiking", "ana")] == ["f1"]
    assert archive.dense_search("hiking", "ana")[0][1] > 0.5
    with pytest.raises(KeyError):
        archive.update_record(fact("ana", "x", "missing"))
    with pytest.raises(ValueError, match="another user"):
        archive.update_record(fact("bob", "x", "f1"))


def test_delete_by_id_only_touches_that_user(archive: SQLiteArchive, path: Path) -> None:
    archive.add(
        [
            fact("ana", "ana secret quixoticzebra", "a1"),
            fact("ana", "ana keeps cobaltmandolin", "a2"),
            fact("bob", "bob secret bluewalrus", "b1"),
        ]
    )
    assert archive.delete(["a1", "b1", "zzz"], user_id="ana") == 1
    assert {r.id for r in archive.records("ana")} == {"a2"}
    assert {r.id for r in archive.records("bob")} == {"b1"}
    assert archive.keyword_search("quixoticzebra", "ana") == []
    assert len(archive.index.ids() or ()) == 2
    event = archive.audit.events("ana", kinds=["delete"])[-1]
    assert event.payload == {"ids": ["a1"]}
    data = raw_bytes(path.parent)
    assert b"quixoticzebra" not in data
    assert b"cobaltmandolin" in data and b"bluewalrus" in data
    assert archive.delete([], user_id="ana") == 0


def test_delete_user_leaves_no_bytes_behind(path: Path) -> None:
    emb = DeterministicFakeEmbedding(size=32)
    a = SQLiteArchive(path, embeddings=emb)
    long_tail = " filler" * 300  # some records overflow onto extra pages

    def text(user: str, batch: int, i: int) -> str:
        word = "ultramarinexylophone" if user == "alice" else "cobaltmandolin"
        tail = long_tail if i % 10 == 0 else ""
        return f"{user} note {batch}-{i}: {word}{batch:02d}{i:03d}{tail}"

    for batch in range(6):
        a.add(
            [
                fact(user, text(user, batch, i), f"{user}-{batch}-{i}", thread_id="t1")
                for i in range(40)
                for user in ("alice", "bob")
            ]
        )
    a.hook("alice", "t1")([Turn(0, (HumanMessage("my pin is pinnumber8675309"),))])
    a.audit.record("recall", user_id="alice", query="ultramarinexylophone?")
    alice_vectors = [e.vector for e in a.index_sync.entries("user_id=?", ["alice"])]
    assert b"ultramarinexylophone" in raw_bytes(path.parent)

    assert a.delete_user("alice") == 241
    assert a.count("alice") == 0 and a.count("bob") == 240
    assert a.keyword_search("ultramarinexylophone", "alice") == []
    assert a.dense_search("alice note 0-1", "alice") == []
    events = a.audit.events("alice")
    assert [(e.kind, e.payload) for e in events] == [
        ("delete", {"forgotten": True, "records": 241})
    ]
    assert a.audit.count("bob") > 0

    for data in (raw_bytes(path.parent), None):
        if data is None:
            a.close()
            data = raw_bytes(path.parent)
        assert b"ultramarinexylophone" not in data
        assert b"pinnumber8675309" not in data
        assert b"cobaltmandolin" in data
        assert not any(v is not None and v.tobytes() in data for v in alice_vectors)
    faiss_bytes = path.with_name(path.name + ".faiss").read_bytes()
    assert b"cobaltmandolin" not in faiss_bytes and len(faiss_bytes) > 240 * 32 * 4
    with SQLiteArchive(path, embeddings=emb) as b:
        assert b.count() == 240
        hit = b.dense_search(text("bob", 0, 1), "bob", n=1)[0][0]
        assert hit.id == "bob-0-1"


def test_export_user(archive: SQLiteArchive) -> None:
    archive.add([fact("ana", "coffee", "a1", sources=("turn:1",)), fact("bob", "cats", "b1")])
    archive.hook("ana", "t9")([Turn(0, (HumanMessage("hello"),), created_at=T0)])
    exported = json.loads(json.dumps(archive.export_user("ana")))
    assert exported["user_id"] == "ana"
    assert {r["id"] for r in exported["records"]} == {"a1", "ana:t9:turn:0"}
    record = next(r for r in exported["records"] if r["id"] == "a1")
    assert set(record) == {
        "id",
        "user_id",
        "thread_id",
        "kind",
        "text",
        "created_at",
        "last_accessed_at",
        "importance",
        "sources",
        "metadata",
        "expires_at",
    }
    assert record["sources"] == ["turn:1"]
    assert [e["kind"] for e in exported["audit_events"]] == ["write", "page_out"]
    assert "cats" not in json.dumps(exported)


def test_concurrent_threads_add_and_search(path: Path) -> None:
    archive = SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16))
    errors: list[BaseException] = []
    per_thread = 15

    def work(t: int) -> None:
        user = f"user{t}"
        try:
            for i in range(per_thread):
                text = f"{user} record {i} coffee"
                archive.add([fact(user, text, f"{user}-{i}")])
                if i % 3 == 0:  # a retry from another code path: must stay idempotent
                    archive.add([fact(user, text, f"{user}-{i}")])
                hits = archive.keyword_search("coffee", user)
                assert {r.user_id for r, _ in hits} == {user}
                dense = archive.dense_search(text, user, n=3)
                assert dense[0][0].id == f"{user}-{i}"
                assert {r.user_id for r, _ in dense} == {user}
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert archive.count() == 8 * per_thread
    assert all(archive.count(f"user{t}") == per_thread for t in range(8))
    assert len(archive.index.ids() or ()) == 8 * per_thread
    archive.close()
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16)) as again:
        assert len(again.index.ids() or ()) == 8 * per_thread


def test_cjk_keyword_search(archive: SQLiteArchive) -> None:
    archive.add(
        [
            fact("ana", "我对花生过敏，不能吃花生酱。", "zh1"),
            fact("ana", "我住在东京，喜欢喝咖啡。", "zh2"),
            fact("ana", "東京でピーナッツを食べない", "ja1"),
            fact("ana", "I am allergic to peanuts (花生)", "mix"),
            fact("bob", "我对花生过敏", "bob"),
        ]
    )

    def ids(query: str) -> list[str]:
        return [r.id for r, _ in archive.keyword_search(query, "ana")]

    assert set(ids("花生")) == {"zh1", "mix"}
    assert ids("花生")[0] == "zh1"  # two occurrences rank first
    assert ids("过敏") == ["zh1"]
    assert ids("我花生过敏吗？")[0] == "zh1"
    assert set(ids("东京")) == {"zh2"}
    assert set(ids("東京")) == {"ja1"}
    assert ids("ピーナッツ") == ["ja1"]
    assert set(ids("咖")) == {"zh2"}  # single character: prefix query on bigrams
    assert set(ids("啡")) == {"zh2"}  # ... including the last character of a run
    assert ids("peanut") == ["mix"]  # porter: peanut ~ peanuts
    assert ids("ALLERGIC") == ["mix"]
    assert ids("猫") == []


def test_fts_queries_never_break(archive: SQLiteArchive) -> None:
    archive.add([fact("ana", 'He said "NEAR" AND left: 42 - ok* (done)', "f1")])
    nasty = [
        '"',
        '""',
        "AND",
        "OR OR",
        "NOT x",
        "NEAR(a b)",
        "text:42",
        "a*",
        "^start",
        "(",
        ")",
        "-",
        "+",
        "{x}",
        "'",
        "\\",
        "\x00",
        "😀",
        "",
        "   ",
        "ok* AND (done",
        "42",
        "'; DROP TABLE records; --",
    ]
    for query in nasty:
        archive.keyword_search(query, "ana")
    assert [r.id for r, _ in archive.keyword_search("42", "ana")] == ["f1"]
    assert [r.id for r, _ in archive.keyword_search("near", "ana")] == ["f1"]
    assert archive.count() == 1
    assert fts_query("") is None
    assert fts_document("Ｃａｆé ４２") == "Café 42"  # NFKC folds full-width forms


def test_closed_archive_refuses_work(path: Path) -> None:
    archive = SQLiteArchive(path, embeddings=AxisEmbeddings())
    archive.close()
    archive.close()
    assert archive.closed
    with pytest.raises(ValueError, match="closed"):
        archive.records("ana")
    with pytest.raises(ValueError, match="closed"):
        archive.add([fact("ana", "x", "f1")])


def test_another_embedding_model_is_refused_at_open(path: Path) -> None:
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
        archive.add([fact("ana", "Ana likes tea", "f1")])
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"was built with the embeddings .*DeterministicFake"):
        SQLiteArchive(path, embeddings=AxisEmbeddings())
    assert path.read_bytes() == before  # refused before anything was written
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
        assert [r.id for r, _ in archive.dense_search("Ana likes tea", "ana")] == ["f1"]


def test_an_archive_without_vectors_takes_other_embeddings(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)):
        pass
    with SQLiteArchive(path, embeddings=AxisEmbeddings()) as archive:
        archive.add([fact("ana", "coffee", "f1")])
        assert archive.dense_search("coffee", "ana")


def test_index_file_is_written_outside_the_lock(tmp_path: Path) -> None:
    """Searches and adds go on while the index file is being written; a failed write retries."""
    index = FaissIndex(tmp_path / "v.faiss", dim=4, save_every=1)
    vectors = np.eye(4, dtype=np.float32)
    entry = [VectorEntry(1, fact("ana", "x", "r1"), vectors[0])]
    index.add(entry)
    writing, release = threading.Event(), threading.Event()
    real_write = index._write

    def slow_write(data: np.ndarray) -> None:
        writing.set()
        assert release.wait(30)
        real_write(data)

    index._write = slow_write  # type: ignore[method-assign]
    flusher = threading.Thread(target=index.flush)
    flusher.start()
    assert writing.wait(30)
    # the write is blocked on disk: the index itself is free
    adder = threading.Thread(
        target=index.add, args=([VectorEntry(2, fact("ana", "y", "r2"), vectors[1])],)
    )
    adder.start()
    adder.join(10)
    blocked = adder.is_alive()
    release.set()
    adder.join(30)
    assert not blocked, "add waited for the file write"
    assert index.ntotal == 2
    flusher.join(30)
    assert faiss.read_index(str(index.path)).ntotal == 1  # the state when flush began
    index._write = real_write  # type: ignore[method-assign]

    def failing_write(data: np.ndarray) -> None:
        raise OSError("disk full")

    index._write = failing_write  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        index.flush(force=True)
    index._write = real_write  # type: ignore[method-assign]
    index.flush()  # the failed write's changes are still pending
    assert faiss.read_index(str(index.path)).ntotal == 2
