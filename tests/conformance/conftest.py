"""The storage conformance suite: every backend passes the same tests.

Each backend is a :class:`Backend`: how to open (and reopen) a
:class:`~langchain_tiered_memory.store.MemoryStore` on it, whether it lasts
across a reopen, and which files it writes (for the byte-level forget
checks). The tests only use the public API, so a new backend joins by
adding one entry to :data:`BACKENDS`.

Postgres runs on a real PostgreSQL with pgvector (``pgserver``, see
``tests/conftest.py``), a fresh database per test. Its "files" for the
byte-level forget checks are every row of every table of the database
(``COPY ... TO STDOUT``, checkpoint tables included): what any client of the
database can read. The server's own files are not scanned here, because
Postgres keeps a deleted row's bytes in its heap pages until ``VACUUM``
reclaims them and in the write-ahead log until it is recycled;
``tests/test_postgres.py`` checks the data files after
``backend.vacuum(full=True)`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing import StemAxisEmbeddings

#: Word stems the fake embedder has an axis for (texts sharing one are similar).
STEMS = (
    "peanut",
    "allerg",
    "berlin",
    "paris",
    "jazz",
    "tea",
    "coffee",
    "cat",
    "dog",
    "train",
    "zebra",
    "lamp",
    "secret",
)


def _stems() -> StemAxisEmbeddings:
    """Fast, predictable dense search: one axis per stem of :data:`STEMS`."""
    return StemAxisEmbeddings(STEMS)


@dataclass
class Backend:
    """One storage backend under test.

    Attributes:
        name: The test id.
        open: Opens a store on the backend's data (again: same data).
        durable: Data survives ``close()`` and a new ``open()``.
        files: The files the backend writes (scanned byte by byte after a
            forget); empty for a backend that keeps nothing in files here.
        opened: Stores opened by the test (closed at teardown).
    """

    name: str
    open_store: Callable[[], MemoryStore]
    durable: bool
    files: Callable[[], list[Path]] = lambda: []
    opened: list[MemoryStore] = field(default_factory=list)

    def open(self) -> MemoryStore:
        store = self.open_store()
        self.opened.append(store)
        return store


def _files(root: Path) -> Callable[[], list[Path]]:
    return lambda: sorted(p for p in root.rglob("*") if p.is_file())


def _sqlite(request: pytest.FixtureRequest) -> Backend:
    path = request.getfixturevalue("tmp_path") / "data"
    return Backend(
        "sqlite",
        lambda: MemoryStore(path, embeddings=_stems(), index_save_every=1),
        durable=True,
        files=_files(path.parent),
    )


def _memory(request: pytest.FixtureRequest) -> Backend:
    shared: list[MemoryStore] = []

    def open_store() -> MemoryStore:
        # one in-memory store per test; "reopening" it is handing out the same object
        if not shared:
            shared.append(MemoryStore(embeddings=_stems()))
        return shared[0]

    return Backend("memory", open_store, durable=False)


def _vectorstore(request: pytest.FixtureRequest) -> Backend:
    path = request.getfixturevalue("tmp_path") / "data"
    vectors = InMemoryVectorStore(_stems())  # the "remote" store outlives the SQLite side
    return Backend(
        "vectorstore",
        lambda: MemoryStore(path, vector_store=vectors),
        durable=True,
        files=_files(path.parent),
    )


def _postgres(request: pytest.FixtureRequest) -> Backend:
    url = request.getfixturevalue("postgres_url")  # a fresh database (skips without a server)
    dump = request.getfixturevalue("dump_postgres")
    rows = request.getfixturevalue("tmp_path") / "postgres-rows.copy"

    def files() -> list[Path]:
        rows.write_bytes(dump(url))  # every row of every table, as a client sees them
        return [rows]

    return Backend("postgres", lambda: MemoryStore(url, embeddings=_stems()), True, files)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Backend]] = {
    "sqlite": _sqlite,
    "memory": _memory,
    "vectorstore": _vectorstore,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    made = BACKENDS[request.param](request)
    yield made
    for store in reversed(made.opened):
        store.close()  # idempotent: a test may have closed it already


@pytest.fixture
def store(backend: Backend) -> MemoryStore:
    return backend.open()


def file_bytes(backend: Backend) -> bytes:
    """Every byte of every file the backend wrote."""
    return b"".join(p.read_bytes() for p in backend.files())
