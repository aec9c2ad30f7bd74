"""Where memory lasts: the storage seam and its backends.

* :mod:`.base` - the protocols (:class:`~.base.MemoryBackend`,
  :class:`~.base.RecordStore`) and the values that cross them;
* :mod:`.sql` - the SQL every SQL backend shares (turn log, core facts,
  audit log, the operations that commit as one);
* :mod:`.sqlite` - the embedded backend (one file, FAISS beside it, or in memory);
* :mod:`.postgres` - the server backend (one Postgres database with pgvector,
  shared by any number of workers);
* :mod:`.faiss` - the default vector index; :mod:`.vectorstore` - vectors in
  any LangChain ``VectorStore``;
* :mod:`.fts`, :mod:`.codec`, :mod:`.errors` - keyword-index text, stored
  formats, and what a failure says.

:func:`open_backend` picks a backend from a location, and
:func:`stored_embeddings` reads which embedder a location was built with:
the rest of the package asks these two, never a backend's files or URLs.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.storage.base import MemoryBackend, RecordFilter, RecordStore
from langchain_tiered_memory.storage.errors import (
    StorageDamagedError,
    StorageError,
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
    StorageUnavailableError,
)

__all__ = [
    "MemoryBackend",
    "RecordFilter",
    "RecordStore",
    "StorageDamagedError",
    "StorageError",
    "StorageFullError",
    "StorageLockedError",
    "StorageReadOnlyError",
    "StorageUnavailableError",
    "open_backend",
    "stored_embeddings",
]


def postgres_backend_module() -> ModuleType:
    """:mod:`.postgres.backend`, imported on first use.

    Raises:
        ImportError: without the ``[postgres]`` extra, naming the missing
            module and the install command.
    """
    try:
        from langchain_tiered_memory.storage.postgres import backend
    except ImportError as exc:
        raise ImportError(
            f"a postgresql:// store needs the Postgres extra ({exc.name or exc} is "
            f"missing): {install_hint('postgres')}"
        ) from exc
    return backend


def stored_embeddings(location: str | Path | None) -> str | None:
    """The embeddings id the data at ``location`` was built with (``None``: none yet).

    ``location`` is what :func:`open_backend` takes; nothing is opened for
    writing and nothing is created (a missing directory or database gives ``None``).

    Example:
        >>> stored_embeddings(None) is None  # in memory: nothing stored
        True
    """
    from langchain_tiered_memory.storage.postgres.db import is_postgres_url

    if location is None:
        return None
    if is_postgres_url(location):
        return postgres_backend_module().stored_embeddings_id(str(location))
    from langchain_tiered_memory.storage.sqlite.backend import ARCHIVE_FILE
    from langchain_tiered_memory.storage.sqlite.meta import stored_embeddings_id

    return stored_embeddings_id(Path(location) / ARCHIVE_FILE)


def open_backend(location: str | Path | None, **options: Any) -> MemoryBackend:
    """The backend for ``location``: a ``postgresql://`` URL (Postgres), a data
    directory (SQLite), or ``None`` (in memory).

    ``options`` go to the backend (``embeddings=``, ``vector_store=``, ...;
    Postgres: ``pool_size=``, ``ann_min_records=``, ...).

    Raises:
        ValueError: for ``vector_store=`` with a Postgres URL (its vectors are in pgvector).
        ImportError: for a Postgres URL without the ``[postgres]`` extra installed.

    Example:
        >>> backend = open_backend(None, embeddings=None)
        >>> backend.where
        ':memory:'
        >>> backend.close()
    """
    from langchain_tiered_memory.storage.postgres.db import is_postgres_url

    if is_postgres_url(location):
        PostgresBackend = postgres_backend_module().PostgresBackend
        if options.pop("vector_store", None) is not None:
            raise ValueError(
                "vector_store= applies to a data directory; a Postgres store keeps its vectors "
                "in the database (pgvector)"
            )
        options.pop("index_save_every", None)  # FAISS only
        return PostgresBackend(str(location), **options)
    from langchain_tiered_memory.storage.sqlite.backend import SQLiteBackend

    if location is None:
        return SQLiteBackend(None, **options)
    return SQLiteBackend(Path(location), **options)
