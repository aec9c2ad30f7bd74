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
from typing import Any, Literal

__all__ = ["MemoryRecord", "RecordKind", "ScoredRecord", "utcnow"]

RecordKind = Literal["turn", "summary", "fact", "observation"]


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
        )

    @property
    def namespace(self) -> tuple[str, str | None]:
        """``(user_id, thread_id)``."""
        return (self.user_id, self.thread_id)

    def touched(self, at: datetime | None = None) -> MemoryRecord:
        """A copy with ``last_accessed_at`` set (default: now)."""
        return replace(self, last_accessed_at=at or utcnow())


@dataclass(frozen=True)
class ScoredRecord:
    """A record with its recall score and the parts of that score."""

    record: MemoryRecord
    score: float
    parts: dict[str, float] = field(default_factory=dict)
