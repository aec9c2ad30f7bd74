"""The storage seam: what every backend provides, and the values that cross it.

:class:`~langchain_tiered_memory.memory.TieredMemory` (a view) and
:class:`~langchain_tiered_memory.store.MemoryStore` talk to storage only
through :class:`MemoryBackend`: a record store (:class:`RecordStore`: the
archive and its two searches), the turn log and thread heads, the core facts
(:class:`~langchain_tiered_memory.values.facts.FactStore`), the audit log, and the
operations that must commit as one (a compression, a forget). SQLite
(:class:`~langchain_tiered_memory.storage.sqlite.backend.SQLiteBackend`, also
in memory) and Postgres are siblings behind it;
:mod:`langchain_tiered_memory.testing.conformance` is the one suite every
backend passes.

What a backend (or an embedder) can do beyond the protocol is a protocol of
its own, checked with ``isinstance``: :class:`BackendCheckpoints` (LangGraph
checkpoints in the backend's own database), :class:`Vacuums`,
:class:`Flushes`, :class:`Closes` and :class:`EmbeddingCache`.

Example:
    >>> RecordFilter("ana", kinds="fact").user_only
    False
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.records import RECORD_KINDS, MemoryRecord, RecordKind
from langchain_tiered_memory.storage.codec import to_micros
from langchain_tiered_memory.values.facts import CoreFact, FactStore, FactUpdate
from langchain_tiered_memory.values.turns import Turn

__all__ = [
    "AUDIT_KINDS",
    "FORGET_NOTICE_ID",
    "AppendResult",
    "AuditEvent",
    "AuditKind",
    "AuditTrail",
    "BackendCheckpoints",
    "Closes",
    "EmbeddingCache",
    "ExtractionCommit",
    "FactChange",
    "Flushes",
    "ForgetCounts",
    "LogCursor",
    "LoggedMessage",
    "MemoryBackend",
    "PurgesCheckpoints",
    "RecordFilter",
    "RecordStore",
    "Store",
    "StoreWithCheckpoints",
    "ThreadHead",
    "ThreadRead",
    "Vacuums",
    "check_user",
]


#: What an audit event records.
AuditKind = Literal["page_out", "page_in", "compression", "recall", "write", "delete", "error"]
AUDIT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))


@dataclass(frozen=True)
class AuditEvent:
    """One audit event, as read back from the log.

    Attributes:
        id: Increasing event number (unique in the database).
        at: When it happened (UTC).
        user_id: Whose memory it concerns.
        thread_id: The conversation, when it concerns one.
        kind: ``page_out``, ``page_in``, ``compression``, ``recall``, ``write``,
            ``delete`` or ``error``.
        payload: JSON data (ids, counts, scores - no deleted text).
    """

    id: int
    at: datetime
    user_id: str
    thread_id: str | None
    kind: AuditKind
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``at`` as ISO 8601).

        Example:
            >>> from langchain_tiered_memory.storage.codec import from_micros
            >>> AuditEvent(1, from_micros(0), "ana", None, "write", {"ids": ["a"]}).to_dict()["at"]
            '1970-01-01T00:00:00+00:00'
        """
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "kind": self.kind,
            "payload": self.payload,
        }


@dataclass(frozen=True)
class ThreadHead:
    """A thread's head row, with its user's generation.

    Attributes:
        generation: The user's generation (bumped by every forget of the user).
        version: Changes whenever the buffer window changes other than by growing.
        next_turn: The index the next new turn gets.
        buffer_start: The oldest turn in the buffer window.
        summary: The running summary of the evicted turns.
        summarized_through: The newest turn folded into the summary; turns
            between it and ``buffer_start`` were paged out unsummarised.
        compress_seq: Messages after this ``seq`` count as new for the
            compression trigger.
        failures: Consecutive failed summarisations.
        extracted_through: Facts were extracted from every turn up to this one.
        system_prompt: The pinned system prompt.
        last_seq: The newest message's ``seq`` (0: none yet).
        exists: False for a thread never written to.
    """

    user_id: str
    thread_id: str
    generation: int = 0
    version: int = 0
    next_turn: int = 0
    buffer_start: int = 0
    summary: str = ""
    summarized_through: int = -1
    compress_seq: int = 0
    failures: int = 0
    extracted_through: int = -1
    system_prompt: str = ""
    last_seq: int = 0
    exists: bool = False

    @property
    def window_start(self) -> int:
        """The oldest turn a view must hold: unsummarised page-outs included."""
        return min(self.buffer_start, self.summarized_through + 1)

    @property
    def cursor(self) -> LogCursor:
        """Where a view that has read this head stands."""
        return LogCursor(self.generation, self.version, self.last_seq)


