"""SQLiteArchive at scale: keyword shards, exact filtered keyword search, batched access times."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_tiered_memory.recall.hybrid import Recaller
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.faiss.index import FaissIndex
from langchain_tiered_memory.storage.fts import fts_query, fts_shard, fts_table, owner_token
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
WORDS = ["tea", "coffee", "peanut", "cat", "dog", "tokyo", "piano", "hiking", "python", "jazz"]


def record(user: str, i: int, **kw: Any) -> MemoryRecord:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
    return MemoryRecord.new(
        user_id=user, kind="fact", text=f"{user} note {i}: {words}", id=f"{user}-{i}", **kw
    )


def users_in_distinct_shards(shards: int, n: int) -> list[str]:
    found: dict[int, str] = {}
    i = 0
    while len(found) < n:
        found.setdefault(fts_shard(f"u{i}", shards), f"u{i}")
        i += 1
    return list(found.values())


def shard_tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'"
        ).fetchall()
    return {name for (name,) in rows}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite"


@pytest.fixture
def archive(path: Path) -> Iterator[SQLiteArchive]:
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16)) as a:
        yield a


def test_users_get_their_own_shard_tables_on_demand(archive: SQLiteArchive, path: Path) -> None:
    assert shard_tables(path) == set()  # an empty archive has no keyword tables yet
    ana, bob = users_in_distinct_shards(archive.fts_shards, 2)
    archive.add([record(ana, i) for i in range(5)])
    assert shard_tables(path) == {fts_table(fts_shard(ana, archive.fts_shards))}
    assert archive.keyword_search("tea", bob) == []  # bob's shard does not exist yet
    archive.add([record(bob, i) for i in range(5)])
    assert len(shard_tables(path)) == 2
    for user in (ana, bob):
        hits = archive.keyword_search("tea coffee", user)
        assert hits and {r.user_id for r, _ in hits} == {user}


def test_users_sharing_a_shard_stay_isolated(path: Path) -> None:
    class OneShard(SQLiteArchive):
        fts_shards = 1

    with OneShard(path, embeddings=DeterministicFakeEmbedding(size=16)) as archive:
        archive.add([record(u, i) for u in ("ana", "bob") for i in range(6)])
        assert len(shard_tables(path)) == 1
        for user in ("ana", "bob"):
            hits = archive.keyword_search("note", user, n=50)
            assert len(hits) == 6 and {r.user_id for r, _ in hits} == {user}
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16)) as again:
        assert again.keywords.count == 1  # an existing archive keeps its shard count
        assert len(again.keyword_search("tea", "ana")) > 0


def test_filtered_keyword_search_is_exact(archive: SQLiteArchive) -> None:
    """Filters apply after FTS ranks: the over-fetch must still give the true top n."""
    records = [
        record("ana", i, thread_id=f"t{i % 3}", created_at=T0 + timedelta(hours=i))
        for i in range(60)
    ]
    archive.add(records)
    table = archive.keywords.table("ana")
    match = f'owner : "{owner_token("ana")}" AND text : ({fts_query("tea peanut")})'

    def reference(where: str, params: list[object], n: int) -> list[str]:
        # the straightforward plan: rank every match joined with its record
        rows = archive._db.query(
            f"SELECT r.id FROM {table} JOIN records r ON r.rid = {table}.rowid "
            f"WHERE {table} MATCH ? AND r.user_id = 'ana' {where} "
            f"ORDER BY bm25({table}, 1.0, 0.0), r.rid LIMIT ?",
            [match, *params, n],
        )
        return [row[0] for row in rows]

    def got(n: int, **filters: Any) -> list[str]:
        hits = archive.keyword_search("tea peanut", RecordFilter("ana", **filters), n=n)
        return [r.id for r, _ in hits]

    assert got(5) == reference("", [], 5)
    assert got(7, thread_id="t2") == reference("AND r.thread_id = ?", ["t2"], 7)
    since = T0 + timedelta(hours=50)
    assert got(4, since=since) == reference("AND r.created_at >= ?", [since_micros(since)], 4)
    assert got(100, thread_id="t1") == reference("AND r.thread_id = ?", ["t1"], 100)
    assert got(3, kinds=["turn"]) == []


def since_micros(at: datetime) -> int:
    return int((at - datetime(1970, 1, 1, tzinfo=timezone.utc)) / timedelta(microseconds=1))


def test_an_old_single_table_keyword_index_is_rebuilt_into_shards(path: Path) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    with SQLiteArchive(path, embeddings=emb) as archive:
        archive.add([record(u, i) for u in ("ana", "bob") for i in range(4)])
    with sqlite3.connect(path) as conn:  # what an archive written by 0.x looks like
        for name in shard_tables(path):
            conn.execute(f"DROP TABLE {name}")
        conn.execute(
            "CREATE VIRTUAL TABLE records_fts USING fts5(text, owner, content='', "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "UPDATE meta SET value='porter-unicode61-rd2+cjk-bigram+owner-v2' "
            "WHERE key='fts_scheme'"
        )
        conn.execute("DELETE FROM meta WHERE key='fts_shards'")
    with SQLiteArchive(path, embeddings=emb) as archive:
        assert "records_fts" not in shard_tables(path)
        assert {r.id for r, _ in archive.keyword_search("note", "bob")} == {
            f"bob-{i}" for i in range(4)
        }


def test_recall_notes_access_times_without_writing_them_on_its_path(
    archive: SQLiteArchive,
) -> None:
    archive.access_flush_seconds = 60.0  # the background writer will not run during the test
    archive.add([record("ana", i) for i in range(8)])
    at = T0 + timedelta(days=3)
    hits = Recaller(archive, archive.embeddings, k=2).recall("tea", user_id="ana", now=at)
    ids = [h.record.id for h in hits]

    def stored() -> dict[str, int | None]:
        rows = archive._db.query("SELECT id, last_accessed_at FROM records")
        return dict(rows)

    assert all(stored()[i] is None for i in ids)  # not written yet ...
    assert all(r.last_accessed_at == at for r in archive.get(ids))  # ... but already visible
    searched = {r.id: r for r, _ in archive.keyword_search("note", "ana", n=50)}
    assert all(searched[i].last_accessed_at == at for i in ids)
    assert archive.flush_access() == len(ids)
    assert all(stored()[i] is not None for i in ids)
    assert archive.flush_access() == 0


def test_noted_access_times_are_written_in_the_background(path: Path) -> None:
    archive = SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=16))
    archive.access_flush_seconds = 0.05
    archive.add([record("ana", i) for i in range(3)])
    archive.note_access(["ana-0", "ana-1", "bob-9"], T0, user_id="ana")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and archive.access.any_pending:
        time.sleep(0.02)
    time.sleep(0.1)
    rows = dict(archive._db.query("SELECT id, last_accessed_at FROM records"))
    assert rows["ana-0"] is not None and rows["ana-1"] is not None and rows["ana-2"] is None
    archive.close()
    with pytest.raises(ValueError, match="closed"):
        archive.note_access(["ana-2"], T0, user_id="ana")


def test_close_writes_noted_access_times_and_explicit_touch_wins(path: Path) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    archive = SQLiteArchive(path, embeddings=emb)
    archive.access_flush_seconds = 60.0
    archive.add([record("ana", i) for i in range(3)] + [record("bob", 0)])
    archive.note_access(["ana-0", "ana-1"], T0, user_id="ana")
    archive.note_access(["bob-0"], T0, user_id="ana")  # not ana's: never written
    later = T0 + timedelta(hours=5)
    assert archive.touch(["ana-1"], later, user_id="ana") == 1
    archive.close()
    with SQLiteArchive(path, embeddings=emb) as again:
        by_id = {r.id: r for r in again.get(["ana-0", "ana-1", "ana-2", "bob-0"])}
    assert by_id["ana-0"].last_accessed_at == T0
    assert by_id["ana-1"].last_accessed_at == later
    assert by_id["ana-2"].last_accessed_at is None
    assert by_id["bob-0"].last_accessed_at is None


def test_forgetting_drops_noted_access_times(archive: SQLiteArchive) -> None:
    archive.access_flush_seconds = 60.0
    archive.add([record("ana", i) for i in range(3)])
    archive.note_access(["ana-0", "ana-1", "ana-2"], T0, user_id="ana")
    archive.delete(["ana-0"], user_id="ana")
    pending = {i for i in ("ana-0", "ana-1", "ana-2") if archive.access.pending(i)}
    assert pending == {"ana-1", "ana-2"}
    archive.delete_user("ana")
    assert not archive.access.any_pending
    archive.add([record("ana", 0)])  # the same id again: a new record, never accessed
    assert archive.get(["ana-0"])[0].last_accessed_at is None


def test_a_failed_access_flush_keeps_the_times(
    archive: SQLiteArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive.access_flush_seconds = 60.0
    archive.add([record("ana", 0)])
    archive.note_access(["ana-0"], T0, user_id="ana")

    def broken() -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(archive._db, "write", broken)
    with pytest.raises(sqlite3.OperationalError):
        archive.flush_access()
    monkeypatch.undo()
    assert archive.get(["ana-0"])[0].last_accessed_at == T0
    assert archive.flush_access() == 1


def test_large_users_are_searched_by_scan_with_the_same_results(archive: SQLiteArchive) -> None:
    """Above ``direct_limit`` candidates FAISS scans (with an id selector, or plainly when
    the user owns every vector); the hits are those of scoring the user's vectors directly."""
    archive.add([record("ana", i) for i in range(30)])
    query = archive.embed_query("ana note 7: tea")

    def ids(user: str) -> list[str]:
        return [r.id for r, _ in archive.dense_search(query, user, n=5)]

    index = cast(FaissIndex, archive.index)
    direct = ids("ana")
    index.direct_limit = 10
    assert ids("ana") == direct  # the user owns every vector: plain scan
    archive.add([record("bob", i) for i in range(30)])
    assert ids("ana") == direct  # selector scan; bob's records never come back
    assert {r.user_id for r, _ in archive.dense_search(query, "bob", n=50)} == {"bob"}
    index.reconstruct_chunk = 7  # vectors fetched in several chunks
    index.direct_limit = 50_000
    assert ids("ana") == direct


