"""A forget said inside a run is honoured by that run's own checkpoint writes.

"Please delete everything you know about me" sent through the prebuilt graph
or an agent with the memory middleware forgets the user while the run goes
on: LangGraph then saves the run's next steps - the old messages still in
the state - after the forget deleted the thread's checkpoints. The run's last
step (``update_memory``, the middleware's ``after_agent``) deletes the thread
again once those saves are done and writes a state without the forgotten
messages, so after the run no checkpoint - no byte of the saver's SQLite
file, no row of the Postgres checkpoint tables - holds them. The same holds
for a forget made by another process while the run is in the model call.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import CHECKPOINTS_FILE, MemoryStore

MARKER = "zebrasecret"
FORGET = "Please delete everything you know about me"


def model(on_call: Callable[[], None] | None = None) -> GenericFakeChatModel:
    """A fake model; ``on_call`` runs inside each call (another process's forget)."""

    class Model(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            if on_call is not None:
                on_call()
            return super()._generate(*args, **kwargs)

    return Model(messages=iter([AIMessage(f"reply {i}") for i in range(40)]))


def cfg(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def sqlite_saver(path: Path) -> SqliteSaver:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA secure_delete=ON")
    return SqliteSaver(conn)


def occurrences(raw: bytes, text: str) -> int:
    """How often ``text`` is in ``raw`` (for Postgres, ``dump_postgres`` holds the
    decoded ``bytea`` of LangGraph's checkpoint blobs too)."""
    return raw.count(text.encode())


def file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())


def chat(run: Callable[[str, dict[str, Any]], Any]) -> None:
    """Ana tells the marker over three turns; bob talks on his own thread."""
    for text in (f"My dog is called {MARKER}.", f"{MARKER} loves trains.", "And I like tea."):
        run(text, cfg("ana", "t1"))
    run("Bob here, I like jazz.", cfg("bob", "b1"))


def check_after(
    store: MemoryStore, saver: Any, out: dict[str, Any], raw: Callable[[], bytes]
) -> None:
    """After the forget run: the thread's checkpoints hold nothing forgotten."""
    assert occurrences(raw(), MARKER) == 0
    assert occurrences(raw(), FORGET) == 0
    assert [m.content for m in out["messages"]] == [out["messages"][-1].content]  # the reply
    checkpoints = list(saver.list(cfg("ana", "t1")))
    assert len(checkpoints) == 1  # the run's last step: the one state left
    [latest] = checkpoints
    messages = latest.checkpoint["channel_values"]["messages"]
    assert [m.type for m in messages] == ["ai"]
    assert latest.checkpoint["channel_values"]["memory_user_id"] == "ana"
    assert list(saver.list(cfg("bob", "b1")))  # others untouched
    assert store.archive.count("ana") == 0


def test_the_graph_s_own_checkpoints_hold_nothing_after_an_in_run_forget(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16))
    graph = build_memory_graph(model(), store=store, context_window=2048)
    chat(lambda text, config: graph.invoke({"messages": [HumanMessage(text)]}, config))
    assert MARKER.encode() in file_bytes(data / CHECKPOINTS_FILE)
    out = graph.invoke({"messages": [HumanMessage(FORGET)]}, cfg("ana", "t1"))
    check_after(store, store.checkpointer(), out, lambda: file_bytes(data / CHECKPOINTS_FILE))
    nxt = graph.invoke({"messages": [HumanMessage("Hi, I'm Ana again.")]}, cfg("ana", "t1"))
    assert [m.content for m in nxt["messages"]][-2:] == [
        "Hi, I'm Ana again.",
        nxt["messages"][-1].content,
    ]
    store.close()
    assert MARKER.encode() not in b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())


@pytest.mark.parametrize("path", ["graph", "middleware"])
def test_a_given_sqlite_checkpointer_holds_nothing_after_an_in_run_forget(
    tmp_path: Path, path: str
) -> None:
    store = MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16))
    saver_file = tmp_path / "agent-checkpoints.sqlite"
    saver = sqlite_saver(saver_file)
    run = _runner(store, saver, path)
    chat(run)
    assert occurrences(file_bytes(saver_file), MARKER) > 0
    out = run(FORGET, cfg("ana", "t1"))
    check_after(store, saver, out, lambda: file_bytes(saver_file))
    saver.conn.close()
    store.close()


