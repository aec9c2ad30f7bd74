"""Overhead bench: add and recall latency of the archive as it grows.

Archives are filled with synthetic texts and vectors (a hash-seeded random
embedder), so the bench measures the archive - SQLite, FTS5, FAISS and the
recall scoring - not the embedding model; the time to embed a query with the
real default embedder is measured separately.

Two layouts per size:

* ``typical``: ``records_per_user`` records per user (1,000 by default), the
  users' records interleaved over time as in a multi-user deployment (record
  ``i`` belongs to user ``i % users``), queries spread over the users;
* ``single_user``: one user owns every record - the worst case, where a
  recall has to rank the whole archive. Past 5,000 records the user's
  keyword search is bounded and past 50,000 their dense search approximate
  (see :meth:`~langchain_tiered_memory.storage.sqlite.archive.BaseSQLiteArchive.keyword_search`
  and :class:`~langchain_tiered_memory.storage.sqlite.archive.FaissIndex`); the user's
  approximate index is built before timing with
  :meth:`~langchain_tiered_memory.storage.sqlite.archive.BaseSQLiteArchive.warm_up`, as a
  server would for its heaviest users (``warm_up_seconds``).

Texts are 14 words drawn from a 48-word vocabulary, and queries four of
them: a query matches about 70% of a user's records by keyword, as a LoCoMo
question does within its conversation (74%, the speakers' names being in
every turn), while each query word is in a quarter of *all* records - more
than real words are, so the keyword index is measured pessimistically.

Per layout and size it reports, as p50 / p95 over ``queries`` queries:

* ``recall``: a full :meth:`~langchain_tiered_memory.recall.hybrid.Recaller.recall`
  with the default settings (200 dense + 50 keyword candidates, scoring,
  de-duplication, the access-time update), **minus the time spent embedding
  the query** (the embedder is wrapped and timed); ``recall_cpu`` is the
  same in CPU time of the calling thread, which other jobs sharing the
  machine disturb less than wall-clock time;
* ``search``: the two raw candidate searches alone (dense and keyword, 40
  each, with a precomputed query vector), the metric of earlier reports;
* ``add``: single-record adds with the vector index written every
  ``index_save_every`` adds, as :class:`~langchain_tiered_memory.store.MemoryStore`
  does (so p95 and max include the index file writes);
* bytes on disk per record.

Before timing, the archive's files are read once so the OS page cache holds
them, as on a server with RAM for its archive; a cold cache after a reboot is
slower (the 1M-record archive is 3.8 GB).

Example:
    >>> import tempfile
    >>> result = run_overhead_bench([200], workdir=tempfile.mkdtemp(), queries=5, adds=5,
    ...                             records_per_user=100)
    >>> row = result["sizes"]["200"]
    >>> row["users"], result["single_user"]["200"]["users"]
    (2, 1)
    >>> row["recall_p95_ms"] >= row["recall_p50_ms"] > 0
    True
"""

from __future__ import annotations

import logging
import os
import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.recall.hybrid import Recaller
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.testing import HashEmbeddings
from tiered_memory_bench.interrupt import keep_partial

logger = logging.getLogger(__name__)

__all__ = ["LAYOUTS", "HashEmbeddings", "Layout", "TimedEmbeddings", "run_overhead_bench"]

#: How records are spread over users (see the module docstring).
Layout = Literal["typical", "single_user"]
LAYOUTS: tuple[Layout, ...] = ("typical", "single_user")

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


