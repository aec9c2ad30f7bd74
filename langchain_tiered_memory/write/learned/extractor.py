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
does (or ends it, when the statement says it ended); an unsure one
(``unsure_threshold``) moves the older fact out of the current facts as an
earlier one (kept in the history with the reason and shown as ``earlier
(date)``), so it is never shown alone as current.

Example:
    >>> ex = LearnedExtractor(models=None)
    >>> ex.batched, ex.calls
    (False, 0)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from langchain_tiered_memory.tiers.core import CoreFact
from langchain_tiered_memory.write.extraction import (
    ExtractedFact,
    RuleBasedExtractor,
)
from langchain_tiered_memory.write.fact_rules import find_facts
from langchain_tiered_memory.write.fact_time import fact_time
from langchain_tiered_memory.write.importance import rate_importance
from langchain_tiered_memory.write.learned.clauses import is_request, split_clauses
from langchain_tiered_memory.write.learned.cues import is_ending
from langchain_tiered_memory.write.learned.models import LearnedModels, shared_models

__all__ = ["LearnedExtractor", "clause_subject"]


def clause_subject(clause: str) -> str:
    """The subject of a kept clause: ``said:`` and a short digest of the text (no
    value in it, so an update filed under it leaves no old value behind).

    Example:
        >>> clause_subject("the storage unit combo is 3390")
        'said:2b95d7'
    """
    return "said:" + hashlib.sha1(clause.strip().lower().encode("utf-8")).hexdigest()[:6]


class LearnedExtractor(RuleBasedExtractor):
    """The offline extractor with learned coverage and supersession (issue 31): the
    rule extractor, with the clauses no rule covered and links to the current facts.

    Args:
        models: The fitted models (default: :func:`.models.shared_models`, loaded
            on first use).
        fact_threshold: P(about the user) from which a clause becomes a fact.
        possible_threshold: P from which it is kept as a possible fact.
        link_threshold: P(replaces) from which a fact takes over a current
            fact's subject (superseding it).
        unsure_threshold: P(replaces) from which the current fact is moved
            out as an earlier one.
        margin: How far the best-linked fact must stand above the next one
            for a sure link; when none stands out, every linked fact is
            moved out as an earlier one.
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
        margin: float = 0.2,
    ) -> None:
        if not 0 <= possible_threshold <= fact_threshold <= 1:
            raise ValueError("need 0 <= possible_threshold <= fact_threshold <= 1")
        if not 0 <= unsure_threshold <= link_threshold <= 1:
            raise ValueError("need 0 <= unsure_threshold <= link_threshold <= 1")
        self._models = models
        self.fact_threshold = fact_threshold
        self.possible_threshold = possible_threshold
        self.link_threshold = link_threshold
        self.unsure_threshold = unsure_threshold
        self.margin = margin
        super().__init__()

    @property
    def models(self) -> LearnedModels:
        """The fitted models."""
        if self._models is None:
            self._models = shared_models()
        return self._models

    def extract_text(
        self,
        text: str,
        *,
        source_turn: int | None = None,
        previous: str = "",
        said_at: datetime | None = None,
    ) -> list[ExtractedFact]:
        """Facts in one user message: the rules' and the uncovered clauses'.

        With ``said_at``, each fact carries the time its clause names
        (:func:`~langchain_tiered_memory.write.fact_time.fact_time`).
        """
        found = super().extract_text(
            text, source_turn=source_turn, previous=previous, said_at=said_at
        )
        # a rule that read a request as a plan ("Plan a date night") is dropped
        facts = [f for f in found if not is_request(f.content)]
        clauses = [c for c in split_clauses(text) if not find_facts(c)]
        for clause, p in zip(clauses, self.models.about_user(clauses), strict=True):
            if p < self.possible_threshold:
                continue
            sure = p >= self.fact_threshold
            held = fact_time(clause, said_at) if said_at is not None else None
            facts.append(
                ExtractedFact(
                    subject=clause_subject(clause),
                    content=clause,
                    category="fact",
                    confidence=round(p, 3) if sure else min(round(p, 3), 0.6),
                    stated=sure,
                    source_turn=source_turn,
                    importance=rate_importance(clause, category="fact"),
                    valid_from=held.valid_from if held else None,
                    valid_until=held.valid_until if held else None,
                )
            )
        return facts

    def supersedes(
        self, fact: ExtractedFact, current: Sequence[CoreFact]
    ) -> tuple[ExtractedFact, list[CoreFact]]:
        """``fact`` as it should be written, and the current facts it may replace
        (to be moved out as earlier ones).

        A sure link (``link_threshold``, standing ``margin`` above the next
        fact) files ``fact`` under the linked fact's subject, so the write
        supersedes it; a possible fact (a clause the classifier was less sure
        of) that links surely is written as stated, since it updates something
        the user said. A sure link from a statement that something ended
        ("Cancelled PureGym") ends the linked fact instead of becoming a fact.
        Every other fact linked at ``unsure_threshold`` or more (the best one
        too, when it does not stand out) is returned, to be moved out as an
        earlier fact: never shown alone as current beside the newer one. A
        fact whose subject is already current updates it as usual (no link).
        """
        others = [
            f
            for f in current
            if f.block == "human"
            and f.subject != fact.subject
            # what one message says does not replace itself
            and (f.source_turn is None or f.source_turn != fact.source_turn)
        ]
        if any(f.subject == fact.subject and f.block == "human" for f in current):
            return fact, []
        links = sorted(self.models.link(fact.content, others), key=lambda link: -link.p)
        if not links:
            return fact, []
        best = links[0]
        runner_up = links[1].p if len(links) > 1 else 0.0
        unsure = [link.fact for link in links if link.p >= self.unsure_threshold]
        if best.p >= self.link_threshold and best.p - runner_up >= self.margin:
            if is_ending(fact.content):
                ended = replace(fact, subject=best.fact.subject, op="end", stated=True)
                return ended, unsure[1:]
            linked = replace(
                fact,
                subject=best.fact.subject,
                stated=True,
                confidence=max(fact.confidence, 0.8),
            )
            return linked, unsure[1:]
        return fact, unsure
