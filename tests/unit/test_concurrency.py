"""Concurrency: many users' threads and asyncio tasks writing and recalling at once.

One data directory, 12 users. Every user has two workers - one OS thread
calling the sync API and one asyncio task calling the async twins
(``aadd_messages``, ``abuild_context``), all running at the same time. For
half of the users both workers share one conversation (one ``TieredMemory``
object); for the other half each worker has its own conversation, so the two
share only the user's core memory. The context window is small, so turns are
compressed and paged out to the archive (SQLite + FTS5 + FAISS) while other
workers search it.

Every user's text carries a marker word nobody else uses (``zx03q``), so a
record that crosses users is detectable in any recalled text or prompt.

Checked afterwards: no worker raised; every acknowledged turn (``add_messages``
returned) is in the thread's saved buffer or in the archive, exactly once, and
each user's current home city is in core memory; recall through a reopened
store still works and stays per user.

The second test opens two ``MemoryStore`` objects on one directory. The store
promises thread safety within one object ("use one process per archive file":
each object keeps its own in-memory FAISS index and core-memory cache), so the
users are partitioned between the objects, as two app workers sharding users
would. SQLite is shared and the source of truth: writes through either object
are never lost, keyword recall through the other object finds them (dense
search there misses them until reopen), and reopening rebuilds the vector
index from SQLite.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.budget.context import ContextWindow, RecalledMemory
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore

USERS = 12
TURNS = 24  # per worker
RECALL_EVERY = 3
WINDOW = 1024  # small: compression and page-out happen throughout
DIM = 32
_TOKEN = re.compile(r"zx\d\dq")


def token(user: int) -> str:
    """The marker word only this user's text contains."""
    return f"zx{user:02d}q"


def user_id(user: int) -> str:
    return f"user-{user:02d}"


def embeddings() -> DeterministicFakeEmbedding:
    return DeterministicFakeEmbedding(size=DIM)


def turn_messages(user: int, worker: str, n: int) -> list[BaseMessage]:
    tok = token(user)
    if worker == "s" and n == 0:
        text = f"Hi, I live in {tok.capitalize()}ville. [{worker}-{n}]"
    elif worker == "s" and n == TURNS // 2:
        text = f"I moved to {tok.capitalize()}burg. [{worker}-{n}]"
    elif worker == "a" and n == 1:
        text = f"I work at {tok.capitalize()} Labs. [{worker}-{n}]"
    else:
        text = f"[{worker}-{n}] note: I paid {n} euros for the {tok} item {worker}{n}."
    return [HumanMessage(text), AIMessage(f"Noted the {tok} item {worker}{n}.")]


def leaked_tokens(user: int, text: str) -> set[str]:
    """Marker words of other users found in ``text``."""
    return {t for t in _TOKEN.findall(text.lower()) if t != token(user)}


@dataclass
class Tally:
    """What one run observed (appended to from many threads; list.append is atomic)."""

    acked: list[tuple[int, str, str, int]] = field(default_factory=list)
    recalled: list[tuple[int, RecalledMemory]] = field(default_factory=list)
    prompts: list[tuple[int, ContextWindow]] = field(default_factory=list)
    errors: list[tuple[str, BaseException]] = field(default_factory=list)


def check_recalled(user: int, items: list[RecalledMemory], tally: Tally) -> None:
    for item in items:
        tally.recalled.append((user, item))


def sync_worker(
    user: int, memory: TieredMemory, worker: str, tally: Tally, start: threading.Barrier
) -> None:
    try:
        start.wait(timeout=60)
        for n in range(TURNS):
            memory.add_messages(turn_messages(user, worker, n))
            tally.acked.append((user, memory.thread_id, worker, n))
            if n % RECALL_EVERY == RECALL_EVERY - 1:
                items = memory.recall(f"what did I pay for the {token(user)} item {worker}{n - 2}?")
                check_recalled(user, items, tally)
                context = memory.build_context(query=f"{token(user)} item", recall=True)
                tally.prompts.append((user, context))
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        tally.errors.append((f"sync {user_id(user)}/{worker}", exc))


