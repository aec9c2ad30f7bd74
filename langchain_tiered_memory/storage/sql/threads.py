"""The turn log and thread heads (SQL shared by every backend).

A thread is an append-only log of messages (table ``messages``: each row one
message, numbered by a global ``seq``, with the turn it belongs to) and one
small head row (table ``threads``): the running summary, where the buffer
window starts, the compression and extraction watermarks and a ``version``
that changes whenever the window changes in any way other than growing (a
compression, a clear, turns deleted by a forget).

* Adding messages appends rows (:meth:`ThreadLog.append`): cost in proportion
  to what is added, never to the size of the buffer. The turn of each new
  message is decided inside the transaction from the thread's newest stored
  turn (:func:`~langchain_tiered_memory.values.turns.assign_turns`), so two writers
  on one thread interleave whole messages and never share a turn number.
* A message id (LangChain's ``message.id``) is stored once per thread: a
  retried add, or a graph state replayed, adds nothing twice.
* A view (:class:`~langchain_tiered_memory.memory.TieredMemory`) keeps a copy
  of the window and a :class:`LogCursor`; :meth:`ThreadLog.read` returns only
  the messages after the cursor, or the whole window when the version or the
  user's generation changed (another view compressed, or the user was
  forgotten).
* A compression is a compare-and-set on the version
  (:meth:`ThreadLog.commit_compression`): of two views that compress the same
  turns, one commits and the other's work is dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_tiered_memory.storage.base import (
    AppendResult,
    LogCursor,
    LoggedMessage,
    ThreadHead,
    ThreadRead,
)
from langchain_tiered_memory.storage.codec import (
    from_micros,
    message_from_json,
    message_to_json,
    to_micros,
)
from langchain_tiered_memory.storage.sql import Database, Tx, thread_key, user_key
from langchain_tiered_memory.values.turns import assign_turns

__all__ = ["ThreadLog", "forgotten_digest"]

_CHUNK = 400

_HEAD_COLS = (
    "version, next_turn, buffer_start, summary, summarized_through, compress_seq, failures, "
    "extracted_through, system_prompt, last_seq"
)


def forgotten_digest(thread_id: str, message_id: str) -> str:
    """The digest kept of a forgotten message id (no text: a SHA-256 of the two ids).

    Example:
        >>> len(forgotten_digest("t1", "m1")), forgotten_digest("t1", "m1") == forgotten_digest("t2", "m1")
        (64, False)
    """  # noqa: E501
    data = f"{thread_id}\x00{message_id}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _now() -> int:
    return to_micros(datetime.now(timezone.utc))


def _marks(n: int) -> str:
    return ",".join("?" * n)


class ThreadLog:
    """Thread heads and the turn log over a backend's database.

    Args:
        db: The backend's database (its schema created).
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- reading -----------------------------------------------------------------

    @staticmethod
    def generation(tx: Tx, user_id: str) -> int:
        """The user's generation (0 for a user never forgotten)."""
        row = tx.execute("SELECT generation FROM users WHERE user_id=?", (user_id,)).fetchone()
        return int(row[0]) if row else 0

    def head(self, tx: Tx, user_id: str, thread_id: str) -> ThreadHead:
        """The thread's head as ``tx`` sees it."""
        generation = self.generation(tx, user_id)
        row = tx.execute(
            f"SELECT {_HEAD_COLS} FROM threads WHERE user_id=? AND thread_id=?",
            (user_id, thread_id),
        ).fetchone()
        if row is None:
            return ThreadHead(user_id, thread_id, generation)
        return ThreadHead(
            user_id,
            thread_id,
            generation,
            int(row[0]),
            int(row[1]),
            int(row[2]),
            str(row[3]),
            int(row[4]),
            int(row[5]),
            int(row[6]),
            int(row[7]),
            str(row[8]),
            int(row[9]),
            True,
        )

    @staticmethod
    def _rows(tx: Tx, sql: str, params: Sequence[Any]) -> tuple[LoggedMessage, ...]:
        rows = tx.execute(sql, params).fetchall()
        return tuple(
            LoggedMessage(int(seq), int(turn), from_micros(at), message_from_json(body))
            for seq, turn, at, body in rows
        )

    def read(self, user_id: str, thread_id: str, cursor: LogCursor | None) -> ThreadRead:
        """The head and the messages a view at ``cursor`` has not seen (one snapshot)."""
        with self.db.read() as tx:
            head = self.head(tx, user_id, thread_id)
            if (
                cursor is not None
                and cursor.generation == head.generation
                and cursor.version == head.version
                and head.exists
            ):
                if head.last_seq <= cursor.seq:
                    return ThreadRead(head, (), False)
                messages = self._rows(
                    tx,
                    "SELECT seq, turn, at, body FROM messages WHERE user_id=? AND thread_id=? "
                    "AND seq>? ORDER BY seq",
                    (user_id, thread_id, cursor.seq),
                )
                return ThreadRead(head, messages, False)
            if not head.exists:
                return ThreadRead(head, (), True)
            messages = self._rows(
                tx,
                "SELECT seq, turn, at, body FROM messages WHERE user_id=? AND thread_id=? "
                "AND turn>=? ORDER BY seq",
                (user_id, thread_id, head.window_start),
            )
            return ThreadRead(head, messages, True)

    def turns(
        self, user_id: str, thread_id: str, indexes: Iterable[int]
    ) -> tuple[LoggedMessage, ...]:
        """The stored messages of some turns of a thread, oldest first."""
        wanted = sorted(set(indexes))
        out: list[LoggedMessage] = []
        with self.db.read() as tx:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                out.extend(
                    self._rows(
                        tx,
                        "SELECT seq, turn, at, body FROM messages WHERE user_id=? AND "
                        f"thread_id=? AND turn IN ({_marks(len(chunk))}) ORDER BY seq",
                        (user_id, thread_id, *chunk),
                    )
                )
        return tuple(sorted(out, key=lambda m: m.seq))

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids, oldest first."""
        with self.db.read() as tx:
            return self.user_threads(tx, user_id)

    @staticmethod
    def user_threads(tx: Tx, user_id: str) -> list[str]:
        """A user's thread ids as ``tx`` sees them, oldest first."""
        rows = tx.execute(
            "SELECT thread_id FROM threads WHERE user_id=? ORDER BY updated_at, thread_id",
            (user_id,),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def known_ids(self, user_id: str, thread_id: str, ids: Sequence[str]) -> set[str]:
        """Which of these message ids the thread has stored - or has forgotten."""
        with self.db.read() as tx:
            return self._known_in(tx, user_id, thread_id, [i for i in ids if i])

    # -- writing -------------------------------------------------------------------

    def lock(self, tx: Tx, user_id: str, thread_id: str) -> None:
        """Create the thread's rows if missing and lock it for a write (inside ``tx``)."""
        self.db.lock_key(tx, user_key(user_id), shared=True)
        self.ensure(tx, user_id, thread_id)
        self.db.lock_key(tx, thread_key(user_id, thread_id))

    @staticmethod
    def ensure(tx: Tx, user_id: str, thread_id: str) -> None:
        """Create the user's and the thread's rows if missing (inside ``tx``)."""
        tx.execute("INSERT INTO users (user_id) VALUES (?) ON CONFLICT DO NOTHING", (user_id,))
        # a new head starts at a version no earlier head of the same thread had (the
        # time): a view of a deleted thread sees the change even if the ids come back
        now = _now()
        tx.execute(
            "INSERT INTO threads (user_id, thread_id, version, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (user_id, thread_id, now, now),
        )

    def append(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        at: datetime | None = None,
        system_prompt: str | None = None,
    ) -> AppendResult:
        """Append messages (and set the system prompt) in one transaction.

        Messages whose id the thread already stored or forgot are skipped.
        New turns are dated ``at`` (default: now).

        Raises:
            ValueError: for a tool result without its call (nothing is stored).
            TypeError: for a message JSON cannot store (nothing is stored).
        """
        bodies = {id(m): message_to_json(m) for m in messages}  # TypeError before any write
        now = _now()
        opened = to_micros(at) if at is not None else now
        with self.db.write() as tx:
            self.lock(tx, user_id, thread_id)
            head = self.head(tx, user_id, thread_id)
            ids = [m.id for m in messages if m.id]
            known = self._known_in(tx, user_id, thread_id, ids)
            fresh: list[BaseMessage] = []
            for message in messages:
                if message.id:
                    if message.id in known:
                        continue
                    known.add(message.id)
                fresh.append(message)
            open_index = head.next_turn - 1
            open_turn: tuple[LoggedMessage, ...] = ()
            if open_index >= head.buffer_start and open_index >= 0:
                open_turn = self._rows(
                    tx,
                    "SELECT seq, turn, at, body FROM messages WHERE user_id=? AND thread_id=? "
                    "AND turn=? ORDER BY seq",
                    (user_id, thread_id, open_index),
                )
            planned = assign_turns(
                [m.message for m in open_turn],
                open_index if open_turn else None,
                head.next_turn,
                fresh,
            )
            stored: list[LoggedMessage] = []
            next_turn = head.next_turn
            last_seq = head.last_seq
            for turn, message in planned:
                body = bodies.get(id(message)) or message_to_json(message)
                when = opened if turn >= head.next_turn else now
                seq = tx.insert(
                    "INSERT INTO messages (user_id, thread_id, turn, message_id, at, body) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (user_id, thread_id, turn, message.id or None, when, body),
                    key="seq",
                )
                stored.append(LoggedMessage(seq, turn, from_micros(when), message))
                next_turn = max(next_turn, turn + 1)
                last_seq = max(last_seq, seq)
            sets = "next_turn=?, last_seq=?, updated_at=?"
            params: list[Any] = [next_turn, last_seq, now]
            if system_prompt is not None and system_prompt != head.system_prompt:
                sets += ", system_prompt=?"
                params.append(system_prompt)
            if stored or len(params) > 3:
                tx.execute(
                    f"UPDATE threads SET {sets} WHERE user_id=? AND thread_id=?",
                    (*params, user_id, thread_id),
                )
        return AppendResult(tuple(stored), len(messages) - len(fresh))

    def _known_in(self, tx: Tx, user_id: str, thread_id: str, ids: Sequence[str]) -> set[str]:
        known: set[str] = set()
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            known.update(
                str(r[0])
                for r in tx.execute(
                    "SELECT message_id FROM messages WHERE user_id=? AND thread_id=? AND "
                    f"message_id IN ({_marks(len(chunk))})",
                    (user_id, thread_id, *chunk),
                ).fetchall()
            )
            digests = {forgotten_digest(thread_id, i): i for i in chunk}
            known.update(
                digests[str(r[0])]
                for r in tx.execute(
                    "SELECT digest FROM forgotten_messages WHERE user_id=? AND digest IN "
                    f"({_marks(len(digests))})",
                    (user_id, *digests),
                ).fetchall()
            )
        return known

    def set_system_prompt(self, user_id: str, thread_id: str, prompt: str) -> None:
        """Pin a new system prompt for the thread."""
        with self.db.write() as tx:
            self.lock(tx, user_id, thread_id)
            tx.execute(
                "UPDATE threads SET system_prompt=?, updated_at=? WHERE user_id=? AND thread_id=?",
                (prompt, _now(), user_id, thread_id),
            )

    @staticmethod
    def commit_compression(
        tx: Tx,
        head: ThreadHead,
        *,
        buffer_start: int,
        summary: str,
        summarized_through: int,
        compress_seq: int,
        failures: int,
    ) -> bool:
        """Move the window and the summary, if the thread is still as ``head`` saw it.

        Inside the caller's transaction (which also archives the evicted
        turns). Returns False - changing nothing - when another view changed
        the window meanwhile or the user was forgotten.
        """
        if ThreadLog.generation(tx, head.user_id) != head.generation:
            return False
        cur = tx.execute(
            "UPDATE threads SET buffer_start=?, summary=?, summarized_through=?, compress_seq=?, "
            "failures=?, version=version+1, updated_at=? WHERE user_id=? AND thread_id=? AND "
            "version=?",
            (
                buffer_start,
                summary,
                summarized_through,
                compress_seq,
                failures,
                _now(),
                head.user_id,
                head.thread_id,
                head.version,
            ),
        )
        return cur.rowcount == 1

    def note_attempt(self, head: ThreadHead, *, compress_seq: int, failures: int) -> None:
        """Record a compression attempt that changed nothing (a failed summary)."""
        with self.db.write() as tx:
            tx.execute(
                "UPDATE threads SET compress_seq=?, failures=? WHERE user_id=? AND thread_id=? "
                "AND version=?",
                (compress_seq, failures, head.user_id, head.thread_id, head.version),
            )

    def advance_extraction(self, head: ThreadHead, through: int) -> bool:
        """Move the extraction watermark forward from where ``head`` saw it (compare-and-set)."""
        with self.db.write() as tx:
            cur = tx.execute(
                "UPDATE threads SET extracted_through=? WHERE user_id=? AND thread_id=? AND "
                "extracted_through=? AND ?>extracted_through",
                (through, head.user_id, head.thread_id, head.extracted_through, through),
            )
            return cur.rowcount == 1

    @staticmethod
    def move_extraction(tx: Tx, head: ThreadHead, through: int) -> bool:
        """Move the extraction watermark to ``through`` inside the caller's transaction, if
        it is still where ``head`` saw it and the user was not forgotten since
        (compare-and-set); False - changing nothing - otherwise."""
        if ThreadLog.generation(tx, head.user_id) != head.generation:
            return False
        cur = tx.execute(
            "UPDATE threads SET extracted_through=? WHERE user_id=? AND thread_id=? AND "
            "extracted_through=? AND ?>extracted_through",
            (through, head.user_id, head.thread_id, head.extracted_through, through),
        )
        return cur.rowcount == 1

    def clear(self, tx: Tx, user_id: str, thread_id: str) -> None:
        """Empty the thread's buffer and summary (inside ``tx``); turn numbers go on."""
        tx.execute(
            "UPDATE threads SET buffer_start=next_turn, summarized_through=next_turn-1, "
            "summary='', compress_seq=last_seq, failures=0, version=version+1, updated_at=? "
            "WHERE user_id=? AND thread_id=?",
            (_now(), user_id, thread_id),
        )

    @staticmethod
    def drop_summary(tx: Tx, user_id: str, thread_id: str) -> None:
        """Drop the running summary (it carried something forgotten); the window stays."""
        tx.execute(
            "UPDATE threads SET summary='', version=version+1 WHERE user_id=? AND thread_id=?",
            (user_id, thread_id),
        )

    def delete_turns(self, tx: Tx, user_id: str, thread_id: str, turns: Iterable[int]) -> int:
        """Delete some turns' messages (inside ``tx``), keeping digests of their ids."""
        wanted = sorted(set(turns))
        deleted = 0
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            where = f"user_id=? AND thread_id=? AND turn IN ({_marks(len(chunk))})"
            params = (user_id, thread_id, *chunk)
            self._tombstone(
                tx, user_id, f"SELECT thread_id, message_id FROM messages WHERE {where}", params
            )
            deleted += tx.execute(f"DELETE FROM messages WHERE {where}", params).rowcount
        if deleted:
            tx.execute(
                "UPDATE threads SET version=version+1 WHERE user_id=? AND thread_id=?",
                (user_id, thread_id),
            )
        return deleted

    def insert_placeholders(
        self,
        tx: Tx,
        user_id: str,
        thread_id: str,
        turns: Iterable[int],
        text: str,
        *,
        id_prefix: str | None = None,
    ) -> None:
        """Put one user message with ``text`` in each of these (emptied) turns (inside ``tx``);
        with ``id_prefix``, each gets a new message id that starts with it."""
        import uuid

        from langchain_core.messages import HumanMessage

        now = _now()
        last = 0
        for turn in sorted(set(turns)):
            message_id = None if id_prefix is None else f"{id_prefix}{uuid.uuid4().hex}"
            body = message_to_json(HumanMessage(text, id=message_id))
            last = tx.insert(
                "INSERT INTO messages (user_id, thread_id, turn, message_id, at, body) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (user_id, thread_id, turn, message_id, now, body),
                key="seq",
            )
        if last:
            tx.execute(
                "UPDATE threads SET last_seq=?, version=version+1 WHERE user_id=? AND thread_id=?",
                (last, user_id, thread_id),
            )

    @staticmethod
    def user_turns(tx: Tx, user_id: str) -> dict[tuple[str, int], list[BaseMessage]]:
        """Every stored turn of a user, by ``(thread, turn)`` (inside ``tx``)."""
        rows = tx.execute(
            "SELECT thread_id, turn, body FROM messages WHERE user_id=? ORDER BY seq", (user_id,)
        ).fetchall()
        turns: dict[tuple[str, int], list[BaseMessage]] = {}
        for thread, turn, body in rows:
            turns.setdefault((str(thread), int(turn)), []).append(message_from_json(body))
        return turns

    def delete_thread(self, tx: Tx, user_id: str, thread_id: str) -> int:
        """Delete a thread's log and head (inside ``tx``); returns the messages deleted."""
        where = "user_id=? AND thread_id=?"
        self._tombstone(
            tx,
            user_id,
            f"SELECT thread_id, message_id FROM messages WHERE {where}",
            (user_id, thread_id),
        )
        deleted = tx.execute(f"DELETE FROM messages WHERE {where}", (user_id, thread_id)).rowcount
        tx.execute(f"DELETE FROM threads WHERE {where}", (user_id, thread_id))
        return int(deleted)

    def delete_user(self, tx: Tx, user_id: str) -> int:
        """Delete every thread of a user (inside ``tx``); returns the messages deleted."""
        self._tombstone(
            tx, user_id, "SELECT thread_id, message_id FROM messages WHERE user_id=?", (user_id,)
        )
        deleted = tx.execute("DELETE FROM messages WHERE user_id=?", (user_id,)).rowcount
        tx.execute("DELETE FROM threads WHERE user_id=?", (user_id,))
        return int(deleted)

    @staticmethod
    def _tombstone(tx: Tx, user_id: str, select: str, params: Sequence[Any]) -> None:
        rows = tx.execute(select, params).fetchall()
        digests = [
            (user_id, forgotten_digest(str(thread), str(message_id)))
            for thread, message_id in rows
            if message_id
        ]
        if digests:
            tx.executemany(
                "INSERT INTO forgotten_messages (user_id, digest) VALUES (?, ?) "
                "ON CONFLICT DO NOTHING",
                digests,
            )

    def export(self, user_id: str) -> dict[str, Any]:
        """A user's threads (head and every stored message), JSON-ready."""
        from langchain_core.messages import messages_to_dict

        out: dict[str, Any] = {}
        with self.db.read() as tx:
            for thread_id in [
                str(r[0])
                for r in tx.execute(
                    "SELECT thread_id FROM threads WHERE user_id=? ORDER BY thread_id", (user_id,)
                ).fetchall()
            ]:
                head = self.head(tx, user_id, thread_id)
                messages = self._rows(
                    tx,
                    "SELECT seq, turn, at, body FROM messages WHERE user_id=? AND thread_id=? "
                    "ORDER BY seq",
                    (user_id, thread_id),
                )
                out[thread_id] = {
                    "summary": head.summary,
                    "summarized_through": head.summarized_through,
                    "buffer_start": head.buffer_start,
                    "next_turn": head.next_turn,
                    "system_prompt": head.system_prompt,
                    "messages": [
                        {
                            "turn": m.turn,
                            "at": m.at.isoformat(),
                            "message": messages_to_dict([m.message])[0],
                        }
                        for m in messages
                    ],
                }
        return out
