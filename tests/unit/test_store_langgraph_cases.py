"""LangGraph's own store test cases, run against :class:`TieredMemoryStore`.

The cases are ported from LangGraph's tests of its stores (the same data,
calls and assertions): ``libs/checkpoint/tests/test_store.py`` (InMemoryStore:
list_namespaces, namespaces, vector search with filters and pagination),
``libs/checkpoint-sqlite/tests/test_store.py`` (batch ops, search, filters,
scores) and ``libs/checkpoint-sqlite/tests/test_ttl.py`` (TTL, refresh,
sweeping, the sweeper thread). LangGraph's stores have no user; here the
user is the namespace's first label (``user_index=0``), so a prefix of one
label is one user's items and the empty prefix looks through every user's.

The namespace listings run twice: with the user first and with the user
second (the bridge's default), where a prefix or a ``*`` stands at the
user's position. Concurrent puts and deletes of one key run as LangGraph's
test gathers them (all at once), plus the same from plain threads.

Left out, and why: cases about one store's own SQL (injection through filter
keys, glob escaping, migrations) and ``omit_expired=False`` (our reads never
return an expired item).
"""

from __future__ import annotations

import asyncio
import math
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
    TTLConfig,
)

from langchain_tiered_memory.integrations.langgraph_store import TieredMemoryStore, item_record_id
from langchain_tiered_memory.store import MemoryStore


