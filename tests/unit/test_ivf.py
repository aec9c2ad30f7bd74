"""InvertedLists (per-user approximate dense search) and its use by FaissIndex/SQLiteArchive."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.faiss import ivf as ivf_module
from langchain_tiered_memory.storage.faiss.ivf import InvertedLists
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive

DIM = 24


def clustered(n: int, clusters: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around ``clusters`` random centres (as real embeddings cluster by topic)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    points = centres[rng.integers(0, clusters, size=n)] + 0.35 * rng.normal(size=(n, DIM))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def exact_top(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> set[int]:
    return {int(i) for i in ids[np.argsort(-(vectors @ query))[:k]]}


def test_search_finds_most_true_neighbours_scoring_a_fraction() -> None:
    vectors = clustered(4000, 40)
    ids = np.arange(10_000, 14_000)
    lists = InvertedLists.build(ids, vectors)
    assert len(lists) == 4000 and lists.cells == 63  # sqrt(4000)
    queries = clustered(50, 40, seed=1)
    overlap = []
    for query in queries:
        found, scores = lists.search(query, k=10, rows=600)  # 15% of the vectors
        assert list(scores) == sorted(scores, reverse=True)
        assert np.allclose(scores, vectors[found - 10_000] @ query, atol=1e-5)
        overlap.append(len(set(found.tolist()) & exact_top(vectors, ids, query, 10)) / 10)
    assert np.mean(overlap) >= 0.9, np.mean(overlap)
    # scoring every cell is exact
    found, _ = lists.search(queries[0], k=10, rows=4000)
    assert set(found.tolist()) == exact_top(vectors, ids, queries[0], 10)


def test_every_vector_finds_itself_and_changes_are_kept() -> None:
    vectors = clustered(1000, 10)
    lists = InvertedLists.build(np.arange(1000), vectors)
    for i in (0, 17, 999):
        assert int(lists.search(vectors[i], k=1, rows=1)[0][0]) == i  # its own cell comes first
    extra = clustered(5, 10, seed=2)
    lists.add(np.arange(5000, 5005), extra)
    assert len(lists) == 1005
    assert int(lists.search(extra[3], k=1, rows=1)[0][0]) == 5003
    assert lists.remove([5003, 17, 123_456]) == 2
    assert len(lists) == 1003
    everything, _ = lists.search(extra[3], k=2000, rows=2000)
    assert 5003 not in everything and 17 not in everything and len(everything) == 1003
    assert sorted(lists.ids().tolist()) == sorted(everything.tolist())


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="one vector per id"):
        InvertedLists.build(np.arange(3), clustered(2, 1))
    with pytest.raises(ValueError, match="one vector per id"):
        InvertedLists.build(np.arange(0), clustered(0, 1))


# ---------------------------------------------------------------- in the archive


class TableEmbeddings(Embeddings):
    """Text ``"doc <i> ..."`` embeds to row ``i`` of a fixed clustered table."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    def _embed(self, text: str) -> list[float]:
        return [float(x) for x in self.table[int(text.split()[1]) % len(self.table)]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def record(user: str, i: int, thread: str = "t") -> MemoryRecord:
    return MemoryRecord.new(
        user_id=user, thread_id=thread, kind="turn", text=f"doc {i} note", id=f"{user}-{i}"
    )


@pytest.fixture
def big(tmp_path: Path) -> Iterator[SQLiteArchive]:
    """An archive where 'ana' (600 records) counts as big and 'bob' (50) does not."""
    archive = SQLiteArchive(tmp_path / "a.sqlite", embeddings=TableEmbeddings(clustered(2000, 12)))
    archive.index.ann_min_vectors = 500  # type: ignore[attr-defined]
    archive.index.ann_probe_rows = 60  # type: ignore[attr-defined]
    archive.add([record("ana", i, "t" if i % 2 else "u") for i in range(600)])
    archive.add([record("bob", i) for i in range(600, 650)])
    with archive:
        yield archive


def ids_of(hits: list[tuple[MemoryRecord, float]]) -> list[str]:
    return [r.id for r, _ in hits]


def test_big_user_gets_an_approximate_index_others_stay_exact(big: SQLiteArchive) -> None:
    assert big.warm_up("ana") is True
    assert big.warm_up("bob") is False
    for i in (3, 250, 599):  # a record's own vector is its best match
        assert ids_of(big.dense_search(f"doc {i}", "ana", n=1)) == [f"ana-{i}"]
    hits = big.dense_search("doc 7", "ana", n=40)
    assert 0 < len(hits) <= 40 and all(r.user_id == "ana" for r, _ in hits)
    assert ids_of(big.dense_search("doc 610", "bob", n=1)) == ["bob-610"]
    assert all(r.user_id == "bob" for r, _ in big.dense_search("doc 3", "bob", n=50))
    # a thread filter is searched exactly
    thread_hits = big.dense_search("doc 8", RecordFilter("ana", thread_id="u"), n=300)
    assert len(thread_hits) == 300 and all(r.thread_id == "u" for r, _ in thread_hits)


def test_adds_and_deletes_reach_the_approximate_index(big: SQLiteArchive) -> None:
    big.warm_up("ana")
    big.add([record("ana", 1500)])
    assert ids_of(big.dense_search("doc 1500", "ana", n=1)) == ["ana-1500"]
    big.delete(["ana-250"], user_id="ana")
    assert "ana-250" not in ids_of(big.dense_search("doc 250", "ana", n=100))


def test_first_search_is_exact_while_the_index_builds_in_the_background(
    big: SQLiteArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes made during the build are replayed into it, in order."""
    release, started = threading.Event(), threading.Event()
    real_build = ivf_module.InvertedLists.build.__func__  # type: ignore[attr-defined]

    def slow_build(cls: type[InvertedLists], *args: object, **kwargs: object) -> InvertedLists:
        started.set()
        assert release.wait(30)
        return real_build(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(InvertedLists, "build", classmethod(slow_build))
    exact = big.dense_search("doc 42", "ana", n=5)  # starts the build
    assert ids_of(exact)[0] == "ana-42"
    assert started.wait(30)
    big.add([record("ana", 1600), record("ana", 1601)])  # while it builds
    big.delete(["ana-1601", "ana-42"], user_id="ana")
    release.set()
    assert big.warm_up("ana") is True  # waits for the build
    assert ids_of(big.dense_search("doc 1600", "ana", n=1)) == ["ana-1600"]
    found = ids_of(big.dense_search("doc 42", "ana", n=600))
    assert "ana-42" not in found and "ana-1601" not in found


def test_rebuilding_the_index_drops_the_approximate_one(big: SQLiteArchive) -> None:
    big.warm_up("ana")
    big.rebuild_index()
    assert ids_of(big.dense_search("doc 77", "ana", n=1)) == ["ana-77"]
    assert big.warm_up("ana") is True
