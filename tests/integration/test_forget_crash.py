"""A forget killed at any step is finished by the next open or by a retry, checkpoints included.

A worker process (``tests/integration/forget_crash_worker.py``) fills a memory - ana and
bob, through the prebuilt graph (the store's own checkpointer) and through
``create_agent`` with the middleware (a checkpointer the app attached) - and
then forgets ana and dies at one step of the forget (``os._exit``: no
cleanup), from inside its transaction to just before it is closed. Then
either

* **open**: a new process opens the store and attaches its checkpointer
  again, as the restarted app does; or
* **retry**: a store that was open all along (another worker) calls
  ``forget_user("ana")`` again, with the same checkpointer attached.

Afterwards no byte of any file - the data directory (archive, write-ahead
log, vector index, embedding cache, the graph's checkpoints) and the app's
checkpoint file - holds ana's secret or the embedding-cache key of any of
her texts; on Postgres no row of any table holds it. Bob's memory and
checkpoints are whole. A crash before the commit forgot nothing (the forget
was never acknowledged); the retry then forgets all.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from langchain_tiered_memory.store import MemoryStore

WORKER = Path(__file__).with_name("forget_crash_worker.py")


def _worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("forget_crash_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


worker = _worker()
SECRET = worker.SECRET.encode()
POINTS = worker.POINTS


def crash(
    location: str, saver_file: Path, point: str, *mode: str, naming: bool = False
) -> list[str]:
    """Run the worker, which dies at ``point``; the cache keys of ana's texts it printed
    (``naming``: of those that hold the secret)."""
    done = subprocess.run(
        [sys.executable, str(WORKER), location, str(saver_file), point, *mode],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == worker.EXIT_CODE, (done.returncode, done.stdout, done.stderr)
    assert "ready" in done.stdout and "forgot" not in done.stdout  # it died inside the forget
    return [
        line.split()[1]
        for line in done.stdout.splitlines()
        if line.startswith("digest ") and (not naming or line.endswith(" 1"))
    ]


def _files(*roots: Path) -> bytes:
    out = b""
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.parent.glob(root.name + "*"))
        if root.is_dir():
            paths = sorted(p for p in root.rglob("*") if p.is_file())
        out += b"".join(p.read_bytes() for p in paths if p.is_file())
    return out


def _threads(saver: Any) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in saver.list(None)}


def check_forgotten(store: MemoryStore, saver: Any, dump: Callable[[], bytes]) -> None:
    """Ana is gone from the memory and both checkpointers; bob is whole."""
    assert store.archive.count("ana") == 0 and store.threads("ana") == []
    assert store.core("ana").active() == []
    assert store.archive.count("bob") > 0 and len(store.threads("bob")) == 2
    assert _threads(saver) == {"bob-agent"}
    assert _threads(store.checkpointer()) >= {"bob-graph"}
    assert not {"ana-graph", "ana-agent"} & _threads(store.checkpointer())
    assert dump().count(SECRET) == 0


def check_untouched(store: MemoryStore, saver: Any) -> None:
    """A crash before the commit forgot nothing: the forget was never acknowledged."""
    assert store.archive.count("ana") > 0 and len(store.threads("ana")) == 2
    assert "ana-agent" in _threads(saver)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_forget_is_finished_by_the_next_open(tmp_path: Path, point: str) -> None:
    data, saver_file = tmp_path / "data", tmp_path / "app-checkpoints.sqlite"
    digests = crash(str(data), saver_file, point)
    left = _files(data, saver_file)
    if point != POINTS[-1]:  # the crash left the chat behind (checkpoints at least)
        assert SECRET in left
    if point in POINTS[:2]:  # the embedding cache not purged yet: its keys are on disk
        assert digests and all(d.encode() in left for d in digests)
    store = worker.open_store(str(data))  # the restarted app: open...
    saver = store.attach_checkpointer(worker.open_saver(saver_file))  # ...and attach its saver
    if point == "in the transaction":
        check_untouched(store, saver)
        store.forget_user("ana")  # the user asks again
    check_forgotten(store, saver, lambda: b"")
    saver.conn.close()
    store.close()
    on_disk = _files(data, saver_file)
    assert SECRET not in on_disk
    assert not [d for d in digests if d.encode() in on_disk]  # no cache key of a forgotten text


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_forget_is_finished_by_a_retry(tmp_path: Path, point: str) -> None:
    data, saver_file = tmp_path / "data", tmp_path / "app-checkpoints.sqlite"
    data.mkdir()
    worker.open_store(str(data)).close()  # the directory exists before the other worker
    store = worker.open_store(str(data))  # a worker open all along (its open had nothing to do)
    saver = store.attach_checkpointer(worker.open_saver(saver_file))
    digests = crash(str(data), saver_file, point)
    store.forget_user("ana")  # the retry
    check_forgotten(store, saver, lambda: b"")
    saver.conn.close()
    store.close()
    on_disk = _files(data, saver_file)
    assert SECRET not in on_disk
    assert not [d for d in digests if d.encode() in on_disk]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("then", ["open", "retry"])
def test_a_killed_forget_on_postgres_is_finished(
    tmp_path: Path, postgres_url: str, dump_postgres: Any, point: str, then: str
) -> None:
    saver_file = tmp_path / "app-checkpoints.sqlite"
    store = worker.open_store(postgres_url) if then == "retry" else None
    crash(postgres_url, saver_file, point)
    if store is None:
        store = worker.open_store(postgres_url)
    saver = store.attach_checkpointer(worker.open_saver(saver_file))
    if then == "open" and point == "in the transaction":
        check_untouched(store, saver)
    if then == "retry" or point == "in the transaction":
        store.forget_user("ana")
    check_forgotten(store, saver, lambda: dump_postgres(postgres_url))
    saver.conn.close()
    store.close()
    assert SECRET not in _files(saver_file)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_conversation_started_after_the_forget_is_kept_by_later_attaches(
    tmp_path: Path,
) -> None:
    """A recovered forget purges each checkpointer attached later - of the threads that
    hold checkpoints from before the forget; a thread begun after it is a new conversation."""
    from langchain_core.messages import HumanMessage

    data, saver_file = tmp_path / "data", tmp_path / "app-checkpoints.sqlite"
    crash(str(data), saver_file, "after the files")
    with worker.open_store(str(data)) as store:  # recovers the forget (the app's saver unknown)
        assert [i.threads for i in store.backend.recovered_forgets()] == [
            ("ana-agent", "ana-graph")
        ]
        later = tmp_path / "later-checkpoints.sqlite"
        fresh = worker.open_saver(later)
        graph = worker.build_memory_graph(
            worker._model(), store=store, checkpointer=fresh, context_window=worker.WINDOW
        )
        config = {"configurable": {"user_id": "ana", "thread_id": "ana-graph"}}
        graph.invoke({"messages": [HumanMessage("Hello again, I'm new here.")]}, config)
        fresh.conn.close()
    with worker.open_store(str(data)) as store:  # the next restart attaches both again
        old = store.attach_checkpointer(worker.open_saver(saver_file))
        new = store.attach_checkpointer(worker.open_saver(later))
        assert _threads(old) == {"bob-agent"}  # ana's pre-forget thread went
        assert _threads(new) == {"ana-graph"}  # the conversation after the forget stays
        assert SECRET not in _files(saver_file)
        old.conn.close()
        new.conn.close()


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_forget_by_words_is_finished_by_the_next_open(tmp_path: Path, point: str) -> None:
    """ "Forget what I said about X" killed at each step: the next open (and attach)
    finishes it - every turn, record, cache key and checkpoint holding X goes."""
    data, saver_file = tmp_path / "data", tmp_path / "app-checkpoints.sqlite"
    digests = crash(str(data), saver_file, point, "words", naming=True)
    assert digests
    store = worker.open_store(str(data))
    saver = store.attach_checkpointer(worker.open_saver(saver_file))
    if point == "in the transaction":
        check_untouched(store, saver)
        store.memory("ana", "ana-graph", context_window=worker.WINDOW).forget_about(worker.SECRET)
    assert not any(worker.SECRET in r.text for r in store.archive.records("ana"))
    assert store.archive.count("bob") > 0 and len(store.threads("bob")) == 2
    assert _threads(saver) == {"bob-agent"}
    assert not {"ana-graph", "ana-agent"} & _threads(store.checkpointer())
    saver.conn.close()
    store.close()
    on_disk = _files(data, saver_file)
    assert SECRET not in on_disk
    assert not [d for d in digests if d.encode() in on_disk]
