"""VectorStoreArchive: the archive interface with vectors in a LangChain VectorStore."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sqlite.archive import BaseSQLiteArchive
from langchain_tiered_memory.storage.vectorstore import VectorStoreArchive, metadata_filter
from langchain_tiered_memory.values.turns import Turn

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def fact(user: str, text: str, id: str, **kw: Any) -> MemoryRecord:
    return MemoryRecord.new(user_id=user, kind="fact", text=text, id=id, **kw)


class FlakyStore(InMemoryVectorStore):
    """An InMemoryVectorStore whose next add/delete calls can be made to fail."""

    fail_adds = 0
    fail_deletes = 0

    def add_texts(self, *args: Any, **kwargs: Any) -> list[str]:
        if self.fail_adds:
            self.fail_adds -= 1
            raise ConnectionError("store unavailable")
        return super().add_texts(*args, **kwargs)

    def delete(self, ids: Any = None, **kwargs: Any) -> None:
        if self.fail_deletes:
            self.fail_deletes -= 1
            raise ConnectionError("store unavailable")
        super().delete(ids, **kwargs)


@pytest.fixture
def store() -> InMemoryVectorStore:
    return InMemoryVectorStore(DeterministicFakeEmbedding(size=32))


@pytest.fixture
def archive(store: InMemoryVectorStore, tmp_path: Path) -> Iterator[VectorStoreArchive]:
    with VectorStoreArchive(store, tmp_path / "records.sqlite") as a:
        yield a


def test_shares_the_archive_interface(archive: VectorStoreArchive) -> None:
    assert isinstance(archive, BaseSQLiteArchive)


def test_add_writes_records_and_store_metadata(
    archive: VectorStoreArchive, store: InMemoryVectorStore
) -> None:
    archive.add([fact("ana", "Ana likes tea", "f1", thread_id="t1"), fact("ana", "x", "f2")])
    archive.add([fact("ana", "Ana likes tea", "f1", thread_id="t1")])  # idempotent
    assert archive.count() == 2 and len(store.store) == 2
    meta = store.get_by_ids(["f1"])[0].metadata
    assert {k: meta[k] for k in ("record_id", "user_id", "thread_id", "kind")} == {
        "record_id": "f1",
        "user_id": "ana",
        "thread_id": "t1",
        "kind": "fact",
    }
    assert "thread_id" not in store.get_by_ids(["f2"])[0].metadata  # None is left out
    assert [r.id for r, _ in archive.keyword_search("tea", "ana")] == ["f1"]


def test_dense_search_by_text_and_vector(archive: VectorStoreArchive) -> None:
    archive.add([fact("ana", f"note {i}", f"f{i}") for i in range(6)])
    hits = archive.dense_search("note 3", "ana", n=2)
    assert hits[0][0].id == "f3" and hits[0][1] == pytest.approx(1.0, abs=1e-6)
    assert len(hits) == 2
    vector = archive.embed_query("note 4")
    assert archive.dense_search(vector, "ana", n=1)[0][0].id == "f4"


@pytest.mark.parametrize("builder", ["auto", None])
def test_user_isolation_with_and_without_store_filter(
    store: InMemoryVectorStore, tmp_path: Path, builder: Any
) -> None:
    with VectorStoreArchive(store, tmp_path / "r.sqlite", filter_builder=builder) as archive:
        # bob has many records identical to the query, ana a few unrelated ones:
        # without a store filter, ana's results come only after over-fetching.
        archive.add([fact("bob", "the same words", f"b{i}") for i in range(40)])
        archive.add([fact("ana", f"ana thing {i}", f"a{i}") for i in range(3)])
        hits = archive.dense_search("the same words", "ana", n=3)
        assert {r.id for r, _ in hits} == {"a0", "a1", "a2"}
        assert {r.user_id for r, _ in archive.dense_search("x", "bob", n=50)} == {"bob"}
        assert archive.dense_search("the same words", "carol") == []
        assert {r.id for r, _ in archive.keyword_search("same", "ana")} == set()


def test_filters(archive: VectorStoreArchive) -> None:
    archive.add(
        [
            MemoryRecord.new(
                user_id="ana", kind="turn", text="a", thread_id="t1", id="t", created_at=T0
            ),
            MemoryRecord.new(
                user_id="ana",
                kind="fact",
                text="b",
                thread_id="t2",
                id="f",
                created_at=T0 + timedelta(days=1),
            ),
        ]
    )

    def ids(**kw: Any) -> set[str]:
        return {r.id for r, _ in archive.dense_search("a", RecordFilter("ana", **kw))}

    assert ids() == {"t", "f"}
    assert ids(kinds=["turn"]) == {"t"}
    assert ids(thread_id="t2") == {"f"}
    assert ids(since=T0 + timedelta(hours=1)) == {"f"}
    assert ids(until=T0 + timedelta(hours=1)) == {"t"}


def test_delete_and_forget_remove_vectors_from_the_store(
    archive: VectorStoreArchive, store: InMemoryVectorStore, tmp_path: Path
) -> None:
    archive.add([fact("ana", f"ana zephyrquill {i}", f"a{i}") for i in range(3)])
    archive.add([fact("bob", "bob marmotlantern", "b0")])
    archive.hook("ana", "t1")([Turn(0, (HumanMessage("ana turn zephyrquill"),))])
    assert archive.delete(["a0", "b0"], user_id="ana") == 1
    assert set(store.store) == {"a1", "a2", "b0", "ana:t1:turn:0"}
    assert archive.delete_user("ana") == 3
    assert set(store.store) == {"b0"}
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"zephyrquill" not in data and b"marmotlantern" in data


def test_failed_store_writes_are_replayed(tmp_path: Path) -> None:
    store = FlakyStore(DeterministicFakeEmbedding(size=16))
    archive = VectorStoreArchive(store, tmp_path / "r.sqlite")
    store.fail_adds = 1
    with pytest.raises(ConnectionError):
        archive.add([fact("ana", "first", "f1")])
    assert archive.count() == 1 and store.store == {}  # committed, vector pending
    assert [e.kind for e in archive.audit.events("ana")] == ["write", "error"]
    archive.add([fact("ana", "second", "f2")])  # replays the pending add first
    assert set(store.store) == {"f1", "f2"}

    store.fail_deletes = 1
    with pytest.raises(ConnectionError):
        archive.delete(["f1"], user_id="ana")
    assert archive.count() == 1 and "f1" in store.store  # record gone, vector pending delete
    archive.close()
    with VectorStoreArchive(store, tmp_path / "r.sqlite") as again:  # replayed on open
        assert set(store.store) == {"f2"}
        assert [r.id for r, _ in again.dense_search("second", "ana")] == ["f2"]


def test_verify_on_open_and_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with VectorStoreArchive(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)), path) as a:
        a.add([fact("ana", f"note {i}", f"f{i}") for i in range(4)])
    fresh = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))  # lost its vectors
    with VectorStoreArchive(fresh, path, verify_on_open=True) as b:
        assert set(fresh.store) == {"f0", "f1", "f2", "f3"}
        assert b.dense_search("note 2", "ana", n=1)[0][0].id == "f2"
        fresh.delete(["f0"])
        b.rebuild_index()
        assert len(fresh.store) == 4


def test_metadata_filter_syntax() -> None:
    assert metadata_filter(RecordFilter("ana", kinds=("fact", "turn"))) == {
        "$and": [{"user_id": {"$eq": "ana"}}, {"kind": {"$in": ["fact", "turn"]}}]
    }


def test_bad_arguments(store: InMemoryVectorStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="overfetch"):
        VectorStoreArchive(store, tmp_path / "r.sqlite", overfetch=0)
    with pytest.raises(ValueError, match="does not exist"):
        VectorStoreArchive(store, tmp_path / "missing" / "r.sqlite")


class TextOnlyStore(InMemoryVectorStore):
    """A store that searches by text only (as some LangChain stores do)."""

    similarity_search_with_score_by_vector = None  # type: ignore[assignment]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Any, float]]:
        found = self._similarity_search_with_score_by_vector(self.embedding.embed_query(query), k)
        return [(doc, score) for doc, score, _vector in found]


def test_a_store_that_cannot_search_by_vector_is_searched_by_text(tmp_path: Path) -> None:
    with VectorStoreArchive(
        TextOnlyStore(DeterministicFakeEmbedding(size=32)), tmp_path / "r.sqlite"
    ) as archive:
        archive.add([fact("ana", "likes green tea", "f1")])
        assert [r.id for r, _ in archive.dense_search("likes green tea", "ana")] == ["f1"]
        vector = archive.embed_query("likes green tea")
        with pytest.raises(TypeError, match="TextOnlyStore cannot search by vector"):
            archive.dense_search(vector, "ana")
    with VectorStoreArchive(
        InMemoryVectorStore(DeterministicFakeEmbedding(size=32)), tmp_path / "s.sqlite"
    ) as archive:
        archive.add([fact("ana", "likes green tea", "f1")])
        vector = archive.embed_query("likes green tea")
        assert [r.id for r, _ in archive.dense_search(vector, "ana")] == ["f1"]
