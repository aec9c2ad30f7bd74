"""The SQLite archive's keyword index: FTS5 tables sharded by user.

Each user's records go to one of :attr:`KeywordShards.count` FTS5 tables
(:func:`~langchain_tiered_memory.storage.fts.fts_shard`), created on first
use, so a keyword search reads the user's shard only. An archive built with
another scheme or shard count is re-indexed on open. The text side (tokens,
CJK bigrams, query terms) is :mod:`langchain_tiered_memory.storage.fts`,
shared with Postgres.

The archive holds one :class:`KeywordShards` (``archive.keywords``) and writes
its FTS rows through it in the same transactions as the records.

Example:
    >>> import tempfile, os
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
    >>> path = os.path.join(tempfile.mkdtemp(), "a.sqlite")
    >>> with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
    ...     archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="likes tea")])
    ...     keywords = archive.keywords
    ...     keywords.table("ana").startswith("records_fts_s"), keywords.ready("ana")
    ...     [rid for rid, _ in keywords.ranked("ana", ['"tea"'], limit=5)]
    (True, True)
    [1]
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Sequence

import numpy as np

from langchain_tiered_memory.storage.fts import (
    FTS_SCHEME,
    FTS_TOKENIZE,
    fts_document,
    fts_shard,
    fts_table,
    owner_token,
)
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase, SQLiteTx
from langchain_tiered_memory.storage.sqlite.schema import read_meta, write_meta

__all__ = ["KeywordShards"]

logger = logging.getLogger(__name__)

_FTS_SHARD_NAME = re.compile(r"records_fts_s(\d+)")


class KeywordShards:
    """The keyword index of one SQLite archive: one FTS5 table per shard of users.

    Args:
        db: The archive's database (its schema created).
        shards: Shards of a new archive (see :func:`fts_shard`); an existing
            archive keeps the number it was built with (:attr:`count`).

    Call :meth:`open` once before use: it reads the stored scheme, and
    re-indexes the records when the scheme or shard count differs.
    """

    def __init__(self, db: SQLiteDatabase, *, shards: int) -> None:
        self.db = db
        self.shards = shards
        #: The shards this archive has (read by :meth:`open`).
        self.count = 1
        self._known: set[int] = set()  # shard tables known to be committed
        self._created: set[int] = set()  # shard tables this process created

    def open(self) -> None:
        """Read the archive's shard count; re-index every record if it was built otherwise.

        Raises:
            ValueError: for fewer than one shard.
        """
        stored = read_meta(self.db, "fts_shards")
        if read_meta(self.db, "fts_scheme") == FTS_SCHEME and stored is not None:
            self.count = int(stored)
            with self.db.read() as conn:
                self._known.update(self._tables(conn))
            return
        shards = int(self.shards)
        if shards < 1:
            raise ValueError(f"fts_shards must be >= 1, got {shards}")
        with self.db.write() as conn:
            conn.execute("DROP TABLE IF EXISTS records_fts")  # the single table of older schemes
            for shard in self._tables(conn):
                conn.execute(f"DROP TABLE {fts_table(shard)}")
            self.count = shards
            rows = conn.execute("SELECT rid, text, user_id FROM records").fetchall()
            by_shard: dict[int, list[tuple[int, str, str]]] = {}
            for rid, text, user in rows:
                by_shard.setdefault(fts_shard(user, shards), []).append(
                    (rid, fts_document(text), owner_token(user))
                )
            for shard, items in sorted(by_shard.items()):
                self._ensure(conn, shard)
                conn.executemany(
                    f"INSERT INTO {fts_table(shard)} (rowid, text, owner) VALUES (?, ?, ?)", items
                )
            write_meta(conn, "fts_shards", str(shards))
            write_meta(conn, "fts_scheme", FTS_SCHEME)
        self._known.update(by_shard)  # committed now
        if rows:
            logger.warning("rebuilt the keyword index of %s (%d records)", self.db.where, len(rows))

    def table(self, user_id: str) -> str:
        """The FTS5 table of ``user_id``'s shard."""
        return fts_table(fts_shard(user_id, self.count))

    def ready(self, user_id: str) -> bool:
        """Whether ``user_id``'s shard has a (committed) table - else nobody there has records."""
        shard = fts_shard(user_id, self.count)
        if shard in self._known:
            return True
        found = self.db.query(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [fts_table(shard)]
        )
        if found and shard not in self._created:  # made by another process: committed
            self._known.add(shard)
        return bool(found)

    # ---- writing (inside the archive's write transaction)

    def add(self, conn: SQLiteTx, rid: int, text: str, user_id: str) -> None:
        """Index record row ``rid`` (its shard's table is created on first use)."""
        shard = fts_shard(user_id, self.count)
        self._ensure(conn, shard)
        conn.execute(
            f"INSERT INTO {fts_table(shard)} (rowid, text, owner) VALUES (?, ?, ?)",
            (rid, fts_document(text), owner_token(user_id)),
        )

    def remove(self, conn: SQLiteTx, rows: Iterable[tuple[int, str, str]]) -> set[str]:
        """Take ``(rid, text, user id)`` rows out of the index; returns the tables touched."""
        by_table: dict[str, list[tuple[int, str, str]]] = {}
        for rid, text, owner in rows:
            by_table.setdefault(self.table(owner), []).append(
                (rid, fts_document(text), owner_token(owner))
            )
        for table, items in by_table.items():
            conn.executemany(
                f"INSERT INTO {table} ({table}, rowid, text, owner) VALUES ('delete', ?, ?, ?)",
                items,
            )
        return set(by_table)

    @staticmethod
    def optimize(conn: SQLiteTx, tables: Iterable[str]) -> None:
        """Merge these tables' segments, so none keeps a forgotten term."""
        for table in sorted(tables):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")

    # ---- searching

    def ranked(self, user_id: str, terms: Sequence[str], *, limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` ``(rid, score)`` matches of any of ``terms``, exactly ranked.

        The score is FTS5's ``bm25()`` negated (higher is better); ``terms``
        are quoted FTS5 terms (:func:`~langchain_tiered_memory.storage.fts.fts_terms`).
        """
        table = self.table(user_id)
        match = f'owner : "{owner_token(user_id)}" AND text : ({" OR ".join(terms)})'
        hits = self.db.query(
            f"SELECT rowid, bm25({table}, 1.0, 0.0) AS score FROM {table} "
            f"WHERE {table} MATCH ? ORDER BY score, rowid LIMIT ?",
            [match, limit],
        )
        return [(int(rid), -float(rank)) for rid, rank in hits]

    def bounded(
        self, user_id: str, terms: Sequence[str], *, total: int, cap: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and scores of a big user's matches, best first, reading at most ``cap``
        (the newest) matches per term; a record scores the summed BM25 IDFs of the terms it
        contains (``total``: the user's records)."""
        cap = max(1, int(cap))
        total = max(1, total)
        table = self.table(user_id)
        owner = owner_token(user_id)
        # one comma-separated string per term, newest matches first
        sql = (
            f"SELECT group_concat(rowid) FROM (SELECT rowid FROM {table} WHERE {table} "
            "MATCH ? ORDER BY rowid DESC LIMIT ?)"
        )
        found: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for term in terms:
            text = self.db.query(sql, [f'owner : "{owner}" AND text : {term}', cap + 1])[0][0]
            if not text:
                continue
            rids = np.fromstring(text, dtype=np.int64, sep=",")
            # len(rids) is a lower bound of the term's matches once it reached cap + 1
            idf = math.log(1.0 + (total - rids.size + 0.5) / (rids.size + 0.5))
            found.append(rids[:cap])
            weights.append(np.full(min(cap, rids.size), idf))
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        rids, where = np.unique(np.concatenate(found), return_inverse=True)
        scores = np.bincount(where, weights=np.concatenate(weights))
        order = np.lexsort((-rids, -scores))  # best score first, then newest
        return rids[order], scores[order]

    # ---- the shard tables

    @staticmethod
    def _tables(conn: SQLiteTx) -> list[int]:
        """The keyword shards that have a table (as seen by ``conn``)."""
        names = conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'records_fts_s%'"
        ).fetchall()
        return sorted(int(m.group(1)) for (n,) in names if (m := _FTS_SHARD_NAME.fullmatch(n)))

    def _ensure(self, conn: SQLiteTx, shard: int) -> None:
        """Create shard ``shard``'s FTS5 table if needed (inside ``conn``'s write transaction).

        Shard tables are created on first use, so a small archive holds only
        the shards its users hash to. A table is marked known once it was
        found committed; one created by the current transaction is not (a
        rollback would take it away again).
        """
        if shard in self._known:
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
            self._created.add(shard)
        elif shard not in self._created:
            self._known.add(shard)
