"""Everything durable under one data directory: :class:`MemoryStore`.

One store serves every user and thread of an application::

    <path>/archive.sqlite        records, FTS5 keyword index, audit log
    <path>/archive.sqlite.faiss  the vector index (rebuilt from the records if stale)
    <path>/state.sqlite          each thread's buffer and each user's core memory
    <path>/embeddings.sqlite     the embedding cache (never embeds a text twice)

``store.memory(user_id, thread_id)`` opens a thread's
:class:`~langchain_tiered_memory.memory.TieredMemory`; it continues where the
last process left off.

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> memory = store.memory("ana", "trip-planning", context_window=4096)
    >>> memory.user_id, memory.thread_id
    ('ana', 'trip-planning')
    >>> store.close()
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.archive import SQLiteArchive, stored_embeddings_id
from langchain_tiered_memory.core import CoreMemory
from langchain_tiered_memory.state import StateStore

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = ["MemoryStore"]


class MemoryStore:
    """The durable tiers of every user under one directory (thread-safe).

    Args:
        path: Data directory (created if missing; its parent must exist).
        embeddings: Any LangChain ``Embeddings``, an embedder name (``"minilm"``,
            ``"e5"`` for Chinese and other languages, ``"wordllama"``) or
            ``None``: the local embedder the directory was built with, else
            the offline default (:data:`~langchain_tiered_memory.embeddings.DEFAULT_EMBEDDER`).
        index_save_every: Rewrite the FAISS file every this many writes, or
            every ``ntotal // 64`` once the index is big (and on close); a
            file that a crash left behind is caught up from SQLite on open.

    Raises:
        ValueError: if the parent directory does not exist, or the archive was
            built with other embeddings (the message says what to do).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embeddings: Embeddings | str | None = None,
        index_save_every: int = 64,
    ) -> None:
        self.path = Path(path)
        if not self.path.parent.exists():
            raise ValueError(
                f"Cannot create the data directory {self.path}: its parent does not exist."
            )
        self.path.mkdir(exist_ok=True)
        from langchain_tiered_memory.embeddings import (
            DEFAULT_EMBEDDER,
            default_embeddings,
            embedder_name,
        )

        if embeddings is None:
            # an existing directory keeps the local embedder it was built with
            built_with = embedder_name(stored_embeddings_id(self.path / "archive.sqlite"))
            if built_with is not None and built_with != DEFAULT_EMBEDDER:
                logger.info("%s was built with the %r embedder; using it", self.path, built_with)
            embeddings = built_with
        if embeddings is None or isinstance(embeddings, str):
            embeddings = default_embeddings(embeddings, cache_path=self.path / "embeddings.sqlite")
        self.embeddings: Embeddings = embeddings
        # the FAISS file is a cache of the vectors kept in SQLite (checked and rebuilt
        # on open), so it need not be rewritten on every add
        self.archive = SQLiteArchive(
            self.path / "archive.sqlite", embeddings=embeddings, save_every=index_save_every
        )
        self.state = StateStore(self.path / "state.sqlite")
        self._lock = threading.RLock()
        self._cores: dict[str, CoreMemory] = {}

    def memory(
        self, user_id: str = "default", thread_id: str = "default", **kwargs: Any
    ) -> TieredMemory:
        """Open one thread's memory (its buffer and the user's core memory are loaded).

        Keyword arguments go to :class:`~langchain_tiered_memory.memory.TieredMemory`.
        """
        from langchain_tiered_memory.memory import TieredMemory

        return TieredMemory(store=self, user_id=user_id, thread_id=thread_id, **kwargs)

    def core(self, user_id: str) -> CoreMemory:
        """The user's core memory, one shared object per user in this process.

        Every thread of the user (and the core-memory tools) edits the same
        object, so no thread overwrites facts another one learned.
        """
        with self._lock:
            core = self._cores.get(user_id)
            if core is None:
                core = self._cores[user_id] = self.state.load_core(user_id)
            return core

    def save_core(self, user_id: str) -> None:
        """Persist the user's shared core memory."""
        core = self.core(user_id)
        with core._lock:
            self.state.save_core(user_id, core)

    def users(self) -> list[str]:
        """Users with a thread or core memory."""
        return self.state.users()

    def forget_user(self, user_id: str) -> int:
        """Delete a user from every tier and every file; other users are untouched.

        Returns the number of archive records deleted.
        """
        with self._lock:
            deleted = self.archive.delete_user(user_id)
            self.state.delete_user(user_id)
            core = self._cores.pop(user_id, None)
            if core is not None:
                core.clear()
        logger.info("forgot user %s (%d archive records)", user_id, deleted)
        return deleted

    def export_user(self, user_id: str) -> dict[str, Any]:
        """A user's whole memory as JSON-ready data."""
        data = self.archive.export_user(user_id)
        data.update(self.state.export_user(user_id))
        return data

    def close(self) -> None:
        """Flush and close the files."""
        self.archive.close()
        self.state.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r})"
