"""``extractor="learned"``: the rules where they are exact, the user's own clause
where no rule was written, and supersession by meaning.

For each user message:

* the rules run as they always do (numbers, dates, addresses, allergies...);
* each statement no rule covered is kept whole, cleaned of its lead-in, as the
  fact text, when the about-the-user classifier is sure it is a fact about the
  user (``fact_threshold``); below that, down to ``possible_threshold``, it is
  kept as a possible fact (a dated statement in the archive, found by
  meaning); below that it is dropped (questions, hypotheticals, other
  people's words, quoted text, role-play...).

Before a fact is written, :meth:`LearnedExtractor.supersedes` links it to the
user's current facts under other subjects: a sure link (``link_threshold``)
files it under the linked fact's subject, which supersedes it as any update
does; an unsure one (``unsure_threshold``) moves the older fact out of the
current facts as an earlier one (kept in the history with the reason), so it
is never shown alone as current.

Example:
    >>> ex = LearnedExtractor(models=None)
    >>> ex.batched, ex.calls
    (False, 0)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import HumanMessage

from langchain_tiered_memory.tiers.core import CoreFact
from langchain_tiered_memory.tiers.turns import Turn, message_text
from langchain_tiered_memory.write.extraction import ExtractedFact, RuleBasedExtractor
from langchain_tiered_memory.write.fact_rules import find_facts
from langchain_tiered_memory.write.importance import rate_importance
from langchain_tiered_memory.write.learned.clauses import split_clauses
from langchain_tiered_memory.write.learned.models import LearnedModels, shared_models

__all__ = ["LearnedExtractor", "clause_subject"]

_WORD = re.compile(r"[a-z0-9']+|[\u4e00-\u9fff]")
_SKIP = {
    "i",
    "i'm",
    "im",
    "my",
    "me",
    "the",
    "a",
    "an",
    "we",
    "our",
    "is",
    "am",
    "are",
    "was",
    "我",
    "的",
    "了",
}


def clause_subject(clause: str) -> str:
    """A short subject for a kept clause: ``said:`` and its first content words.

    Example:
        >>> clause_subject("the storage unit combo is 3390")
        'said:storage unit combo'
        >>> clause_subject("我家wifi密码是 lotus2024")
        'said:家wifi密码'
    """
    tokens = [t for t in _WORD.findall(clause.lower()) if t not in _SKIP]
    ascii_words = [t for t in tokens if t.isascii()]
    if tokens and not tokens[0].isascii():
        head = "".join(re.findall(r"[\u4e00-\u9fff]|[a-z0-9]+", clause.lower()))
        head = "".join(ch for ch in head if ch not in _SKIP)
        return f"said:{head[:6]}"
    return "said:" + " ".join(ascii_words[:3]) if ascii_words else "said:note"


class LearnedExtractor:
    """The offline extractor with learned coverage and supersession (issue 31).

    Args:
        models: The fitted models (default: :func:`.models.shared_models`, loaded
            on first use).
        fact_threshold: P(about the user) from which a clause becomes a fact.
        possible_threshold: P from which it is kept as a possible fact.
        link_threshold: P(replaces) from which a fact takes over a current
            fact's subject (superseding it).
        unsure_threshold: P(replaces) from which the current fact is moved
            out as an earlier one.
    """

    calls = 0  # never calls a model
    batched = False  # runs on every turn, like the rules

    def __init__(
        self,
        models: LearnedModels | None = None,
        *,
        fact_threshold: float = 0.8,
        possible_threshold: float = 0.5,
        link_threshold: float = 0.7,
        unsure_threshold: float = 0.4,
    ) -> None:
        if not 0 <= possible_threshold <= fact_threshold <= 1:
            raise ValueError("need 0 <= possible_threshold <= fact_threshold <= 1")
        if not 0 <= unsure_threshold <= link_threshold <= 1:
            raise ValueError("need 0 <= unsure_threshold <= link_threshold <= 1")
        self._models = models
        self.rules = RuleBasedExtractor()
        self.fact_threshold = fact_threshold
        self.possible_threshold = possible_threshold
        self.link_threshold = link_threshold
        self.unsure_threshold = unsure_threshold
        self._previous = ""

    @property
    def models(self) -> LearnedModels:
        """The fitted models."""
        if self._models is None:
            self._models = shared_models()
        return self._models

    def extract_text(
        self, text: str, *, source_turn: int | None = None, previous: str = ""
    ) -> list[ExtractedFact]:
        """Facts in one user message: the rules' and the uncovered clauses'."""
        facts = self.rules.extract_text(text, source_turn=source_turn, previous=previous)
        clauses = [c for c in split_clauses(text) if not find_facts(c)]
        for clause, p in zip(clauses, self.models.about_user(clauses), strict=True):
            if p < self.possible_threshold:
                continue
            sure = p >= self.fact_threshold
            facts.append(
                ExtractedFact(
                    subject=clause_subject(clause),
                    content=clause,
                    category="fact",
                    confidence=round(p, 3) if sure else min(round(p, 3), 0.6),
                    stated=sure,
                    source_turn=source_turn,
                    importance=rate_importance(clause, category="fact"),
                )
            )
        return facts

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """Facts from the user messages of ``turns``."""
        facts: list[ExtractedFact] = []
        for turn in turns:
            for message in turn.messages:
                if isinstance(message, HumanMessage):
                    text = message_text(message)
                    facts.extend(
                        self.extract_text(text, source_turn=turn.index, previous=self._previous)
                    )
                    self._previous = text
        return facts

    async def aextract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """Async twin of :meth:`extract`."""
        return self.extract(turns)

    def supersedes(
        self, fact: ExtractedFact, current: Sequence[CoreFact]
    ) -> tuple[str, list[CoreFact]]:
        """The subject to file ``fact`` under, and the current facts it may replace
        (to be moved out as earlier ones).

        A fact whose subject is already current updates it as usual (no link).
        """
        others = [f for f in current if f.block == "human" and f.subject != fact.subject]
        if len(others) < len(current) and any(f.subject == fact.subject for f in current):
            return fact.subject, []
        links = self.models.link(fact.content, others)
        if not links:
            return fact.subject, []
        best = max(links, key=lambda link: link.p)
        subject = best.fact.subject if best.p >= self.link_threshold else fact.subject
        earlier = [
            link.fact
            for link in links
            if link.p >= self.unsure_threshold and link.fact.subject != subject
        ]
        return subject, earlier
