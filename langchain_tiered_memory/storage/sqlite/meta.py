"""What a SQLite archive records about its vectors: the embedder they came from, their size.

An archive's vectors can only be compared with vectors of the same embedder,
so the file names it (``meta.embeddings``) and the vectors' dimension
(``meta.dim``), and an archive opened with other embeddings is refused
while it holds vectors. :func:`stored_embeddings_id` reads the name without
opening the archive (what ``MemoryStore(path)`` picks its embedder by).

Example:
    >>> from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
    >>> from langchain_tiered_memory.storage.sqlite.schema import create_schema
    >>> db = SQLiteDatabase(None); _ = create_schema(db)
    >>> take_embedder(db, "a.Hash:size=8"), stored_dim(db, 8, ValueError)
    (False, 8)
    >>> stored_dim(db, None, ValueError)
    8
    >>> db.close()
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from langchain_tiered_memory.storage.sql.records import same_embedder, wrong_embedder
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.storage.sqlite.schema import read_meta, write_meta

__all__ = ["stored_dim", "stored_embeddings_id", "take_embedder"]


def stored_dim(
    db: SQLiteDatabase, dim: int | None, dim_error: Callable[[int, int], ValueError]
) -> int | None:
    """The vectors' dimension: the stored one (``dim``, if given, must match it), else
    ``dim`` - stored now - or ``None`` (learnt from the first vector).

    Raises:
        ValueError: for a ``dim`` below 1, or one other than the stored one (``dim_error``).
    """
    stored = read_meta(db, "dim")
    if dim is not None and dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    if stored is not None:
        if dim is not None and dim != int(stored):
            raise dim_error(int(stored), dim)
        return int(stored)
    if dim is not None:
        with db.write() as conn:
            write_meta(conn, "dim", str(dim))
    return dim


def take_embedder(db: SQLiteDatabase, embeddings_id: str) -> bool:
    """Record ``embeddings_id`` as the archive's embedder, before anything is written.

    Other embeddings than the ones the stored vectors came from are refused;
    an archive without vectors takes the new ones. Returns True when it did
    and dropped the old embedder's dimension.

    Raises:
        ValueError: for other embeddings while the archive holds vectors.
    """
    stored = read_meta(db, "embeddings")
    if stored is not None and same_embedder(stored, embeddings_id):
        return False
    if stored is not None and db.query("SELECT 1 FROM records WHERE vector IS NOT NULL LIMIT 1"):
        raise wrong_embedder(db.where, stored, embeddings_id)
    with db.write() as conn:
        write_meta(conn, "embeddings", embeddings_id)
        if stored is not None:  # no vectors were kept: the new model's size goes
            conn.execute("DELETE FROM meta WHERE key='dim'")
    return stored is not None


def stored_embeddings_id(path: str | os.PathLike[str]) -> str | None:
    """The embeddings id an archive file records it was built with (``None``: none yet).

    Reads the file without changing it; a missing file or table gives ``None``.
    """
    file = Path(path)
    if not file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='embeddings'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None
