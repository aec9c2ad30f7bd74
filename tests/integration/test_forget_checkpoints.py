"""Forgetting reaches every LangGraph checkpoint the package created or was given.

The prebuilt graph keeps its checkpoints in the store's data directory
(``checkpoints.sqlite``); a checkpointer given to the graph or the agent
middleware is attached to the store. ``forget_user`` deletes the user's
threads from all of them - every checkpoint version, not only the latest -
and the bytes of the files hold none of the forgotten text, even when the
forget runs in another process.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import CHECKPOINTS_FILE, MemoryStore

SECRET = "zebrasecret"


def model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(f"reply {i}") for i in range(20)]))


def cfg(user: str, thread: str) -> dict:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def make_store(path: Path) -> MemoryStore:
    return MemoryStore(path, embeddings=DeterministicFakeEmbedding(size=16))


def on_disk(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


def test_the_graphs_default_checkpoints_live_in_the_data_directory_and_are_forgotten(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    store = make_store(data)
    graph = build_memory_graph(model(), store=store, context_window=2048)
    for text in (f"My dog is called {SECRET}.", "And I like tea.", "Thanks!"):
        graph.invoke({"messages": [HumanMessage(text)]}, cfg("ana", "t1"))
    graph.invoke({"messages": [HumanMessage("Bob here, I like jazz.")]}, cfg("bob", "b1"))
    assert (data / CHECKPOINTS_FILE).exists()
    assert len(list(store.checkpointer().list(cfg("ana", "t1")))) > 3  # several versions
    assert SECRET.encode() in on_disk(data)
    store.forget_user("ana")
    assert list(store.checkpointer().list(cfg("ana", "t1"))) == []
    assert list(store.checkpointer().list(cfg("bob", "b1")))  # others untouched
    # the next run on the thread starts from nothing: the state is gone too
    result = graph.invoke({"messages": [HumanMessage("Hi, I'm Ana.")]}, cfg("ana", "t1"))
    assert result["messages"][0].content == "Hi, I'm Ana."
    store.close()
    assert SECRET.encode() not in on_disk(data)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_forget_in_another_process_reaches_the_checkpoints(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with make_store(data) as store:
        graph = build_memory_graph(model(), store=store, context_window=2048)
        graph.invoke({"messages": [HumanMessage(f"I'm allergic to {SECRET}.")]}, cfg("ana", "t1"))
    code = (
        "import sys; from langchain_core.embeddings import DeterministicFakeEmbedding as E; "
        "from langchain_tiered_memory.store import MemoryStore; "
        "s = MemoryStore(sys.argv[1], embeddings=E(size=16)); s.forget_user('ana'); s.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(data)], check=True, timeout=120)
    assert SECRET.encode() not in on_disk(data)
    conn = sqlite3.connect(data / CHECKPOINTS_FILE)
    assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
    conn.close()


def test_a_given_checkpointer_is_purged_for_the_middleware_and_the_graph(tmp_path: Path) -> None:
    data = tmp_path / "data"
    saver_path = tmp_path / "agent-checkpoints.sqlite"
    conn = sqlite3.connect(saver_path, check_same_thread=False)
    conn.execute("PRAGMA secure_delete=ON")
    saver = SqliteSaver(conn)
    store = make_store(data)
    agent = create_agent(
        model(),
        checkpointer=saver,
        middleware=[TieredMemoryMiddleware(store, checkpointer=saver, context_window=2048)],
    )
    agent.invoke({"messages": [HumanMessage(f"My PIN is {SECRET}.")]}, cfg("ana", "a1"))
    agent.invoke({"messages": [HumanMessage("What is my PIN?")]}, cfg("ana", "a1"))
    graph = build_memory_graph(model(), store=store, checkpointer=saver, context_window=2048)
    graph.invoke({"messages": [HumanMessage(f"{SECRET} again")]}, cfg("ana", "g1"))
    assert SECRET.encode() in saver_path.read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("agent-checkpoints.sqlite*")
    )
    store.forget_user("ana")
    assert list(saver.list(cfg("ana", "a1"))) == [] and list(saver.list(cfg("ana", "g1"))) == []
    conn.close()
    store.close()
    assert SECRET.encode() not in b"".join(
        p.read_bytes() for p in tmp_path.glob("agent-checkpoints.sqlite*")
    )
    assert SECRET.encode() not in on_disk(data)


def test_a_purge_never_breaks_a_run_saving_on_the_same_sqlite_saver(tmp_path: Path) -> None:
    # LangGraph saves a run's checkpoints from a background thread, on the connection
    # of the SqliteSaver a forget purges: a statement the purge left in progress there
    # made the run's commit fail ("cannot commit transaction - SQL statements in
    # progress"; a flaky middleware test)
    conn = sqlite3.connect(tmp_path / "agent-checkpoints.sqlite", check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    saver = SqliteSaver(conn)
    store = make_store(tmp_path / "data")
    store.attach_checkpointer(saver)
    errors: list[str] = []
    done = threading.Event()

    def run_saving() -> None:
        config = {"configurable": {"thread_id": "a1", "checkpoint_ns": ""}}
        while not done.is_set():
            try:
                saver.put(config, empty_checkpoint(), {}, {})
            except sqlite3.Error as exc:
                errors.append(str(exc))

    runner = threading.Thread(target=run_saving)
    runner.start()
    try:
        for _ in range(100):
            store.purge_checkpoints(["t-forgotten"])
    finally:
        done.set()
        runner.join()
    assert errors == []
    assert list(saver.list(cfg("ana", "a1")))  # the run's checkpoints were saved
    conn.close()
    store.close()
