"""The durable unit of long-term memory: :class:`MemoryRecord`.

Every evicted turn, running summary and extracted fact becomes a record in the
archive. A record keeps where it came from (``sources``: turn numbers or
dataset dialogue ids) so recall can be scored and traced.

Example:
    >>> r = MemoryRecord.new(user_id="ana", thread_id="t1", kind="turn",
    ...                      text="user: I'm allergic to peanuts", sources=("turn:3",))
    >>> r.kind, r.namespace, len(r.id) > 8
    ('turn', ('ana', 't1'), True)
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, get_args

from langchain_core.messages import HumanMessage

from langchain_tiered_memory.expiry import is_expired
from langchain_tiered_memory.ids import fact_record_id, summary_record_id, turn_record_id
from langchain_tiered_memory.values.turns import Turn

if TYPE_CHECKING:
    from langchain_tiered_memory.values.facts import CoreFact

__all__ = [
    "RECORD_KINDS",
    "MemoryRecord",
    "RecordKind",
    "ScoredRecord",
    "fact_record",
    "summary_record",
    "turn_record",
    "turn_session",
    "turn_speaker",
    "utcnow",
]

RecordKind = Literal["turn", "summary", "fact", "observation"]
RECORD_KINDS: frozenset[str] = frozenset(get_args(RecordKind))


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class MemoryRecord:
    """One archived memory.

    Attributes:
        id: Unique id (a UUID string unless given).
        user_id: Whose memory this is; every query is filtered by it.
        thread_id: The conversation it came from (``None`` for user-wide facts).
        kind: ``turn``, ``summary``, ``fact`` or ``observation``.
        text: The text that is embedded, searched and quoted.
        created_at: When it was written (UTC).
        last_accessed_at: When recall last returned it (drives recency).
        importance: 1-10 (Generative Agents' poignancy); 5 when unknown.
        sources: Ids of what it came from, e.g. ``("turn:12",)`` or ``("D1:3",)``.
        metadata: Free-form JSON-serialisable data (e.g. ``{"stated": True}``).
        expires_at: When it expires (``None``: never). From then on no search,
            ``get`` or ``records`` returns it, and the store's sweep
            (:meth:`~langchain_tiered_memory.store.MemoryStore.sweep_expired`)
            deletes it as a forget would.
    """

    id: str
    user_id: str
    thread_id: str | None
    kind: RecordKind
    text: str
    created_at: datetime = field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    importance: float = 5.0
    sources: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None

    @classmethod
    def new(
        cls,
        *,
        user_id: str,
        kind: RecordKind,
        text: str,
        thread_id: str | None = None,
        sources: tuple[str, ...] = (),
        importance: float = 5.0,
        created_at: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        id: str | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryRecord:
        """Create a record with a fresh id and the current time."""
        return cls(
            id=id or uuid.uuid4().hex,
            user_id=user_id,
            thread_id=thread_id,
            kind=kind,
            text=text,
            created_at=created_at or utcnow(),
            importance=importance,
            sources=tuple(sources),
            metadata=dict(metadata or {}),
            expires_at=expires_at,
        )

    @property
    def namespace(self) -> tuple[str, str | None]:
        """``(user_id, thread_id)``."""
        return (self.user_id, self.thread_id)

    def expired(self, now: datetime | None = None) -> bool:
        """Whether the record has expired at ``now`` (default: the current time).

        Example:
            >>> from datetime import timedelta
            >>> r = MemoryRecord.new(user_id="ana", kind="observation", text="gate code 1234",
            ...                      expires_at=utcnow() + timedelta(hours=1))
            >>> r.expired(), r.expired(utcnow() + timedelta(hours=2))
            (False, True)
        """
        return is_expired(self.expires_at, now)

    def touched(self, at: datetime | None = None) -> MemoryRecord:
        """A copy with ``last_accessed_at`` set (default: now)."""
        return replace(self, last_accessed_at=at or utcnow())


@dataclass(frozen=True)
class ScoredRecord:
    """A record with its recall score and the parts of that score."""

    record: MemoryRecord
    score: float
    parts: dict[str, float] = field(default_factory=dict)


def turn_speaker(turn: Turn) -> str | None:
    """Who opened the turn: the ``name`` of its first named human message, if any.

    Recall's speaker signal boosts the records of a person the query names
    ("what did Ben say about the budget?"), so it needs real names: an
    application that names its users (``HumanMessage(..., name="Ben")``, as
    in a group chat) gets it; unnamed turns carry no speaker.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> turn_speaker(Turn(0, (HumanMessage("hi", name="Ben"), AIMessage("hello"))))
        'Ben'
        >>> turn_speaker(Turn(1, (HumanMessage("hi"),))) is None
        True
    """
    for message in turn.messages:
        if isinstance(message, HumanMessage) and message.name:
            return str(message.name)
    return None


def turn_session(turn: Turn) -> str:
    """The turn's session for recall's session signal: the UTC day it started (``YYYY-MM-DD``).

    Recall groups records by thread and session, and lifts the turns of a
    conversation that matches the query well as a whole (a LoCoMo session is
    one dated conversation). A thread's turns of one day form one session.

    Example:
        >>> from datetime import datetime, timezone
        >>> turn_session(Turn(0, (), created_at=datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc)))
        '2026-03-01'
    """
    at = turn.created_at
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.astimezone(timezone.utc).date().isoformat()


def turn_record(turn: Turn, *, user_id: str, thread_id: str) -> MemoryRecord:
    """The archive record of an evicted turn (kind ``turn``, text = its transcript).

    Its metadata carries the turn index, tokens, whether it was clipped, the
    ``session`` (:func:`turn_session`) and, for a named speaker, the
    ``speaker`` (:func:`turn_speaker`), which recall's session and speaker
    signals use.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langchain_core.messages import AIMessage
        >>> at = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
        >>> t = Turn(4, (HumanMessage("I'm allergic to peanuts"), AIMessage("Noted.")),
        ...          created_at=at)
        >>> r = turn_record(t, user_id="ana", thread_id="t1")
        >>> r.id, r.kind, r.sources, r.text
        ('ana:t1:turn:4', 'turn', ('turn:4',), "user: I'm allergic to peanuts\\nassistant: Noted.")
        >>> r.metadata["session"], "speaker" in r.metadata
        ('2026-03-01', False)
        >>> named = Turn(5, (HumanMessage("I moved to Lisbon", name="Ana"),), created_at=at)
        >>> turn_record(named, user_id="ana", thread_id="t1").metadata["speaker"]
        'Ana'
    """
    metadata: dict[str, Any] = {
        "turn_index": turn.index,
        "tokens": turn.tokens,
        "clipped": turn.clipped,
        "session": turn_session(turn),
    }
    speaker = turn_speaker(turn)
    if speaker is not None:
        metadata["speaker"] = speaker
    return MemoryRecord(
        id=turn_record_id(user_id, thread_id, turn.index),
        user_id=user_id,
        thread_id=thread_id,
        kind="turn",
        text=turn.transcript(),
        created_at=turn.created_at,
        sources=(f"turn:{turn.index}",),
        metadata=metadata,
    )


# --------------------------------------------------------------------------- FTS text

# Han, kana, hangul: scripts written without spaces between words. They are
# indexed as overlapping character bigrams (plus the last character of each


def summary_record(
    *,
    user_id: str,
    thread_id: str,
    summary: str,
    through: int,
    turns: tuple[int, ...],
    created_at: datetime | None = None,
) -> MemoryRecord:
    """The archive record of a thread's running summary (kind ``summary``).

    Its id is :func:`~langchain_tiered_memory.ids.summary_record_id`, its
    sources the turns the compression folded in (``turn:N``) and its
    metadata ``through``: a running summary carries every turn up to it (each
    summary folds in the one before), which is how forgetting a turn finds
    the summaries to drop.

    Example:
        >>> r = summary_record(user_id="ana", thread_id="t1", summary="Ana likes tea.",
        ...                    through=4, turns=(3, 4))
        >>> r.id, r.kind, r.sources
        ('ana:t1:summary:4', 'summary', ('turn:3', 'turn:4'))
    """
    return MemoryRecord.new(
        id=summary_record_id(user_id, thread_id, through),
        user_id=user_id,
        thread_id=thread_id,
        kind="summary",
        text=summary,
        sources=tuple(f"turn:{i}" for i in turns),
        importance=4.0,
        created_at=created_at,
        metadata={"through": int(through)},
    )


def fact_record(user_id: str, fact: CoreFact) -> MemoryRecord:
    """The archive record of one version of a core fact (kind ``fact``), for recall.

    Its metadata names the fact's subject, origin and the thread and turn
    that stated it (``thread_id``, ``sources``), so that forgetting the fact
    can find the turns that said it.

    Example:
        >>> from langchain_tiered_memory.values.facts import CoreFact
        >>> f = CoreFact.new("allergy", "allergic to peanuts", source_turn=3,
        ...                  source_thread="t1")
        >>> r = fact_record("ana", f)
        >>> r.text, r.sources, r.metadata["thread_id"]
        ('allergy: allergic to peanuts', ('turn:3',), 't1')
    """
    return MemoryRecord.new(
        id=fact_record_id(user_id, fact.id),
        user_id=user_id,
        thread_id=None,
        kind="fact",
        text=f"{fact.subject}: {fact.content}",
        importance=fact.importance,
        created_at=fact.created_at,
        sources=(f"turn:{fact.source_turn}",) if fact.source_turn is not None else (),
        metadata={
            "stated": fact.stated,
            "confidence": fact.confidence,
            "subject": fact.subject,
            "source": fact.source,
            "thread_id": fact.source_thread,
        },
        expires_at=fact.expires_at,
    )