@dataclass(frozen=True)
class LogCursor:
    """How far a view has read a thread: the generation, version and last ``seq`` it saw."""

    generation: int
    version: int
    seq: int


@dataclass(frozen=True)
class LoggedMessage:
    """One message of the log: its ``seq``, its turn, when it was added, the message."""

    seq: int
    turn: int
    at: datetime
    message: BaseMessage


@dataclass(frozen=True)
class ThreadRead:
    """What :meth:`ThreadLog.read` returns.

    ``full`` means ``messages`` is the whole window (replace the copy);
    otherwise they are the messages after the cursor, oldest first.
    """

    head: ThreadHead
    messages: tuple[LoggedMessage, ...]
    full: bool


@dataclass(frozen=True)
class AppendResult:
    """What :meth:`ThreadLog.append` stored: the messages (with their turns) and how
    many were skipped as already stored or forgotten."""

    stored: tuple[LoggedMessage, ...]
    skipped: int


@dataclass(frozen=True)
class FactChange:
    """One change an extraction batch makes to a user's core facts
    (:meth:`MemoryBackend.commit_extraction` writes a batch's changes as one).

    Attributes:
        fact: The version to write (an add, or an update superseding the subject's
            current version); ``None`` for an end or a retire.
        end: ``(subject, block)`` of a current fact that stopped holding (an end);
            ``None`` for a write or a retire.
        retire: The id of an active version moved out of core memory (``archived``,
            kept in the history): an older fact a new one possibly replaces.
        at: When an ended fact stopped holding (default: the commit's time).
        reason: Why (kept on the version it retires, and in the audit event).
        audit: What the ``write`` audit event of the change carries besides the ids
            (the action, the model's reason, the turns): ids and short text, no fact text.

    Example:
        >>> FactChange(fact=CoreFact.new("diet", "vegan"), reason="new").action
        'write'
        >>> FactChange(end=("smoking", "human"), reason="quit").action
        'end'
        >>> FactChange(retire="f1", reason="possibly replaced").action
        'retire'
    """

    fact: CoreFact | None = None
    end: tuple[str, str] | None = None
    retire: str | None = None
    at: datetime | None = None
    reason: str = "updated"
    audit: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        given = [x is not None for x in (self.fact, self.end, self.retire)]
        if sum(given) != 1:
            raise ValueError(
                "a FactChange is one of a write (fact=...), an end (end=...) or a retire "
                "(retire=...)"
            )
        if self.at is not None and self.end is None:
            raise ValueError("at= is when an ended fact stopped holding: it needs end=...")

    @property
    def action(self) -> Literal["write", "end", "retire"]:
        """``"write"``, ``"end"`` or ``"retire"``."""
        if self.fact is not None:
            return "write"
        return "end" if self.end is not None else "retire"


@dataclass(frozen=True)
class ExtractionCommit:
    """What :meth:`MemoryBackend.commit_extraction` wrote: the thread's head as written,
    the fact writes (in the order given), the versions ended and those retired."""

    head: ThreadHead
    updates: tuple[FactUpdate, ...] = ()
    ended: tuple[CoreFact, ...] = ()
    retired: tuple[CoreFact, ...] = ()


