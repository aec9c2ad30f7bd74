"""The shipped graph under the real ``langgraph dev`` server, driven by ``langgraph_sdk``.

The server runs from a temporary copy of ``langgraph.json`` and ``graphs/``
(so ``.langgraph_api/`` and the memory's data land in a temp folder, never
in the repository), on a free localhost port, with ``TIERED_MEMORY_MODEL=echo``:
the no-LLM model answers with what the memory put in its prompt, so the test
sees the memory at work end to end, offline.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "memory_agent"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and the workers it started (its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, serve_graph: Callable[[Path], Any]
) -> Iterator[dict[str, Any]]:
    served = serve_graph(tmp_path_factory.mktemp("served"))
    try:
        yield {
            "url": served.url,
            "project": served.project,
            "home": served.home,
            "log": served.log,
            "proc": served.proc,
        }
    finally:
        _stop(served.proc)


def _say(client: Any, thread: str, text: str, user: str | None, **kwargs: Any) -> dict[str, Any]:
    config = {"configurable": {"user_id": user}} if user else None
    result: dict[str, Any] = client.runs.wait(
        thread,
        GRAPH,
        input={"messages": [{"role": "user", "content": text}]},
        config=config,
        **kwargs,
    )
    return result


def _reply(state: dict[str, Any]) -> str:
    return str(state["messages"][-1]["content"])


def test_served_graph_remembers_per_user_and_refuses_other_users(server) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server["url"])
    assert [a["graph_id"] for a in client.assistants.search(graph_id=GRAPH)] == [GRAPH]

    ana = client.threads.create()["thread_id"]
    first = _say(client, ana, "Hi, I'm Ana. I'm allergic to peanuts.", "ana")
    assert _reply(first).startswith("[echo model")
    assert "allergic to peanuts" in first["core_memory"]
    assert first["memory_user_id"] == "ana"

    # a later turn on the same thread: core memory is in the prompt the model got
    second = _say(client, ana, "Can you suggest a snack for my flight?", "ana")
    assert "core memory:" in _reply(second) and "peanuts" in _reply(second)
    state = client.threads.get_state(ana)["values"]
    assert state["gate"]["recall"] is True and state["gate"]["reason"]

    # enough turns to page the first ones out of the 1,024-token window's buffer
    _say(client, ana, "My hotel in Porto is called Casa Azul, near the river.", "ana")
    for i in range(6):
        _say(
            client,
            ana,
            f"Tell me something about topic {i}: museums, trams, tiles and food in town, "
            "and the best time of day to visit each of them on a long weekend trip.",
            "ana",
        )
    asked = _say(client, ana, "What was the name of my hotel in Porto again?", "ana")
    assert asked["gate"]["recall"] is True, asked["gate"]
    assert "remember" in asked["gate"]["reason"] or asked["gate"]["reason"]
    recalled = " ".join(r["text"] for r in asked["recalled"])
    assert "Casa Azul" in recalled  # from the archive, not from the buffer
    assert "Casa Azul" in _reply(asked)  # ... and it reached the model's prompt
    assert all(
        "Casa Azul" not in m["content"] for m in asked["messages"][:-2]
    )  # the turn itself left the graph state (paged out)

    # a second user, on their own thread, sees none of Ana's memory
    bob = client.threads.create()["thread_id"]
    hello = _say(client, bob, "Hello, I'm Bob and I live in Oslo. Any snack ideas?", "bob")
    assert "peanuts" not in _reply(hello) and "Casa Azul" not in _reply(hello)
    assert "peanuts" not in hello.get("core_memory", "")

    # ... and is refused on Ana's thread, which stays as it was
    before = client.threads.get_state(ana)["values"]["messages"]
    refused = _say(client, ana, "What is Ana allergic to?", "bob", raise_error=False)
    assert "belongs to another user" in str(refused.get("__error__")), refused
    assert client.threads.get_state(ana)["values"]["messages"] == before

    # a run that names no user is refused too (no shared "default" user)
    nobody = client.threads.create()["thread_id"]
    unnamed = _say(client, nobody, "Who am I?", None, raise_error=False)
    assert "No user id" in str(unnamed.get("__error__")), unnamed

    # the context form names the user too; the server mirrors it into the config
    later = client.runs.wait(
        client.threads.create()["thread_id"],
        GRAPH,
        input={"messages": [{"role": "user", "content": "What am I allergic to?"}]},
        context={"user_id": "ana"},
    )
    assert "peanuts" in _reply(later)


def test_server_writes_nothing_into_the_repository(server) -> None:
    assert (server["project"] / ".langgraph_api").is_dir()
    assert server["home"].is_dir()  # the memory's data went where TIERED_MEMORY_HOME says
    assert ".langgraph_api/" in (ROOT / ".gitignore").read_text().splitlines()
