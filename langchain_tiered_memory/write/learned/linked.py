"""``extractor="rules+links"``: the rules, with supersession by meaning for what they
did not read (issue 31: stale values shown as current).

The rules keep only the facts they have a rule for, so an update worded in a way
no rule has ("part-exchanged the old car, picked up a Suzuki Swift") leaves the
old fact current alone. This extractor writes exactly the rules' facts, and
offers each statement the rules read as the user's own but found no fact in
(:func:`~langchain_tiered_memory.write.rules.find_statements`: questions,
hypotheticals, conditions, hedges, wishes, role-play, quoted text and other
people's words left out; requests to the assistant too, "Write a short bio for
my LinkedIn", which would otherwise replace the job it is about) to the learned
linker against the user's current facts
(:meth:`.extractor.LearnedExtractor.supersedes`, the learned extractor's own):

* a sure link supersedes the current fact with the statement, kept whole as the
  fact text under the linked subject (or ends it: "we broke up");
* an unsure one moves the current fact out as an earlier one (shown as
  ``earlier (date)``, never alone as current), and the statement is kept as a
  possible fact (a dated statement in the archive);
* a statement linked to nothing is dropped: the rules' facts are all that is kept.

With ``link_rule_facts`` (on by default) the rules' own facts are linked too,
so a fact filed under another subject than the one it replaces
(``plan:airline`` after ``plan:flight``, "Airline moved me to the 5th") supersedes
it - when its message says something changed (:func:`.cues.says_change`) and the
link is sure: the rules know what their fact is about, so a plain new fact ("My dentist
appointment is tomorrow") or an unsure link moves nothing out. Every write goes
through the writer's staging, so a batch commits as one.

Example:
    >>> ex = LinkedRulesExtractor(models=None)
    >>> [(f.subject, f.stated) for f in ex.extract_text("My dog is called Rex. Got a new car!")]
    [('pet:dog', True), ('said:8e7948', False)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from langchain_tiered_memory.tiers.core import CoreFact
from langchain_tiered_memory.write.candidate import Candidate
from langchain_tiered_memory.write.extraction import RuleBasedExtractor
from langchain_tiered_memory.write.fact_time import fact_time
from langchain_tiered_memory.write.importance import rate_importance
from langchain_tiered_memory.write.learned.clauses import clean_clause, is_request
from langchain_tiered_memory.write.learned.cues import is_ending, says_change
from langchain_tiered_memory.write.learned.extractor import LearnedExtractor, clause_subject
from langchain_tiered_memory.write.learned.models import LearnedModels
from langchain_tiered_memory.write.rules import find_facts, find_statements

__all__ = ["STATEMENT", "LinkedRulesExtractor"]

# a request inside a Chinese clause ("下周的安排帮我排一下"), beside is_request's opening words
_ASKS = re.compile(r"帮我|帮忙|麻烦你|请你|给我")


def _asks(text: str) -> bool:
    """Whether ``text`` is a request to the assistant (it never replaces a fact)."""
    return is_request(text) or bool(_ASKS.search(text))


#: The reason of a candidate that is a statement no rule read (it is written only
#: when linked to a current fact).
STATEMENT = "a statement no rule read, linked by meaning"


class LinkedRulesExtractor(LearnedExtractor):
    """The rule extractor with supersession by meaning (issue 31): the rules' facts,
    and the user's other statements offered to the learned linker.

    Args:
        models: The fitted models (default: the process's shared ones, loaded on
            first use; only the linker is used).
        link_threshold: P(replaces) from which a statement supersedes a current fact.
        unsure_threshold: P(replaces) from which the current fact is moved out as
            an earlier one.
        margin: How far the best link must stand above the next one to be sure.
        link_rule_facts: Link the rules' own facts too (a fact under another
            subject than the one it replaces).
    """

    def __init__(
        self,
        models: LearnedModels | None = None,
        *,
        link_threshold: float = 0.7,
        unsure_threshold: float = 0.4,
        margin: float = 0.2,
        link_rule_facts: bool = True,
    ) -> None:
        super().__init__(
            models,
            link_threshold=link_threshold,
            unsure_threshold=unsure_threshold,
            margin=margin,
        )
        self.link_rule_facts = link_rule_facts
        # (turn, content) of the rules' facts read from a message that says a change:
        # a rule's content may not ("Actually I prefer Rebecca now" -> "prefers Rebecca")
        self._said_change: set[tuple[int | None, str]] = set()

    def extract_text(
        self,
        text: str,
        *,
        source_turn: int | None = None,
        previous: str = "",
        said_at: datetime | None = None,
    ) -> list[Candidate]:
        """The rules' facts in one user message, then each of its own statements no
        rule read a fact in, as a candidate that is written only when linked
        (``stated=False``, reason :data:`STATEMENT`)."""
        facts = RuleBasedExtractor.extract_text(
            self, text, source_turn=source_turn, previous=previous, said_at=said_at
        )
        if facts and says_change(text):
            if len(self._said_change) > 4096:  # facts never offered for a link
                self._said_change.clear()
            self._said_change.update((f.source_turn, f.content) for f in facts)
        statements: list[Candidate] = []
        for statement in find_statements(text):
            clause = clean_clause(statement)
            words = len(clause.split()) if clause.isascii() else len(clause)
            if words < (2 if clause.isascii() else 4) or find_facts(clause):
                continue
            if _asks(clause):  # a request states nothing
                continue
            held = fact_time(clause, said_at) if said_at is not None else None
            statements.append(
                Candidate(
                    subject=clause_subject(clause),
                    content=clause,
                    category="fact",
                    confidence=0.5,
                    stated=False,
                    source_turn=source_turn,
                    importance=rate_importance(clause, category="fact"),
                    valid_from=held.valid_from if held else None,
                    valid_until=held.valid_until if held else None,
                    reason=STATEMENT,
                )
            )
        # an ending is offered after the message's other statements, so it never ends
        # what the same message replaces ("Handed in my badge at Barclays; I start at
        # Monzo on Monday": the new job supersedes the old, and the ending then finds
        # nothing older to end)
        return facts + sorted(statements, key=lambda c: is_ending(c.content))

    def supersedes(  # type: ignore[override]
        self, fact: Candidate, current: Sequence[CoreFact]
    ) -> tuple[Candidate | None, list[CoreFact]]:
        """``fact`` as it should be written (``None``: nothing), and the current facts
        to move out as earlier ones.

        A rule's fact is linked as the learned extractor links it
        (:meth:`.LearnedExtractor.supersedes`; unchanged without
        ``link_rule_facts``). A statement no rule read is written only when the
        link is sure (superseding or ending the linked fact); with an unsure link
        it is a possible fact and the linked facts are moved out; with none it
        is dropped.
        """
        if fact.reason != STATEMENT:
            # a rule's fact read from a request ("Plan the next month around the operation")
            # is kept as the rules keep it, never linked
            if not self.link_rule_facts or _asks(fact.content):
                return fact, []
            # the rules know what their fact is about: it replaces a fact under another
            # subject only when it says something changed, and only on a sure link ("My
            # dentist appointment is tomorrow" linked to a flight booked for tomorrow at
            # p 0.93, and hid it)
            key = (fact.source_turn, fact.content)
            changed = key in self._said_change or says_change(fact.content)
            self._said_change.discard(key)
            if not changed:
                return fact, []
            linked, earlier = super().supersedes(fact, current)
            return (linked, earlier) if linked is not fact else (fact, [])
        linked, earlier = super().supersedes(fact, current)
        if linked is not fact:  # a sure link: filed under the fact it replaces, or ending it
            return linked, earlier
        return (fact, earlier) if earlier else (None, [])
