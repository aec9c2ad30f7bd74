"""``bench writes``: what one add costs as a thread grows (it must not grow with it).

For each size N, a fresh data directory gets one thread with N turns added
through the public API (``store.memory(...).add_messages``, compressions and
page-outs included), then ``samples`` one-message adds are timed, user and
assistant messages in turn - the add a chat app makes twice per exchange.
Reported per size: add latency p50 / p95 / max, the turns in the buffer when
timing started, and the compressions that ran while timing (each adds a
page-out to that add).

With the default 128k window (buffer cap 64k tokens) a thread of 100 turns
holds all of them in its buffer and one of 10,000 holds about 700: an add
that re-wrote the buffer (as before the turn log) cost in proportion; an
append costs what it adds. Embeddings are hash vectors by default (the
bench measures the memory, not the model).

Example:
    >>> result = run_writes_bench([20], samples=10, context_window=4096)
    >>> row = result["sizes"]["20"]
    >>> row["samples"], row["add_p50_ms"] > 0
    (10, True)
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from rich.table import Table

from langchain_tiered_memory.store import MemoryStore
from tiered_memory_bench.interrupt import keep_partial
from tiered_memory_bench.overhead import HashEmbeddings

__all__ = ["run_writes_bench", "writes_table"]

_TOPICS = ("trains", "the garden", "a recipe", "the budget", "a trip", "the dentist", "music")


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _exchange(i: int) -> tuple[HumanMessage, AIMessage]:
    topic = _TOPICS[i % len(_TOPICS)]
    return (
        HumanMessage(f"Turn {i}: let us talk a little more about {topic}, item number {i}."),
        AIMessage(f"Sure - here is what I know about {topic} (point {i}), briefly."),
    )


def _one_size(
    folder: Path,
    turns: int,
    *,
    samples: int,
    model: str,
    context_window: int | None,
    embeddings: Embeddings,
) -> dict[str, Any]:
    with MemoryStore(folder, embeddings=embeddings) as store:
        memory = store.memory("bench", "thread", model=model, context_window=context_window)
        for i in range(turns):
            memory.add_messages(list(_exchange(i)))
        buffered = len(memory.state.turns)
        before = len(memory.events)
        times: list[float] = []
        for n in range(samples):
            human, ai = _exchange(turns + n // 2)
            message = human if n % 2 == 0 else ai
            start = time.perf_counter()
            memory.add_messages([message])
            times.append((time.perf_counter() - start) * 1000)
        human_times, ai_times = times[0::2], times[1::2] or times[0::2]
        compressions = sum(e.kind == "compression" for e in memory.events[before:])
    return {
        "turns_before": turns,
        "buffered_turns": buffered,
        "samples": samples,
        "add_p50_ms": round(statistics.median(times), 3),
        "add_p95_ms": round(_percentile(times, 0.95), 3),
        "add_max_ms": round(max(times), 3),
        "add_mean_ms": round(statistics.fmean(times), 3),
        # a user message also runs fact extraction: the two kinds, apart
        "user_add_p50_ms": round(statistics.median(human_times), 3),
        "assistant_add_p50_ms": round(statistics.median(ai_times), 3),
        "compressions_while_timing": compressions,
    }


def run_writes_bench(
    sizes: Sequence[int] = (100, 1_000, 10_000),
    *,
    samples: int = 200,
    model: str = "gpt-4o-mini",
    context_window: int | None = None,
    embeddings: Embeddings | None = None,
    data_dir: str | Path | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time one-message adds after ``sizes`` turns (JSON-ready result).

    Args:
        sizes: Turns already in the thread before timing, one run each.
        samples: Adds timed per size.
        model: Model name (token counter and default window).
        context_window: Override the model's window (default: the model's, 128k).
        embeddings: The embedder (default: :class:`HashEmbeddings`).
        data_dir: Where the data directories go (default: a temporary directory).
        on_progress: Called with a line of text as each size finishes.

    Raises:
        ValueError: for no sizes, a negative size or ``samples < 1``.
        BenchInterrupted: on Ctrl-C, with the sizes that finished.
    """
    levels = [int(n) for n in sizes]
    if not levels or min(levels) < 0:
        raise ValueError(f"sizes must be non-negative integers, got {sizes!r}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    embedder = embeddings if embeddings is not None else HashEmbeddings()
    result: dict[str, Any] = {
        "bench": "writes",
        "model": model,
        "context_window": context_window,
        "embedder": type(embedder).__name__,
        "samples": samples,
        "sizes": {},
    }
    with keep_partial(result), tempfile.TemporaryDirectory(prefix="tiered-writes-") as scratch:
        root = Path(data_dir) if data_dir is not None else Path(scratch)
        _one_size(  # untimed warm-up: imports, tokenizer, index set-up
            Path(scratch) / "warm-up",
            5,
            samples=5,
            model=model,
            context_window=context_window,
            embeddings=embedder,
        )
        _sizes_loop(levels, root, result, samples, model, context_window, embedder, on_progress)
    first, last = result["sizes"][str(levels[0])], result["sizes"][str(levels[-1])]
    for key, name in (
        ("add_p50_ms", ""),
        ("user_add_p50_ms", "user_"),
        ("assistant_add_p50_ms", "assistant_"),
    ):
        result[f"{name}p50_ratio_last_to_first"] = round(last[key] / first[key], 3)
    return result


def _sizes_loop(
    levels: Sequence[int],
    root: Path,
    result: dict[str, Any],
    samples: int,
    model: str,
    context_window: int | None,
    embedder: Embeddings,
    on_progress: Callable[[str], None] | None,
) -> None:
    for turns in levels:
        row = _one_size(
            root / f"turns-{turns}",
            turns,
            samples=samples,
            model=model,
            context_window=context_window,
            embeddings=embedder,
        )
        result["sizes"][str(turns)] = row
        if on_progress is not None:
            on_progress(f"{turns} turns: add p50 {row['add_p50_ms']} ms")


def writes_table(result: dict[str, Any]) -> Table:
    """The bench result as a rich table, one row per size."""
    table = Table(title=f"add latency as the thread grows ({result['model']})")
    columns = ("turns before", "buffered", "add p50", "user / assistant p50", "add p95")
    for column in (*columns, "add max", "compressions"):
        table.add_column(column, justify="right")
    for size, row in result["sizes"].items():
        table.add_row(
            f"{int(size):,}",
            f"{row['buffered_turns']:,}",
            f"{row['add_p50_ms']} ms",
            f"{row['user_add_p50_ms']} / {row['assistant_add_p50_ms']} ms",
            f"{row['add_p95_ms']} ms",
            f"{row['add_max_ms']} ms",
            str(row["compressions_while_timing"]),
        )
    return table