class TimedEmbeddings(Embeddings):
    """Wraps an embedder and adds up the time its ``embed_query`` calls take.

    ``query_seconds`` is wall-clock time, ``query_cpu_seconds`` the calling
    thread's CPU time.

    Example:
        >>> timed = TimedEmbeddings(HashEmbeddings(dim=4))
        >>> len(timed.embed_query("hi")), timed.query_calls, timed.query_seconds > 0
        (4, 1, True)
    """

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.query_seconds = 0.0
        self.query_cpu_seconds = 0.0
        self.query_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The wrapped embedder's document vectors (not timed)."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The wrapped embedder's query vector, timed."""
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.inner.embed_query(text)
        finally:
            self.query_seconds += time.perf_counter() - started
            self.query_cpu_seconds += time.thread_time() - cpu
            self.query_calls += 1


def _text(rng: random.Random, i: int) -> str:
    words = rng.choices(_WORDS, k=14)
    return f"user: note {i}: " + " ".join(words) + f" on day {i % 365}"


def _query(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=4)) + "?"


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def _dir_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def _read_through(folder: Path, chunk: int = 1 << 24) -> None:
    """Read every file once, so the OS page cache holds the archive (as a server's RAM would)."""
    for path in folder.iterdir():
        if path.is_file():
            with path.open("rb") as handle:
                while handle.read(chunk):
                    pass


def _read_postgres_files(db: Any) -> None:
    """Read the memory's tables, their indexes and TOAST into the OS page cache.

    A server with RAM for its database holds all of it; reading only the
    tables would leave each user's index pages (the covering indexes recall
    reads) to be faulted in from disk by the first query of that user. On a
    server whose data directory is not readable here, every row of the table
    is read instead (its indexes stay cold: say so in the figures).
    """
    from langchain_tiered_memory.storage.postgres.schema import TABLES

    data_dir = Path(str(db.query("SELECT current_setting('data_directory')")[0][0]))
    rows = db.query(
        "WITH t AS (SELECT c.oid, c.reltoastrelid FROM pg_class c "
        "           WHERE c.oid = ANY(SELECT to_regclass(n) FROM unnest(?::text[]) AS n)), "
        "rel AS (SELECT oid FROM t UNION SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0) "
        "SELECT pg_relation_filepath(oid) FROM rel "
        "UNION SELECT pg_relation_filepath(indexrelid) FROM pg_index WHERE indrelid IN "
        "(SELECT oid FROM rel)",
        (list(TABLES),),
    )
    files = [data_dir / str(r[0]) for r in rows if r[0]]
    if not files or not os.access(files[0], os.R_OK):
        logger.warning("%s is not readable here: only the table rows are read", data_dir)
        db.query(
            "SELECT sum(length(text) + length(metadata)), sum(vector_dims(embedding)), "
            "sum(length(tsv)) FROM records"
        )
        return
    for first in files:  # a relation is <path>, <path>.1, <path>.2 ... (1 GB segments)
        segments = [p for p in first.parent.glob(first.name + ".*") if p.suffix[1:].isdigit()]
        for path in [first, *segments]:
            with path.open("rb") as handle:
                while handle.read(1 << 24):
                    pass


def _stats(name: str, values: Sequence[float]) -> dict[str, float]:
    return {
        f"{name}_p50_ms": round(statistics.median(values), 3),
        f"{name}_p95_ms": round(_percentile(values, 0.95), 3),
        f"{name}_max_ms": round(max(values), 3),
    }


def _fill(
    archive: Any,
    size: int,
    users: int,
    rng: random.Random,
    batch: int,
    progress: Callable[[str], None],
) -> float:
    """Add records ``r0 .. r{size-1}`` (record ``i`` owned by user ``i % users``)."""
    started = time.perf_counter()
    for start in range(archive.count(), size, batch):
        archive.add(
            [
                MemoryRecord.new(
                    user_id=f"user{i % users}",
                    thread_id="t",
                    kind="turn",
                    text=_text(rng, i),
                    id=f"r{i}",
                )
                for i in range(start, min(size, start + batch))
            ]
        )
        progress(f"{min(size, start + batch)} records")
    return time.perf_counter() - started


def _measure(
    archive: Any,
    embeddings: Embeddings,
    users: int,
    rng: random.Random,
    queries: int,
    adds: int,
    size: int,
    ks: Sequence[int] = (5,),
) -> dict[str, Any]:
    """Time recalls (at each of ``ks``), raw searches and adds on a filled archive."""

    def user(j: int) -> str:
        return f"user{(j * 7919) % users}"  # spread over the users, not in storage order

    timed = TimedEmbeddings(embeddings)
    recaller = Recaller(archive, timed, k=5)
    for j in range(3):  # warm-up: the first queries open reader connections
        recaller.recall(_query(rng), user_id=user(j))
    recall_ms, recall_cpu_ms = [], []
    for j in range(queries):
        query, owner = _query(rng), user(j)
        before, before_cpu = timed.query_seconds, timed.query_cpu_seconds
        started, cpu = time.perf_counter(), time.thread_time()
        hits = recaller.recall(query, user_id=owner)
        elapsed = time.perf_counter() - started - (timed.query_seconds - before)
        used = time.thread_time() - cpu - (timed.query_cpu_seconds - before_cpu)
        recall_ms.append(elapsed * 1000)
        recall_cpu_ms.append(used * 1000)
        assert all(h.record.user_id == owner for h in hits)
    by_k: dict[str, dict[str, float]] = {}
    for k in ks:
        if k == 5:
            wall, cpu_ms = recall_ms, recall_cpu_ms
        else:
            wall, cpu_ms = [], []
            for j in range(queries):
                query, owner = _query(rng), user(j)
                before, before_cpu = timed.query_seconds, timed.query_cpu_seconds
                started, cpu = time.perf_counter(), time.thread_time()
                recaller.recall(query, user_id=owner, k=k)
                wall.append((time.perf_counter() - started - (timed.query_seconds - before)) * 1000)
                cpu_ms.append(
                    (time.thread_time() - cpu - (timed.query_cpu_seconds - before_cpu)) * 1000
                )
        by_k[str(k)] = {**_stats("recall", wall), **_stats("recall_cpu", cpu_ms)}
    search_ms = []
    for j in range(queries):
        query, owner = _query(rng), user(j)
        vector = embeddings.embed_query(query)
        started = time.perf_counter()
        dense = archive.dense_search(vector, owner, n=40)
        keyword = archive.keyword_search(query, owner, n=40)
        search_ms.append((time.perf_counter() - started) * 1000)
        assert all(r.user_id == owner for r, _ in (*dense, *keyword))
    add_ms = []
    for j in range(adds):
        record = MemoryRecord.new(
            user_id=user(j),
            thread_id="t",
            kind="turn",
            text=_text(rng, size + j),
            id=f"add-{uuid.uuid4().hex}",
        )
        started = time.perf_counter()
        archive.add([record])
        add_ms.append((time.perf_counter() - started) * 1000)
    return {
        **_stats("recall", recall_ms),
        **_stats("recall_cpu", recall_cpu_ms),
        **_stats("search", search_ms),
        **_stats("add", add_ms),
        "recall_by_k": by_k,
        "query_embedding_excluded_ms": round(timed.query_seconds * 1000 / timed.query_calls, 3),
    }


def _throughput(
    archive: Any,
    embeddings: Embeddings,
    users: int,
    workers: int,
    seconds: float,
    size: int,
) -> dict[str, float]:
    """Recalls and adds per second with ``workers`` threads sharing one store."""

    def run(op: str) -> float:
        stop = time.perf_counter() + seconds
        done = [0] * workers
        errors: list[BaseException] = []

        def work(w: int) -> None:
            rng = random.Random(1000 + w)
            recaller = Recaller(archive, embeddings, k=5)
            try:
                while time.perf_counter() < stop:
                    owner = f"user{rng.randrange(users)}"
                    if op == "recall":
                        recaller.recall(_query(rng), user_id=owner)
                    else:
                        archive.add(
                            [
                                MemoryRecord.new(
                                    user_id=owner,
                                    thread_id="t",
                                    kind="turn",
                                    text=_text(rng, size + w),
                                    id=f"tp-{uuid.uuid4().hex}",
                                )
                            ]
                        )
                    done[w] += 1
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        started = time.perf_counter()
        threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return round(sum(done) / (time.perf_counter() - started), 1)

    return {"recall_per_s": run("recall"), "add_per_s": run("add")}


class _Bench:
    """One archive under test: how to open it, warm it and measure its size."""

    def __init__(
        self,
        backend: str,
        layout: str,
        size: int,
        workdir: Path,
        embeddings: Embeddings,
        index_save_every: int,
        postgres_url: str | None,
        pool_size: int,
    ) -> None:
        self.backend = backend
        self._owner: Any = None
        if backend == "sqlite":
            self.folder = workdir / f"archive-{layout}-{size}"
            self.folder.mkdir(parents=True, exist_ok=True)
            self.archive: Any = SQLiteArchive(
                self.folder / "archive.sqlite", embeddings=embeddings, save_every=index_save_every
            )
        else:
            from langchain_tiered_memory.storage.postgres.backend import PostgresBackend

            assert postgres_url is not None
            url = _bench_database(postgres_url, f"tm_bench_{layout}_{size}")
            self._owner = PostgresBackend(url, embeddings=embeddings, pool_size=pool_size)
            self.archive = self._owner.records

    def flush(self) -> None:
        if self.backend == "sqlite":
            self.archive.index.flush(force=True)

    def read_through(self) -> None:
        """Read everything once (the OS page cache holds it, as a server's RAM would)."""
        if self.backend == "sqlite":
            _read_through(self.folder)
        else:
            _read_postgres_files(self._owner.db)

    def bytes_used(self) -> int:
        if self.backend == "sqlite":
            return _dir_bytes(self.folder)
        from langchain_tiered_memory.storage.postgres.schema import TABLES

        rows = self._owner.db.query(
            "SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(?::text[]) AS t",
            (list(TABLES),),
        )
        return int(rows[0][0] or 0)

    def close(self) -> None:
        if self._owner is not None:
            self._owner.close()
        else:
            self.archive.close()


def _bench_database(url: str, name: str) -> str:
    """The URL of database ``name`` on ``url``'s server, created if missing (kept for reuse)."""
    import psycopg

    from langchain_tiered_memory.storage.postgres.db import with_database

    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname=%s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(url, name)


def run_overhead_bench(
    sizes: Sequence[int],
    *,
    workdir: str | Path,
    records_per_user: int = 1000,
    layouts: Sequence[Layout] = LAYOUTS,
    queries: int = 200,
    adds: int = 100,
    batch: int = 5000,
    index_save_every: int = 64,
    query_embedder: Embeddings | None = None,
    postgres_url: str | None = None,
    concurrency: Sequence[int] = (),
    concurrency_seconds: float = 5.0,
    ks: Sequence[int] = (5, 50, 200),
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill archives of each size and layout; time recalls and adds (JSON-ready result).

    Args:
        sizes: Archive sizes in records.
        workdir: Where the SQLite archives are built. An archive already there
            (from an earlier run with the same sizes) is reused, not refilled.
        records_per_user: Records per user in the ``typical`` layout.
        layouts: Which layouts to measure (``typical``, ``single_user``).
        queries: Timed recalls (and raw searches) per archive.
        adds: Timed single-record adds per archive.
        batch: Records per ``add`` call while filling.
        index_save_every: Write the vector index file every this many adds
            (``MemoryStore``'s default).
        query_embedder: Time this embedder's ``embed_query`` separately.
        postgres_url: Also measure the Postgres backend on this server: each
            layout and size in a database ``tm_bench_<layout>_<size>``
            (created if missing, reused if filled).
        concurrency: Also measure recall and add throughput with this many
            threads sharing one store (e.g. ``(1, 4, 16)``).
        concurrency_seconds: How long each throughput measurement runs.
        ks: Also time recall at each of these ``k`` (``recall_by_k``).
        on_progress: Called with progress messages.

    Returns:
        ``{"bench", "records_per_user", "sizes": {size: row}, "single_user":
        {size: row}, "postgres": {"sizes": ..., "single_user": ...},
        "query_embedding_p50_ms", ...}``; ``sizes`` holds SQLite's typical
        layout. Each row has ``recall_*``, ``search_*`` and ``add_*``
        p50/p95/max in ms (recall at ``k`` = 5), ``recall_by_k`` (``{k:
        recall_* and recall_cpu_* p50/p95/max}``), ``bytes_per_record``, ``users``, ``fill_seconds``
        and, with ``concurrency``, ``throughput`` per number of workers.
    """
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown:
        raise ValueError(f"unknown layout(s) {unknown}; use some of {list(LAYOUTS)}")
    if any(c < 1 for c in concurrency):
        raise ValueError(f"concurrency levels must be >= 1, got {list(concurrency)}")
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be >= 1, got {list(ks)}")
    embeddings = HashEmbeddings()
    result: dict[str, Any] = {
        "bench": "overhead",
        "records_per_user": records_per_user,
        "queries": queries,
        "adds": adds,
        "index_save_every": index_save_every,
        "ks": list(ks),
        "sizes": {},
        "single_user": {},
    }
    backends = ["sqlite"] + (["postgres"] if postgres_url else [])
    if postgres_url:
        result["postgres"] = {"sizes": {}, "single_user": {}}
    with keep_partial(result):  # Ctrl-C: the sizes that finished
        for backend in backends:
            rng = random.Random(7)  # the same texts and queries for every backend
            into = result if backend == "sqlite" else result["postgres"]
            for layout in layouts:
                for size in sizes:
                    users = 1 if layout == "single_user" else max(1, size // records_per_user)

                    def progress(
                        message: str, layout: str = layout, size: int = size, backend: str = backend
                    ) -> None:
                        if on_progress:
                            on_progress(f"{backend} {layout} {size:,}: {message}")

                    bench = _Bench(
                        backend,
                        layout,
                        size,
                        Path(workdir),
                        embeddings,
                        index_save_every,
                        postgres_url,
                        pool_size=max([10, *concurrency]) + 2,
                    )
                    try:
                        fill_seconds = _fill(bench.archive, size, users, rng, batch, progress)
                        bench.flush()
                        bench.read_through()
                        warm_started = time.perf_counter()
                        if layout == "single_user":  # as a server would for its heaviest users
                            progress("warming up")
                            bench.archive.warm_up("user0")
                        warm_seconds = time.perf_counter() - warm_started
                        progress("measuring")
                        row = _measure(
                            bench.archive, embeddings, users, rng, queries, adds, size, ks=ks
                        )
                        row["warm_up_seconds"] = round(warm_seconds, 2)
                        if concurrency:
                            row["throughput"] = {}
                            for workers in concurrency:
                                progress(f"throughput, {workers} workers")
                                row["throughput"][str(workers)] = _throughput(
                                    bench.archive,
                                    embeddings,
                                    users,
                                    workers,
                                    concurrency_seconds,
                                    size,
                                )
                        stored = bench.archive.count()
                        used = bench.bytes_used()
                    finally:
                        bench.close()
                    row.update(
                        bytes_per_record=round(used / stored, 1),
                        fill_seconds=round(fill_seconds, 1),
                        users=users,
                    )
                    into["sizes" if layout == "typical" else "single_user"][str(size)] = row
                    progress("done")
    if query_embedder is not None:
        timings = []
        for j in range(20):
            started = time.perf_counter()
            query_embedder.embed_query(f"what did I say about my trip {j}?")
            timings.append((time.perf_counter() - started) * 1000)
        result["query_embedding_p50_ms"] = round(statistics.median(timings), 3)
        result["query_embedding_p95_ms"] = round(_percentile(timings, 0.95), 3)
    return result
