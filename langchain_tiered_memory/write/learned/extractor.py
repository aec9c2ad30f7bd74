"""``extractor="learned"``: the rules where they are exact, the user's own clause
where no rule was written, and supersession by meaning.

For each user message:

* the rules run as they always do (numbers, dates, addresses, allergies...); with
  ``rule_veto`` (off by default) a rule's fact is dropped when the classifier
  is sure the sentence it came from is not about the user (a story's cat, a
  friend's job);
* each statement no rule covered is kept whole, cleaned of its lead-in, as the
  fact text, when the about-the-user classifier is sure it is a fact about the
  user (``fact_threshold``); below that, down to ``possible_threshold``, it is
  kept as a possible fact (a dated statement in the archive, found by
  meaning); below that it is dropped (questions, hypotheticals, other
  people's words, quoted text, role-play...).

Before a fact is written, :meth:`LearnedExtractor.supersedes` links it to the
user's current facts under other subjects: a sure link (``link_threshold``)
files it under the linked fact's subject, which supersedes it as any update
does (or ends it, when the statement says it ended), unless that subject
names the old value ("about:use pixel phone"), when the older fact is moved
out as an earlier one instead; an unsure one
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
import re
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
from langchain_tiered_memory.write.learned.clauses import (
    is_request,
    read_with_contrast,
    sentences,
    split_clauses,
)
from langchain_tiered_memory.write.learned.cues import is_ending
from langchain_tiered_memory.write.learned.models import LearnedModels, shared_models
from langchain_tiered_memory.write.rules import LANGUAGES
from langchain_tiered_memory.write.rules.engine import (
    doubted,
    is_statement,
    own_sentences,
    wished,
)

__all__ = ["LearnedExtractor", "clause_subject", "names_old_value"]

_WORD = re.compile(r"[a-z0-9]{3,}|[\u4e00-\u9fff]")


def clause_subject(clause: str) -> str:
    """The subject of a kept clause: ``said:`` and a short digest of the text (no
    value in it, so an update filed under it leaves no old value behind).

    Example:
        >>> clause_subject("the storage unit combo is 3390")
        'said:2b95d7'
    """
    return "said:" + hashlib.sha1(clause.strip().lower().encode("utf-8")).hexdigest()[:6]


def names_old_value(subject: str, old: str, new: str) -> bool:
    """Whether ``subject`` carries a word of the ``old`` fact's value that the ``new``
    statement does not say, so filing ``new`` under it would leave the old value
    current in the subject's name.

    Example:
        >>> names_old_value("about:use pixel phone", "uses a Pixel phone", "switched to an iPhone")
        True
        >>> names_old_value("plan:spanish", "Spanish on Thursdays", "Spanish moved to Monday")
        False
        >>> names_old_value("diet", "vegetarian", "eating meat again")
        False
    """
    old_words, new_words = set(_WORD.findall(old.lower())), set(_WORD.findall(new.lower()))
    return any(w in old_words and w not in new_words for w in _WORD.findall(subject.lower()))


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
        rule_veto: P(about the user) of a rule fact's sentence below which the
            rule fact is dropped (default 0: off; the classifier scores too many
            of the rules' true facts near 0, see benchmarks/README.md).
        own_words: Read clauses only from the sentences the rules read as the
            user's own (:func:`~..rules.engine.own_sentences`: no quoted text,
            story or text to edit, sarcasm or reported words), keep statements
            only (:func:`~..rules.engine.is_statement`) and mark a doubted or
            wished clause as not stated (off by default until benchmarked).
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
        rule_veto: float = 0.0,
        own_words: bool = False,
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
        if not 0 <= rule_veto <= 1:
            raise ValueError("need 0 <= rule_veto <= 1")
        self.rule_veto = rule_veto
        self.own_words = own_words
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
        facts = self._vetoed([f for f in found if not is_request(f.content)], text)
        # the clauses come from the sentences the rules read as the user's own (no
        # quoted text, story or text to edit, sarcasm, or someone else's reported
        # words), and are statements (no hypothetical, no question)
        own = "\n".join(own_sentences(text, LANGUAGES)) if self.own_words else text
        clauses = [
            c
            for c in split_clauses(own)
            if (is_statement(c) or not self.own_words) and not find_facts(c)
        ]
        # a clause a contrast takes back ("..., but I decided against it") is
        # scored with it too, and the lower score kept
        contexts = [read_with_contrast(c, own) for c in clauses]
        wider = sorted({x for c, x in zip(clauses, contexts, strict=True) if x != c})
        scored = dict(zip(clauses + wider, self.models.about_user(clauses + wider), strict=True))
        probabilities = [min(scored[c], scored[x]) for c, x in zip(clauses, contexts, strict=True)]
        for clause, p in zip(clauses, probabilities, strict=True):
            if p < self.possible_threshold:
                continue
            # said with doubt or as a wish ("I was going to...", "maybe"): not stated
            doubt = self.own_words and (doubted(clause) or wished(clause))
            sure = p >= self.fact_threshold and not doubt
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

    def _vetoed(self, facts: list[ExtractedFact], text: str) -> list[ExtractedFact]:
        """``facts`` (the rules') without those whose sentence the classifier is sure
        is not about the user. A fact's sentence is the first one the rules find
        it in alone; a fact no single sentence gives is read against the
        message's most likely sentence (kept unless all are unlikely)."""
        if not facts or self.rule_veto <= 0:
            return facts
        parts = sentences(text) or [text]
        p = dict(zip(parts, self.models.about_user(parts), strict=True))
        found = {part: {(f.subject, f.content) for f in find_facts(part)} for part in parts}
        kept = []
        for fact in facts:
            source = [part for part in parts if (fact.subject, fact.content) in found[part]]
            score = p[source[0]] if source else max(p.values())
            if score >= self.rule_veto:
                kept.append(fact)
        return kept

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
                # as sure as a superseding link (a statement no rule read is a possible
                # fact, confidence 0.5, which would end nothing)
                ended = replace(
                    fact,
                    subject=best.fact.subject,
                    op="end",
                    stated=True,
                    confidence=max(fact.confidence, 0.8),
                )
                return ended, unsure[1:]
            if names_old_value(best.fact.subject, best.fact.content, fact.content):
                # its subject would keep the old value current: moved out instead
                return replace(fact, stated=True, confidence=max(fact.confidence, 0.8)), unsure
            linked = replace(
                fact,
                subject=best.fact.subject,
                stated=True,
                confidence=max(fact.confidence, 0.8),
            )
            return linked, unsure[1:]
        return fact, unsure
