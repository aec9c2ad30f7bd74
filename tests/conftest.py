"""Shared fixtures. Tests never need ../shared: they use tests/fixtures."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.testing import StemAxisEmbeddings

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test on a real PostgreSQL (it uses :func:`postgres_server`) is marked ``postgres``."""
    for item in items:
        if "postgres_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def counter() -> OpenAITokenCounter:
    return OpenAITokenCounter("gpt-4o-mini")


@pytest.fixture(scope="session")
def locomo_fixture() -> Path:
    # a small synthetic conversation in LoCoMo format, written for these tests
    return FIXTURES / "synthetic_conversation.json"


@pytest.fixture(scope="session")
def stem_axis() -> type[StemAxisEmbeddings]:
    """The :class:`StemAxisEmbeddings` class (test modules cannot import conftest)."""
    return StemAxisEmbeddings


# -- a real PostgreSQL with pgvector (pgserver), for the Postgres backend's tests ---------
#
# One server per test session, started on first use (under a second once
# initialised; initdb takes a few seconds) on a Unix socket in a temporary
# directory, and a fresh database for every test. TIERED_MEMORY_TEST_POSTGRES=<admin
# URL> uses another server instead. Where no server can be had the tests skip with
# the reason - unless TIERED_MEMORY_REQUIRE_POSTGRES=1 (CI sets it): then they fail.


def _postgres_unavailable(reason: str) -> None:
    if os.environ.get("TIERED_MEMORY_REQUIRE_POSTGRES"):
        pytest.fail(f"PostgreSQL is required here but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The admin URL of a PostgreSQL server with pgvector (skips where none can start)."""
    given = os.environ.get("TIERED_MEMORY_TEST_POSTGRES")
    if given:
        yield given
        return
    try:
        import pgserver
    except ImportError as exc:
        _postgres_unavailable(
            f"pgserver is not installed ({exc}): pip install -e '.[dev]' -e ./benchmarks"
        )
    try:
        server = pgserver.get_server(tempfile.mkdtemp(prefix="tm-pg-"), cleanup_mode="delete")
    except Exception as exc:  # noqa: BLE001 - any failure to start is a reason to skip
        _postgres_unavailable(f"pgserver could not start PostgreSQL: {exc!r}")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL of a fresh, empty database on :func:`postgres_server` (dropped afterwards)."""
    import psycopg

    from langchain_tiered_memory.storage.postgres.db import with_database

    name = f"tm_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_BYTEA = re.compile(rb"\\\\x((?:[0-9a-f]{2})+)")


def postgres_rows(url: str) -> bytes:
    """Every row of every table of the database at ``url`` (``COPY ... TO STDOUT``).

    ``COPY`` writes ``bytea`` values (LangGraph's checkpoint blobs) as hex; their
    decoded bytes are appended, so a search for a text finds it there too.
    """
    import psycopg

    out = bytearray()
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "ORDER BY tablename"
            ).fetchall()
        ]
        with conn.cursor() as cur:
            for table in tables:
                with cur.copy(f'COPY "{table}" TO STDOUT') as copy:
                    for data in copy:
                        out += bytes(data)
    decoded = b"".join(bytes.fromhex(m.group(1).decode()) for m in _BYTEA.finditer(bytes(out)))
    return bytes(out) + decoded


@pytest.fixture(scope="session")
def dump_postgres() -> object:
    """:func:`postgres_rows` (test modules cannot import conftest)."""
    return postgres_rows


#: The repository (the graph and ``langgraph.json`` the server tests serve).
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ServedProject:
    """A ``langgraph dev`` serving a temporary copy of the repository's graph."""

    url: str
    project: Path
    home: Path
    log: Path
    proc: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _serve_graph(project: Path, timeout: float = 180) -> ServedProject:
    """Copy ``langgraph.json`` and ``graphs/`` into ``project`` and start the real
    ``langgraph dev`` there (its own process group, a free localhost port, the echo
    model, the memory's data in ``project/memory-home``); return once ``/ok`` answers."""
    project.mkdir(parents=True, exist_ok=True)
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
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"langgraph dev exited ({proc.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return ServedProject(url, project, home, log, proc)
        except OSError:
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    raise AssertionError(f"langgraph dev did not come up in {timeout:.0f}s:\n{_tail(log)}")


@pytest.fixture(scope="session")
def serve_graph() -> Callable[[Path], ServedProject]:
    """Starts ``langgraph dev`` over a copy of the shipped graph (see :func:`_serve_graph`);
    the caller stops it."""
    return _serve_graph