async def async_worker(user: int, memory: TieredMemory, worker: str, tally: Tally) -> None:
    try:
        for n in range(TURNS):
            await memory.aadd_messages(turn_messages(user, worker, n))
            tally.acked.append((user, memory.thread_id, worker, n))
            if n % RECALL_EVERY == RECALL_EVERY - 1:
                context = await memory.abuild_context(
                    query=f"what did I pay for the {token(user)} item {worker}{n - 2}?",
                    recall=True,
                )
                check_recalled(user, list(context.recalled), tally)
                tally.prompts.append((user, context))
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        tally.errors.append((f"async {user_id(user)}/{worker}", exc))


def open_memories(
    store_for: Callable[[int], MemoryStore],
) -> Iterator[tuple[int, TieredMemory, TieredMemory]]:
    """Each user's (sync worker's memory, async worker's memory)."""
    for user in range(USERS):
        store = store_for(user)
        kwargs: dict[str, Any] = {"context_window": WINDOW, "gate": "never"}
        if user % 2 == 0:  # both workers in one conversation, one memory object
            shared = store.memory(user_id(user), "shared", **kwargs)
            yield user, shared, shared
        else:  # one conversation each; they share the user's core memory
            yield (
                user,
                store.memory(user_id(user), "sync", **kwargs),
                store.memory(user_id(user), "async", **kwargs),
            )


def run_all(store_for: Callable[[int], MemoryStore]) -> tuple[Tally, float]:
    """Start every user's two workers at once; return what they saw and the wall time."""
    tally = Tally()
    memories = list(open_memories(store_for))
    start = threading.Barrier(USERS + 1)
    threads = [
        threading.Thread(target=sync_worker, args=(user, sync_mem, "s", tally, start))
        for user, sync_mem, _ in memories
    ]
    for thread in threads:
        thread.start()

    async def tasks() -> None:
        start.wait(timeout=60)
        await asyncio.gather(
            *(async_worker(user, async_mem, "a", tally) for user, _, async_mem in memories)
        )

    began = time.perf_counter()
    asyncio.run(tasks())
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a worker thread hung"
    return tally, time.perf_counter() - began


def assert_isolated(tally: Tally, archive_owner: Callable[[list[str]], dict[str, str]]) -> None:
    """No recalled record and no prompt of a user carries another user's data."""
    assert tally.recalled, "no recall returned anything: the leak check would be vacuous"
    ids = [item.record_id for _, item in tally.recalled if item.record_id]
    owners = archive_owner(ids)
    for user, item in tally.recalled:
        assert not leaked_tokens(user, item.text), f"{user_id(user)} recalled {item.text!r}"
        assert item.record_id is not None
        assert owners[item.record_id] == user_id(user), item.record_id
    for user, context in tally.prompts:
        for message in context.messages:
            assert not leaked_tokens(user, str(message.content)), (user_id(user), message)
        assert context.total_tokens <= context.input_budget


def assert_no_lost_writes(store: MemoryStore, tally: Tally) -> None:
    """Every acknowledged turn is in its thread's buffer or the archive, exactly once."""
    assert len(tally.acked) == USERS * 2 * TURNS
    for user in range(USERS):
        data = store.export_user(user_id(user))
        archived = [r["text"] for r in data["records"] if r["kind"] == "turn"]
        buffered = [  # the log keeps paged-out turns too: the buffer is its window
            logged["message"]["data"]["content"]
            for thread in data["threads"].values()
            for logged in thread["messages"]
            if logged["turn"] >= thread["buffer_start"] and logged["message"]["type"] == "human"
        ]
        everything = "\n".join(archived + buffered)
        for _, _, worker, n in (a for a in tally.acked if a[0] == user):
            tag = f"[{worker}-{n}]"
            assert everything.count(tag) == 1, f"{user_id(user)}: {tag} x{everything.count(tag)}"
        assert not leaked_tokens(user, everything)
        for record in data["records"]:
            assert record["user_id"] == user_id(user)
        # the user's latest city is in core memory, the older one kept as history
        facts = {(f["subject"], f["content"], f["status"]) for f in data["core_memory"]}
        assert ("home_city", f"moved to {token(user).capitalize()}burg", "active") in facts
        assert ("home_city", f"lives in {token(user).capitalize()}ville", "superseded") in facts
        assert ("work", f"works at {token(user).capitalize()} Labs", "active") in facts
        # turn indices of each thread are dense and unique
        for state in data["threads"].values():
            per_thread = 2 * TURNS if user % 2 == 0 else TURNS
            assert state["next_turn"] == per_thread
            assert sorted({m["turn"] for m in state["messages"]}) == list(range(per_thread))


