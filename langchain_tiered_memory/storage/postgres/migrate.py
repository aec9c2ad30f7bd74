"""``tiered-memory migrate DATA_DIR postgresql://…``: a SQLite data directory into Postgres.

Copies every table of ``DATA_DIR/archive.sqlite`` - records with their
vectors, the turn log, thread heads, users (with their forget generations),
core facts, forgotten-message digests, audit events - into the Postgres
backend's tables, then checks the result:

* rows keep their keys (message ``seq``, record and event ids), so thread
  heads, which point at message numbers, stay true; sequences are moved past
  the copied keys afterwards;
* rows are copied in batches, each its own transaction, with
  ``ON CONFLICT DO NOTHING``: an interrupted run is resumed by running it
  again, and a finished one copies nothing twice;
* the keyword index is built from each record's text as it is inserted; the
  vectors are the SQLite archive's own (nothing is embedded again); the
  embedding cache and the FAISS file are caches and are not copied;
* afterwards every table must hold at least the source's rows, and a random
  sample of records (text, fields, vector) and messages must read back the
  same.

A database that already holds data from elsewhere is refused (keys would
collide). Deletes are not replayed: stop the application writing to the
directory first, and migrate once more after a last forget to be sure.

Example (shell)::

    tiered-memory migrate .tiered-memory postgresql://app:secret@db:5432/memory
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.storage.postgres.db import postgres_sql, redact_url
from langchain_tiered_memory.storage.postgres.keywords import document_text
from langchain_tiered_memory.storage.postgres.rows import record_insert_sql, stored_vector
from langchain_tiered_memory.storage.postgres.schema import COVERED_MAX_DIM, vector_index_sql
from langchain_tiered_memory.storage.sql.records import RECORD_COLUMNS

__all__ = ["MigrationReport", "migrate_directory"]

logger = logging.getLogger(__name__)

#: ``(table, rows done, rows in the source)``.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class _Table:
    name: str
    key: tuple[str, ...]  # the source's key columns (among ``columns``): batches in order
    columns: tuple[str, ...]
    identity: str | None = None  # the target's identity column, moved past the copy


_TABLES = (
    _Table("users", ("user_id",), ("user_id", "generation", "core_version")),
    _Table(
        "threads",
        ("user_id", "thread_id"),
        (
            "user_id",
            "thread_id",
            "version",
            "next_turn",
            "buffer_start",
            "summary",
            "summarized_through",
            "compress_seq",
            "failures",
            "extracted_through",
            "system_prompt",
            "last_seq",
            "updated_at",
        ),
    ),
    _Table(
        "messages",
        ("seq",),
        ("seq", "user_id", "thread_id", "turn", "message_id", "at", "body"),
        identity="seq",
    ),
    _Table(
        "facts",
        ("seq",),
        ("seq", "user_id", "fact_id", "subject", "block", "status", "body", "expires_at"),
        identity="seq",
    ),
    _Table("forgotten_messages", ("user_id", "digest"), ("user_id", "digest")),
    _Table(
        "audit_events",
        ("id",),
        ("id", "at", "user_id", "thread_id", "kind", "payload"),
        identity="id",
    ),
    _Table(
        "records",
        ("rid",),
        ("rid", *RECORD_COLUMNS, "vector"),
        identity="rid",
    ),
)


@dataclass
class MigrationReport:
    """What a migration copied and what its check found.

    Attributes:
        source: The data directory.
        target: The database (without its password).
        copied: Rows inserted by this run, per table (0 for rows already there).
        source_rows: Rows per table in the source.
        target_rows: Rows per table in the target afterwards.
        sampled: Records and messages compared field by field.
        problems: What the check found wrong (empty: the copy is complete).
    """

    source: str
    target: str
    copied: dict[str, int] = field(default_factory=dict)
    source_rows: dict[str, int] = field(default_factory=dict)
    target_rows: dict[str, int] = field(default_factory=dict)
    sampled: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every table is complete and every sample matched."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "source": self.source,
            "target": self.target,
            "copied": self.copied,
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
            "sampled": self.sampled,
            "problems": self.problems,
            "ok": self.ok,
        }


def _open_source(directory: Path) -> sqlite3.Connection:
    from langchain_tiered_memory.storage.sqlite.backend import ARCHIVE_FILE, SQLiteBackend

    path = directory / ARCHIVE_FILE
    if not path.is_file():
        raise ValueError(f"{directory} is not a data directory: it has no {ARCHIVE_FILE}")
    if (directory / "state.sqlite").exists():  # an older layout: upgraded in place first
        logger.warning("upgrading %s to the current layout before copying it", directory)
        SQLiteBackend(directory, embeddings=None).close()
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(records)").fetchall()}
    if "expires_at" not in columns:  # schema 2: the columns added since, added in place
        conn.close()
        from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
        from langchain_tiered_memory.storage.sqlite.schema import create_schema

        logger.warning("upgrading %s to the current schema before copying it", directory)
        db = SQLiteDatabase(path)
        try:
            create_schema(db)
        finally:
            db.close()
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    return conn


def _source_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta").fetchall()}


def _check_target(pg: Any, source_id: str, meta: dict[str, str], where: str) -> None:
    """Refuse a target with data from elsewhere, or vectors of another dimension."""
    rows = dict(pg.execute("SELECT key, value FROM meta").fetchall())
    origin = rows.get("migrated_from")
    holds = any(pg.execute(f"SELECT 1 FROM {t.name} LIMIT 1").fetchone() for t in _TABLES)
    if holds and origin != source_id:
        raise ValueError(
            f"{where} already holds memory that was not migrated from {source_id} "
            f"({'from ' + origin if origin else 'written by an application'}); migrate into "
            "an empty database"
        )
    if "dim" in meta and "dim" in rows and rows["dim"] != meta["dim"]:
        raise ValueError(
            f"{where} holds vectors of dimension {rows['dim']}, the directory of dimension "
            f"{meta['dim']}: migrate into another database"
        )


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _copy_table(
    source: sqlite3.Connection,
    pg: Any,
    table: _Table,
    *,
    dim: int | None,
    batch: int,
    progress: Progress,
) -> int:
    total = _count(source, table.name)
    columns = list(table.columns)
    if table.name == "records":  # the record store's own insert: keywords computed alike
        sql = postgres_sql(record_insert_sql(with_rid=True), True)
    else:
        sql = (
            f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES "
            f"({', '.join(['%s'] * len(columns))}) ON CONFLICT DO NOTHING"
        )
    keys = [columns.index(k) for k in table.key]
    order = ", ".join(table.key)
    after = f"WHERE ({order}) > ({', '.join('?' * len(keys))})"
    last: tuple[Any, ...] | None = None
    done = inserted = 0
    progress(table.name, 0, total)
    while True:
        rows = source.execute(
            f"SELECT {', '.join(columns)} FROM {table.name} {after if last else ''} "
            f"ORDER BY {order} LIMIT ?",
            (*(last or ()), batch),
        ).fetchall()
        if not rows:
            break
        last = tuple(rows[-1][i] for i in keys)
        params = [_target_row(table, row, dim) for row in rows]
        pg.execute("BEGIN")
        try:
            with pg.cursor() as cur:
                cur.executemany(sql, params)
                inserted += max(0, cur.rowcount)
            pg.execute("COMMIT")
        except BaseException:
            if not pg.broken:
                pg.execute("ROLLBACK")
            raise
        done += len(rows)
        progress(table.name, done, total)
    if table.identity is not None:
        pg.execute(
            f"SELECT setval(pg_get_serial_sequence('{table.name}', '{table.identity}'), "
            f"GREATEST((SELECT max({table.identity}) FROM {table.name}), 1))"
        )
    return inserted


def _vector(blob: bytes | None, dim: int | None) -> np.ndarray | None:
    if blob is None or dim is None or len(blob) != 4 * dim:
        return None
    return np.frombuffer(blob, dtype=np.float32)


def _clean(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def _target_row(table: _Table, row: Sequence[Any], dim: int | None) -> tuple[Any, ...]:
    values = [_clean(v) for v in row]
    if table.name == "records":
        values[-1] = _vector(row[-1], dim)
        values.append(document_text(str(row[5])))
    return tuple(values)


def _sample_problems(
    source: sqlite3.Connection, pg: Any, dim: int | None, sample: int, rng: random.Random
) -> tuple[int, list[str]]:
    problems: list[str] = []
    rids = [int(r[0]) for r in source.execute("SELECT rid FROM records").fetchall()]
    picks = sorted(rng.sample(rids, min(sample, len(rids))))
    columns = _TABLES[-1].columns
    for rid in picks:
        mine = source.execute(
            f"SELECT {', '.join(columns)} FROM records WHERE rid=?", (rid,)
        ).fetchone()
        theirs = pg.execute(
            f"SELECT {', '.join(c if c != 'vector' else 'embedding' for c in columns)} "
            "FROM records WHERE id=%s",
            (mine[1],),
        ).fetchone()
        if theirs is None:
            problems.append(f"record {mine[1]!r} is missing")
            continue
        for name, a, b in zip(columns[1:-1], mine[1:-1], theirs[1:-1], strict=True):
            if name in ("sources", "metadata"):
                a, b = json.loads(a), json.loads(b)
            if name == "text":
                a = _clean(a)
            if a != b and not (name == "importance" and abs(float(a) - float(b)) < 1e-9):
                problems.append(f"record {mine[1]!r}: {name} differs")
        vector = _vector(mine[-1], dim)
        stored = None if theirs[-1] is None else stored_vector(theirs[-1])
        if (vector is None) != (stored is None) or (
            vector is not None and stored is not None and not np.allclose(vector, stored, atol=1e-6)
        ):
            problems.append(f"record {mine[1]!r}: vector differs")
    seqs = [int(r[0]) for r in source.execute("SELECT seq FROM messages").fetchall()]
    message_picks = sorted(rng.sample(seqs, min(sample, len(seqs))))
    for seq in message_picks:
        mine = source.execute(
            "SELECT user_id, thread_id, turn, body FROM messages WHERE seq=?", (seq,)
        ).fetchone()
        theirs = pg.execute(
            "SELECT user_id, thread_id, turn, body FROM messages WHERE seq=%s", (seq,)
        ).fetchone()
        if theirs is None or tuple(theirs) != (mine[0], mine[1], mine[2], _clean(mine[3])):
            problems.append(f"message {seq} of {mine[0]!r}/{mine[1]!r} differs or is missing")
    return len(picks) + len(message_picks), problems


def migrate_directory(
    directory: str | Path,
    url: str,
    *,
    batch: int = 2000,
    sample: int = 200,
    seed: int = 0,
    on_progress: Progress | None = None,
) -> MigrationReport:
    """Copy a SQLite data directory into the Postgres database at ``url``, then check it.

    Args:
        directory: The data directory (``archive.sqlite`` inside; a directory of
            an older layout is upgraded in place first).
        url: The target database (its schema is created if missing).
        batch: Rows per transaction.
        sample: Records and messages compared field by field afterwards.
        seed: Seeds the sample.
        on_progress: Called with ``(table, rows done, rows in the source)``.

    Returns:
        The report; ``report.ok`` is False when the check found a problem.

    Raises:
        ValueError: for a directory without an archive, or a target holding
            other data or vectors of another dimension.
        StorageUnavailableError: if the server cannot be reached.
    """
    import psycopg
    from pgvector.psycopg import register_vector

    from langchain_tiered_memory.storage.postgres.db import storage_error
    from langchain_tiered_memory.storage.postgres.schema import create_schema

    if batch < 1 or sample < 0:
        raise ValueError(f"batch must be >= 1 and sample >= 0, got {batch} and {sample}")
    folder = Path(directory).expanduser()
    where = redact_url(url)
    source_id = str(folder.resolve())
    progress = on_progress or (lambda table, done, total: None)
    source = _open_source(folder)
    try:
        meta = _source_meta(source)
        dim = int(meta["dim"]) if "dim" in meta else None
        report = MigrationReport(source=source_id, target=where)
        try:
            with psycopg.connect(url, autocommit=True) as pg:
                create_schema(pg, where)
                register_vector(pg)
                _check_target(pg, source_id, meta, where)
                pg.execute(
                    "INSERT INTO meta (key, value) VALUES ('migrated_from', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                    (source_id,),
                )
                for key in ("dim", "embeddings"):
                    if key in meta:
                        pg.execute(
                            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                            (key, meta[key]),
                        )
                for table in _TABLES:
                    report.copied[table.name] = _copy_table(
                        source, pg, table, dim=dim, batch=batch, progress=progress
                    )
                for table in _TABLES:
                    report.source_rows[table.name] = _count(source, table.name)
                    report.target_rows[table.name] = _count(pg, table.name)
                    if report.target_rows[table.name] < report.source_rows[table.name]:
                        report.problems.append(
                            f"{table.name}: {report.target_rows[table.name]} rows in the "
                            f"database, {report.source_rows[table.name]} in the directory"
                        )
                if dim is not None and dim <= COVERED_MAX_DIM:
                    pg.execute(vector_index_sql())  # what the record store would create
                report.sampled, found = _sample_problems(
                    source, pg, dim, sample, random.Random(seed)
                )
                report.problems += found
                pg.execute("ANALYZE")
        except psycopg.Error as exc:
            raise storage_error(exc, where, "migrating into") from exc
    finally:
        source.close()
    logger.info(
        "migrated %s into %s: %s (%d sampled, %d problems)",
        source_id,
        where,
        report.copied,
        report.sampled,
        len(report.problems),
    )
    return report
