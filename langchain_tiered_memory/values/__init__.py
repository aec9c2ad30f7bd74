"""The values the layers hand each other: what the gate decided, what recall brought back.

A leaf: it imports nothing from the package, so the gate (:mod:`.recall.gate`),
recall (:mod:`.recall.hybrid`), the prompt's assembly (:mod:`.budget.context`)
and the facades all share these types without importing one another. Each is
also importable from the module that makes it
(``langchain_tiered_memory.recall.gate.GateDecision``,
``langchain_tiered_memory.budget.context.RecalledMemory``).

Example:
    >>> GateDecision(recall=False, reason="self-contained", signal="none").to_dict()["recall"]
    False
    >>> RecalledMemory("Ana is vegan.").source
    'archive'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["GateDecision", "RecalledMemory"]


@dataclass(frozen=True)
class GateDecision:
    """The gate's answer.

    Attributes:
        recall: Whether to search the archive before answering.
        reason: Why, in words (recorded in state and in the audit log).
        signal: Which signal decided (``back_reference``, ``about_user``,
            ``personal_request``, ``known_entity``, ``similarity``, ``none``,
            ``llm``, ``empty``).
        details: Matched words, entities or similarity.
        elapsed_ms: Time the decision took.
    """

    recall: bool
    reason: str
    signal: str
    details: Mapping[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for state and the audit log)."""
        return {
            "recall": self.recall,
            "reason": self.reason,
            "signal": self.signal,
            "details": dict(self.details),
            "elapsed_ms": round(self.elapsed_ms, 3),
        }


@dataclass(frozen=True)
class RecalledMemory:
    """One record brought back by retrieval, ready to quote in the prompt.

    Attributes:
        text: The record's text.
        source: Where it came from, e.g. ``"turn 12"`` or ``"fact"``.
        created_at: When it was written.
        score: Its recall score (for the audit log).
        record_id: The archive id.
        possibly: True for inferred or low-confidence facts ("possibly ...").
    """

    text: str
    source: str = "archive"
    created_at: datetime | None = None
    score: float | None = None
    record_id: str | None = None
    possibly: bool = False
