"""Durable short-term state: each thread's buffer and each user's core memory.

One SQLite file (WAL, ``secure_delete``) beside the archive. A thread's
buffer is saved after every change, so an acknowledged turn survives a crash;
a user's core memory (every fact version) is saved after every write.

Example:
    >>> import tempfile, os
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.buffer import BufferState, append_messages
    >>> from langchain_tiered_memory.tokens import OpenAITokenCounter
    >>> store = StateStore(os.path.join(tempfile.mkdtemp(), "state.sqlite"))
    >>> state = append_messages(BufferState(), [HumanMessage("hi")],
    ...                         OpenAITokenCounter("gpt-4o-mini"))
    >>> store.save_thread("ana", "t1", state)
    >>> store.load_thread("ana", "t1").turns[0].messages[0].content
    'hi'
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import messages_from_dict, messages_to_dict

from langchain_tiered_memory.buffer import BufferState
from langchain_tiered_memory.core import CoreMemory
from langchain_tiered_memory.turns import Turn

__all__ = ["StateStore", "state_from_dict", "state_to_dict"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    user_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    state TEXT NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}',
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, thread_id)
);
CREATE TABLE IF NOT EXISTS core_memory (
    user_id TEXT PRIMARY KEY,
    facts TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""


def _turn_to_dict(turn: Turn) -> dict[str, Any]:
    return {
        "index": turn.index,
        "messages": messages_to_dict(list(turn.messages)),
        "tokens": turn.tokens,
        "created_at": turn.created_at.isoformat(),
    }


def _turn_from_dict(data: dict[str, Any]) -> Turn:
    return Turn(
        index=int(data["index"]),
        messages=tuple(messages_from_dict(data["messages"])),
        tokens=int(data["tokens"]),
        created_at=datetime.fromisoformat(data["created_at"]),
    )


def state_to_dict(state: BufferState) -> dict[str, Any]:
    """A JSON-ready copy of a buffer state."""
    data = asdict(state)
    data["turns"] = [_turn_to_dict(t) for t in state.turns]
    data["unsummarized"] = [_turn_to_dict(t) for t in state.unsummarized]
    return data


def state_from_dict(data: dict[str, Any]) -> BufferState:
    """Inverse of :func:`state_to_dict`."""
    values = dict(data)
    values["turns"] = tuple(_turn_from_dict(t) for t in data["turns"])
    values["unsummarized"] = tuple(_turn_from_dict(t) for t in data["unsummarized"])
    return BufferState(**values)


class StateStore:
    """SQLite store for thread buffers and core memories (thread-safe).

    Args:
        path: The SQLite file; its folder must exist.

    Raises:
        ValueError: if the folder does not exist.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise ValueError(
                f"The folder {self.path.parent} does not exist; create it or pass another path."
            )
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a committed turn survives a killed process; only an OS
        # crash or power cut can lose the last commits
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA secure_delete=ON")
        self._conn.executescript(_SCHEMA)

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(sql, params)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def save_thread(
        self,
        user_id: str,
        thread_id: str,
        state: BufferState,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Save (replace) a thread's buffer state and extra data atomically.

        Raises:
            TypeError: if a message holds a value JSON cannot store (nothing is saved).
        """
        try:
            encoded = json.dumps(state_to_dict(state)), json.dumps(extra or {})
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"Cannot save thread {thread_id!r} of user {user_id!r}: a message holds a value "
                f"JSON cannot store ({exc}). Tool-call args, additional_kwargs, "
                "response_metadata and artifacts must be JSON values (str, number, bool, "
                "None, list, dict)."
            ) from exc
        self._write(
            "INSERT INTO threads(user_id, thread_id, state, extra, updated_at) "
            "VALUES (?, ?, ?, ?, datetime('now')) ON CONFLICT(user_id, thread_id) DO UPDATE SET "
            "state=excluded.state, extra=excluded.extra, updated_at=excluded.updated_at",
            (user_id, thread_id, *encoded),
        )

    def load_thread(self, user_id: str, thread_id: str) -> BufferState | None:
        """A thread's saved buffer, or ``None``."""
        row = self._row(user_id, thread_id)
        return state_from_dict(json.loads(row[0])) if row else None

    def load_extra(self, user_id: str, thread_id: str) -> dict[str, Any]:
        """The extra data saved with a thread (``{}`` if none)."""
        row = self._row(user_id, thread_id)
        return dict(json.loads(row[1])) if row else {}

    def _row(self, user_id: str, thread_id: str) -> tuple[str, str] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT state, extra FROM threads WHERE user_id=? AND thread_id=?",
                (user_id, thread_id),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id FROM threads WHERE user_id=? ORDER BY updated_at", (user_id,)
            ).fetchall()
        return [r[0] for r in rows]

    def users(self) -> list[str]:
        """Every user with a thread or a core memory."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT user_id FROM threads UNION SELECT user_id FROM core_memory ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]

    def save_core(self, user_id: str, core: CoreMemory) -> None:
        """Save every version of a user's core facts."""
        self._write(
            "INSERT INTO core_memory(user_id, facts, updated_at) VALUES (?, ?, datetime('now')) "
            "ON CONFLICT(user_id) DO UPDATE SET facts=excluded.facts, "
            "updated_at=excluded.updated_at",
            (user_id, json.dumps(core.to_dicts(), ensure_ascii=False)),
        )

    def load_core(self, user_id: str) -> CoreMemory:
        """A user's core memory (empty if none saved)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT facts FROM core_memory WHERE user_id=?", (user_id,)
            ).fetchone()
        return CoreMemory.from_dicts(json.loads(row[0])) if row else CoreMemory()

    def delete_user(self, user_id: str) -> None:
        """Remove a user's threads and core memory, overwriting the bytes on disk."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM threads WHERE user_id=?", (user_id,))
                self._conn.execute("DELETE FROM core_memory WHERE user_id=?", (user_id,))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def delete_thread(self, user_id: str, thread_id: str) -> None:
        """Remove one thread's buffer."""
        self._write("DELETE FROM threads WHERE user_id=? AND thread_id=?", (user_id, thread_id))

    def export_user(self, user_id: str) -> dict[str, Any]:
        """A user's threads and core memory, JSON-ready."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id, state FROM threads WHERE user_id=?", (user_id,)
            ).fetchall()
        return {
            "threads": {r[0]: json.loads(r[1]) for r in rows},
            "core_memory": self.load_core(user_id).to_dicts(),
        }

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
