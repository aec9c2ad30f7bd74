"""How values are stored: times as microseconds, records, messages and facts as JSON.

Shared by every backend, so a row written by SQLite reads back the same from
Postgres (and ``tiered-memory migrate`` copies rows without translating).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> message_from_json(message_to_json(HumanMessage("hi", id="m1"))).id
    'm1'
    >>> to_micros(from_micros(1_700_000_000_000_000))
    1700000000000000
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langchain_tiered_memory.ids import check_id, check_text
from langchain_tiered_memory.records import RECORD_KINDS, MemoryRecord
from langchain_tiered_memory.values.facts import CoreFact

__all__ = [
    "embeddings_id",
    "encode_record",
    "fact_from_json",
    "fact_to_json",
    "from_micros",
    "message_from_json",
    "message_to_json",
    "record_from_dict",
    "record_to_dict",
    "to_micros",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_micros(at: datetime) -> int:
    """Microseconds since the Unix epoch (naive datetimes are taken as UTC).

    Example:
        >>> to_micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
        1000000
    """
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    delta = at - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """The UTC datetime ``micros`` microseconds after the Unix epoch (exact).

    Example:
        >>> from_micros(1_000_000).isoformat()
        '1970-01-01T00:00:01+00:00'
    """
    return _EPOCH + timedelta(microseconds=int(micros))


def message_to_json(message: BaseMessage) -> str:
    """A message as JSON (LangChain's ``messages_to_dict`` form).

    Raises:
        TypeError: if the message holds a value JSON cannot store (an object
            in ``additional_kwargs`` or tool-call arguments, say).
    """
    try:
        return json.dumps(messages_to_dict([message])[0], ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"Cannot store this {type(message).__name__}: it holds a value JSON cannot store "
            f"({exc}). Tool-call args, additional_kwargs, response_metadata and artifacts must "
            "be JSON values (str, number, bool, None, list, dict)."
        ) from exc


def message_from_json(text: str) -> BaseMessage:
    """Inverse of :func:`message_to_json`."""
    return messages_from_dict([json.loads(text)])[0]


def fact_to_json(fact: CoreFact) -> str:
    """One version of a core fact as JSON."""
    return json.dumps(fact.to_dict(), ensure_ascii=False)


def fact_from_json(text: str) -> CoreFact:
    """Inverse of :func:`fact_to_json` (rows written before ``source_thread`` existed load too)."""
    return CoreFact.from_dict(json.loads(text))


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    """A JSON-ready dict of every field of ``record`` (datetimes as ISO 8601).

    Example:
        >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="likes tea", id="f1")
        >>> record_from_dict(record_to_dict(r)) == r
        True
    """
    return {
        "id": record.id,
        "user_id": record.user_id,
        "thread_id": record.thread_id,
        "kind": record.kind,
        "text": record.text,
        "created_at": record.created_at.isoformat(),
        "last_accessed_at": (
            record.last_accessed_at.isoformat() if record.last_accessed_at else None
        ),
        "importance": record.importance,
        "sources": list(record.sources),
        "metadata": record.metadata,
        "expires_at": record.expires_at.isoformat() if record.expires_at else None,
    }


def record_from_dict(data: Mapping[str, Any]) -> MemoryRecord:
    """Inverse of :func:`record_to_dict`."""
    last = data.get("last_accessed_at")
    expires = data.get("expires_at")
    return MemoryRecord(
        id=data["id"],
        user_id=data["user_id"],
        thread_id=data.get("thread_id"),
        kind=data["kind"],
        text=data["text"],
        created_at=datetime.fromisoformat(data["created_at"]),
        last_accessed_at=datetime.fromisoformat(last) if last else None,
        importance=float(data.get("importance", 5.0)),
        sources=tuple(data.get("sources", ())),
        metadata=dict(data.get("metadata", {})),
        expires_at=datetime.fromisoformat(expires) if expires else None,
    )


def encode_record(record: MemoryRecord) -> tuple[str, str]:
    """Check a record before it is stored; return its ``sources`` and ``metadata`` as JSON.

    Raises:
        TypeError: for something that is not a :class:`MemoryRecord`.
        ValueError: for an empty id, an invalid user id, an unknown kind, a
            non-string text, a non-finite importance, metadata JSON cannot hold,
            or text no backend can store (a lone surrogate or a NUL in the id,
            text, sources or metadata: see :func:`~langchain_tiered_memory.ids.check_text`).

    Example:
        >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="x", id="f1")
        >>> encode_record(r)
        ('[]', '{}')
        >>> from dataclasses import replace
        >>> encode_record(replace(r, importance=float("nan")))
        Traceback (most recent call last):
        ...
        ValueError: record 'f1' importance must be finite
    """
    if not isinstance(record, MemoryRecord):
        raise TypeError(f"expected MemoryRecord, got {type(record).__name__}")
    if not isinstance(record.id, str) or not record.id:
        raise ValueError(f"record id must be a non-empty string, got {record.id!r}")
    check_id(record.user_id, "user_id")
    if record.kind not in RECORD_KINDS:
        raise ValueError(
            f"record {record.id!r} has unknown kind {record.kind!r}; use one of "
            f"{sorted(RECORD_KINDS)}"
        )
    check_text(record.id, "record id")
    if record.thread_id is not None:
        check_text(str(record.thread_id), f"record {record.id!r} thread_id")
    if not isinstance(record.text, str):
        raise ValueError(f"record {record.id!r} text must be a string")
    check_text(record.text, f"record {record.id!r} text")
    if not math.isfinite(record.importance):
        raise ValueError(f"record {record.id!r} importance must be finite")
    if record.expires_at is not None and not isinstance(record.expires_at, datetime):
        raise ValueError(f"record {record.id!r} expires_at must be a datetime or None")
    try:
        sources = json.dumps([str(s) for s in record.sources], ensure_ascii=False)
        metadata = json.dumps(record.metadata, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record {record.id!r} metadata must be JSON-serialisable: {exc}") from exc
    # JSON escapes NUL; a lone surrogate it writes as it is, and UTF-8 cannot encode that
    check_text(sources, f"record {record.id!r} sources")
    check_text(metadata, f"record {record.id!r} metadata")
    return sources, metadata


def embeddings_id(embeddings: Any) -> str:
    """How a backend's ``meta`` names the embedder its vectors came from.

    ``module.Class`` plus the first of ``model``, ``model_name``,
    ``deployment`` or ``size`` the embedder has.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> embeddings_id(DeterministicFakeEmbedding(size=8))
        'langchain_core.embeddings.fake.DeterministicFakeEmbedding:size=8'
    """
    kind = type(embeddings)
    name = f"{kind.__module__}.{kind.__qualname__}"
    for attr in ("model", "model_name", "deployment", "size"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"{name}:{attr}={value}"
    return name
