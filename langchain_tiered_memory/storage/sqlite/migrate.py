"""Upgrade a data directory of schema 1: buffers and core memory from ``state.sqlite``.

Schema 1 kept each thread's buffer and each user's core memory as JSON
snapshots in ``state.sqlite`` beside the archive. On first open by this
version they are copied into the archive's turn log, thread heads and fact
rows (in one transaction), then ``state.sqlite`` is removed. A crash before
the commit leaves the old file in place and the copy is redone on the next
open; after it, the copy is never made twice (the old file is gone).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import messages_from_dict

from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.storage.codec import fact_to_json, message_to_json, to_micros
from langchain_tiered_memory.storage.errors import StorageDamagedError
from langchain_tiered_memory.storage.sql.threads import forgotten_digest
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.values.facts import CoreFact

__all__ = ["STATE_FILE", "migrate_state_file"]

#: The schema-1 file of thread buffers and core memories, inside a data directory.
STATE_FILE = "state.sqlite"

logger = logging.getLogger(__name__)


def _turns(data: Iterable[dict[str, Any]]) -> list[tuple[int, datetime, list[Any]]]:
    return [
        (
            int(t["index"]),
            datetime.fromisoformat(t["created_at"]),
            messages_from_dict(t["messages"]),
        )
        for t in data
    ]


def migrate_state_file(directory: Path, db: SQLiteDatabase) -> int:
    """Copy ``directory/state.sqlite`` into ``db``'s tables, then remove it.

    Returns the number of threads copied (0 when there is no old file).

    Raises:
        StorageDamagedError: if the old file is not a readable schema-1 state
            file (not a database, damaged pages, missing tables, rows that are
            not its JSON); the message names it and says what to do. Nothing
            is copied and the file stays.
    """
    old = directory / STATE_FILE
    if not old.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"{old.resolve().as_uri()}?mode=ro", uri=True)
        try:
            threads = conn.execute(
                "SELECT user_id, thread_id, state, extra FROM threads"
            ).fetchall()
            cores = conn.execute("SELECT user_id, facts FROM core_memory").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise _damaged(old, exc) from exc
    try:
        copied = _copy(db, threads, cores)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        # json.JSONDecodeError is a ValueError: the rows are not what schema 1 wrote
        raise _damaged(old, exc) from exc
    for suffix in ("", "-wal", "-shm"):
        part = old.with_name(old.name + suffix)
        if part.exists():
            part.unlink()
    logger.warning(
        "upgraded %s: %d thread(s) and %d core memories moved from %s into the archive's turn log",
        directory,
        copied,
        len(cores),
        STATE_FILE,
    )
    return copied


def _damaged(old: Path, exc: BaseException) -> StorageDamagedError:
    """What to say when the schema-1 file cannot be read (nothing was copied or removed)."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return StorageDamagedError(
        f"upgrading {old} failed: it cannot be read as a schema-1 state file ({detail}). "
        "Nothing was copied and the file was left in place. It holds the buffers and core "
        "memory of the previous version (the archive beside it is not affected): restore "
        "it from a backup and open the store again, or move it away to open the store "
        "without them."
    )


def _copy(db: SQLiteDatabase, threads: list[Any], cores: list[Any]) -> int:
    """Copy the old rows into ``db``'s tables in one transaction; the threads copied."""
    with db.write() as tx:
        for user_id, thread_id, state_json, extra_json in threads:
            check_id(user_id, "user_id"), check_id(thread_id, "thread_id")
            state, extra = json.loads(state_json), json.loads(extra_json or "{}")
            tx.execute("INSERT INTO users (user_id) VALUES (?) ON CONFLICT DO NOTHING", (user_id,))
            window = _turns(state.get("unsummarized", ())) + _turns(state.get("turns", ()))
            last_seq = 0
            kept_ids: set[str] = set()
            for index, created, messages in window:
                for message in messages:
                    last_seq = tx.insert(
                        "INSERT INTO messages (user_id, thread_id, turn, message_id, at, body) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            user_id,
                            thread_id,
                            index,
                            message.id or None,
                            to_micros(created),
                            message_to_json(message),
                        ),
                    )
                    if message.id:
                        kept_ids.add(message.id)
            # ids a graph already synced and the buffer evicted: never store them again
            tx.executemany(
                "INSERT INTO forgotten_messages (user_id, digest) VALUES (?, ?) "
                "ON CONFLICT DO NOTHING",
                [
                    (user_id, forgotten_digest(thread_id, i))
                    for i in extra.get("seen_ids", ())
                    if i and i not in kept_ids
                ],
            )
            turns = state.get("turns", ())
            next_turn = int(state.get("next_index", 0))
            tx.execute(
                "INSERT INTO threads (user_id, thread_id, version, next_turn, buffer_start, "
                "summary, summarized_through, compress_seq, failures, extracted_through, "
                "system_prompt, last_seq, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    user_id,
                    thread_id,
                    to_micros(datetime.now().astimezone()),
                    next_turn,
                    int(turns[0]["index"]) if turns else next_turn,
                    state.get("summary", ""),
                    int(state.get("summarized_through", -1)),
                    last_seq if not state.get("new_tokens") else 0,
                    int(state.get("failures", 0)),
                    int(extra.get("observed_through", -1)),
                    str(extra.get("system_prompt", "")),
                    last_seq,
                    to_micros(datetime.now().astimezone()),
                ),
            )
        for user_id, facts_json in cores:
            check_id(user_id, "user_id")
            tx.execute("INSERT INTO users (user_id) VALUES (?) ON CONFLICT DO NOTHING", (user_id,))
            for row in json.loads(facts_json):
                fact = CoreFact.from_dict(row)
                tx.execute(
                    "INSERT INTO facts (user_id, fact_id, subject, block, status, body) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (user_id, fact.id, fact.subject, fact.block, fact.status, fact_to_json(fact)),
                )
            tx.execute("UPDATE users SET core_version=core_version+1 WHERE user_id=?", (user_id,))
    return len(threads)
