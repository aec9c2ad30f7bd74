"""The storage conformance suite: what every backend of a ``MemoryStore`` must pass.

Every backend of this package runs it - SQLite + FAISS, the in-memory store,
vectors in a LangChain ``VectorStore``, Postgres + pgvector - and so can yours:
subclass :class:`BackendConformanceTests` in a test file, implement
:meth:`~BackendConformanceTests.make_backend` (the backend-factory hook: how to
open a store on this test's data, and the :class:`Capability` flags it
declares), and run pytest. It needs ``pytest``; it uses only the public API.

The tests, by module: :mod:`.records` (the archive: isolation, filters,
idempotency, updates, deletes), :mod:`.threads` (the turn log: views,
idempotent adds, compression by compare-and-set, reopen), :mod:`.facts` (core
facts: many writers, conditional writes, history), :mod:`.forget`
(forgetting: total, durable, honoured by every open view, checked byte by
byte with :attr:`Capability.FILES`) and :mod:`.expiry` (nothing expired is
read; the sweep deletes it as a forget does).

Example (a test file)::

    import pytest
    from langchain_tiered_memory.store import MemoryStore
    from langchain_tiered_memory.testing.conformance import (
        Backend, BackendConformanceTests, Capability, files_under, stem_embeddings,
    )

    class TestMyBackend(BackendConformanceTests):
        def make_backend(self, request: pytest.FixtureRequest) -> Backend:
            data = request.getfixturevalue("tmp_path") / "data"
            return Backend(
                "mine",
                lambda: MemoryStore(data, vector_store=MyVectorStore(stem_embeddings())),
                capabilities={Capability.DURABLE, Capability.FILES},
                files=files_under(data),
            )

A test that needs a capability the backend does not declare is skipped with
the reason (the in-memory store is not :attr:`~Capability.DURABLE`); every
other test must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

try:
    import pytest
except ImportError as exc:  # pragma: no cover - pytest is what runs the suite
    raise ImportError(
        "langchain_tiered_memory.testing.conformance is a pytest suite: pip install pytest"
    ) from exc

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance import expiry, facts, forget, records, threads
from langchain_tiered_memory.testing.conformance.backend import (
    STEMS,
    Backend,
    Capability,
    file_bytes,
    files_under,
    stem_embeddings,
)

__all__ = [
    "SPEC_MODULES",
    "STEMS",
    "Backend",
    "BackendConformanceTests",
    "Capability",
    "file_bytes",
    "files_under",
    "spec_tests",
    "stem_embeddings",
]

#: The modules whose ``test_*`` functions make the suite, in report order.
SPEC_MODULES: tuple[ModuleType, ...] = (records, threads, facts, forget, expiry)


def spec_tests() -> dict[str, Callable[..., Any]]:
    """Every test of the suite by name (the ``test_*`` functions of :data:`SPEC_MODULES`).

    Example:
        >>> tests = spec_tests()
        >>> "test_forget_user_removes_every_tier_and_leaves_others" in tests, len(tests) > 20
        (True, True)
    """
    found: dict[str, Callable[..., Any]] = {}
    for module in SPEC_MODULES:
        for name, value in vars(module).items():
            if name.startswith("test_") and callable(value):
                assert name not in found, f"two conformance tests are called {name}"
                found[name] = value
    return found


class BackendConformanceTests:
    """The suite as a pytest class: subclass it and implement :meth:`make_backend`.

    Each test gets a fresh backend from the hook (fixture ``backend``) or a
    store opened on it (fixture ``store``); every store it opened is closed
    after the test.
    """

    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        """The backend-factory hook: a :class:`Backend` on fresh, empty data.

        ``request`` reaches any fixture (``request.getfixturevalue("tmp_path")``,
        a database of your own).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_backend()")

    @pytest.fixture
    def backend(self, request: pytest.FixtureRequest) -> Iterator[Backend]:
        made = self.make_backend(request)
        try:
            yield made
        finally:
            made.close()

    @pytest.fixture
    def store(self, backend: Backend) -> MemoryStore:
        return backend.open()


for _name, _test in spec_tests().items():
    setattr(BackendConformanceTests, _name, staticmethod(_test))
del _name, _test
