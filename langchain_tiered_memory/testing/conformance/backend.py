"""A storage backend under test: how to open a store on it, and what it can do.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> data = Path(tempfile.mkdtemp()) / "data"
    >>> backend = Backend(
    ...     "sqlite",
    ...     lambda: MemoryStore(data, embeddings=stem_embeddings()),
    ...     capabilities={Capability.DURABLE, Capability.FILES},
    ...     files=files_under(data),
    ... )
    >>> store = backend.open()
    >>> backend.durable, [p.name for p in backend.files()][:1]
    (True, ['archive.sqlite'])
    >>> backend.close()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.embeddings import StemAxisEmbeddings

__all__ = ["STEMS", "Backend", "Capability", "file_bytes", "files_under", "stem_embeddings"]


class Capability(str, Enum):
    """What a backend can do beyond the base contract (which every backend passes).

    A test that needs a capability the backend does not declare is skipped
    with the reason; one the backend declares must pass.
    """

    #: Its data survives ``close()`` and a new ``open()`` (a file, a database).
    DURABLE = "durable"
    #: The bytes it keeps can be read back (:attr:`Backend.files`): a forget is
    #: checked byte by byte - nothing forgotten is left in any of them.
    FILES = "files"


#: Word stems :func:`stem_embeddings` has an axis for (texts sharing one are similar).
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


def stem_embeddings() -> StemAxisEmbeddings:
    """The suite's embedder: fast, predictable dense search over :data:`STEMS`."""
    return StemAxisEmbeddings(STEMS)


def files_under(root: Path) -> Callable[[], list[Path]]:
    """A :attr:`Backend.files` hook: every file under ``root``, at the time of the call."""
    return lambda: sorted(p for p in root.rglob("*") if p.is_file())


def _no_files() -> list[Path]:
    return []


class Backend:
    """One storage backend under test (what :meth:`make_backend` returns).

    Attributes:
        name: What the reports call it.
        open_store: Opens a :class:`~langchain_tiered_memory.store.MemoryStore`
            on this test's data - called again, on the same data (a reopen). Use
            :func:`stem_embeddings` where the store embeds: the dense-search
            tests expect its answers.
        capabilities: What it can do beyond the base contract (:class:`Capability`).
        files: The files holding everything it keeps, for
            :attr:`Capability.FILES` (a backend elsewhere, a database, writes a
            dump of what any client can read and returns that file).
        cleanup: Called once after the test, after every opened store is closed.
        opened: The stores opened so far.
    """

    def __init__(
        self,
        name: str,
        open_store: Callable[[], MemoryStore],
        *,
        capabilities: Iterable[Capability] = (),
        files: Callable[[], list[Path]] = _no_files,
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.open_store = open_store
        self.capabilities = frozenset(Capability(c) for c in capabilities)
        self.files_of = files
        self.cleanup = cleanup
        self.opened: list[MemoryStore] = []

    def __repr__(self) -> str:
        flags = ", ".join(sorted(c.value for c in self.capabilities))
        return f"Backend({self.name!r}, capabilities={{{flags}}})"

    @property
    def durable(self) -> bool:
        """Whether it declares :attr:`Capability.DURABLE`."""
        return Capability.DURABLE in self.capabilities

    def open(self) -> MemoryStore:
        """Open a store (closed by :meth:`close`)."""
        store = self.open_store()
        self.opened.append(store)
        return store

    def files(self) -> list[Path]:
        """The files to scan after a forget; ``[]`` without :attr:`Capability.FILES`.

        Raises:
            AssertionError: when it declares the capability and has no file to
                show (a byte check over nothing would pass whatever it kept).
        """
        if Capability.FILES not in self.capabilities:
            return []
        found = self.files_of()
        assert found, f"backend {self.name!r} declares {Capability.FILES.value!r} but has no file"
        return found

    def close(self) -> None:
        """Close every store it opened (newest first), then run :attr:`cleanup`."""
        for store in reversed(self.opened):
            store.close()  # idempotent: a test may have closed it already
        self.opened.clear()
        if self.cleanup is not None:
            self.cleanup()


def file_bytes(backend: Backend) -> bytes:
    """Every byte of every file the backend wrote."""
    return b"".join(p.read_bytes() for p in backend.files())
