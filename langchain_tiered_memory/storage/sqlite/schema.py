"""The tables of the SQLite backend (one file: ``archive.sqlite``).

Everything that lasts shares one database, so a compression (the archived
turns, the thread's new head, the audit events) or a forget commits in one
transaction:

* ``records`` (+ ``records_fts_s<n>`` keyword shards, the vector blobs) -
  the archive; ``vector_outbox`` and ``deleted_vectors`` keep vector indexes
  outside SQLite in step (another process's FAISS copy catches up from them);
* ``messages`` - the turn log, appended to, never rewritten; ``threads`` -
  one small head row per thread (summary, where the buffer starts, ...);
* ``facts`` - every version of every core fact;
* ``users`` - a user's generation (bumped by each forget) and core version;
* ``forgotten_messages`` - digests of forgotten message ids, so a client that
  replays an old conversation (a LangGraph state) cannot write it back;
* ``forget_intents`` - what a committed forget still has to do outside its
  transaction (see :mod:`langchain_tiered_memory.storage.sql.forgets`); a
  table of its own, created in older files on open (nothing else changes);
* ``audit_events`` and ``meta``.

Schema 1 (archive only; thread buffers and core memory in ``state.sqlite``)
is upgraded in place on open (see :mod:`.migrate`). Schema 3 added
``expires_at`` (microseconds, ``NULL``: never) to ``records`` and ``facts``,
with an index of the rows that have one; older files get the columns on open
(``ALTER TABLE ... ADD COLUMN``: every existing row never expires).
"""

from __future__ import annotations

from langchain_tiered_memory.storage.sql import create_tables, run_script
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase, SQLiteTx

__all__ = ["SCHEMA_VERSION", "create_schema", "read_meta", "write_meta"]

SCHEMA_VERSION = 3

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    thread_id TEXT,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_accessed_at INTEGER,
    importance REAL NOT NULL,
    sources TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vector BLOB,
    expires_at INTEGER
);
CREATE INDEX IF NOT EXISTS records_user_thread
    ON records (user_id, thread_id, kind, created_at);
CREATE INDEX IF NOT EXISTS records_user_created ON records (user_id, created_at);
CREATE TABLE IF NOT EXISTS vector_outbox (
    rid INTEGER PRIMARY KEY,
    record_id TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('add', 'delete'))
);
CREATE TABLE IF NOT EXISTS deleted_vectors (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    rid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    thread_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_events_user ON audit_events (user_id, id);
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY,
    generation INTEGER NOT NULL DEFAULT 0,
    core_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS threads (
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    next_turn INTEGER NOT NULL DEFAULT 0,
    buffer_start INTEGER NOT NULL DEFAULT 0,
    summary TEXT NOT NULL DEFAULT '',
    summarized_through INTEGER NOT NULL DEFAULT -1,
    compress_seq INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    extracted_through INTEGER NOT NULL DEFAULT -1,
    system_prompt TEXT NOT NULL DEFAULT '',
    last_seq INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, thread_id)
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    message_id TEXT,
    at INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_thread ON messages (user_id, thread_id);
CREATE INDEX IF NOT EXISTS messages_turn ON messages (user_id, thread_id, turn);
CREATE UNIQUE INDEX IF NOT EXISTS messages_id ON messages (user_id, thread_id, message_id);
CREATE TABLE IF NOT EXISTS facts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    fact_id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    block TEXT NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    expires_at INTEGER
);
CREATE INDEX IF NOT EXISTS facts_user ON facts (user_id, subject, block);
CREATE TABLE IF NOT EXISTS forgotten_messages (
    user_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (user_id, digest)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS forget_intents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    threads TEXT NOT NULL,
    cleanup TEXT NOT NULL,
    recovered_at INTEGER
)
"""


#: Columns added after schema 2: ``(table, column, type)``, added to older files on open.
ADDED_COLUMNS = (("records", "expires_at", "INTEGER"), ("facts", "expires_at", "INTEGER"))

_LATER_INDEXES = """
CREATE INDEX IF NOT EXISTS records_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS facts_expiry ON facts (expires_at) WHERE expires_at IS NOT NULL
"""


def _add_columns(tx: SQLiteTx) -> None:
    for table, column, kind in ADDED_COLUMNS:
        names = {row[1] for row in tx.execute(f"PRAGMA table_info({table})").fetchall()}
        if column not in names:
            tx.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def create_schema(db: SQLiteDatabase) -> int:
    """Create the tables that are missing; return the schema version found (0: new file).

    Raises:
        ValueError: if a newer version of the package wrote the file.
    """
    with db.write() as tx:
        found = create_tables(tx.execute, _TABLES, newest=SCHEMA_VERSION, where=db.where)
        _add_columns(tx)
        run_script(tx.execute, _LATER_INDEXES)
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT(key) DO UPDATE "
            "SET value=excluded.value",
            (str(SCHEMA_VERSION),),
        )
    return found


def read_meta(db: SQLiteDatabase, key: str) -> str | None:
    """The ``meta`` table's value for ``key`` (``None``: not set)."""
    rows = db.query("SELECT value FROM meta WHERE key=?", [key])
    return str(rows[0][0]) if rows else None


def write_meta(tx: SQLiteTx, key: str, value: str) -> None:
    """Set ``key`` in the ``meta`` table inside ``tx``'s write transaction."""
    tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
