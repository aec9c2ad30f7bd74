"""Concurrency bench: add and recall throughput and latency as users write at once.

For each concurrency level ``n`` a fresh data directory gets one
:class:`~langchain_tiered_memory.store.MemoryStore` shared by ``n`` users,
each served by its own OS thread, all started together. Every user's archive
is first seeded with ``seed_records`` records (not timed), so recall searches
real candidates. Then each thread repeats, ``turns_per_user`` times: add one
turn (``add_messages``: save, extract facts, compress and page out when due)
and recall for it (``recall``: keyword + dense search and scoring). The small
context window makes compression and page-out happen throughout the run.

Reported per level: wall time, throughput (operations per second, adds and
recalls together, and each kind alone), p50/p95 latency of each operation,
compressions, and two correctness counts that must stay 0: recalled records
of another user (``foreign_hits``) and acknowledged turns not found afterwards
in the buffer or the archive (``lost_turns``).

Embeddings: by default the hash embedder of the overhead bench (fast and
meaningless), so the bench measures the memory - SQLite, FTS5, FAISS, locks -
not the embedding model; the offline default ``e5`` embeds about 5 queries a
second on two cores and would be the whole cost. Pass any ``Embeddings`` to
measure with a real model.

Example:
    >>> import tempfile
    >>> result = run_concurrency_bench((1, 2), turns_per_user=3, seed_records=10,
    ...                                data_dir=tempfile.mkdtemp())
    >>> sorted(result["levels"]), result["levels"]["2"]["adds"]
    (['1', '2'], 6)
    >>> result["levels"]["2"]["foreign_hits"], result["levels"]["2"]["lost_turns"]
    (0, 0)
"""

from __future__ import annotations

import os
import random
import re
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from rich.table import Table

from langchain_tiered_memory.budget.context import RecalledMemory
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from tiered_memory_bench.interrupt import keep_partial
from tiered_memory_bench.overhead import HashEmbeddings

__all__ = ["concurrency_table", "run_concurrency_bench"]

_TOPICS = [
    "flight",
    "hotel",
    "dentist",
    "marathon",
    "guitar lesson",
    "sushi dinner",
    "museum ticket",
    "project deadline",
    "garden",
    "birthday gift",
    "train pass",
    "coffee beans",
]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


_MARKER = re.compile(r"zx\d{3}q")


def _marker(user: int) -> str:
    return f"zx{user:03d}q"


def _user_id(user: int) -> str:
    return f"bench-user-{user:03d}"


def _seed(store: MemoryStore, user: int, count: int, rng: random.Random) -> None:
    if count <= 0:
        return
    marker = _marker(user)
    store.archive.add(
        [
            MemoryRecord.new(
                user_id=_user_id(user),
                thread_id="history",
                kind="turn",
                text=f"user: my {rng.choice(_TOPICS)} ({marker}) cost {rng.randint(5, 900)} "
                f"euros on day {i}\nassistant: noted",
            )
            for i in range(count)
        ]
    )


class _Worker:
    """One user's loop: add a turn, recall for it; latencies in milliseconds."""

    def __init__(self, store: MemoryStore, user: int, turns: int, context_window: int) -> None:
        self.user = user
        self.turns = turns
        self.memory = store.memory(
            _user_id(user), "bench", context_window=context_window, gate="never"
        )
        self.add_ms: list[float] = []
        self.recall_ms: list[float] = []
        self.foreign_hits = 0
        self.compressions = 0
        self.error: BaseException | None = None

    def run(self, start: threading.Barrier) -> None:
        rng = random.Random(self.user)
        marker = _marker(self.user)
        try:
            start.wait()
            for n in range(self.turns):
                topic = rng.choice(_TOPICS)
                turn = [
                    HumanMessage(
                        f"[{n}] I booked the {topic} ({marker}) for {rng.randint(5, 900)} "
                        f"euros; remind me about it on day {n}."
                    ),
                    AIMessage(f"Noted the {topic} for day {n}."),
                ]
                t0 = time.perf_counter()
                events = self.memory.add_messages(turn)
                self.add_ms.append((time.perf_counter() - t0) * 1000)
                self.compressions += sum(e.kind == "compression" for e in events)
                t0 = time.perf_counter()
                hits = self.memory.recall(f"how much did my {rng.choice(_TOPICS)} cost?")
                self.recall_ms.append((time.perf_counter() - t0) * 1000)
                self.foreign_hits += self._foreign(hits)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
            self.error = exc

    def _foreign(self, hits: Sequence[RecalledMemory]) -> int:
        """Hits owned by another user or carrying another user's marker (must be 0)."""
        archive = self.memory.archive
        owners = {r.id: r.user_id for r in archive.get([h.record_id or "" for h in hits])}
        mine = _marker(self.user)
        return sum(
            owners.get(h.record_id or "") != _user_id(self.user)
            or any(m != mine for m in _MARKER.findall(h.text))
            for h in hits
        )

    def lost_turns(self, store: MemoryStore) -> int:
        """Acknowledged turns found neither in the saved buffer nor in the archive."""
        state = store.memory(_user_id(self.user), "bench").state
        buffered = {t.index for t in state.turns}
        archived = {
            int(r.metadata.get("turn_index", -1))
            for r in store.archive.records(
                RecordFilter(_user_id(self.user), thread_id="bench", kinds="turn")
            )
        }
        return len(set(range(len(self.add_ms))) - buffered - archived)


