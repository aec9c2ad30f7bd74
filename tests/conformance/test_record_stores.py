"""One set of cases on both SQL record stores, through the contract they share.

The record store is the archive under a backend: SQLite with its FTS5 keyword
index and FAISS vectors (:class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive`),
and Postgres with ``tsvector`` keywords and pgvector
(:class:`~langchain_tiered_memory.storage.postgres.records.PostgresRecordStore`),
on a real PostgreSQL (``pgserver``, see ``tests/conftest.py``). Both are
:class:`~langchain_tiered_memory.storage.sql.records.SQLRecordStore` subclasses;
these cases check the contract at that level - the public reads, writes and
searches, and what the backend's shared operations call inside their
transactions (``prepare``/``write_prepared``/``finish_write``, ``set_metadata``,
``find_rows``/``user_rows``/``forget_rows``/``finish_forget``) - the same way on
both. The whole-store suite (``test_backends.py``) checks them through ``MemoryStore``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sql.backend import SQLBackend
from langchain_tiered_memory.testing.conformance import stem_embeddings

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLBackend]:
    """A backend of each dialect on fresh data; its ``records`` is the store under test."""
    opened: SQLBackend
    if request.param == "sqlite":
        from langchain_tiered_memory.storage.sqlite.backend import SQLiteBackend

        opened = SQLiteBackend(tmp_path, embeddings=stem_embeddings(), index_save_every=1)
    else:
        from langchain_tiered_memory.storage.postgres.backend import PostgresBackend

        url = request.getfixturevalue("postgres_url")  # a fresh database (skips without one)
        opened = PostgresBackend(url, embeddings=stem_embeddings())
    yield opened
    opened.close()


@pytest.fixture
def store(backend: SQLBackend) -> Any:
    return backend.records


def rec(user: str, text: str, id: str, **kw: Any) -> MemoryRecord:
    return MemoryRecord.new(user_id=user, kind=kw.pop("kind", "fact"), text=text, id=id, **kw)


def ids(hits: Any) -> set[str]:
    return {(h[0] if isinstance(h, tuple) else h).id for h in hits}


def audit_kinds(store: Any, user: str) -> list[str]:
    return [e.kind for e in store.audit.events(user)]


def test_reads_and_searches_are_per_user(store: Any) -> None:
    store.add([rec("ana", "ana drinks tea", "a1"), rec("bob", "bob drinks tea", "b1")])
    store.add([rec("bob", "bob likes jazz", "b2")])
    for user, mine in (("ana", {"a1"}), ("bob", {"b1", "b2"})):
        assert ids(store.records(user)) == mine
        assert ids(store.get(["a1", "b1", "b2", "nope"], user_id=user)) == mine
        assert store.count(user) == len(mine)
        assert ids(store.keyword_search("tea jazz", user)) == mine
        assert ids(store.dense_search("tea jazz", user)) == mine
    assert [r.id for r in store.get(["b2", "a1", "nope"])] == ["b2", "a1"]  # in the given order
    assert store.count() == 3
    exported = store.export_user("bob")
    assert sorted(exported) == ["audit_events", "exported_at", "records", "user_id"]
    assert {r["id"] for r in exported["records"]} == {"b1", "b2"}
    assert store.keyword_search("tea", "carol") == store.dense_search("tea", "carol") == []


def test_a_filter_narrows_every_read_and_search(store: Any) -> None:
    store.add(
        [
            rec("ana", "tea in paris", "r1", kind="turn", thread_id="t1", created_at=T0),
            rec("ana", "tea in berlin", "r2", kind="turn", thread_id="t2", created_at=T0),
            rec("ana", "tea lover", "r3", created_at=T0 + timedelta(days=2)),
        ]
    )
    day = RecordFilter("ana", since=T0, until=T0 + timedelta(days=1))  # until is exclusive
    cases = [
        (RecordFilter("ana", thread_id="t1"), {"r1"}),
        (RecordFilter("ana", kinds="fact"), {"r3"}),
        (RecordFilter("ana", kinds=["turn", "summary"]), {"r1", "r2"}),
        (day, {"r1", "r2"}),
        (RecordFilter("ana", thread_id="t2", kinds="turn"), {"r2"}),
        (RecordFilter("ana", since=T0 + timedelta(days=2)), {"r3"}),  # since is inclusive
        (RecordFilter("ana"), {"r1", "r2", "r3"}),
    ]
    for where, expected in cases:
        assert ids(store.records(where)) == expected, where
        assert ids(store.keyword_search("tea", where)) == expected, where
        assert ids(store.dense_search("tea", where)) == expected, where
    assert [r.id for r in store.records("ana")] == ["r1", "r2", "r3"]  # oldest first
    assert len(store.keyword_search("tea", "ana", n=2)) == 2
    assert len(store.dense_search("tea", "ana", n=1)) == 1


def test_bad_input_is_refused_or_finds_nothing(store: Any) -> None:
    store.add([rec("ana", "ana drinks tea", "a1")])
    with pytest.raises(ValueError, match="user_id"):
        store.keyword_search("tea", "")
    with pytest.raises(ValueError, match="kind"):
        store.records(RecordFilter("ana", kinds=["gossip"]))  # type: ignore[list-item]
    assert store.keyword_search("tea", "ana", n=0) == store.dense_search("tea", "ana", n=0) == []
    assert store.keyword_search("?! ...", "ana") == []  # no terms
    with pytest.raises(ValueError, match="dim"):
        store.dense_search([0.5] * (store.embed_query("tea").size + 1), "ana")


def test_dense_search_takes_the_query_vector(store: Any) -> None:
    store.add([rec("ana", "ana drinks tea", "a1"), rec("ana", "ana likes jazz", "a2")])
    vector = store.embed_query("ana drinks tea")
    assert vector.dtype.name == "float32"
    (best, score), *_ = store.dense_search(vector, "ana")
    assert best.id == "a1" and score == pytest.approx(1.0, abs=1e-5)


def test_adds_are_idempotent_and_an_id_belongs_to_one_user(store: Any) -> None:
    store.add([rec("ana", "ana owns a cat", "same")])
    store.add([rec("ana", "another text, the same id", "same")])  # skipped
    assert [r.text for r in store.records("ana")] == ["ana owns a cat"]
    with pytest.raises(ValueError, match="another user"):
        store.add([rec("bob", "bob's record", "new"), rec("bob", "steal", "same")])
    assert store.records("bob") == [] and store.count() == 1  # the whole batch was refused
    assert audit_kinds(store, "ana") == ["write"]


def test_prepared_records_commit_with_the_callers_transaction(
    backend: SQLBackend, store: Any
) -> None:
    prepared = store.prepare(
        [rec("ana", "ana likes tea", "p1"), rec("ana", "ana likes cats", "p2")]
    )
    assert [item[0].id for item in prepared.items] == ["p1", "p2"]
    store.add([rec("ana", "ana likes tea", "p1")])  # stored meanwhile: skipped below
    with backend.db.write() as tx:
        entries = store.write_prepared(tx, prepared, page_out=True)
    store.finish_write(entries)
    assert [e.record.id for e in entries] == ["p2"]
    assert ids(store.records("ana")) == {"p1", "p2"}
    assert ids(store.dense_search("cats", "ana", n=1)) == {"p2"}
    assert ids(store.keyword_search("cats", "ana")) == {"p2"}
    assert audit_kinds(store, "ana") == ["write", "page_out"]
    assert store.prepare([rec("ana", "ana likes tea", "p1")]).items == ()  # nothing new


def test_a_prepared_id_taken_by_another_user_meanwhile_writes_nothing(
    backend: SQLBackend, store: Any
) -> None:
    prepared = store.prepare([rec("ana", "ana likes tea", "x1"), rec("ana", "ana naps", "x2")])
    store.add([rec("bob", "bob took the id", "x2")])
    with pytest.raises(ValueError, match="another user"), backend.db.write() as tx:
        store.write_prepared(tx, prepared)
    assert store.records("ana") == []
    with pytest.raises(ValueError, match="another user"):
        store.prepare([rec("ana", "mine now?", "x2")])


def test_set_metadata_merges_into_the_owners_record_only(backend: SQLBackend, store: Any) -> None:
    store.add([rec("ana", "ana lives in paris", "m1", metadata={"subject": "city"})])
    with backend.db.write() as tx:
        assert store.set_metadata(tx, "m1", "ana", {"superseded": True})
        assert not store.set_metadata(tx, "m1", "bob", {"superseded": False})
        assert not store.set_metadata(tx, "nope", "ana", {"superseded": False})
    (record,) = store.get(["m1"])
    assert record.metadata == {"subject": "city", "superseded": True}
    assert ids(store.keyword_search("paris", "ana")) == {"m1"}  # the text was not touched


def test_forget_lookups_find_a_users_rows(backend: SQLBackend, store: Any) -> None:
    store.add(
        [
            rec("ana", "ana tea", "f1"),
            rec("ana", "ana turn", "t1", kind="turn", thread_id="a"),
            rec("ana", "ana other turn", "t2", kind="turn", thread_id="b"),
            rec("bob", "bob tea", "g1"),
        ]
    )
    with backend.db.read() as tx:
        by_id = store.find_rows(tx, "ana", ids=["t1", "g1", "nope", "t1"])
        assert [(row[1], row[2], r.id) for row, r in by_id] == [("t1", "ana turn", "t1")]
        assert {row[1] for row, _ in store.find_rows(tx, "ana", kinds=["turn"])} == {"t1", "t2"}
        assert {row[1] for row, _ in store.find_rows(tx, "ana")} == {"f1", "t1", "t2"}
        assert [row[1:] for row in store.user_rows(tx, "ana", thread_id="b")] == [
            ("t2", "ana other turn")
        ]
        assert {row[1] for row in store.user_rows(tx, "bob")} == {"g1"}


@pytest.mark.parametrize("whole_user", [False, True])
def test_forgotten_rows_leave_every_read_and_index(
    backend: SQLBackend, store: Any, whole_user: bool
) -> None:
    store.add([rec("ana", "ana zebra lamp", "z1"), rec("ana", "ana zebra code", "z2")])
    store.add([rec("bob", "bob zebra lamp", "b1")])
    with backend.db.write() as tx:
        rows = store.user_rows(tx, "ana") if whole_user else store.user_rows(tx, "ana")[:1]
        gone = store.forget_rows(tx, "ana", rows, whole_user=whole_user)
    store.finish_forget("ana", gone, whole_user=whole_user)
    left = set() if whole_user else {"z1", "z2"} - {str(gone[0][1])}
    assert ids(store.records("ana")) == left
    assert ids(store.keyword_search("zebra", "ana")) == left
    assert ids(store.dense_search("zebra", "ana")) == left
    assert ids(store.records("bob")) == {"b1"}  # another user's rows stay
    events = store.audit.events("ana")
    if whole_user:
        assert [(e.kind, e.payload) for e in events] == [
            ("delete", {"forgotten": True, "records": 2})
        ]
    else:
        assert [e.kind for e in events] == ["write", "delete"]
        assert events[-1].payload == {"ids": [str(gone[0][1])]}


def test_delete_and_delete_user_touch_only_the_named_user(store: Any) -> None:
    store.add([rec("ana", "ana lamp", "a1"), rec("ana", "ana desk", "a2")])
    store.add([rec("bob", "bob lamp", "b1")])
    assert store.delete([], user_id="ana") == 0
    assert store.delete(["a1", "b1", "a1"], user_id="ana") == 1
    assert ids(store.records("bob")) == {"b1"}
    assert ids(store.keyword_search("lamp", "ana")) == set()
    assert store.delete_user("ana") == 1
    assert store.records("ana") == [] and audit_kinds(store, "ana") == ["delete"]
    assert ids(store.dense_search("lamp", "bob")) == {"b1"}
    with pytest.raises(ValueError, match="user_id"):
        store.delete_user("")


def test_updates_and_puts_reindex_both_searches(store: Any) -> None:
    store.add([rec("ana", "ana drinks coffee", "u1")])
    old = store.get(["u1"])[0]
    store.update_record(MemoryRecord(**{**old.__dict__, "text": "ana drinks tea now"}))
    assert ids(store.keyword_search("tea", "ana")) == {"u1"}
    assert store.keyword_search("coffee", "ana") == []
    assert [r.text for r, _ in store.dense_search("tea", "ana", n=1)] == ["ana drinks tea now"]
    with pytest.raises(KeyError):
        store.update_record(rec("ana", "never added", "nope"))
    with pytest.raises(ValueError, match="another user"):
        store.update_record(rec("bob", "not bob's", "u1"))
    store.put_record(rec("ana", "ana plays jazz", "u1"))  # replaces
    store.put_record(rec("ana", "ana owns a lamp", "u2"))  # inserts
    assert [r.text for r in store.records("ana")] == ["ana plays jazz", "ana owns a lamp"]
    assert ids(store.keyword_search("tea", "ana")) == set()
    with pytest.raises(ValueError, match="another user"):
        store.put_record(rec("bob", "steal", "u2"))


def test_access_times_are_noted_then_written_for_the_owner_only(store: Any) -> None:
    store.add([rec("ana", "ana tea", "a1"), rec("bob", "bob tea", "b1")])
    at = T0 + timedelta(days=30)
    assert store.touch(["a1", "b1"], at, user_id="ana") == 1
    assert store.get(["a1"])[0].last_accessed_at == at
    assert store.get(["b1"])[0].last_accessed_at is None
    later = at + timedelta(hours=1)
    store.note_access(["a1", "b1"], later, user_id="ana")
    for read in (
        store.get(["a1"]),
        store.records("ana"),
        [r for r, _ in store.dense_search("tea", "ana")],
    ):
        assert read[0].last_accessed_at == later  # applied before it is written
    assert store.flush_access() == 1  # bob's record is not ana's to touch
    assert store.get(["a1"])[0].last_accessed_at == later
    assert store.get(["b1"])[0].last_accessed_at is None
    store.close()
    assert store.closed
    with pytest.raises(ValueError, match="closed"):
        store.note_access(["a1"], user_id="ana")


def test_a_big_users_bounded_keyword_search_finds_the_rare_terms(store: Any) -> None:
    store.add(
        [rec("ana", f"ana note {i} about tea", f"n{i}", thread_id=f"t{i % 2}") for i in range(12)]
        + [rec("ana", "ana's locker code is zanzibar", "rare", thread_id="t1")]
    )
    exact = store.keyword_search("zanzibar tea", "ana", n=3)
    store.keyword_exact_limit = 5  # ana has 13 records: bounded from here on
    store.keyword_term_cap = 4
    bounded = store.keyword_search("zanzibar tea", "ana", n=3)
    assert exact[0][0].id == bounded[0][0].id == "rare"  # the rare term outweighs the common
    assert len(bounded) == 3
    in_thread = store.keyword_search("tea zanzibar", RecordFilter("ana", thread_id="t0"), n=2)
    assert len(in_thread) == 2 and all(r.thread_id == "t0" for r, _ in in_thread)


def test_expired_records_are_never_read(store: Any) -> None:
    gone = datetime.now(timezone.utc) - timedelta(minutes=1)
    store.add([rec("ana", "ana zebra old", "e1", kind="observation", expires_at=gone)])
    store.add([rec("ana", "ana zebra new", "e2", kind="observation")])
    assert ids(store.records("ana")) == ids(store.get(["e1", "e2"])) == {"e2"}
    assert ids(store.keyword_search("zebra", "ana")) == {"e2"}
    assert ids(store.dense_search("zebra", "ana")) == {"e2"}


def test_without_an_embedding_cache_there_are_no_cache_keys(store: Any) -> None:
    assert store.cache_keys(["ana drinks tea"]) == []