@dataclass(frozen=True)
class ForgetCounts:
    """What a forget by words deleted (:meth:`MemoryBackend.forget_matching`).

    Attributes:
        facts: The core fact versions deleted.
        records: Archive records deleted.
        turns: Conversation turns deleted (the request turns not counted).
        threads: The threads whose turns were deleted (their checkpoints are purged).
    """

    facts: tuple[Any, ...] = ()
    records: int = 0
    turns: int = 0
    threads: tuple[str, ...] = ()


#: Message ids of the notice a carried-out forget request leaves in its turn start with
#: this (a thread that holds only notices is no user data: see ``MemoryBackend.users``).
FORGET_NOTICE_ID = "forget-notice:"


def check_user(user_id: object) -> str:
    """``user_id`` if it is a valid user id (see :func:`~langchain_tiered_memory.ids.check_id`).

    Every read and write of the storage layer is per user, so each checks it.
    """
    return check_id(user_id, "user_id")


def _kinds_tuple(kinds: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    wanted = (kinds,) if isinstance(kinds, str) else tuple(dict.fromkeys(kinds))
    unknown = [k for k in wanted if k not in RECORD_KINDS]
    if unknown:
        raise ValueError(f"unknown record kind(s) {unknown}; use some of {sorted(RECORD_KINDS)}")
    return wanted


@dataclass(frozen=True, init=False)
class RecordFilter:
    """Which records a read or search of a record store may return. ``user_id`` is mandatory.

    ``since`` is inclusive and ``until`` exclusive (``since <= created_at <
    until``), so consecutive windows never overlap. Naive datetimes are UTC.
    ``kinds`` is one kind or several (kept as a tuple; unknown kinds are refused).

    Every filtered read of a record store (``records``, ``keyword_search``,
    ``dense_search``) takes one, or a bare user id (:meth:`of`).

    Example:
        >>> RecordFilter("ana", kinds="fact").sql()
        ('r.user_id = ? AND r.kind IN (?)', ['ana', 'fact'])
        >>> RecordFilter.of("ana") == RecordFilter("ana")
        True
    """

    user_id: str
    thread_id: str | None
    kinds: tuple[str, ...] | None
    since: datetime | None
    until: datetime | None

    def __init__(
        self,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | RecordKind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> None:
        check_user(user_id)
        object.__setattr__(self, "user_id", user_id)
        object.__setattr__(self, "thread_id", thread_id)
        object.__setattr__(self, "kinds", _kinds_tuple(kinds))
        object.__setattr__(self, "since", since)
        object.__setattr__(self, "until", until)

    @classmethod
    def of(cls, where: RecordFilter | str) -> RecordFilter:
        """``where`` as a filter: a user id stands for all of that user's records.

        Example:
            >>> RecordFilter.of(RecordFilter("ana", "t1")).thread_id
            't1'
        """
        return where if isinstance(where, RecordFilter) else cls(where)

    def sql(self, alias: str = "r") -> tuple[str, list[Any]]:
        """A SQL condition over the ``records`` table aliased ``alias``, with its parameters."""
        where = [f"{alias}.user_id = ?"]
        params: list[Any] = [self.user_id]
        if self.thread_id is not None:
            where.append(f"{alias}.thread_id = ?")
            params.append(self.thread_id)
        if self.kinds is not None:
            where.append(f"{alias}.kind IN ({','.join('?' * len(self.kinds))})")
            params.extend(self.kinds)
        if self.since is not None:
            where.append(f"{alias}.created_at >= ?")
            params.append(to_micros(self.since))
        if self.until is not None:
            where.append(f"{alias}.created_at < ?")
            params.append(to_micros(self.until))
        return " AND ".join(where), params

    @property
    def user_only(self) -> bool:
        """True when the filter restricts nothing but the user.

        Example:
            >>> RecordFilter("ana").user_only, RecordFilter("ana", "t1").user_only
            (True, False)
        """
        return (
            self.thread_id is None
            and self.kinds is None
            and self.since is None
            and self.until is None
        )

    def matches(self, record: MemoryRecord) -> bool:
        """The same test in Python.

        Example:
            >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="x")
            >>> RecordFilter("ana").matches(r), RecordFilter("bob").matches(r)
            (True, False)
        """
        at = to_micros(record.created_at)
        return (
            record.user_id == self.user_id
            and (self.thread_id is None or record.thread_id == self.thread_id)
            and (self.kinds is None or record.kind in self.kinds)
            and (self.since is None or at >= to_micros(self.since))
            and (self.until is None or at < to_micros(self.until))
        )


class RecordStore(Protocol):
    """The archive: records of every user, searched per user.

    Every read takes a ``user_id`` and returns only that user's records;
    writes are idempotent by record id; deletes reach every index.
    """

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Store records (ids already stored are skipped) and index them."""
        ...

    def get(self, ids: Sequence[str], *, user_id: str | None = None) -> list[MemoryRecord]:
        """The stored records with these ids, in order (missing ones skipped)."""
        ...

    def records(self, where: RecordFilter | str) -> list[MemoryRecord]:
        """The records ``where`` admits (a user id: all of theirs), oldest first."""
        ...

    def count(self, user_id: str | None = None) -> int:
        """Number of records (of one user, or all)."""
        ...

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        """Replace a stored record (same id and user)."""
        ...

    def put_record(self, record: MemoryRecord) -> MemoryRecord:
        """Insert ``record``, or replace the stored one with its id (same user), atomically:
        concurrent puts and deletes of one id never fail, the last to commit wins."""
        ...

    def delete(self, ids: Sequence[str], *, user_id: str) -> int:
        """Forget these records of ``user_id``; returns how many."""
        ...

    def keyword_search(
        self, query: str, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """BM25-style keyword hits ``(record, score)`` among the records ``where`` admits,
        best first."""
        ...

    def dense_search(
        self, query: Any, where: RecordFilter | str, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Vector hits ``(record, cosine)`` for a query vector or text among the records
        ``where`` admits, best first."""
        ...

    def note_access(self, ids: Sequence[str], at: datetime | None = None, *, user_id: str) -> None:
        """Mark records as accessed (recall's recency signal), without waiting."""
        ...


class AuditTrail(Protocol):
    """The audit log: what the memory did, per user, read back by the user.

    Payloads carry ids, counts and scores, never memory text; a forget of a
    user removes their events (one ``delete`` event that counts the records stays).
    """

    def record(
        self, kind: AuditKind, *, user_id: str, thread_id: str | None = None, **payload: Any
    ) -> AuditEvent:
        """Append an event (in its own transaction) and return it."""
        ...

    def record_all(
        self,
        events: Sequence[tuple[AuditKind, Mapping[str, Any]]],
        *,
        user_id: str,
        thread_id: str | None = None,
    ) -> list[AuditEvent]:
        """Append ``(kind, payload)`` events in one transaction and return them."""
        ...

    def events(
        self,
        user_id: str,
        *,
        kinds: Iterable[AuditKind] | None = None,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """A user's events, oldest first (the newest ``limit`` of them)."""
        ...


class MemoryBackend(FactStore, Protocol):
    """Everything that lasts, for every user: what a ``MemoryStore`` stands on.

    Attributes:
        where: Where it lives (a directory, ``":memory:"`` or a database URL
            without its password), for messages.
        records: The archive.
        audit: The audit log.
    """

    where: str

    @property
    def records(self) -> RecordStore:
        """The archive."""
        ...

    @property
    def audit(self) -> AuditTrail:
        """The audit log."""
        ...

    # -- the turn log
    def read_thread(self, user_id: str, thread_id: str, cursor: LogCursor | None) -> ThreadRead:
        """The thread's head and the messages after ``cursor`` (or the whole window)."""
        ...

    def append_messages(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        at: datetime | None = None,
        system_prompt: str | None = None,
    ) -> AppendResult:
        """Append messages (idempotent by message id) in one transaction."""
        ...

    def known_message_ids(self, user_id: str, thread_id: str, ids: Sequence[str]) -> set[str]:
        """Which of these message ids the thread stored or forgot."""
        ...

    def set_system_prompt(self, user_id: str, thread_id: str, prompt: str) -> None:
        """Pin a thread's system prompt."""
        ...

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
        """Archive evicted turns (and the new summary) and move the window, in one
        transaction - if the thread is still as ``head`` saw it; returns the head as
        written (so the view needs no read), or ``None``, having changed nothing."""
        ...

    def note_compression_attempt(
        self, head: ThreadHead, *, compress_seq: int, failures: int
    ) -> None:
        """Record a compression attempt that changed nothing."""
        ...

    def advance_extraction(self, head: ThreadHead, through: int) -> ThreadHead | None:
        """Move the thread's fact-extraction watermark from where ``head`` saw it
        (compare-and-set); returns the head as written, or ``None`` if it had moved."""
        ...

    def commit_extraction(
        self,
        head: ThreadHead,
        through: int,
        changes: Sequence[FactChange],
        *,
        records: Sequence[MemoryRecord] = (),
    ) -> ExtractionCommit | None:
        """Write an extraction batch's fact changes (with their archive records and
        ``write`` audit events), archive ``records`` ("possibly" facts) and move the
        thread's extraction watermark to ``through`` - in one transaction, if the
        watermark is still where ``head`` saw it and the user was not forgotten since
        (compare-and-set). Returns what was written, or ``None``, having changed
        nothing: so a batch is written once, whichever view or process gets there first.
        """
        ...

    def clear_thread(self, user_id: str, thread_id: str) -> None:
        """Empty a thread's buffer and summary (the archive keeps its turns)."""
        ...

    def forget_turns(
        self,
        user_id: str,
        thread_id: str,
        turns: Sequence[int],
        *,
        placeholder: str | None = None,
    ) -> int:
        """Forget turns (log, archive, the summaries carrying them); optionally leave a
        placeholder user message in each."""
        ...

    def forget_matching(
        self,
        user_id: str,
        thread_id: str,
        *,
        match: Callable[[str], bool] | None = None,
        subjects: Sequence[str] = (),
        requests: Sequence[int] = (),
        notice: Callable[[ForgetCounts], str] | None = None,
        purge: Callable[[Sequence[str]], None] | None = None,
    ) -> ForgetCounts:
        """Forget by words, in every tier at once: the fact versions whose text ``match``
        accepts (and every version of ``subjects``), the turns of every thread of the user
        and the archive records whose text it accepts, what carries them, and the
        matching strings of the audit log. The ``requests`` turns of ``thread_id`` are
        replaced by one user message with the text ``notice`` gives for the counts."""
        ...

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        ...

    # -- core facts: the FactStore methods (inherited)

    # -- users
    def users(self) -> list[str]:
        """Users with any thread, fact or record."""
        ...

    def forget_user(
        self, user_id: str, *, purge: Callable[[Sequence[str]], None] | None = None
    ) -> int:
        """Delete a user from every table and index; returns the archive records deleted.

        A forget intent is written in the same transaction and closed once
        everything outside it is purged - with ``purge``, the user's threads
        from the LangGraph checkpointers - so a crash is finished later
        (:meth:`finish_forgets`).
        """
        ...

    def forget_thread(
        self, user_id: str, thread_id: str, *, purge: Callable[[Sequence[str]], None] | None = None
    ) -> int:
        """Delete one thread: its log, head and archived records (and, with ``purge``,
        its checkpoints)."""
        ...

    def finish_forgets(
        self, purge: Callable[[Sequence[str]], None] | None = None, *, user_id: str | None = None
    ) -> Sequence[Any]:
        """Finish the forgets a crash left half done (of one user, or all); returns them."""
        ...

    def recovered_forgets(self) -> Sequence[Any]:
        """Forgets finished after a crash, kept for checkpointers attached later."""
        ...

    def export_user(self, user_id: str) -> Mapping[str, Any]:
        """A user's whole memory, JSON-ready."""
        ...

    # -- expiry
    def expired_users(self, now: datetime) -> list[str]:
        """Users with a record or fact version whose ``expires_at`` has passed at ``now``."""
        ...

    def forget_expired(self, user_id: str, now: datetime) -> tuple[list[Any], int]:
        """Forget the user's expired records and fact versions as a forget would; returns
        the fact versions removed and the number of records deleted."""
        ...

    def idle_threads(self, before: datetime) -> list[tuple[str, str]]:
        """``(user_id, thread_id)`` of the threads last written before ``before``."""
        ...

    def close(self) -> None:
        """Flush and release everything."""
        ...


class Store(Protocol):
    """What a :class:`~langchain_tiered_memory.memory.TieredMemory` needs of the store it
    is a view of - all it reaches storage through.

    :class:`~langchain_tiered_memory.store.MemoryStore` is one; the view reads
    and writes through :attr:`backend` only (records, audit log, turn log,
    facts), embeds recall queries with :attr:`embeddings`, and forgets a
    whole user through :meth:`forget_user` (which also reaches what lies
    outside the backend, such as LangGraph checkpoints).
    """

    @property
    def backend(self) -> MemoryBackend:
        """Everything that lasts."""
        ...

    @property
    def embeddings(self) -> Embeddings | None:
        """What recall embeds queries with (``None``: recall by keywords only)."""
        ...

    def forget_user(self, user_id: str) -> int:
        """Delete a user from every tier and file; returns the archive records deleted."""
        ...


@runtime_checkable
class StoreWithCheckpoints(Store, Protocol):
    """A :class:`Store` that also keeps the LangGraph checkpoints of its threads in step
    with forgets (:class:`~langchain_tiered_memory.store.MemoryStore` does).

    The graph and the agent middleware call it at the end of a run during
    which the user was forgotten; a store without it has no checkpoints to purge.
    """

    def purge_checkpoints_after_run(
        self, thread_id: str, config: Mapping[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Delete the thread from every checkpointer once its run's checkpoints are saved."""
        ...


# -- optional capabilities (checked with isinstance) -----------------------------------


@runtime_checkable
class PurgesCheckpoints(Protocol):
    """A :class:`Store` that deletes threads from the LangGraph checkpointers it knows of
    (:class:`~langchain_tiered_memory.store.MemoryStore` does): a forget by words in a view
    purges the threads it took turns from."""

    def purge_checkpoints(self, threads: Sequence[str]) -> None:
        """Delete these threads from every checkpointer of the store."""
        ...


@runtime_checkable
class BackendCheckpoints(Protocol):
    """A backend that keeps LangGraph checkpoints in its own database (Postgres does):
    the store's default checkpointer is then the backend's, and a forget from any
    worker reaches checkpoints another worker wrote."""

    def checkpointer(self) -> Any:
        """A LangGraph checkpointer on the backend's database."""
        ...

    async def acheckpointer(self) -> Any:
        """An async checkpointer on the backend's database, bound to the running loop."""
        ...

    def has_checkpoints(self) -> bool:
        """Whether the database holds checkpoint tables (another worker may have made them)."""
        ...


@runtime_checkable
class Vacuums(Protocol):
    """A backend that can rewrite its data files, so freed bytes leave them."""

    def vacuum(self, *, full: bool = False) -> None:
        """Reclaim the space of deleted rows (``full``: rewrite every file)."""
        ...


@runtime_checkable
class Flushes(Protocol):
    """Something that keeps writes in memory for a while (access times, an index file)."""

    def flush(self) -> None:
        """Write them now, leaving everything open."""
        ...


@runtime_checkable
class Closes(Protocol):
    """Something that holds resources until it is closed (an embedder's cache file)."""

    def close(self) -> None:
        """Release them."""
        ...


@runtime_checkable
class EmbeddingCache(Protocol):
    """Embeddings that keep copies of what they embedded (a cache) and can drop them:
    a forget removes the forgotten texts' vectors from it."""

    def forget_texts(self, texts: Iterable[str]) -> int:
        """Drop the cached vectors of these texts; returns how many were cached."""
        ...

    def cache_keys(self, texts: Iterable[str]) -> list[str]:
        """The keys the cache keeps these texts under (to drop them later without the texts)."""
        ...

    def forget_cache_keys(self, keys: Iterable[str]) -> int:
        """Drop the cached vectors under these keys; returns how many there were."""
        ...