@pytest.mark.parametrize("path", ["graph", "middleware"])
def test_postgres_checkpoints_hold_nothing_after_an_in_run_forget(
    postgres_url: str, dump_postgres: Any, path: str
) -> None:
    store = MemoryStore(postgres_url, embeddings=DeterministicFakeEmbedding(size=16))
    saver = store.checkpointer()  # PostgresSaver on the same database
    run = _runner(store, saver, path)
    chat(run)
    assert occurrences(dump_postgres(postgres_url), MARKER) > 0
    out = run(FORGET, cfg("ana", "t1"))
    check_after(store, saver, out, lambda: dump_postgres(postgres_url))
    again = run("Hi, I'm Ana again.", cfg("ana", "t1"))  # the one state left loads
    assert again["messages"][-1].type == "ai"
    store.close()


def test_a_forget_by_another_process_during_the_run_is_honoured(tmp_path: Path) -> None:
    """The user is forgotten while the run is in the model call (another worker's
    forget): the run's later checkpoints would bring the chat back."""
    data = tmp_path / "data"
    store = MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16))
    other = MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16))
    armed: list[bool] = []

    def forget_elsewhere() -> None:
        if armed:
            armed.clear()
            other.forget_user("ana")

    graph = build_memory_graph(model(forget_elsewhere), store=store, context_window=2048)
    chat(lambda text, config: graph.invoke({"messages": [HumanMessage(text)]}, config))
    armed.append(True)
    graph.invoke({"messages": [HumanMessage("What is my dog called?")]}, cfg("ana", "t1"))
    assert file_bytes(data / CHECKPOINTS_FILE).count(MARKER.encode()) == 0
    assert len(list(store.checkpointer().list(cfg("ana", "t1")))) == 1
    other.close()
    store.close()


def _runner(store: MemoryStore, saver: Any, path: str) -> Callable[[str, dict[str, Any]], Any]:
    if path == "graph":
        graph = build_memory_graph(model(), store=store, checkpointer=saver, context_window=2048)
        return lambda text, config: graph.invoke({"messages": [HumanMessage(text)]}, config)
    agent = create_agent(
        model(),
        checkpointer=saver,
        middleware=[TieredMemoryMiddleware(store, checkpointer=saver, context_window=2048)],
    )
    return lambda text, config: agent.invoke({"messages": [HumanMessage(text)]}, config)


def words_chat(run: Callable[[str, dict[str, Any]], Any]) -> None:
    """Ana moves twice (the second city is the marker); bob names the marker too."""
    for text in ("I moved to Lisbon last month.", f"Actually we moved again, to {MARKER}."):
        run(text, cfg("ana", "t1"))
    run(f"Bob here, {MARKER} is nice.", cfg("bob", "b1"))


def check_words_forgotten(store: MemoryStore, saver: Any, raw: Callable[[], bytes]) -> None:
    """After "forget what I said about MARKER": only bob's checkpoints name it."""
    ana = list(saver.list(cfg("ana", "t1")))
    assert ana and not any(MARKER in repr(c.checkpoint) for c in ana)
    assert any(MARKER in repr(c.checkpoint) for c in saver.list(cfg("bob", "b1")))
    assert occurrences(raw(), MARKER) <= occurrences(raw(), "Bob here")  # bob's, no more
    memory = store.memory("ana", "t1", context_window=2048)
    assert MARKER not in repr(memory.build_context().messages)
    assert any("Lisbon" in str(m.content) for m in memory.messages)  # the rest stays


@pytest.mark.slow  # under load, LangGraph's background saves can make it wait 10 s
@pytest.mark.parametrize("path", ["graph", "middleware"])
def test_a_forget_by_words_in_a_run_leaves_no_checkpoint_with_them(
    tmp_path: Path, path: str
) -> None:
    store = MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16))
    saver_file = tmp_path / "agent-checkpoints.sqlite"
    saver = sqlite_saver(saver_file)
    run = _runner(store, saver, path)
    words_chat(run)
    assert any(MARKER in repr(c.checkpoint) for c in saver.list(cfg("ana", "t1")))
    run(f"Forget what I said about {MARKER}.", cfg("ana", "t1"))
    check_words_forgotten(store, saver, lambda: file_bytes(saver_file))
    again = run("Where do I live now?", cfg("ana", "t1"))  # the state left loads
    assert again["messages"][-1].type == "ai"
    saver.conn.close()
    store.close()


def test_postgres_checkpoints_forget_words_said_in_a_run(
    postgres_url: str, dump_postgres: Any
) -> None:
    store = MemoryStore(postgres_url, embeddings=DeterministicFakeEmbedding(size=16))
    saver = store.checkpointer()
    run = _runner(store, saver, "graph")
    words_chat(run)
    run(f"Forget what I said about {MARKER}.", cfg("ana", "t1"))
    check_words_forgotten(store, saver, lambda: dump_postgres(postgres_url))
    store.close()