def test_candidate_ids_follow_the_filter(archive: SQLiteArchive) -> None:
    archive.add([record("ana", i, thread_id=f"t{i % 2}") for i in range(6)])
    all_ids = archive._candidates(RecordFilter("ana"))
    assert all_ids.dtype == np.int64 and len(all_ids) == 6
    assert len(archive._candidates(RecordFilter("ana", "t1"))) == 3
    assert len(archive._candidates(RecordFilter("nobody"))) == 0


def test_big_users_keyword_search_is_bounded_but_finds_rare_words(path: Path) -> None:
    """Over ``keyword_exact_limit`` records: newest matches of common words, all of rare ones."""
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
        archive.keyword_exact_limit = 100
        archive.keyword_term_cap = 20
        texts = [f"note {i}: weather talk" for i in range(300)]
        texts[5] = "note 5: weather talk, my sister Ingrid lives in Oslo"
        texts[9] = "note 9: Ingrid called"
        archive.add(
            [
                MemoryRecord.new(
                    user_id="ana",
                    thread_id="old" if i < 150 else "new",
                    kind="turn",
                    text=text,
                    id=f"ana-{i}",
                    created_at=T0 + timedelta(minutes=i),
                )
                for i, text in enumerate(texts)
            ]
        )
        hits = archive.keyword_search("what's the weather where Ingrid lives?", "ana", n=8)
        ids = [r.id for r, _ in hits]
        # the rare name ranks its two old records first (the one with more terms on top)
        assert ids[:2] == ["ana-5", "ana-9"]
        # then the newest of the common-word matches
        assert ids[2:] == [f"ana-{i}" for i in range(299, 293, -1)]
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        # filters still hold, over the bounded matches
        old = archive.keyword_search("weather Ingrid", RecordFilter("ana", thread_id="old"), n=4)
        assert {r.id for r, _ in old} == {"ana-5", "ana-9"}  # old "weather" rows: past the cap
        new = archive.keyword_search("weather Ingrid", RecordFilter("ana", thread_id="new"), n=4)
        assert [r.id for r, _ in new] == [f"ana-{i}" for i in range(299, 295, -1)]
        # a forgotten record is gone from the bounded search too
        archive.delete(["ana-5"], user_id="ana")
        ids = [r.id for r, _ in archive.keyword_search("Ingrid", "ana", n=8)]
        assert ids == ["ana-9"]


