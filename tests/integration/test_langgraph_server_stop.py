"""``langgraph dev`` stopped with SIGTERM leaves the vector index written (rough edge 7).

The real server (as ``tests/integration/test_langgraph_server.py`` runs it) serves the
shipped graph over a fresh data directory; a few turns page out into the
archive (fewer than the index's save interval, so only a flush at shutdown
writes the FAISS file); SIGTERM stops it as a process manager would. The next
open must find the index file complete - not rebuild it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-4000:]
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(log.read_text(errors="replace")[-4000:])


def test_sigterm_flushes_the_vector_index(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from langgraph_sdk import get_sync_client

    from langchain_tiered_memory.store import MemoryStore

    project = tmp_path / "served"
    project.mkdir()
    shutil.copy(ROOT / "langgraph.json", project / "langgraph.json")
    shutil.copytree(
        ROOT / "graphs", project / "graphs", ignore=shutil.ignore_patterns("__pycache__")
    )
    home, log, port = project / "memory-home", project / "server.log", _free_port()
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
        _wait_until_up(url, proc, log)
        client = get_sync_client(url=url)
        thread = client.threads.create()["thread_id"]
        for i in range(8):
            result: dict[str, Any] = client.runs.wait(
                thread,
                "memory_agent",
                input={"messages": [{"role": "user", "content": f"Tell me about topic {i}: "
                                     "museums, trams, tiles and food in town, at length."}]},
                config={"configurable": {"user_id": "ana"}},
            )  # fmt: skip
            assert "messages" in result, result
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    faiss = home / "archive.sqlite.faiss"
    assert faiss.is_file(), "the server never wrote the vector index"  # before any reopen
    caplog.set_level(logging.INFO)
    with MemoryStore(home) as store:
        assert store.archive.count("ana") > 0  # turns were paged out and embedded
        assert store.memory("ana", "x").recall("museums trams")
    assert "rebuil" not in caplog.text and "caught up" not in caplog.text, caplog.text