def _level(
    folder: Path,
    n_users: int,
    *,
    turns_per_user: int,
    seed_records: int,
    context_window: int,
    embeddings: Embeddings,
) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise ValueError(f"{folder} is not empty; give the bench a fresh data_dir")
    rng = random.Random(n_users)
    with MemoryStore(folder, embeddings=embeddings) as store:
        for user in range(n_users):
            _seed(store, user, seed_records, rng)
        workers = [_Worker(store, user, turns_per_user, context_window) for user in range(n_users)]
        start = threading.Barrier(n_users + 1)
        threads = [threading.Thread(target=w.run, args=(start,)) for w in workers]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        for worker in workers:
            if worker.error is not None:
                raise RuntimeError(
                    f"bench worker of {_user_id(worker.user)} failed: {worker.error!r}"
                ) from worker.error
        add_ms = [ms for w in workers for ms in w.add_ms]
        recall_ms = [ms for w in workers for ms in w.recall_ms]
        lost = sum(w.lost_turns(store) for w in workers)
        records = store.archive.count()
    return {
        "users": n_users,
        "adds": len(add_ms),
        "recalls": len(recall_ms),
        "seconds": round(seconds, 3),
        "ops_per_s": round((len(add_ms) + len(recall_ms)) / seconds, 1),
        "adds_per_s": round(len(add_ms) / seconds, 1),
        "recalls_per_s": round(len(recall_ms) / seconds, 1),
        "add_p50_ms": round(statistics.median(add_ms), 3),
        "add_p95_ms": round(_percentile(add_ms, 0.95), 3),
        "recall_p50_ms": round(statistics.median(recall_ms), 3),
        "recall_p95_ms": round(_percentile(recall_ms, 0.95), 3),
        "compressions": sum(w.compressions for w in workers),
        "archive_records": records,
        "foreign_hits": sum(w.foreign_hits for w in workers),
        "lost_turns": lost,
    }


def run_concurrency_bench(
    users: Sequence[int] = (1, 4, 16),
    *,
    turns_per_user: int = 40,
    seed_records: int = 200,
    context_window: int = 1024,
    data_dir: str | Path | None = None,
    embeddings: Embeddings | None = None,
    embedder_name: str | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time concurrent adds and recalls at each number of users (JSON-ready result).

    Args:
        users: Concurrency levels: how many users (one thread each) run at once.
        turns_per_user: Turns each user adds (each followed by one recall).
        seed_records: Archive records per user written before timing starts.
        context_window: Each memory's window (small, so compression happens).
        data_dir: Where the levels' data directories go (``users-<n>``, which
            must not exist or be empty); default: a temporary directory.
        embeddings: The embedder (default: :class:`HashEmbeddings`, see the
            module docstring).
        embedder_name: Name to report for ``embeddings`` (default: its class).
        on_progress: Called with a line of text as each level finishes.

    Raises:
        ValueError: for an empty or non-positive ``users``, ``turns_per_user < 1``,
            or a level directory that is not empty.
        RuntimeError: if a worker failed (the first error is chained).
    """
    levels = [int(n) for n in users]
    if not levels or min(levels) < 1:
        raise ValueError(f"users must be positive integers, e.g. (1, 4, 16); got {users!r}")
    if turns_per_user < 1:
        raise ValueError(f"turns_per_user must be >= 1, got {turns_per_user}")
    embedder = embeddings if embeddings is not None else HashEmbeddings()
    result: dict[str, Any] = {
        "bench": "concurrency",
        "embedder": embedder_name or type(embedder).__name__,
        "turns_per_user": turns_per_user,
        "seed_records_per_user": seed_records,
        "context_window": context_window,
        "cpu_cores": os.cpu_count(),
        "levels": {},
    }
    with keep_partial(result), tempfile.TemporaryDirectory(prefix="tiered-concurrency-") as scratch:
        root = Path(data_dir) if data_dir is not None else Path(scratch)
        # untimed warm-up (imports, tokenizer and index set-up), so level 1 is not charged
        _level(
            Path(scratch) / "warm-up",
            1,
            turns_per_user=3,
            seed_records=min(seed_records, 10),
            context_window=context_window,
            embeddings=embedder,
        )
        for n_users in levels:
            row = _level(
                root / f"users-{n_users}",
                n_users,
                turns_per_user=turns_per_user,
                seed_records=seed_records,
                context_window=context_window,
                embeddings=embedder,
            )
            result["levels"][str(n_users)] = row
            if on_progress is not None:
                on_progress(f"{n_users} users: {row['ops_per_s']} ops/s")
    return result


def concurrency_table(result: dict[str, Any]) -> Table:
    """The bench result as a rich table, one row per concurrency level."""
    table = Table(
        title=f"concurrency ({result['embedder']}, {result['turns_per_user']} turns/user)"
    )
    for column in (
        "users",
        "ops/s",
        "add p50",
        "add p95",
        "recall p50",
        "recall p95",
        "compressions",
        "foreign",
        "lost",
    ):
        table.add_column(column, justify="right")
    for level, row in result["levels"].items():
        table.add_row(
            level,
            str(row["ops_per_s"]),
            f"{row['add_p50_ms']} ms",
            f"{row['add_p95_ms']} ms",
            f"{row['recall_p50_ms']} ms",
            f"{row['recall_p95_ms']} ms",
            str(row["compressions"]),
            str(row["foreign_hits"]),
            str(row["lost_turns"]),
        )
    return table