def test_threads_and_tasks_share_one_store(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "data", embeddings=embeddings(), index_save_every=8) as store:
        tally, seconds = run_all(lambda _user: store)
        assert not tally.errors, tally.errors[:3]
        assert_isolated(tally, lambda ids: {r.id: r.user_id for r in store.archive.get(ids)})
        assert_no_lost_writes(store, tally)
        assert store.archive.count() > USERS * TURNS // 2  # page-outs really happened
        assert seconds < 120
    # a reopened store has every record in its vector index and recalls per user
    with MemoryStore(tmp_path / "data", embeddings=embeddings()) as again:
        ids = again.archive.index.ids()
        assert ids is not None and len(ids) == again.archive.count()
        memory = again.memory(user_id(3), "sync", context_window=WINDOW)
        found = memory.recall(f"{token(3)} item s4", k=5)
        assert found and all(not leaked_tokens(3, r.text) for r in found)
        assert_no_lost_writes(again, tally)


def test_two_store_objects_on_one_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = MemoryStore(data, embeddings=embeddings(), index_save_every=8)
    second = MemoryStore(data, embeddings=embeddings(), index_save_every=8)
    stores = (first, second)
    try:
        tally, _ = run_all(lambda user: stores[user % 2])
        assert not tally.errors, tally.errors[:3]
        assert_isolated(tally, lambda ids: {r.id: r.user_id for r in first.archive.get(ids)})
        # both objects see every write (SQLite is shared) ...
        assert_no_lost_writes(first, tally)
        assert_no_lost_writes(second, tally)
        # ... and keyword recall through the *other* object finds it, per user only
        for user in (0, 1):
            other = stores[(user + 1) % 2]
            hits = other.archive.keyword_search(f"{token(user)} item s2", user_id(user), n=10)
            assert hits and all(r.user_id == user_id(user) for r, _ in hits)
    finally:
        first.close()
        second.close()
    # each object wrote its own vectors to the FAISS file; reopening repairs it from SQLite
    with MemoryStore(data, embeddings=embeddings()) as again:
        ids = again.archive.index.ids()
        assert ids is not None and len(ids) == again.archive.count()
        for user in (0, 1):
            hits = again.archive.dense_search(f"{token(user)} item s2", user_id(user), n=5)
            assert hits and all(r.user_id == user_id(user) for r, _ in hits)
        assert_no_lost_writes(again, tally)


@pytest.mark.parametrize("workers", [8])
def test_parallel_writers_on_one_thread_keep_turn_order_whole(tmp_path: Path, workers: int) -> None:
    """Many threads adding to ONE conversation: every turn stays whole and is kept once."""
    with MemoryStore(tmp_path / "data", embeddings=embeddings()) as store:
        memory = store.memory("ana", "t", context_window=WINDOW, gate="never")
        errors: list[BaseException] = []
        start = threading.Barrier(workers)

        def write(w: int) -> None:
            try:
                start.wait(timeout=30)
                for n in range(15):
                    memory.add_messages(
                        [HumanMessage(f"q {w}.{n} zx00q"), AIMessage(f"a {w}.{n} zx00q")]
                    )
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors[:3]
        state = store.memory("ana", "t").state
        assert state.next_index == workers * 15
        turns = list(state.turns)
        archived = store.archive.records(RecordFilter("ana", kinds="turn"))
        transcripts = [r.text for r in archived] + [t.transcript() for t in turns]
        for w in range(workers):
            for n in range(15):
                # the question and its answer sit in the same turn, exactly once
                pair = f"user: q {w}.{n} zx00q\nassistant: a {w}.{n} zx00q"
                assert sum(pair in t for t in transcripts) == 1, pair
