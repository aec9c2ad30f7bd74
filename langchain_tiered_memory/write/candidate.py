"""One candidate type: a fact an extractor found, before the write policy decides on it.

Every extractor (the rules, a chat model, a learned one) gives
:class:`Candidate` values; the write policy (:mod:`.policy`) promotes, files,
supersedes or ends with them.

Example:
    >>> c = Candidate("home_city", "moved to Lisbon", source_turn=4)
    >>> c.op, c.stated, c.confidence
    ('add', True, 0.9)
    >>> Candidate.found("diet", "vegan", hedged=True).confidence
    0.5
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langchain_tiered_memory.values.facts import FactCategory

__all__ = ["HEDGED_CONFIDENCE", "STATED_CONFIDENCE", "Candidate", "Op"]

#: What a candidate asks of core memory: write a value (``add``, or ``update`` of the fact
#: ``replaces`` names), or ``end`` the current one ("I don't live in Berlin any more").
Op = Literal["add", "update", "end"]

#: The confidence of a fact stated plainly, and of one said with doubt ("I think", "maybe").
STATED_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.5


@dataclass(frozen=True)
class Candidate:
    """A fact found in what the user said, before promotion.

    Attributes:
        subject: Key that later facts about the same thing share
            (``allergy:peanuts``, ``home_city``, ``likes:spicy food``,
            ``plan:flight``). A key ending in ``:*`` (``budget:*``) means
            "the latest fact under this prefix" and one starting with ``~``
            "the fact that mentions these words"; the policy resolves both.
        content: The fact in plain words.
        category: preference, fact, plan or task_state.
        confidence: 0-1.
        stated: The user said it (True) or it was inferred (False).
        hedged: Said with doubt ("I think", "maybe", "was going to").
        source_turn: Turn index it came from.
        importance: 1-10.
        valid_from: When the fact starts to hold, where the text says
            (``None``: unknown; see :class:`~langchain_tiered_memory.tiers.core.CoreFact`).
        valid_until: When it stops holding, where the text says.
        op: ``add`` (a value), ``update`` (a new value of the fact ``replaces``
            names) or ``end`` (the current value stopped holding).
        replaces: Id of the current fact an ``update`` or ``end`` is about (``None``:
            the subject's current fact).
        reason: Why (a model's explanation; kept in the history).
    """

    subject: str
    content: str
    category: FactCategory = "fact"
    confidence: float = STATED_CONFIDENCE
    stated: bool = True
    hedged: bool = False
    source_turn: int | None = None
    importance: float = 5.0
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    op: Op = "add"
    replaces: str | None = None
    reason: str | None = None

    @classmethod
    def found(cls, subject: str, content: str, *, hedged: bool = False, **kwargs: Any) -> Candidate:
        """A candidate the rules found: stated and confident unless ``hedged``.

        Example:
            >>> Candidate.found("diet", "vegan").stated
            True
        """
        return cls(
            subject,
            content,
            hedged=hedged,
            stated=not hedged,
            confidence=HEDGED_CONFIDENCE if hedged else STATED_CONFIDENCE,
            **kwargs,
        )