def test_bounded_and_exact_keyword_search_agree_on_rare_terms(path: Path) -> None:
    """The bounded pass returns the same records as exact BM25 when no term is common."""
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
        archive.add([record("ana", i) for i in range(200)])
        query = "note 17 or 170 tokyo"
        archive.keyword_term_cap = 500  # every term is 'rare'
        exact = [r.id for r, _ in archive.keyword_search(query, "ana", n=5)]
        archive.keyword_exact_limit = 10
        bounded = [r.id for r, _ in archive.keyword_search(query, "ana", n=5)]
        assert set(exact[:2]) == set(bounded[:2]) == {"ana-17", "ana-170"}


def test_lookups_by_id_never_walk_a_big_users_records(path: Path) -> None:
    """Access-time writes, deletes and gets by id cost the same for 2,000 records as for 1.

    SQLite's planner preferred the (user_id, ...) index for "user_id = ? AND id
    IN (...)" and walked every record of the user: one second per statement for a
    user with a million records (an add then waited minutes for the access-time
    flush). Counted here in SQLite VM steps.
    """
    with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
        archive.add([record("ana", i) for i in range(2000)])
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        for conn in (archive._db._writer, *_reader_connections(archive)):
            conn.set_progress_handler(count, 100)
        ids = [f"ana-{i}" for i in (5, 300, 700, 1100, 1500, 1999)]  # the planner's choice
        archive.note_access(ids, T0, user_id="ana")  # changes with the number of ids
        steps[0] = 0
        assert archive.flush_access() == 6
        assert steps[0] < 30, steps[0]
        steps[0] = 0
        assert archive.touch(ids, T0 + timedelta(hours=1), user_id="ana") == 6
        assert steps[0] < 30, steps[0]
        steps[0] = 0
        assert [r.id for r in archive.get(ids, user_id="ana")] == ids
        assert steps[0] < 30, steps[0]
        steps[0] = 0
        assert archive.delete(ids, user_id="ana") == 6
        assert steps[0] < 400, steps[0]  # FTS rows and the index merge included


def _reader_connections(archive: SQLiteArchive) -> list[sqlite3.Connection]:
    """Open the reader pool's connections now (so the progress handler is on them)."""
    with archive._db.read() as first, archive._db.read() as second:
        return [first.conn, second.conn]
