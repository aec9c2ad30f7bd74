"""The storage conformance suite (``langchain_tiered_memory.testing.conformance``) on every
backend of this package: SQLite + FAISS, the in-memory store, vectors in a LangChain
``VectorStore``, and Postgres + pgvector.

Postgres runs on a real PostgreSQL with pgvector (``pgserver``, see
``tests/conftest.py``), a fresh database per test. Its "files" for the
byte-level forget checks are every row of every table of the database
(``COPY ... TO STDOUT``, checkpoint tables included): what any client of the
database can read. The server's own files are not scanned here, because
Postgres keeps a deleted row's bytes in its heap pages until ``VACUUM``
reclaims them and in the write-ahead log until it is recycled;
``tests/integration/test_postgres.py`` checks the data files after
``backend.vacuum(full=True)`` instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance import (
    Backend,
    BackendConformanceTests,
    Capability,
    files_under,
    stem_embeddings,
)

ON_DISK = {Capability.DURABLE, Capability.FILES}


class TestSQLite(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        tmp: Path = request.getfixturevalue("tmp_path")
        data = tmp / "data"
        return Backend(
            "sqlite",
            lambda: MemoryStore(data, embeddings=stem_embeddings(), index_save_every=1),
            capabilities=ON_DISK,
            files=files_under(tmp),
        )


class TestInMemory(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        shared: list[MemoryStore] = []

        def open_store() -> MemoryStore:
            # one in-memory store per test; "reopening" it is handing out the same object
            if not shared:
                shared.append(MemoryStore(embeddings=stem_embeddings()))
            return shared[0]

        return Backend("memory", open_store)


class TestVectorStore(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        tmp: Path = request.getfixturevalue("tmp_path")
        data = tmp / "data"
        vectors = InMemoryVectorStore(stem_embeddings())  # the "remote" store outlives SQLite
        return Backend(
            "vectorstore",
            lambda: MemoryStore(data, vector_store=vectors),
            capabilities=ON_DISK,
            files=files_under(tmp),
        )


@pytest.mark.postgres  # its database comes from request.getfixturevalue, unseen by the marker
class TestPostgres(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        url = request.getfixturevalue("postgres_url")  # a fresh database (skips without a server)
        dump = request.getfixturevalue("dump_postgres")
        rows: Path = request.getfixturevalue("tmp_path") / "postgres-rows.copy"

        def files() -> list[Path]:
            rows.write_bytes(dump(url))  # every row of every table, as a client sees them
            return [rows]

        return Backend(
            "postgres",
            lambda: MemoryStore(url, embeddings=stem_embeddings()),
            capabilities=ON_DISK,
            files=files,
        )