class CharacterEmbeddings(Embeddings):
    """Character-frequency vectors through a fixed random projection (as LangGraph's tests)."""

    def __init__(self, dims: int = 500, seed: int = 42) -> None:
        self.dims = dims
        self._rng = random.Random(seed)
        self._axes: dict[str, list[float]] = {}

    def _axis(self, char: str) -> list[float]:
        if char not in self._axes:
            scale = 1 / math.sqrt(self.dims)
            self._axes[char] = [self._rng.gauss(0, scale) for _ in range(self.dims)]
        return self._axes[char]

    def _embed(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        vector = [0.0] * self.dims
        for char, count in counts.items():
            for i, x in enumerate(self._axis(char)):
                vector[i] += x * count / max(total, 1)
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


Make = Callable[..., TieredMemoryStore]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    opened: list[MemoryStore] = []

    def build(
        ttl: TTLConfig | None = None,
        *,
        name: str = "data",
        user_index: int = 0,
        index: IndexConfig | None = None,
    ) -> TieredMemoryStore:
        memory = MemoryStore(tmp_path / name, embeddings=CharacterEmbeddings(dims=500))
        opened.append(memory)
        extra: dict[str, Any] = {"index": index} if index is not None else {}
        return TieredMemoryStore(memory, user_index=user_index, ttl=ttl, **extra)

    yield build
    for memory in opened:
        memory.close()


@pytest.fixture
def store(make: Make) -> TieredMemoryStore:
    return make()


@pytest.fixture(params=[0, 1], ids=["user-first", "user-second"])
def ns_store(make: Make, request: pytest.FixtureRequest) -> TieredMemoryStore:
    """The namespace listings run with the user first and second (the default, where
    a wildcard or a prefix may stand at the user's position)."""
    return make(user_index=request.param)


# -- libs/checkpoint/tests/test_store.py --------------------------------------------


def test_list_namespaces_basic(ns_store: TieredMemoryStore) -> None:
    store = ns_store
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    result = store.list_namespaces(prefix=("a", "b"))
    expected = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(result) == sorted(expected)
    result = store.list_namespaces(suffix=("f",))
    assert sorted(result) == sorted([("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    result = store.list_namespaces(prefix=("a",), suffix=("f",))
    assert sorted(result) == sorted([("a", "b", "f"), ("a", "c", "f")])
    result = store.list_namespaces(prefix=("a", "b"), max_depth=3)
    assert sorted(result) == sorted([("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")])
    result = store.list_namespaces(prefix=("a", "b"), limit=2)
    assert result == [("a", "b", "c"), ("a", "b", "d", "e")]
    result = store.list_namespaces(prefix=("a", "b"), offset=2)
    assert result == [("a", "b", "d", "i"), ("a", "b", "f")]
    result = store.list_namespaces(prefix=("a", "*", "f"))
    assert sorted(result) == sorted([("a", "b", "f"), ("a", "c", "f")])
    result = store.list_namespaces(suffix=("*", "f"))
    assert sorted(result) == sorted([("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(ns_store: TieredMemoryStore) -> None:
    store = ns_store
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    result = store.list_namespaces(prefix=("users", "*"))
    assert sorted(result) == sorted(
        [("users", "123"), ("users", "456"), ("users", "789", "settings")]
    )
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    store.put(namespace=("admin", "users", "settings", "789"), key="foo", value={"d": "x"})
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "789")) == [
        ("admin", "users", "789"),
        ("admin", "users", "settings", "789"),
    ]


def test_list_namespaces_pagination(ns_store: TieredMemoryStore) -> None:
    store = ns_store
    for i in range(20):
        store.put(namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}", value={"d": i})
    for offset in (0, 5, 15):
        result = store.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert result == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_list_namespaces_max_depth(ns_store: TieredMemoryStore) -> None:
    store = ns_store
    namespaces = [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g")]
    for i, ns in enumerate([*namespaces, ("h", "i", "j", "k")]):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    result = store.list_namespaces(max_depth=2)
    assert sorted(result) == sorted([("a", "b"), ("a", "g"), ("h", "i")])


def test_list_namespaces_no_conditions_and_empty_store(make: Make) -> None:
    store = make()
    assert store.list_namespaces() == []
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == sorted(namespaces)


async def test_cannot_put_empty_namespace(store: TieredMemoryStore) -> None:
    doc = {"foo": "bar"}
    for bad in ((), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")):
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "foo", doc)
    await store.aput(("foo", "langgraph", "foo"), "bar", doc)
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("foo", "langgraph", "foo")))[0].value == doc
    await store.adelete(("foo", "langgraph", "foo"), "bar")
    assert await store.aget(("foo", "langgraph", "foo"), "bar") is None
    # past the public put api
    await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert (await store.aget(("langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("langgraph", "foo")))[0].value == doc
    await store.adelete(("langgraph", "foo"), "bar")
    assert await store.aget(("langgraph", "foo"), "bar") is None


DOCS = [
    ("doc1", {"text": "short text"}),
    ("doc2", {"text": "longer text document"}),
    ("doc3", {"text": "longest text document here"}),
    ("doc4", {"description": "text in description field"}),
    ("doc5", {"content": "text in content field"}),
    ("doc6", {"body": "text in body field"}),
]


async def test_vector_insert_with_auto_embedding(store: TieredMemoryStore) -> None:
    for key, value in DOCS[:3]:
        store.put(("test",), key, value)
    for key, value in DOCS[3:]:
        await store.aput(("test",), key, value)
    for results in (
        store.search(("test",), query="long text"),
        await store.asearch(("test",), query="long text"),
    ):
        assert len(results) > 0
        assert {"doc2", "doc3"} <= {r.key for r in results}


def test_vector_update_with_embedding(store: TieredMemoryStore) -> None:
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    results_initial = store.search(("test",), query="Zany Xerxes")
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score
    assert initial_score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    results_after = store.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score is not None and after_score < initial_score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


FILTER_DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


async def test_vector_search_with_filters(store: TieredMemoryStore) -> None:
    for key, value in FILTER_DOCS:
        await store.aput(("test",), key, value)
    for search in (store.search, store.asearch):

        async def run(**kwargs: Any) -> list[Any]:
            found = search(("test",), **kwargs)  # noqa: B023
            return await found if asyncio.iscoroutine(found) else found  # type: ignore[no-any-return]

        results = await run(query="apple", filter={"color": "red"})
        assert len(results) == 2 and results[0].key == "doc1"
        results = await run(query="car", filter={"color": "red"})
        assert len(results) == 2 and results[0].key == "doc2"
        results = await run(query="bbbbluuu", filter={"score": {"$gt": 3.2}})
        assert len(results) == 3 and results[0].key == "doc4"
        assert {"doc1", "doc3"} <= {r.key for r in results}
        results = await run(query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
        assert len(results) == 1 and results[0].key == "doc3"


async def test_async_batched_vector_search_concurrent(store: TieredMemoryStore) -> None:
    colors = ["red", "blue", "green", "yellow", "purple"]
    items = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = [
        (
            f"doc{i}",
            {
                "text": f"{colors[i % 5]} {items[i % 5]}",
                "color": colors[i % 5],
                "score": scores[i % 5],
                "index": i,
            },
        )
        for i in range(50)
    ]
    await asyncio.gather(  # puts, deletes and puts of the same keys, all at once
        *[store.aput(("test",), key, value) for key, value in docs],
        *[store.adelete(("test",), key) for key, _ in docs],
        *[store.aput(("test",), key, value) for key, value in docs],
    )
    assert len(await store.asearch(("test",), limit=100)) == 50  # the last write won
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("house", {"color": "green"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("car", {"score": {"$lt": 5.1}, "color": "blue"}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]
    found = await asyncio.gather(*[store.asearch(("test",), query=q, filter=f) for q, f in queries])
    checks = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    for results, (query, flt) in zip(found, queries, strict=True):
        assert results, (query, flt)
        for result in results:
            if "color" in flt:
                assert result.value["color"] == flt["color"]
            for field in ("score", "index"):
                for op, bound in flt.get(field, {}).items():
                    assert checks[op](float(result.value[field]), float(bound))


def test_vector_search_pagination(store: TieredMemoryStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert {r.key for r in page1}.isdisjoint({r.key for r in page2})
    assert page1[0].score >= page1[1].score  # type: ignore[operator]
    assert page2[0].score >= page2[1].score  # type: ignore[operator]
    every = store.search(("test",), query="test", limit=10)
    assert len(every) == 5 and every[0].score >= every[2].score  # type: ignore[operator]


def test_vector_search_edge_cases(store: TieredMemoryStore) -> None:
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(("test",), query=query)) == 1, query


def test_puts_racing_deletes_of_one_key_from_threads_never_raise(store: TieredMemoryStore) -> None:
    """Not a LangGraph case: the same race from plain threads (600 operations)."""
    keys = [f"k{i}" for i in range(3)]
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        for step in range(100):
            key = keys[(worker + step) % len(keys)]
            try:
                if step % 3 == 2:
                    store.delete(("race",), key)
                else:
                    store.put(("race",), key, {"text": f"w{worker} s{step}", "n": step})
            except BaseException as error:  # noqa: BLE001 - every failure is counted
                errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for key in keys:
        item = store.get(("race",), key)
        assert item is None or item.value["text"].startswith("w")
        store.put(("race",), key, {"text": "last"})
        assert store.get(("race",), key).value == {"text": "last"}  # type: ignore[union-attr]
    assert store.memory.archive.count("race") == len(keys)  # one record per key


# -- libs/checkpoint-sqlite/tests/test_store.py ----------------------------------------


def test_batch_order(store: TieredMemoryStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test", "foo"), key="key1"),
            PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[0].key == "key1" and results[0].namespace == ("test", "foo")
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert results[2][0].key == "key1" and results[2][0].value == {"data": "value1"}
    assert isinstance(results[3], list)
    assert ("test", "foo") in results[3] and ("test", "bar") in results[3]
    assert results[4] is None
    again = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
            GetOp(namespace=("test", "bar"), key="key2"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
            PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
            GetOp(namespace=("test", "foo"), key="key1"),
        ]
    )
    assert isinstance(again[0], list) and len(again[0]) >= 2
    assert isinstance(again[1], Item) and again[1].value == {"data": "value2"}
    assert again[1].namespace == ("test", "bar")
    assert isinstance(again[2], list) and len(again[2]) > 0
    assert again[3] is None
    assert isinstance(again[4], Item) and again[4].value == {"data": "value1"}
    assert store.get(("test",), "key3").value == {"data": "value3"}  # type: ignore[union-attr]


def test_batch_get_put_and_search_ops(store: TieredMemoryStore) -> None:
    results = store.batch(
        [
            PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
            PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
            PutOp(namespace=("test",), key="key3", value=None),
        ]
    )
    assert results == [None, None, None]
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "x")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]  # type: ignore[union-attr]
    for ns, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    found = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(found[0]) == 2 and all(i.value["tag"] == "a" for i in found[0])  # type: ignore[union-attr]
    assert len(found[1]) == 2  # type: ignore[arg-type]
    assert [i.namespace for i in found[2]] == [("test", "foo")]  # type: ignore[union-attr]


def test_batch_list_namespaces_ops(store: TieredMemoryStore) -> None:
    data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    results = store.batch(
        [
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
            ListNamespacesOp(
                match_conditions=(MatchCondition("suffix", ("public",)),),
                max_depth=None,
                limit=10,
                offset=0,
            ),
        ]
    )
    assert len(results[0]) == len(data)  # type: ignore[arg-type]
    assert all(len(ns) <= 2 for ns in results[1])  # type: ignore[union-attr]
    assert all(ns[-1] == "public" for ns in results[2])  # type: ignore[union-attr]


def test_basic_store_ops(store: TieredMemoryStore) -> None:
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert item and item.namespace == namespace and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    time.sleep(0.01)
    store.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(namespace, "doc1")
    assert updated and updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at and updated.created_at == item.created_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


def test_list_namespaces_and_search(store: TieredMemoryStore) -> None:
    namespaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for ns in namespaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces()) == len(namespaces)
    assert len(store.list_namespaces(prefix=["test"])) == 4  # type: ignore[arg-type]
    public = store.list_namespaces(suffix=["public"])  # type: ignore[arg-type]
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert all(len(ns) <= 2 for ns in store.list_namespaces(max_depth=2))
    assert len(store.list_namespaces(limit=3)) == 3
    for ns in namespaces:
        store.delete(ns, "dummy")
    data = [
        (
            ("test", "docs"),
            "doc1",
            {"title": "First Doc", "author": "Alice", "tags": ["important"]},
        ),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    assert len(store.search(["test"])) == 3  # type: ignore[arg-type]
    docs = store.search(["test", "docs"])  # type: ignore[arg-type]
    assert len(docs) == 2 and all(i.namespace == ("test", "docs") for i in docs)
    alice = store.search(["test"], filter={"author": "Alice"})  # type: ignore[arg-type]
    assert len(alice) == 2 and all(i.value["author"] == "Alice" for i in alice)
    assert len(store.search(["test"], limit=2)) == 2  # type: ignore[arg-type]
    assert len(store.search(["test"], offset=2)) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(store: TieredMemoryStore, query: str) -> None:
    """A lone hit's score is its cosine similarity with the query: absolute, not 0."""
    embeddings = store.memory.embeddings
    assert embeddings is not None
    store.put(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    results = store.search((), query=query)
    a, b = embeddings.embed_query("aaa"), embeddings.embed_query(query)
    cosine = sum(x * y for x, y in zip(a, b, strict=True))
    assert len(results) == 1
    assert results[0].score == pytest.approx(cosine, abs=1e-3)


def test_embed_with_path(make: Make) -> None:
    """Store-level ``index={"fields": [...]}``: one vector per field, the best one scores."""
    store = make(index={"fields": ["key0", "key1", "key3"]})
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # no key0
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    results = store.search(("test",), query="xxx")
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score > 0.9 and results[1].score > 0.9  # type: ignore[operator]
    for query, first in (("uuu", "doc2"), ("zzz", "doc1")):
        results = store.search(("test",), query=query)
        assert len(results) == 2 and results[0].key == first
        assert results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="www")  # not indexed: low for both
    assert len(results) == 2 and results[0].key != results[1].key
    assert all(r.score < 0.9 for r in results)  # type: ignore[operator]


def test_embed_with_path_operation_config(make: Make) -> None:
    """A put's ``index=[...]`` overrides the store's fields; ``index=False`` indexes nothing."""
    store = make(index={"fields": ["key17"]})
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    store.put(("test",), "doc3", doc3, index=["key0", "key1"])
    store.put(("test",), "doc4", doc4, index=["key1", "key3"])
    for query, first in (("aaa", "doc3"), ("ggg", "doc4")):
        results = store.search(("test",), query=query)
        assert len(results) == 2 and results[0].key == first
        assert len({r.key for r in results}) == 2
        assert results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="bbb")
    assert len(results) == 2 and results[0].key != results[1].key
    assert abs(results[0].score - results[1].score) < 0.1  # type: ignore[operator]
    assert all(r.score < 0.9 for r in store.search(("test",), query="ccc"))  # type: ignore[operator]
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = store.search(("test",))
    assert len(results) == 3 and any(r.key == "doc5" for r in results)


def test_basic_store_operations_and_search_items(store: TieredMemoryStore) -> None:
    namespace = ("u1", "test", "documents")
    assert store.search(("u1",)) == []
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    store.put(namespace, "doc2", {"title": "Another Document", "content": "Greetings!"})
    assert {i.key for i in store.search(("u1", "test"), limit=10)} == {"doc1", "doc2"}
    assert (namespace) in store.list_namespaces(prefix=("u1", "test"))
    store.delete(namespace, "doc1")
    store.delete(namespace, "doc2")
    assert store.search(("u1", "test"), limit=10) == []
    base = "test_search_items"
    spaces = [
        (base, "documents", "user1"),
        (base, "documents", "user2"),
        (base, "reports", "department1"),
        (base, "reports", "department2"),
    ]
    items = [
        {"title": "Doc 1", "author": "John Doe", "tags": ["important"]},
        {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]},
        {"title": "Report A", "author": "John Doe", "tags": ["final"]},
        {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]},
    ]
    for ns, item in zip(spaces, items, strict=True):
        store.put(ns, f"item_{ns[-1]}", item)
    assert len(store.search((base, "documents"))) == 2
    assert len(store.search((base, "reports"))) == 2
    first = {i.key for i in store.search((base,), limit=2, offset=0)}
    second = {i.key for i in store.search((base,), limit=2, offset=2)}
    assert len(first) == len(second) == 2 and first.isdisjoint(second)
    assert len(store.search((base,), filter={"author": "John Doe"})) == 2
    assert len(store.search((base,), filter={"tags": ["draft"]})) == 2


def test_list_namespaces_operations(store: TieredMemoryStore) -> None:
    p = "pref0"
    spaces = [
        (p, "test", "documents", "public", p),
        (p, "test", "documents", "private", p),
        (p, "test", "images", "public", p),
        (p, "test", "images", "private", p),
        (p, "prod", "documents", "public", p),
        (p, "prod", "documents", "some", "nesting", "public", p),
        (p, "prod", "documents", "private", p),
    ]
    for ns in spaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces(prefix=(p, "test"))) == 4
    assert len(store.list_namespaces(prefix=(p, "test", "documents"))) == 2
    assert len(store.list_namespaces(suffix=("public", p))) == 4
    assert len(store.list_namespaces(prefix=(p, "test"), suffix=("public", p))) == 2
    assert len(store.list_namespaces(prefix=(p, "*", "documents"))) == 5
    assert len(store.list_namespaces(suffix=("*", "public", p))) == 4
    assert store.list_namespaces(suffix=("some", "*", "public", p)) == [spaces[5]]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
    deep = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
    assert len(set(deep)) == len(deep) == 5
    assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(spaces) - 3
    assert set(store.list_namespaces(prefix=(p,))) == set(spaces)


def test_filter_values_numbers_booleans_and_paths(store: TieredMemoryStore) -> None:
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    for value in ("public' OR '1'='1", "public'; --", "public\x00' OR '1'='1", "''''"):
        assert store.search(("docs",), filter={"access": value}) == []
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert [r.key for r in store.search(("docs",), filter={"title": "O'Brien's Document"})] == [
        "doc4"
    ]
    for i, (price, quantity) in enumerate([(10, 5), (20, 3), (30, 1)], start=1):
        store.put(("items",), f"item{i}", {"price": price, "quantity": quantity})
    assert len(store.search(("items",), filter={"price": {"$gt": 15}})) == 2
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": float("nan")}}) == []
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    assert [r.key for r in store.search(("items",), filter={"price": {"$lt": 0}})] == ["item4"]
    store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    assert len(store.search(("flags",), filter={"active": True})) == 2
    assert [r.key for r in store.search(("flags",), filter={"active": False})] == ["flag2"]
    store.put(("keys",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("keys",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    for flt, key in [
        ({"access-level": "public"}, "hyphen"),
        ({"user.access-level": "nested"}, "hyphen"),
        ({"123abc": "ok"}, "digit"),
        ({"user.123abc": "ok2"}, "digit"),
    ]:
        assert [r.key for r in store.search(("keys",), filter=flt)] == [key]


def test_non_ascii(store: TieredMemoryStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, start=1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, start=1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# -- libs/checkpoint-sqlite/tests/test_ttl.py ----------------------------------------------


def _expire_now(store: TieredMemoryStore, ns: tuple[str, ...], key: str) -> None:
    """Backdate an item's expiry into the past without deleting it (unswept)."""
    (record,) = store.memory.archive.get([item_record_id(ns, key)], user_id=ns[0])
    past = datetime.now(timezone.utc) - timedelta(minutes=1)
    store.memory.archive.update_record(replace(record, expires_at=past))


def _stored_expires_at(store: TieredMemoryStore, ns: tuple[str, ...], key: str) -> int | None:
    assert store.memory.path is not None
    conn = sqlite3.connect(store.memory.path / "archive.sqlite")
    try:
        row = conn.execute(
            "SELECT expires_at FROM records WHERE id=?", (item_record_id(ns, key),)
        ).fetchone()
    finally:
        conn.close()
    return None if row is None else row[0]


TTL_MINUTES = 5


def test_expired_items_are_omitted_from_every_read(make: Make) -> None:
    store = make({"default_ttl": TTL_MINUTES})
    store.put(("omit", "expired"), "e", {"data": "gone"}, ttl=TTL_MINUTES)
    store.put(("omit", "control"), "c", {"data": "keep"}, ttl=None)
    _expire_now(store, ("omit", "expired"), "e")
    assert _stored_expires_at(store, ("omit", "expired"), "e") is not None  # unswept
    assert store.get(("omit", "expired"), "e") is None
    assert store.get(("omit", "control"), "c") is not None
    assert store.search(("omit", "expired")) == []
    assert [i.key for i in store.search(("omit", "control"))] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert ("omit", "expired") not in namespaces and ("omit", "control") in namespaces


def test_refresh_ttl_only_refreshes_live_items(make: Make) -> None:
    store = make({"default_ttl": TTL_MINUTES, "refresh_on_read": True})
    ns = ("refresh",)
    for key, n in (("expired", 0), ("live_get", 1), ("live_search", 2)):
        store.put(ns, key, {"n": n}, ttl=TTL_MINUTES)
    _expire_now(store, ns, "expired")
    before = {k: _stored_expires_at(store, ns, k) for k in ("expired", "live_get", "live_search")}
    time.sleep(0.05)
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert _stored_expires_at(store, ns, "expired") == before["expired"]
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert _stored_expires_at(store, ns, "live_get") > before["live_get"]  # type: ignore[operator]
    assert _stored_expires_at(store, ns, "live_search") > before["live_search"]  # type: ignore[operator]


def test_expired_items_are_filtered_before_limit_and_offset(make: Make) -> None:
    store = make({"default_ttl": TTL_MINUTES})
    for key in ("c", "b", "expired", "a"):  # newest first: a, expired, b, c
        store.put(("page",), key, {"k": key}, ttl=TTL_MINUTES)
        time.sleep(0.01)
    _expire_now(store, ("page",), "expired")
    assert [i.key for i in store.search(("page",), limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(("page",), limit=2, offset=2)] == ["c"]


def test_ttl_basic_and_custom_values(make: Make) -> None:
    store = make({"default_ttl": 1 / 60})
    store.put(("test",), "item1", {"value": "test"})
    store.put(("test",), "item2", {"value": "long"}, ttl=30 / 60)
    store.put(("test",), "item3", {"value": "permanent"}, ttl=None)
    assert store.get(("test",), "item1").value["value"] == "test"  # type: ignore[union-attr]
    time.sleep(2)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


# The refresh cases sleep to deadlines counted from the moment each write or read
# returned, with a TTL long enough that a loaded machine's slow calls (a second and
# more) cannot move a check to the wrong side of an expiry.
REFRESH_TTL = 4.0  # seconds


@pytest.mark.slow
def test_ttl_refresh(make: Make) -> None:
    store = make({"default_ttl": REFRESH_TTL / 60, "refresh_on_read": True})
    store.put(("test",), "item1", {"value": "test"})
    put_done = time.monotonic()
    _sleep_until(put_done + REFRESH_TTL / 2)
    assert store.sweep_ttl() == 0
    read_started = time.monotonic()
    assert store.get(("test",), "item1", refresh_ttl=True) is not None
    # past the put's expiry, before the read's: refreshed from the read, not the put
    _sleep_until(put_done + REFRESH_TTL + 0.3)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=False).value["value"] == "test"  # type: ignore[union-attr]
    assert time.monotonic() < read_started + REFRESH_TTL  # the checks ran before its expiry
    read_done = time.monotonic()
    _sleep_until(read_done + REFRESH_TTL + 0.3)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None


def test_ttl_sweeper(make: Make) -> None:
    store = make({"default_ttl": 1 / 60, "sweep_interval_minutes": 0.5 / 60})
    store.start_ttl_sweeper()
    store.put(("test",), "item1", {"value": "test"})
    assert store.get(("test",), "item1") is not None
    deadline = time.monotonic() + 10
    while store.memory.archive.count("test") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert store.memory.archive.count("test") == 0  # deleted by the sweeper, not hidden
    assert store.stop_ttl_sweeper(timeout=5)


def test_search_with_ttl(make: Make) -> None:
    store = make({"default_ttl": 1 / 60})
    store.put(("test",), "item1", {"value": "apple"})
    store.put(("test",), "item2", {"value": "banana"})
    assert [r.key for r in store.search(("test",), filter={"value": "apple"})] == ["item1"]
    time.sleep(2)
    store.sweep_ttl()
    assert store.search(("test",), filter={"value": "apple"}) == []


@pytest.mark.slow
async def test_async_ttl_and_search_refresh(make: Make) -> None:
    store = make({"default_ttl": REFRESH_TTL / 60, "refresh_on_read": True})
    ns = ("docs", "user1")
    await store.aput(ns, "item1", {"text": "content1", "id": 1})
    await store.aput(ns, "item2", {"text": "content2", "id": 2})
    put_done = time.monotonic()
    await asyncio.sleep(max(0.0, put_done + REFRESH_TTL / 2 - time.monotonic()))
    search_started = time.monotonic()
    found = await store.asearch(ns, filter={"id": 1}, refresh_ttl=True)
    search_done = time.monotonic()
    assert [i.key for i in found] == ["item1"]
    await asyncio.sleep(max(0.0, put_done + REFRESH_TTL + 0.3 - time.monotonic()))
    await store.asweep_ttl()
    assert await store.aget(ns, "item2", refresh_ttl=False) is None
    assert await store.aget(ns, "item1", refresh_ttl=False) is not None
    assert time.monotonic() < search_started + REFRESH_TTL  # the check ran before its expiry
    await asyncio.sleep(max(0.0, search_done + REFRESH_TTL + 0.3 - time.monotonic()))
    await store.asweep_ttl()
    assert await store.aget(ns, "item1", refresh_ttl=False) is None
