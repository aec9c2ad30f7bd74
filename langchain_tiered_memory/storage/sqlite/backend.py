"""The embedded backend: SQLite + FTS5 + FAISS in one data directory (or in memory).

::

    <directory>/archive.sqlite         records, keyword index, turn log, thread heads,
                                       core facts, audit log (one database)
    <directory>/archive.sqlite.faiss   the vector index (a cache of the vectors in SQLite)
    <directory>/embeddings.sqlite      the embedding cache (of the default local embedders)

Any number of threads, :class:`~langchain_tiered_memory.store.MemoryStore`
objects and processes may open one directory at once: SQLite serialises the
writes, every read sees one snapshot, and each process's FAISS copy catches
up with the others' writes before it searches.

Example:
    >>> import tempfile, pathlib
    >>> from langchain_core.messages import HumanMessage
    >>> backend = SQLiteBackend(pathlib.Path(tempfile.mkdtemp()), embeddings=None)
    >>> _ = backend.append_messages("ana", "t1", [HumanMessage("hi", id="m1")])
    >>> backend.append_messages("ana", "t1", [HumanMessage("hi", id="m1")]).skipped
    1
    >>> [m.message.content for m in backend.read_thread("ana", "t1", None).messages]
    ['hi']
    >>> backend.close()
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.storage.sql.backend import SQLBackend
from langchain_tiered_memory.storage.sql.records import SQLRecordStore
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.storage.sqlite.migrate import migrate_state_file
from langchain_tiered_memory.storage.sqlite.schema import create_schema

__all__ = ["ARCHIVE_FILE", "SQLiteBackend"]

logger = logging.getLogger(__name__)

#: The database file inside a data directory.
ARCHIVE_FILE = "archive.sqlite"


class SQLiteBackend(SQLBackend):
    """SQLite (and FAISS, or a LangChain vector store) under one directory.

    Args:
        directory: The data directory (must exist), or ``None`` for a private
            in-memory backend (gone when closed).
        embeddings: Embeds records for dense search (``None``: keyword search only).
        vector_store: Keep the vectors in this LangChain ``VectorStore``
            instead of FAISS (it embeds the texts itself).
        index_save_every: Rewrite the FAISS file every this many adds at
            least (see :class:`~langchain_tiered_memory.storage.faiss.index.FaissIndex`).

    Raises:
        StorageDamagedError: if ``archive.sqlite`` is not a valid database
            (the message says how to recover).
    """

    def __init__(
        self,
        directory: Path | None,
        *,
        embeddings: Embeddings | None,
        vector_store: Any = None,
        index_save_every: int = 64,
    ) -> None:
        db = SQLiteDatabase(None if directory is None else directory / ARCHIVE_FILE)
        try:
            create_schema(db)
            if directory is not None:
                migrate_state_file(directory, db)
            records: SQLRecordStore[Any]
            if vector_store is not None:
                from langchain_tiered_memory.storage.vectorstore import VectorStoreArchive

                records = VectorStoreArchive(vector_store, db=db)
            else:
                records = SQLiteArchive(db=db, embeddings=embeddings, save_every=index_save_every)
        except BaseException:
            db.close()
            raise
        self.directory = directory
        super().__init__(db, records, where=":memory:" if directory is None else str(directory))
