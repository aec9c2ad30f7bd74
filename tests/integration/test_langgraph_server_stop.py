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
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.subprocess]


def test_sigterm_flushes_the_vector_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, serve_graph: Callable[[Path], Any]
) -> None:
    from langgraph_sdk import get_sync_client

    from langchain_tiered_memory.store import MemoryStore

    served = serve_graph(tmp_path / "served")
    proc, home = served.proc, served.home
    try:
        client = get_sync_client(url=served.url)
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
