"""The one source of truth: :class:`MemoryStore`, the memory of every user of an application.

A store owns a backend (:class:`~langchain_tiered_memory.storage.base.MemoryBackend`):
SQLite + FAISS in a data directory by default, in memory, or one Postgres
database (``MemoryStore("postgresql://…")``) shared by any number of workers. Everything that
lasts lives there - records, the turn log, thread heads, core facts, the
audit log - and nowhere else: ``store.memory(user_id, thread_id)`` opens a
:class:`~langchain_tiered_memory.memory.TieredMemory`, which is a *view*.
Any number of views of one user (threads, objects, processes on the same
directory) may be open at once; each reads what the others wrote, none can
overwrite another's work, and a forget is honoured by all of them.

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.messages import HumanMessage
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> a = store.memory("ana", "trip-planning", context_window=4096)
    >>> b = store.memory("ana", "trip-planning", context_window=4096)  # a second view
    >>> _ = a.add_messages([HumanMessage("I'm allergic to peanuts.")])
    >>> b.core.get("allergy").content, len(b.messages)
    ('allergic to peanuts', 1)
    >>> store.forget_user("ana")  # the allergy's fact record
    1
    >>> a.core.render(), a.messages
    ('', [])
    >>> store.close()
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.core import CoreMemory
from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.storage import open_backend
from langchain_tiered_memory.storage.base import MemoryBackend
from langchain_tiered_memory.storage.postgres.db import is_postgres_url
from langchain_tiered_memory.storage.sqlite.archive import stored_embeddings_id
from langchain_tiered_memory.storage.sqlite.backend import ARCHIVE_FILE

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

logger = logging.getLogger(__name__)

__all__ = ["EMBEDDINGS_CACHE_FILE", "MemoryStore"]

#: The embedding cache of the local embedders, inside a data directory.
EMBEDDINGS_CACHE_FILE = "embeddings.sqlite"

#: ``embeddings=`` value for a store that searches by keywords only (no vectors).
NO_EMBEDDINGS = "none"


class MemoryStore:
    """Every user's durable memory, in one backend (thread- and process-safe).

    Args:
        path: The data directory (created if missing; its parent must exist),
            a ``postgresql://user:password@host/db`` URL (Postgres with
            pgvector: ``pip install 'langchain-tiered-memory[postgres]'``), or
            ``None`` for a store in this process's memory only.
        embeddings: Any LangChain ``Embeddings``; an embedder name
            (``"minilm"``, ``"e5"`` for Chinese and other languages,
            ``"wordllama"``); ``"none"`` for keyword search only; or ``None``:
            the local embedder the directory was built with, else the offline
            default (:data:`~langchain_tiered_memory.embeddings.DEFAULT_EMBEDDER`).
        vector_store: Keep the vectors in this LangChain ``VectorStore``
            (Chroma, PGVector, ...) instead of FAISS; it embeds the texts
            itself, so ``embeddings`` is not used.
        index_save_every: Rewrite the FAISS file every this many writes, or
            every ``ntotal // 64`` once the index is big (and on close); a
            file a crash left behind is caught up from SQLite on open.
        **backend_options: Options of a Postgres backend (``pool_size``,
            ``pool_timeout``, ``ann_min_records``, ``retries``,
            ``vacuum_after_forget``: see
            :class:`~langchain_tiered_memory.storage.postgres.backend.PostgresBackend`).

    Raises:
        ValueError: if the parent directory does not exist.
        StorageDamagedError: if the database file is damaged (the message
            names it and says how to recover).
        StorageUnavailableError: if a Postgres server cannot be reached.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | str | None = None,
        vector_store: Any = None,
        index_save_every: int = 64,
        **backend_options: Any,
    ) -> None:
        self.path: Path | None = None
        #: The Postgres URL, for a Postgres store.
        self.url: str | None = None
        if is_postgres_url(path):
            self.url = str(path)
        elif path is not None:
            self.path = Path(path).expanduser()
            if not self.path.parent.exists():
                raise ValueError(
                    f"Cannot create the data directory {self.path}: its parent does not exist."
                )
            self.path.mkdir(exist_ok=True)
        self.embeddings: Embeddings | None = (
            None if vector_store is not None else self._embeddings(embeddings)
        )
        self.backend: MemoryBackend = open_backend(
            self.url or self.path,
            embeddings=self.embeddings,
            vector_store=vector_store,
            index_save_every=index_save_every,
            **backend_options,
        )

    def _embeddings(self, embeddings: Embeddings | str | None) -> Embeddings | None:
        from langchain_tiered_memory.embeddings import (
            DEFAULT_EMBEDDER,
            default_embeddings,
            embedder_name,
        )

        if isinstance(embeddings, Embeddings):
            return embeddings
        if isinstance(embeddings, str) and embeddings.strip().lower() == NO_EMBEDDINGS:
            return None
        if embeddings is None and (self.path is not None or self.url is not None):
            # an existing directory or database keeps the local embedder it was built with
            if self.url is not None:
                from langchain_tiered_memory.storage.postgres.backend import (
                    stored_embeddings_id as stored_in_database,
                )

                built_with = embedder_name(stored_in_database(self.url))
            else:
                assert self.path is not None
                built_with = embedder_name(stored_embeddings_id(self.path / ARCHIVE_FILE))
            if built_with is not None and built_with != DEFAULT_EMBEDDER:
                logger.info("%s was built with the %r embedder; using it", self.path, built_with)
            embeddings = built_with
        cache = self.path / EMBEDDINGS_CACHE_FILE if self.path is not None else None
        return default_embeddings(embeddings, cache_path=cache)

    # -- views -------------------------------------------------------------------

    @property
    def archive(self) -> Any:
        """The archive (the backend's record store: ``add``, ``get``, ``records``,
        ``keyword_search``, ``dense_search``, ``delete``, ...)."""
        return self.backend.records

    @property
    def audit(self) -> Any:
        """The audit log (``events(user_id)``)."""
        return self.backend.audit

    def memory(self, user_id: str, thread_id: str = "default", **kwargs: Any) -> TieredMemory:
        """Open a view of one thread's memory.

        Keyword arguments go to :class:`~langchain_tiered_memory.memory.TieredMemory`.

        Raises:
            ValueError: for an invalid user or thread id.
        """
        from langchain_tiered_memory.memory import TieredMemory

        return TieredMemory(store=self, user_id=user_id, thread_id=thread_id, **kwargs)

    def core(self, user_id: str, thread_id: str | None = None) -> CoreMemory:
        """A view of the user's core memory (every view of the user sees the same facts)."""
        return CoreMemory(
            store=self.backend, user_id=check_id(user_id, "user_id"), thread_id=thread_id
        )

    def users(self) -> list[str]:
        """Users with a thread, a core fact or an archive record."""
        return self.backend.users()

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        return self.backend.threads(check_id(user_id, "user_id"))

    # -- LangGraph checkpoints --------------------------------------------------------

    def checkpointer(self) -> Any:
        """A LangGraph checkpointer that keeps its threads with this store's data, or ``None``.

        Postgres: ``PostgresSaver`` on the same database (what
        :func:`~langchain_tiered_memory.graph.build_memory_graph` uses by
        default; pass it to ``create_agent(checkpointer=...)`` beside the
        middleware). Forgetting a user deletes their checkpointed threads.
        ``None`` for a backend that keeps no checkpoints itself.
        """
        make = getattr(self.backend, "checkpointer", None)
        return make() if make is not None else None

    async def acheckpointer(self) -> Any:
        """The async twin of :meth:`checkpointer` (``AsyncPostgresSaver`` for
        ``ainvoke``/``astream``), or ``None``."""
        make = getattr(self.backend, "acheckpointer", None)
        return await make() if make is not None else None

    def register_checkpointer(self, saver: Any) -> None:
        """Have :meth:`forget_user` and :meth:`forget_thread` delete their threads from
        ``saver`` (any LangGraph checkpointer) too."""
        self.backend.register_checkpointer(saver)

    # -- forgetting and export ------------------------------------------------------

    def forget_user(self, user_id: str) -> int:
        """Delete a user from every tier and file; other users are untouched.

        Every open view of the user (any object, any process) drops its copy
        at its next read or write; what the user says afterwards is kept.
        Returns the number of archive records deleted. See
        :mod:`langchain_tiered_memory.storage.sql.backend` for exactly what
        is removed.
        """
        return self.backend.forget_user(check_id(user_id, "user_id"))

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Delete one thread: its turns (log and archive), summary and head.

        Returns the number of archive records deleted.
        """
        return self.backend.forget_thread(
            check_id(user_id, "user_id"), check_id(thread_id, "thread_id")
        )

    def export_user(self, user_id: str) -> dict[str, Any]:
        """A user's whole memory as JSON-ready data (records, audit events, threads, core facts)."""
        return dict(self.backend.export_user(check_id(user_id, "user_id")))

    def close(self) -> None:
        """Flush and close everything (the embedder's cache too, if the store opened it)."""
        self.backend.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.backend.where!r})"
