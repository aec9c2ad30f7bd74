"""A worker for tests/integration/test_forget_crash.py: fill a memory, then forget a user - and die.

Run as ``python forget_crash_worker.py LOCATION SAVER_FILE POINT [words]``. LOCATION is
a data directory or a ``postgresql://`` URL; SAVER_FILE a SQLite file for the
checkpointer the app attaches (``create_agent(checkpointer=...)``); POINT one
of :data:`POINTS`, the step of the forget where the process ends (``os._exit``:
no cleanup, no flush, as a kill).

The worker gives ``ana`` and ``bob`` conversations through the prebuilt graph
(the store's own checkpointer) and through ``create_agent`` with the memory
middleware (the attached checkpointer), pages turns out to the archive
(records, vectors, the embedding cache), prints ``digest <sha256>`` for each
embedding-cache key of ana's archived texts and ``ready``, then calls
``store.forget_user("ana")`` - or, with ``words``, ana's forget by words of her secret
(``memory.forget_about``) - which ends the process at POINT.

The points are reached by wrapping the methods a forget calls in turn (the
record store's ``forget_rows`` inside the transaction, its ``finish_forget``
after the commit, the store's checkpoint purge, a checkpointer's
``delete_thread``), so the same worker kills the code before and after the
forget intents at the same steps.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_tiered_memory.embeddings import LocalEmbeddings
from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.storage.postgres.db import is_postgres_url
from langchain_tiered_memory.store import EMBEDDINGS_CACHE_FILE, MemoryStore

SECRET = "zebrasecret"
WINDOW = 1024
EXIT_CODE = 86

#: The steps of a forget where the worker dies, in the order a forget reaches them.
POINTS = (
    "in the transaction",  # rows deleted, not committed
    "after the commit",  # index, embedding cache, WAL and checkpoints not purged yet
    "after the files",  # index, cache and WAL purged; no checkpointer yet
    "between checkpointers",  # the app's checkpointer purged, the store's own not yet
    "after the checkpoints",  # every checkpointer purged; the forget not closed yet
)


class HashEmbeddings(LocalEmbeddings):
    """A local embedder without a model: word hashes, through the real caches."""

    model_name = "hash-words"

    @property
    def dimensions(self) -> int:
        return 32

    @property
    def cache_namespace(self) -> str:
        return "hash-words/32"

    def _embed_batch(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, hashlib.sha256(word.encode()).digest()[0] % 32] += 1.0
            out[i, 0] += 0.1
        return out


def open_store(location: str) -> MemoryStore:
    """The store as every process opens it (the embedder with its disk cache)."""
    if is_postgres_url(location):
        return MemoryStore(location, embeddings=HashEmbeddings())
    path = Path(location)
    path.mkdir(exist_ok=True)
    return MemoryStore(path, embeddings=HashEmbeddings(cache_path=path / EMBEDDINGS_CACHE_FILE))


def open_saver(file: Path) -> SqliteSaver:
    """The app's own checkpointer (a SQLite file outside the data directory)."""
    conn = sqlite3.connect(file, check_same_thread=False)
    conn.execute("PRAGMA secure_delete=ON")
    return SqliteSaver(conn)


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(f"noted {i}") for i in range(200)]))


def fill(store: MemoryStore, saver: SqliteSaver) -> None:
    """Conversations of ana (with the secret) and bob, through the graph and the agent."""
    graph = build_memory_graph(_model(), store=store, context_window=WINDOW)
    agent = create_agent(
        _model(),
        checkpointer=saver,
        middleware=[TieredMemoryMiddleware(store, checkpointer=saver, context_window=WINDOW)],
    )
    for user, secret in (("ana", SECRET), ("bob", "bobs jazz club")):
        for i in range(12):  # enough to page turns out: records, vectors, cache entries
            text = f"turn {i}: my code word is {secret}, and I like trains and lamps {i}."
            config = {"configurable": {"user_id": user, "thread_id": f"{user}-graph"}}
            graph.invoke({"messages": [HumanMessage(text)]}, config)
        config = {"configurable": {"user_id": user, "thread_id": f"{user}-agent"}}
        agent.invoke({"messages": [HumanMessage(f"remember {secret} please")]}, config)


def _die(*_: object, **__: object) -> None:
    os._exit(EXIT_CODE)


def _then_die(method: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> None:
        method(*args, **kwargs)
        os._exit(EXIT_CODE)

    return run


def arm(store: MemoryStore, point: str) -> None:
    """Make the next forget end the process at ``point``."""
    records = store.backend.records
    if point == "in the transaction":
        records.forget_rows = _die
    elif point == "after the commit":
        records.finish_forget = _die
    elif point == "after the files":
        store._purge_checkpoints = _die  # type: ignore[method-assign]
    elif point == "between checkpointers":  # the app's saver is purged first, then this one
        store.checkpointer().delete_thread = _die
    elif point == "after the checkpoints":
        store._purge_checkpoints = _then_die(store._purge_checkpoints)  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown point {point!r}; one of {POINTS}")


def main() -> None:
    location, saver_file, point = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    by_words = sys.argv[4:] == ["words"]  # "forget what I said about SECRET" instead
    store = open_store(location)
    saver = open_saver(saver_file)
    fill(store, saver)
    assert store.archive.count("ana") > 0
    if not is_postgres_url(location):  # the disk cache keys a text by its SHA-256
        for record in store.archive.records("ana"):
            digest = hashlib.sha256(record.text.encode()).hexdigest()
            print("digest", digest, int(SECRET in record.text), flush=True)  # 1: names it
    print("ready", flush=True)
    arm(store, point)
    if by_words:
        store.memory("ana", "ana-graph", context_window=WINDOW).forget_about(SECRET)
    else:
        store.forget_user("ana")  # ends the process at the point
    print("forgot", flush=True)
    store.close()


if __name__ == "__main__":
    main()
