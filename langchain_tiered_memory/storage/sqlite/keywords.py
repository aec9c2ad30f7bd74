"""The SQLite archive's keyword index: FTS5 tables sharded by user.

Each user's records go to one of :attr:`KeywordShards.fts_shards` FTS5 tables
(:func:`~langchain_tiered_memory.storage.fts.fts_shard`), created on first
use, so a keyword search reads the user's shard only. An archive built with
another scheme or shard count is re-indexed on open. The text side (tokens,
CJK bigrams, query terms) is :mod:`langchain_tiered_memory.storage.fts`,
shared with Postgres.

Example:
    >>> import tempfile, os
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
    >>> path = os.path.join(tempfile.mkdtemp(), "a.sqlite")
    >>> with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
    ...     archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="likes tea")])
    ...     table = archive._user_fts("ana")
    ...     table.startswith("records_fts_s"), archive._fts_ready(int(table[13:]))
    (True, True)
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from langchain_tiered_memory.storage.fts import (
    FTS_SCHEME,
    FTS_TOKENIZE,
    fts_document,
    fts_shard,
    fts_table,
    owner_token,
)
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase, SQLiteTx

__all__ = ["KeywordShards"]

logger = logging.getLogger(__name__)

_FTS_SHARD_NAME = re.compile(r"records_fts_s(\d+)")


class KeywordShards:
    """The keyword-index half of the SQLite archive (a base of
    :class:`~langchain_tiered_memory.storage.sqlite.archive.BaseSQLiteArchive`)."""

    #: Keyword-index shards of a new archive (see :func:`fts_shard`); an
    #: existing archive keeps the number it was built with. Each shard that
    #: holds records is one FTS5 table (five SQLite tables), parsed by every
    #: new connection, so more shards make connections slower to open.
    fts_shards: int = 128

    _db: SQLiteDatabase
    _fts_count: int
    _fts_known: set[int]  # shard tables known to be committed
    _fts_created: set[int]  # shard tables this process created

    if TYPE_CHECKING:

        def _meta(self, key: str) -> str | None: ...

        @staticmethod
        def _set_meta(conn: SQLiteTx, key: str, value: str) -> None: ...

    def _check_fts(self) -> None:
        stored = self._meta("fts_shards")
        if self._meta("fts_scheme") == FTS_SCHEME and stored is not None:
            self._fts_count = int(stored)
            with self._db.read() as conn:
                self._fts_known.update(self._fts_tables(conn))
            return
        shards = int(self.fts_shards)
        if shards < 1:
            raise ValueError(f"fts_shards must be >= 1, got {shards}")
        with self._db.write() as conn:
            conn.execute("DROP TABLE IF EXISTS records_fts")  # the single table of older schemes
            for shard in self._fts_tables(conn):
                conn.execute(f"DROP TABLE {fts_table(shard)}")
            self._fts_count = shards
            rows = conn.execute("SELECT rid, text, user_id FROM records").fetchall()
            by_shard: dict[int, list[tuple[int, str, str]]] = {}
            for rid, text, user in rows:
                by_shard.setdefault(fts_shard(user, shards), []).append(
                    (rid, fts_document(text), owner_token(user))
                )
            for shard, items in sorted(by_shard.items()):
                self._ensure_fts(conn, shard)
                conn.executemany(
                    f"INSERT INTO {fts_table(shard)} (rowid, text, owner) VALUES (?, ?, ?)", items
                )
            self._set_meta(conn, "fts_shards", str(shards))
            self._set_meta(conn, "fts_scheme", FTS_SCHEME)
        self._fts_known.update(by_shard)  # committed now
        if rows:
            logger.warning(
                "rebuilt the keyword index of %s (%d records)", self._db.where, len(rows)
            )

    @staticmethod
    def _fts_tables(conn: SQLiteTx) -> list[int]:
        """The keyword shards that have a table (as seen by ``conn``)."""
        names = conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'records_fts_s%'"
        ).fetchall()
        return sorted(int(m.group(1)) for (n,) in names if (m := _FTS_SHARD_NAME.fullmatch(n)))

    def _ensure_fts(self, conn: SQLiteTx, shard: int) -> None:
        """Create shard ``shard``'s FTS5 table if needed (inside ``conn``'s write transaction).

        Shard tables are created on first use, so a small archive holds only
        the shards its users hash to. A table is marked known once it was
        found committed; one created by the current transaction is not (a
        rollback would take it away again).
        """
        if shard in self._fts_known:
            return
        name = fts_table(shard)
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        if found is None:
            conn.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5(text, owner, content='', "
                f"tokenize='{FTS_TOKENIZE}')"
            )
            self._fts_created.add(shard)
        elif shard not in self._fts_created:
            self._fts_known.add(shard)

    def _fts_ready(self, shard: int) -> bool:
        """Whether shard ``shard``'s table exists (committed) - else nobody there has records."""
        if shard in self._fts_known:
            return True
        found = self._db.query(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [fts_table(shard)]
        )
        if found and shard not in self._fts_created:  # made by another process: committed
            self._fts_known.add(shard)
        return bool(found)

    def _user_fts(self, user_id: str) -> str:
        """The FTS5 table of ``user_id``'s shard."""
        return fts_table(fts_shard(user_id, self._fts_count))
