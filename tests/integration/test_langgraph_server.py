"""The shipped graph under the real ``langgraph dev`` server, driven by ``langgraph_sdk``.

The server runs from a temporary copy of ``langgraph.json`` and ``graphs/``
(so ``.langgraph_api/`` and the memory's data land in a temp folder, never
in the repository), on a free localhost port, with ``TIERED_MEMORY_MODEL=echo``:
the no-LLM model answers with what the memory put in its prompt, so the test
sees the memory at work end to end, offline.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "memory_agent"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"langgraph dev exited ({proc.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"langgraph dev did not come up in {timeout:.0f}s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


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
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    project = tmp_path_factory.mktemp("served")
    shutil.copy(ROOT / "langgraph.json", project / "langgraph.json")
    shutil.copytree(
        ROOT / "graphs", project / "graphs", ignore=shutil.ignore_patterns("__pycache__")
    )
    home = project / "memory-home"
    log = project / "server.log"
    port = _free_port()
    env = {
        **os.environ,
        "TIERED_MEMORY_MODEL": "echo",
        "TIERED_MEMORY_HOME": str(home),
        "TIERED_MEMORY_CONTEXT_WINDOW": "1024",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    langgraph = Path(sys.executable).with_name("langgraph")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--no-browser", "--no-reload", "--port", str(port)],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_up(url, proc, log, timeout=180)
        yield {"url": url, "project": project, "home": home, "log": log, "proc": proc}
    finally:
        _stop(proc)


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
