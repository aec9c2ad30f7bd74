"""Overhead bench: add and recall latency of the archive as it grows.

Large archives are filled with synthetic texts and vectors (a hash-seeded
random embedder), so the bench measures the archive - SQLite, FTS5, FAISS and
the recall scoring - not the embedding model; the time to embed a query with
the real default embedder is measured separately. Records are spread over
users (``records_per_user`` each), as in a multi-user deployment, and every
query is filtered to one user.

Example:
    >>> import tempfile
    >>> result = run_overhead_bench([200], workdir=tempfile.mkdtemp(), queries=5, adds=5)
    >>> sorted(result["sizes"]["200"])[:3]
    ['add_p50_ms', 'add_p95_ms', 'bytes_per_record']
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.archive import SQLiteArchive
from langchain_tiered_memory.recall import Recaller
from langchain_tiered_memory.records import MemoryRecord

__all__ = ["HashEmbeddings", "run_overhead_bench"]

_WORDS = [
    "trip",
    "flight",
    "hotel",
    "Lisbon",
    "Kyoto",
    "Berlin",
    "peanut",
    "allergy",
    "dinner",
    "sister",
    "brother",
    "meeting",
    "project",
    "deadline",
    "budget",
    "report",
    "garden",
    "dog",
    "cat",
    "running",
    "marathon",
    "book",
    "movie",
    "concert",
    "birthday",
    "wedding",
    "doctor",
    "dentist",
    "salary",
    "office",
    "weekend",
    "pasta",
    "sushi",
    "coffee",
    "tea",
    "rain",
    "summer",
    "winter",
    "beach",
    "mountain",
    "train",
    "ticket",
    "museum",
    "painting",
    "guitar",
    "piano",
    "lesson",
    "exam",
]


class HashEmbeddings(Embeddings):
    """Deterministic unit vectors seeded by a text's hash (fast, meaningless)."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return (vector / np.linalg.norm(vector)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return self._vector(text)


def _text(rng: random.Random, i: int) -> str:
    words = rng.choices(_WORDS, k=14)
    return f"user: note {i}: " + " ".join(words) + f" on day {i % 365}"


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def _dir_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def run_overhead_bench(
    sizes: Sequence[int],
    *,
    workdir: str | Path,
    records_per_user: int = 1000,
    queries: int = 100,
    adds: int = 100,
    batch: int = 5000,
    query_embedder: Embeddings | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill archives of each size and time adds and recalls (JSON-ready result)."""
    rng = random.Random(7)
    embeddings = HashEmbeddings()
    result: dict[str, Any] = {
        "bench": "overhead",
        "records_per_user": records_per_user,
        "sizes": {},
    }
    for size in sizes:
        folder = Path(workdir) / f"archive-{size}"
        folder.mkdir(parents=True, exist_ok=True)
        archive = SQLiteArchive(folder / "archive.sqlite", embeddings=embeddings, save_every=10**9)
        started = time.perf_counter()
        for start in range(0, size, batch):
            archive.add(
                [
                    MemoryRecord.new(
                        user_id=f"user{i // records_per_user}",
                        thread_id="t",
                        kind="turn",
                        text=_text(rng, i),
                        id=f"r{i}",
                    )
                    for i in range(start, min(size, start + batch))
                ]
            )
            if on_progress:
                on_progress(f"{size}: {min(size, start + batch)} records")
        fill_seconds = time.perf_counter() - started
        archive.index.flush(force=True)
        users = max(1, size // records_per_user)
        add_ms = []
        for j in range(adds):
            record = MemoryRecord.new(
                user_id=f"user{j % users}",
                thread_id="t",
                kind="turn",
                text=_text(rng, size + j),
                id=f"new{j}",
            )
            t0 = time.perf_counter()
            archive.add([record])
            add_ms.append((time.perf_counter() - t0) * 1000)
        recaller = Recaller(archive, embeddings, k=5)
        recall_ms = []
        for j in range(queries):
            query = " ".join(rng.choices(_WORDS, k=4)) + "?"
            vector = embeddings.embed_query(query)
            t0 = time.perf_counter()
            dense = archive.dense_search(vector, user_id=f"user{j % users}", n=40)
            keyword = archive.keyword_search(query, user_id=f"user{j % users}", n=40)
            recall_ms.append((time.perf_counter() - t0) * 1000)
            assert all(r.user_id == f"user{j % users}" for r, _ in (*dense, *keyword))
        full_ms = []
        for j in range(min(queries, 30)):
            query = " ".join(rng.choices(_WORDS, k=4)) + "?"
            t0 = time.perf_counter()
            recaller.recall(query, user_id=f"user{j % users}")
            full_ms.append((time.perf_counter() - t0) * 1000)
        archive.close()
        result["sizes"][str(size)] = {
            "add_p50_ms": round(statistics.median(add_ms), 3),
            "add_p95_ms": round(_percentile(add_ms, 0.95), 3),
            "recall_p50_ms": round(statistics.median(recall_ms), 3),
            "recall_p95_ms": round(_percentile(recall_ms, 0.95), 3),
            "recall_scored_p95_ms": round(_percentile(full_ms, 0.95), 3),
            "bytes_per_record": round(_dir_bytes(folder) / (size + adds), 1),
            "fill_seconds": round(fill_seconds, 1),
            "users": users,
        }
        if on_progress:
            on_progress(f"{size}: done")
    if query_embedder is not None:
        timings = []
        for j in range(20):
            t0 = time.perf_counter()
            query_embedder.embed_query(f"what did I say about my trip {j}?")
            timings.append((time.perf_counter() - t0) * 1000)
        result["query_embedding_p50_ms"] = round(statistics.median(timings), 3)
        result["query_embedding_p95_ms"] = round(_percentile(timings, 0.95), 3)
    return result
