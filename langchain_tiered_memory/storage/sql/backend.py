"""The operations that must commit as one, written once for every SQL backend.

:class:`SQLBackend` implements :class:`~langchain_tiered_memory.storage.base.MemoryBackend`
over a :class:`~langchain_tiered_memory.storage.sql.Database`, the shared turn
log (:class:`~.threads.ThreadLog`), core facts (:class:`~.facts.FactLog`),
audit log, and a dialect's record store (a :class:`~.records.SQLRecordStore`). A backend
subclass only builds those parts (SQLite: one file and FAISS; Postgres: one
database and pgvector).

What commits together:

* a compression: the evicted turns' records, the summary's record, the
  thread's new head, the audit events - or nothing, if another view
  compressed meanwhile or the user was forgotten;
* a fact write: the new version, the old one retired, its archive record,
  the old record marked superseded;
* a forget: every row of what is forgotten, from every table, the user's
  generation bumped so every open view drops its copy, and a forget intent
  (:mod:`.forgets`) saying what is left to do. Afterwards the vector index,
  the embedding cache, the write-ahead log and the LangGraph checkpoints of
  the user's threads are purged, and the intent is closed; a crash before
  that is finished by the next open or a retry
  (:meth:`SQLBackend.finish_forgets`).

What each forget removes:

* :meth:`SQLBackend.forget_user` - the user's turn log and thread heads,
  core facts (every version), archive records (turns, summaries, facts,
  observations) with their keyword and vector index entries and embedding-
  cache entries, and audit events (one ``delete`` event counting the records
  stays). Kept: the user id with a generation number, and SHA-256 digests of
  the forgotten message ids (so a replayed conversation is not stored again).
* :meth:`SQLBackend.forget_facts` ("forget that ...") - every version of the
  subject, their records and the "possibly" records of the subject, the
  turns that stated it (from the log and the archive), the summaries that
  folded those turns in (records dropped; a thread's running summary that
  carries them is dropped too - the raw turns it summarised stay archived),
  and records citing any of these (observations).
* :meth:`SQLBackend.forget_thread` - the thread's log, head and records.
* :meth:`SQLBackend.forget_expired` - the user's records and fact versions
  whose ``expires_at`` has passed, by the same machinery as a forget: an
  expired fact goes as :meth:`SQLBackend.forget_facts` takes one version (its
  record, the turns that stated it, the summaries carrying those), an
  expired record as a deleted one, and records citing any of them too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from langchain_tiered_memory.ids import check_id, fact_record_id, turn_record_id
from langchain_tiered_memory.records import (
    MemoryRecord,
    fact_record,
    summary_record,
    turn_record,
)
from langchain_tiered_memory.storage.base import (
    FORGET_NOTICE_ID,
    AppendResult,
    ExtractionCommit,
    FactChange,
    Flushes,
    ForgetCounts,
    LogCursor,
    ThreadHead,
    ThreadRead,
    check_user,
)
from langchain_tiered_memory.storage.codec import to_micros
from langchain_tiered_memory.storage.sql import (
    Database,
    LoggedDatabase,
    Tx,
    facts_key,
    thread_key,
    user_key,
)
from langchain_tiered_memory.storage.sql.audit import AuditKind, AuditLog
from langchain_tiered_memory.storage.sql.facts import FactLog
from langchain_tiered_memory.storage.sql.forgets import ForgetIntent, ForgetLog
from langchain_tiered_memory.storage.sql.records import Row, SQLRecordStore
from langchain_tiered_memory.storage.sql.threads import ThreadLog
from langchain_tiered_memory.values.facts import CoreFact, Expect, FactUpdate
from langchain_tiered_memory.values.turns import Turn, message_text

__all__ = ["CheckpointPurge", "SQLBackend"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Deletes LangGraph checkpoint threads (the store's checkpointers); given to a forget.
CheckpointPurge = Callable[[Sequence[str]], None]


def _summary_through(record: MemoryRecord) -> int:
    """The newest turn a summary record carries (every one before it too)."""
    through = record.metadata.get("through")
    if isinstance(through, int):
        return through
    tail = record.id.rsplit(":", 1)[-1]  # records written before ``through`` was kept
    return int(tail) if tail.isdigit() else 10**12


class _Stale(Exception):
    """Raised inside a transaction to roll it back: the thread changed meanwhile."""


class SQLBackend:
    """A :class:`~langchain_tiered_memory.storage.base.MemoryBackend` over SQL.

    Args:
        db: The database (schema created).
        records: Its record store.
        where: Where it lives, for messages.
    """

    def __init__(self, db: Database, records: SQLRecordStore[Any], *, where: str) -> None:
        self.db = db
        self.where = where
        self.records = records
        self.audit = AuditLog(db)
        self.threads_log = ThreadLog(db)
        self.facts_log = FactLog(db)
        self.forgets = ForgetLog(db)

    # -- the turn log ----------------------------------------------------------------

    def read_thread(self, user_id: str, thread_id: str, cursor: LogCursor | None) -> ThreadRead:
        """The head and the messages a view at ``cursor`` has not seen."""
        return self.threads_log.read(user_id, thread_id, cursor)

    def append_messages(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        at: datetime | None = None,
        system_prompt: str | None = None,
    ) -> AppendResult:
        """Append messages (see :meth:`~.threads.ThreadLog.append`)."""
        return self.threads_log.append(
            user_id, thread_id, messages, at=at, system_prompt=system_prompt
        )

    def known_message_ids(self, user_id: str, thread_id: str, ids: Sequence[str]) -> set[str]:
        """Which of these message ids the thread stored or forgot."""
        return self.threads_log.known_ids(user_id, thread_id, ids)

    def set_system_prompt(self, user_id: str, thread_id: str, prompt: str) -> None:
        """Pin a thread's system prompt."""
        self.threads_log.set_system_prompt(user_id, thread_id, prompt)

    def commit_compression(
        self,
        head: ThreadHead,
        *,
        evicted: Sequence[Turn],
        summary: str,
        summarized_through: int,
        buffer_start: int,
        compress_seq: int,
        failures: int,
        audit: Mapping[str, Any],
    ) -> ThreadHead | None:
        """Archive the evicted turns (and a changed summary) and move the window, atomically.

        Returns the thread's head as written (the window moved, ``version``
        one up), or ``None``, having changed nothing, when the thread's window
        changed since ``head`` was read or the user was forgotten.
        """
        user, thread = head.user_id, head.thread_id
        turns = self.records.prepare(
            [turn_record(t, user_id=user, thread_id=thread) for t in evicted]
        )
        summaries = None
        if summary and (summary != head.summary or summarized_through != head.summarized_through):
            summaries = self.records.prepare(
                [
                    summary_record(
                        user_id=user,
                        thread_id=thread,
                        summary=summary,
                        through=summarized_through,
                        turns=tuple(audit.get("turns", ())),
                    )
                ]
            )
        try:
            with self.db.write() as tx:
                self.threads_log.lock(tx, user, thread)
                if not ThreadLog.commit_compression(
                    tx,
                    head,
                    buffer_start=buffer_start,
                    summary=summary,
                    summarized_through=summarized_through,
                    compress_seq=compress_seq,
                    failures=failures,
                ):
                    raise _Stale
                entries = self.records.write_prepared(tx, turns, page_out=True)
                if summaries is not None:
                    entries += self.records.write_prepared(tx, summaries)
                kind: AuditKind = "compression" if audit.get("result") == "compression" else "error"
                self.audit.insert(tx, kind, user_id=user, thread_id=thread, payload=dict(audit))
        except _Stale:
            logger.info("thread %s/%s changed meanwhile; this compression is dropped", user, thread)
            return None
        self._finish_write(entries)
        return replace(
            head,
            buffer_start=buffer_start,
            summary=summary,
            summarized_through=summarized_through,
            compress_seq=compress_seq,
            failures=failures,
            version=head.version + 1,  # as ThreadLog.commit_compression wrote it
        )

    def _finish_write(self, entries: Sequence[Any]) -> None:
        try:
            self.records.finish_write(entries)
        except Exception:  # committed: the index repairs itself from the records
            logger.exception("updating the vector index after a commit failed; it will be rebuilt")

    def note_compression_attempt(
        self, head: ThreadHead, *, compress_seq: int, failures: int
    ) -> None:
        """Record a compression attempt that changed nothing (a failed summary)."""
        self.threads_log.note_attempt(head, compress_seq=compress_seq, failures=failures)

    def advance_extraction(self, head: ThreadHead, through: int) -> ThreadHead | None:
        """Move the extraction watermark forward (compare-and-set); the head as written,
        or ``None`` when another view moved it first."""
        if not self.threads_log.advance_extraction(head, through):
            return None
        return replace(head, extracted_through=through)

    def commit_extraction(
        self,
        head: ThreadHead,
        through: int,
        changes: Sequence[FactChange],
        *,
        records: Sequence[MemoryRecord] = (),
    ) -> ExtractionCommit | None:
        """Write a batch's fact changes, their records and audit events, archive
        ``records`` and move the extraction watermark, atomically (compare-and-set on the
        watermark and the user's generation); ``None``, having changed nothing, when
        another view moved the watermark first or the user was forgotten meanwhile."""
        user, thread = check_user(head.user_id), head.thread_id
        prepared = [
            self.records.prepare([fact_record(user, c.fact)]) if c.fact is not None else None
            for c in changes
        ]
        extra = self.records.prepare(list(records)) if records else None
        updates: list[FactUpdate] = []
        ended: list[CoreFact] = []
        retired: list[CoreFact] = []
        try:
            with self.db.write() as tx:
                self.facts_log.lock(tx, user)  # facts, then the thread: a forget's order
                self.threads_log.ensure(tx, user, thread)
                self.db.lock_key(tx, thread_key(user, thread))
                if not ThreadLog.move_extraction(tx, head, through):
                    raise _Stale
                entries: list[Any] = []
                events: list[tuple[AuditKind, dict[str, Any]]] = []
                for change, ready in zip(changes, prepared, strict=True):
                    payload = dict(change.audit)
                    if change.fact is not None:
                        update = self.facts_log.write(tx, user, change.fact, reason=change.reason)
                        if update.unchanged:
                            continue
                        updates.append(update)
                        assert ready is not None  # prepared for every change with a fact
                        entries += self.records.write_prepared(tx, ready)
                        payload["fact_id"] = update.fact.id
                        if update.superseded is not None:
                            payload["replaces"] = update.superseded.id
                            self.records.set_metadata(
                                tx,
                                fact_record_id(user, update.superseded.id),
                                user,
                                {"superseded": True, "superseded_by": update.fact.id},
                            )
                    elif change.end is not None:
                        subject, block = change.end
                        gone = self._end_in(
                            tx, user, subject, block, reason=change.reason, at=change.at
                        )
                        if gone is None:
                            continue
                        ended.append(gone)
                        payload["fact_id"] = gone.id
                    else:
                        assert change.retire is not None
                        moved = self.facts_log.retire(
                            tx, user, [change.retire], reason=change.reason
                        )
                        if not moved:
                            continue
                        retired += moved
                        payload["fact_id"] = change.retire
                    events.append(("write", payload))
                if extra is not None:
                    entries += self.records.write_prepared(tx, extra)
                for kind, payload in events:
                    self.audit.insert(tx, kind, user_id=user, thread_id=thread, payload=payload)
        except _Stale:
            logger.info(
                "thread %s/%s: the extraction watermark moved or the user was forgotten; "
                "this batch is dropped",
                user,
                thread,
            )
            return None
        self._finish_write(entries)
        return ExtractionCommit(
            replace(head, extracted_through=through),
            tuple(updates),
            tuple(ended),
            tuple(retired),
        )

    def _end_in(
        self,
        tx: Tx,
        user_id: str,
        subject: str,
        block: str,
        *,
        reason: str,
        at: datetime | None = None,
    ) -> CoreFact | None:
        """End the subject's current fact inside ``tx`` (after the facts lock) at ``at``
        (default now) and mark its record no longer current; ``None`` when there is none."""
        ended = self.facts_log.end(
            tx, user_id, subject, block, at=at or datetime.now(timezone.utc), reason=reason
        )
        if ended is not None:
            self.records.set_metadata(
                tx, fact_record_id(user_id, ended.id), user_id, {"superseded": True, "ended": True}
            )
        return ended

    def clear_thread(self, user_id: str, thread_id: str) -> None:
        """Empty a thread's buffer and summary; its turns stay in the archive."""
        with self.db.write() as tx:
            self.threads_log.lock(tx, user_id, thread_id)
            self.threads_log.clear(tx, user_id, thread_id)

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        return self.threads_log.threads(check_user(user_id))

    # -- core facts ------------------------------------------------------------------

    def facts_version(self, user_id: str) -> int:
        """The user's core version."""
        with self.db.read() as tx:
            return FactLog.version(tx, user_id)

    def load_facts(self, user_id: str) -> tuple[int, list[CoreFact]]:
        """Every fact version of the user, with the version read with them."""
        return self.facts_log.load(user_id)

    def write_fact(
        self, user_id: str, fact: CoreFact, *, reason: str, expect: Expect = "any"
    ) -> FactUpdate:
        """Write a fact version, retire the old one, archive its record - in one commit."""
        check_user(user_id)
        prepared = self.records.prepare([fact_record(user_id, fact)])
        with self.db.write() as tx:
            self.facts_log.lock(tx, user_id)
            update = self.facts_log.write(tx, user_id, fact, reason=reason, expect=expect)
            entries: list[Any] = []
            if not update.unchanged:
                entries = self.records.write_prepared(tx, prepared)
                if update.superseded is not None:
                    self.records.set_metadata(
                        tx,
                        fact_record_id(user_id, update.superseded.id),
                        user_id,
                        {"superseded": True, "superseded_by": update.fact.id},
                    )
        self._finish_write(entries)
        return update

    def end_fact(
        self,
        user_id: str,
        subject: str,
        block: str = "human",
        *,
        at: datetime | None = None,
        reason: str = "ended",
    ) -> CoreFact | None:
        """End the subject's current fact and mark its record ended, in one commit."""
        check_user(user_id)
        with self.db.write() as tx:
            self.facts_log.lock(tx, user_id)
            ended = self.facts_log.end(
                tx, user_id, subject, block, at=at or datetime.now(timezone.utc), reason=reason
            )
            if ended is not None:
                self.records.set_metadata(
                    tx,
                    fact_record_id(user_id, ended.id),
                    user_id,
                    # "superseded": recall treats it as no longer current, as a replaced one
                    {"superseded": True, "ended": True},
                )
        return ended

    def retire_facts(self, user_id: str, fact_ids: Sequence[str], *, reason: str) -> list[CoreFact]:
        """Mark active facts ``archived`` (out of core memory for room; kept in history)."""
        with self.db.write() as tx:
            self.facts_log.lock(tx, user_id)
            return self.facts_log.retire(tx, user_id, fact_ids, reason=reason)

    def clear_facts(self, user_id: str) -> list[CoreFact]:
        """Delete every fact of the user and their records."""

        def plan(tx: Tx) -> tuple[list[CoreFact], list[Row]]:
            self.db.lock_key(tx, facts_key(user_id))
            facts = self.facts_log.delete_user(tx, user_id)
            rows = [row for row, _ in self.records.find_rows(tx, user_id, kinds=["fact"])]
            return facts, rows

        return self._forget_some(user_id, plan)[0]

    def forget_facts(
        self, user_id: str, *, subject: str | None = None, fact_id: str | None = None
    ) -> list[CoreFact]:
        """Forget a fact totally: see the module docstring for what goes."""
        check_user(user_id)

        def plan(tx: Tx) -> tuple[list[CoreFact], list[Row]]:
            self.db.lock_key(tx, facts_key(user_id))
            removed = self.facts_log.matching(tx, user_id, subject=subject, fact_id=fact_id)
            if not removed:
                return [], []
            self.facts_log.delete(tx, user_id, [f.id for f in removed])
            self.audit.delete_citing(tx, user_id, [f.id for f in removed])
            subjects = {f.subject for f in removed}
            fact_ids = {fact_record_id(user_id, f.id) for f in removed}
            stated: dict[str, set[int]] = {}
            for f in removed:
                if f.source_turn is not None and f.source_thread is not None:
                    stated.setdefault(f.source_thread, set()).add(f.source_turn)
            rows: list[Row] = []
            for row, record in self.records.find_rows(tx, user_id, kinds=["fact"]):
                if record.id in fact_ids or record.metadata.get("subject") in subjects:
                    rows.append(row)
            rows += self._forget_turns_in(tx, user_id, stated)
            return removed, rows

        return self._forget_some(user_id, plan)[0]

    # -- forgetting ------------------------------------------------------------------

    def _forget_turns_in(self, tx: Tx, user_id: str, turns: Mapping[str, set[int]]) -> list[Row]:
        """Delete turns from the log, and the rows of their records and of the summaries
        that folded them in (inside ``tx``); returns the rows to forget."""
        rows: list[Row] = []
        if not turns:
            return rows
        for thread in sorted(turns):  # after the facts lock, in one order: no deadlock
            self.db.lock_key(tx, thread_key(user_id, thread))
        ids = [turn_record_id(user_id, thread, i) for thread, idx in turns.items() for i in idx]
        rows += [row for row, _ in self.records.find_rows(tx, user_id, ids=ids)]
        for row, record in self.records.find_rows(tx, user_id, kinds=["summary"]):
            cited = turns.get(record.thread_id or "")
            if cited and _summary_through(record) >= min(cited):  # it carries them
                rows.append(row)
        for thread, idx in turns.items():
            self.threads_log.delete_turns(tx, user_id, thread, idx)
            head = self.threads_log.head(tx, user_id, thread)
            if head.exists and head.summary and head.summarized_through >= min(idx):
                ThreadLog.drop_summary(tx, user_id, thread)
        return rows

    def forget_turns(
        self,
        user_id: str,
        thread_id: str,
        turns: Sequence[int],
        *,
        placeholder: str | None = None,
    ) -> int:
        """Forget some turns of a thread: from the log, the archive and the summaries
        that carry them. With ``placeholder``, each turn is replaced by one user message
        with that text (at the same turn number). Returns the archive records deleted."""
        check_user(user_id)

        def plan(tx: Tx) -> tuple[list[CoreFact], list[Row]]:
            rows = self._forget_turns_in(tx, user_id, {thread_id: set(turns)})
            if placeholder is not None:
                self.threads_log.insert_placeholders(tx, user_id, thread_id, turns, placeholder)
            return [], rows

        return self._forget_some(user_id, plan)[1]

    def _forget_some(
        self, user_id: str, plan: Callable[[Tx], tuple[list[CoreFact], list[Row]]]
    ) -> tuple[list[CoreFact], int]:
        """Run a partial forget: ``plan`` deletes what it owns and returns the record rows.

        Returns the facts ``plan`` removed and the number of records deleted.
        """
        with self.db.write() as tx:
            self.db.lock_key(tx, user_key(user_id), shared=True)
            facts, rows = plan(tx)
            rows = list({str(r[1]): r for r in rows}.values())  # each record once
            rows = self._with_citing(tx, user_id, rows)
            intent = self._open_intent(tx, user_id, rows, threads=(), whole_user=False)
            self.records.forget_rows(tx, user_id, rows, whole_user=False)
        self._carry_out(intent, rows, None)
        return facts, len(rows)

    def forget_matching(
        self,
        user_id: str,
        thread_id: str,
        *,
        match: Callable[[str], bool] | None = None,
        subjects: Sequence[str] = (),
        requests: Sequence[int] = (),
        notice: Callable[[ForgetCounts], str] | None = None,
        purge: CheckpointPurge | None = None,
    ) -> ForgetCounts:
        """Forget by words, in every tier in one commit (see the module docstring); the
        ``requests`` turns of ``thread_id`` are replaced by the ``notice`` for the counts.

        Returns what was deleted. Afterwards, as for every forget, the vector
        index, the embedding cache (the deleted texts and the audit strings
        taken out), the write-ahead log and the checkpoints of the threads
        whose turns went are purged.
        """
        check_user(user_id)
        check_id(thread_id, "thread_id")
        wanted = {s.strip().lower() for s in subjects}

        def hits(text: str) -> bool:
            return match is not None and match(text)

        def plan(tx: Tx) -> tuple[ForgetIntent, list[Row], ForgetCounts]:
            self.db.lock_key(tx, user_key(user_id), shared=True)
            self.db.lock_key(tx, facts_key(user_id))
            threads = sorted({*self.threads_log.user_threads(tx, user_id), thread_id})
            for thread in threads:  # after the facts lock, in one order: no deadlock
                self.db.lock_key(tx, thread_key(user_id, thread))
            facts = [
                f
                for f in FactLog.select(tx, user_id)
                if f.subject in wanted or hits(f"{f.subject} {f.content}")
            ]
            if facts:
                self.facts_log.delete(tx, user_id, [f.id for f in facts])
                self.audit.delete_citing(tx, user_id, [f.id for f in facts])
            fact_ids = {fact_record_id(user_id, f.id) for f in facts}
            gone: dict[str, set[int]] = {}
            for f in facts:
                if f.source_turn is not None and f.source_thread is not None:
                    gone.setdefault(f.source_thread, set()).add(f.source_turn)
            said = 0
            texts: list[str] = []
            for (thread, turn), messages in ThreadLog.user_turns(tx, user_id).items():
                if thread == thread_id and turn in requests:
                    continue
                text = "\n".join(message_text(m) for m in messages)
                if hits(text):
                    gone.setdefault(thread, set()).add(turn)
                    texts += [message_text(m) for m in messages]
                    said += 1
            rows: list[Row] = [
                row
                for row, record in self.records.find_rows(tx, user_id)
                if row[1] in fact_ids
                or hits(record.text)
                or (record.kind == "fact" and record.metadata.get("subject") in wanted)
            ]
            if requests:
                gone.setdefault(thread_id, set()).update(requests)
            rows += self._forget_turns_in(tx, user_id, gone)
            for thread in threads:
                head = self.threads_log.head(tx, user_id, thread)
                if head.exists and head.summary and hits(head.summary):
                    ThreadLog.drop_summary(tx, user_id, thread)
            rows = list({str(r[1]): r for r in rows}.values())  # each record once
            rows = self._with_citing(tx, user_id, rows)
            texts += self.audit.scrub(tx, user_id, hits)
            counts = ForgetCounts(tuple(facts), len(rows), said, tuple(sorted(gone)))
            if requests and notice is not None:
                self.threads_log.insert_placeholders(
                    tx, user_id, thread_id, requests, notice(counts), id_prefix=FORGET_NOTICE_ID
                )
            if facts or rows or said or requests:  # the forget moves every view of the user
                tx.execute("UPDATE users SET generation=generation+1 WHERE user_id=?", (user_id,))
            keys = self.records.cache_keys([*(str(r[2]) for r in rows), *texts])
            intent = ForgetLog.open(
                tx, user_id, threads=counts.threads, whole_user=False, cache_keys=keys
            )
            self.records.forget_rows(tx, user_id, rows, whole_user=False)
            if counts.facts or counts.records or counts.turns:
                self.audit.insert(
                    tx,
                    "delete",
                    user_id=user_id,
                    thread_id=thread_id,
                    payload={
                        "forgotten": True,
                        "facts": len(counts.facts),
                        "records": counts.records,
                        "turns": counts.turns,
                    },
                )
            return intent, rows, counts

        with self.db.write() as tx:
            intent, rows, counts = plan(tx)
        self._carry_out(intent, rows, purge)
        logger.info(
            "forgot by words for user %s: %d fact versions, %d records, %d turns",
            user_id,
            len(counts.facts),
            counts.records,
            counts.turns,
        )
        return counts

    def _with_citing(self, tx: Tx, user_id: str, rows: list[Row]) -> list[Row]:
        """``rows`` plus the user's records whose sources cite one of them (observations)."""
        if not rows:
            return rows
        gone = {str(r[1]) for r in rows}
        for row, record in self.records.find_rows(tx, user_id, kinds=["observation", "fact"]):
            if str(row[1]) not in gone and gone & set(record.sources):
                rows.append(row)
                gone.add(str(row[1]))
        return rows

    def _purge(self) -> None:
        """After a forget: overwrite what the database keeps of deleted rows (the WAL)."""
        if isinstance(self.db, LoggedDatabase):
            self.db.checkpoint()

    def expired_users(self, now: datetime) -> list[str]:
        """Users with a record or a fact version whose expiry has passed at ``now``."""
        at = to_micros(now)
        with self.db.read() as tx:
            rows = tx.execute(
                "SELECT user_id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ? "
                "UNION SELECT user_id FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ? "
                "ORDER BY 1",
                (at, at),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def forget_expired(self, user_id: str, now: datetime) -> tuple[list[CoreFact], int]:
        """Forget what of ``user_id`` expired at ``now`` (see the module docstring).

        Returns the fact versions removed and the number of records deleted.
        """
        check_user(user_id)
        at = to_micros(now)

        def plan(tx: Tx) -> tuple[list[CoreFact], list[Row]]:
            self.db.lock_key(tx, facts_key(user_id))
            facts = self.facts_log.expired(tx, user_id, now)
            rows: list[Row] = [
                (int(r[0]), str(r[1]), str(r[2]))
                for r in tx.execute(
                    "SELECT rid, id, text FROM records WHERE user_id=? AND expires_at IS NOT NULL "
                    "AND expires_at <= ?",
                    (user_id, at),
                ).fetchall()
            ]
            if facts:
                self.facts_log.delete(tx, user_id, [f.id for f in facts])
                self.audit.delete_citing(tx, user_id, [f.id for f in facts])
                ids = [fact_record_id(user_id, f.id) for f in facts]
                rows += [row for row, _ in self.records.find_rows(tx, user_id, ids=ids)]
                stated: dict[str, set[int]] = {}
                for f in facts:
                    if f.source_turn is not None and f.source_thread is not None:
                        stated.setdefault(f.source_thread, set()).add(f.source_turn)
                rows += self._forget_turns_in(tx, user_id, stated)
            return facts, rows

        facts, deleted = self._forget_some(user_id, plan)
        if facts or deleted:
            logger.info(
                "swept user %s: %d expired fact versions, %d records", user_id, len(facts), deleted
            )
        return facts, deleted

    def idle_threads(self, before: datetime) -> list[tuple[str, str]]:
        """``(user_id, thread_id)`` of the threads last written before ``before``."""
        with self.db.read() as tx:
            rows = tx.execute(
                "SELECT user_id, thread_id FROM threads WHERE updated_at < ? "
                "ORDER BY user_id, thread_id",
                (to_micros(before),),
            ).fetchall()
        return [(str(u), str(t)) for u, t in rows]

    def _open_intent(
        self, tx: Tx, user_id: str, rows: Sequence[Row], *, threads: Sequence[str], whole_user: bool
    ) -> ForgetIntent:
        """Write down, in the forget's transaction, what it leaves to do after the commit."""
        keys = self.records.cache_keys([str(r[2]) for r in rows])
        return ForgetLog.open(tx, user_id, threads=threads, whole_user=whole_user, cache_keys=keys)

    def _transaction(self, name: str, call: Callable[[], _T]) -> _T:
        """Run one of the forgets' transactions (Postgres retries a dropped connection)."""
        return call()

    def _carry_out(
        self,
        intent: ForgetIntent,
        rows: Sequence[Row],
        purge: CheckpointPurge | None,
        *,
        recovered: bool = False,
    ) -> None:
        """Finish a committed forget: indexes, caches, the WAL, checkpoints; then close it.

        Every step may run twice (a crash between two, then a retry), so each
        is idempotent. ``recovered``: the forget was written by a process that
        died; the intent is kept (see :mod:`.forgets`) instead of deleted.
        """
        self.records.finish_forget(
            intent.user_id,
            rows,
            whole_user=intent.whole_user,
            cache_keys=intent.cache_keys,
            recovered=recovered,
        )
        self._purge()
        if intent.threads and purge is not None:
            purge(intent.threads)
        if recovered:
            self.forgets.mark_recovered(intent)
        else:
            self.forgets.close(intent)
        self._purge()  # the intent row named the threads: no copy left in the WAL

    def finish_forgets(
        self, purge: CheckpointPurge | None = None, *, user_id: str | None = None
    ) -> list[ForgetIntent]:
        """Finish the forgets a crash left half done (of one user, or all): what an open and
        a retry of a forget call. Returns the intents finished."""
        pending = self.forgets.pending(user_id)
        for intent in pending:
            logger.warning(
                "finishing a forget of user %s that stopped at %s (the process ended)",
                intent.user_id,
                intent.at.isoformat(),
            )
            self._carry_out(intent, (), purge, recovered=True)
        if user_id is None:
            self.forgets.expire()
        return pending

    def recovered_forgets(self) -> list[ForgetIntent]:
        """Forgets finished after a crash, whose threads checkpointers attached later are
        purged of (see :mod:`.forgets`)."""
        return self.forgets.recovered()

    def forget_thread(
        self, user_id: str, thread_id: str, *, purge: CheckpointPurge | None = None
    ) -> int:
        """Delete one thread: its log, its head and its archived records (and, with
        ``purge``, its checkpoints)."""
        check_user(user_id)

        def commit() -> tuple[ForgetIntent, list[Row]]:
            with self.db.write() as tx:
                self.db.lock_key(tx, user_key(user_id), shared=True)
                self.db.lock_key(tx, thread_key(user_id, thread_id))
                rows = list(self.records.user_rows(tx, user_id, thread_id=thread_id))
                intent = self._open_intent(tx, user_id, rows, threads=[thread_id], whole_user=False)
                self.threads_log.delete_thread(tx, user_id, thread_id)
                self.records.forget_rows(tx, user_id, rows, whole_user=False)
            return intent, rows

        intent, rows = self._transaction("forget_thread", commit)
        self._carry_out(intent, rows, purge)
        return len(rows)

    def forget_user(self, user_id: str, *, purge: CheckpointPurge | None = None) -> int:
        """Delete a user from every table and index (see the module docstring); with
        ``purge``, their threads' checkpoints too."""
        check_user(user_id)

        def commit() -> tuple[ForgetIntent, list[Row]]:
            with self.db.write() as tx:
                self.db.lock_key(tx, user_key(user_id))
                rows = list(self.records.user_rows(tx, user_id))
                threads = self.threads_log.user_threads(tx, user_id)
                intent = self._open_intent(tx, user_id, rows, threads=threads, whole_user=True)
                self.records.forget_rows(tx, user_id, rows, whole_user=True)
                self.threads_log.delete_user(tx, user_id)
                self.facts_log.delete_user(tx, user_id)
                tx.execute(
                    "INSERT INTO users (user_id) VALUES (?) ON CONFLICT DO NOTHING", (user_id,)
                )
                tx.execute("UPDATE users SET generation=generation+1 WHERE user_id=?", (user_id,))
            return intent, rows

        intent, rows = self._transaction("forget_user", commit)
        self._carry_out(intent, rows, purge)
        logger.info("forgot user %s (%d archive records)", user_id, len(rows))
        return len(rows)

    # -- users -----------------------------------------------------------------------

    def users(self) -> list[str]:
        """Users with a thread, a fact or an archive record (a thread that holds only the
        notices of carried-out forget requests does not count)."""
        with self.db.read() as tx:
            # a thread that holds only forget notices (and their replies) is no user data
            rows = tx.execute(
                "SELECT user_id FROM threads t WHERE NOT EXISTS (SELECT 1 FROM messages n "
                "WHERE n.user_id=t.user_id AND n.thread_id=t.thread_id AND n.message_id LIKE ?) "
                "UNION SELECT m.user_id FROM messages m WHERE NOT EXISTS (SELECT 1 FROM "
                "messages n WHERE n.user_id=m.user_id AND n.thread_id=m.thread_id AND "
                "n.turn=m.turn AND n.message_id LIKE ?) "
                "UNION SELECT user_id FROM facts UNION SELECT DISTINCT user_id FROM records "
                "ORDER BY 1",
                (f"{FORGET_NOTICE_ID}%", f"{FORGET_NOTICE_ID}%"),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def export_user(self, user_id: str) -> dict[str, Any]:
        """A user's whole memory, JSON-ready: records, audit events, threads, core facts."""
        check_user(user_id)
        data = self.records.export_user(user_id)
        data["threads"] = self.threads_log.export(user_id)
        data["core_memory"] = [f.to_dict() for f in self.load_facts(user_id)[1]]
        data["exported_at"] = datetime.now(timezone.utc).isoformat()
        return data

    def flush(self) -> None:
        """Write what the record store keeps in memory (access times, a vector index
        file) without closing anything."""
        if isinstance(self.records, Flushes):
            self.records.flush()

    def close(self) -> None:
        """Flush and close the record store and the database."""
        try:
            self.records.close()
        finally:
            self.db.close()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"
