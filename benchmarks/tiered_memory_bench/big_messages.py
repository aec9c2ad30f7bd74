"""``bench big-messages``: what one add of a very long message costs (it must be linear).

A user can paste anything: a log, a book, a minified file. For each size
(characters), a fresh data directory gets one ``add_messages`` of one user
message of that size through the public API, timed from the call to its
return (storage, fact extraction, compression); then what the thread costs
afterwards: the next ``add_messages`` (which evicts the huge turn to the
archive when it does not fit the window), a ``build_context`` that recalls
(``next_add_seconds``, ``build_context_seconds``) and the tokens that
prompt spends on recall and on the buffer. Two texts per size:

* ``words``: ordinary words with no sentence or clause break at all;
* ``unbroken``: one run of letters without a space.

Each add runs in a child process with a time limit, so a size that would
take minutes is reported as ``"timeout"`` instead of stalling the bench.
Embeddings are hash vectors (the bench measures the memory, not a model).

Example:
    >>> r = run_big_messages_bench([1_000], texts=("words",), timeout_s=120)
    >>> r["sizes"]["1000"]["words"]["seconds"] > 0
    True
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.table import Table

__all__ = ["TEXTS", "big_message", "big_messages_table", "run_big_messages_bench"]

#: The kinds of text the bench pastes.
TEXTS = ("words", "unbroken")

_WORDS = (  # noqa: SIM905
    "my sister and I went to the market then we bought apples with the money I had saved "
    "and my knee was still bad after the surgery so we took the bus home"
).split()


def big_message(chars: int, text: str = "words") -> str:
    """A message of ``chars`` characters of the given kind (see :data:`TEXTS`).

    Example:
        >>> len(big_message(50)), " " in big_message(50, "unbroken")
        (50, False)
    """
    if text == "unbroken":
        return ("abcdefghij" * (chars // 10 + 1))[:chars]
    if text != "words":
        raise ValueError(f"text must be one of {list(TEXTS)}, got {text!r}")
    out: list[str] = []
    size = -1
    i = 0
    while size < chars:
        word = _WORDS[i % len(_WORDS)]
        out.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(out)[:chars]


_CHILD = """
import json, sys, tempfile, time
from langchain_core.messages import AIMessage, HumanMessage
from tiered_memory_bench.big_messages import big_message
from tiered_memory_bench.overhead import HashEmbeddings
from langchain_tiered_memory.store import MemoryStore
chars, kind, window = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
text = big_message(chars, kind)
with tempfile.TemporaryDirectory() as folder:
    with MemoryStore(folder, embeddings=HashEmbeddings()) as store:
        memory = store.memory("bench", "thread", context_window=window)
        memory.add_messages([HumanMessage("warm-up: I live in Lisbon.")])
        started = time.perf_counter()
        memory.add_messages([HumanMessage(text)])
        seconds = time.perf_counter() - started
        facts = len(memory.core.active())
        started = time.perf_counter()
        memory.add_messages([AIMessage("Noted."), HumanMessage("Where do I live?")])
        next_add = time.perf_counter() - started
        started = time.perf_counter()
        context = memory.build_context(query="where do I live? market apples", recall=True)
        build = time.perf_counter() - started
print(json.dumps({"seconds": round(seconds, 3), "facts": facts,
                  "next_add_seconds": round(next_add, 3),
                  "build_context_seconds": round(build, 3),
                  "recall_tokens": context.usage["recall"],
                  "buffer_tokens": context.usage["buffer"]}))
"""


def _one(chars: int, text: str, *, timeout_s: float, context_window: int) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(chars), text, str(context_window)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": None, "status": "timeout", "timeout_s": timeout_s}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"seconds": None, "status": f"error: {tail}"}
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["status"] = "ok"
    row["process_seconds"] = round(time.perf_counter() - started, 3)
    return row


def run_big_messages_bench(
    sizes: Sequence[int] = (1_000, 100_000, 1_000_000, 10_000_000),
    *,
    texts: Sequence[str] = TEXTS,
    timeout_s: float = 300.0,
    context_window: int = 128_000,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time one add of one user message per size and text kind (JSON-ready).

    Args:
        sizes: Message sizes in characters.
        texts: Kinds of text (:data:`TEXTS`).
        timeout_s: Limit per add (the child process is killed after it).
        context_window: The memory's window.
        on_progress: Called with a line of text after each add.

    Raises:
        ValueError: for no sizes, a size below 1 or an unknown text kind.
    """
    levels = [int(n) for n in sizes]
    if not levels or min(levels) < 1:
        raise ValueError(f"sizes must be positive integers, got {sizes!r}")
    unknown = [t for t in texts if t not in TEXTS]
    if unknown:
        raise ValueError(f"unknown text kinds {unknown}; use {list(TEXTS)}")
    result: dict[str, Any] = {
        "bench": "big-messages",
        "context_window": context_window,
        "timeout_s": timeout_s,
        "sizes": {},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    for chars in levels:
        row: dict[str, Any] = {}
        for text in texts:
            row[text] = _one(chars, text, timeout_s=timeout_s, context_window=context_window)
            if on_progress is not None:
                seconds = row[text]["seconds"]
                shown = f"{seconds} s" if seconds is not None else row[text]["status"]
                on_progress(f"{chars:,} chars ({text}): {shown}")
        result["sizes"][str(chars)] = row
    return result


def big_messages_table(result: dict[str, Any]) -> Table:
    """The bench result as a rich table, one row per size."""
    table = Table(title="one long user message: its add, the next add, the next prompt")
    table.add_column("characters", justify="right")
    kinds = sorted({k for row in result["sizes"].values() for k in row})
    for kind in kinds:
        table.add_column(f"{kind}: add / next add / build (recall tokens)", justify="right")
    for size, row in result["sizes"].items():
        cells = []
        for kind in kinds:
            cell = row.get(kind, {})
            seconds = cell.get("seconds")
            if seconds is None:
                cells.append(str(cell.get("status", "-")))
                continue
            cells.append(
                f"{seconds} / {cell.get('next_add_seconds')} / "
                f"{cell.get('build_context_seconds')} s ({cell.get('recall_tokens')})"
            )
        table.add_row(f"{int(size):,}", *cells)
    return table
