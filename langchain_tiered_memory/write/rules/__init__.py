"""The offline rules: which clauses state a fact about the user (English and Chinese).

:func:`find_facts` reads one user message and returns what it says about the
user, as ``(subject, content)`` pairs with a category and an importance:

* **health and diet** - allergies ("allergic to penicillin", "shellfish makes
  me sick", "No dairy for me", "I can't eat gluten"), conditions ("I have
  asthma", "20 weeks pregnant"), medication, diets ("I'm vegan now", "doing
  keto"); 我对花生过敏, 我吃素;
* **people and pets** - "My wife's name is Sara", "our dog Rex", "a kitten
  ... named him Biscuit", "the kids named her Clementine" (the referent may be
  in the previous message); 我女儿叫朵朵;
* **identity, home and work** - name, age, birthday, nationality, "I live
  in", "moved here to Calgary", "I work at", "I'm a primary school teacher",
  "As a senior data engineer"; 我住在上海, 我在银行做柜员;
* **how to answer** - answer language ("Please always answer in
  Portuguese"), format ("bullet points please"), length, units, time zone,
  the languages the user speaks; 请用繁体字回复;
* **plans and numbers** - dated events ("My flight to Lisbon is on 3 June at
  6:50"), reschedules ("they've moved the physio to Wednesday"), moves and
  trips, goals, budgets, sizes, car, email, phone;
* **likes and hobbies** - "I hate coriander", "I don't like coffee anymore",
  "bouldering three evenings a week".

What is *not* a fact about the user stays out: questions ("Should I move to
Berlin?"), hypotheticals ("If I were allergic to nuts..."), role-play and
fiction ("Let's role-play: ... I'm Gregor"), sarcasm ("Oh sure, I'm a
billionaire"), quoted text (a speech to proofread, a line of a novel),
other people's facts ("My colleague is allergic to cats") and plans
considered but rejected ("I thought about going vegan but nah"). Hedged
clauses ("I think", "maybe", "was going to") come back marked ``hedged``.

Subjects are the update keys: a later fact with the same subject supersedes
the earlier one (``home_city``, ``diet``, ``work``, ``answer_language``,
``allergy:penicillin``, ``pet:cat``, ``plan:flight``, ``budget:laptop``).
A subject ending in ``:*`` (``budget:*``, ``plan:*``) refers back to the
latest fact under that prefix ("I can go up to 850 now"); the writer
resolves it against core memory.

The layout: :mod:`.engine` (language-neutral: sentences, clauses, rules,
merge), :mod:`.filters` (the words of non-facts), :mod:`.text` (normalising,
splitting), :mod:`.en` (English rules per domain, word lists), :mod:`.zh`
(Chinese), :mod:`.referents` ("named him Biscuit").

Example:
    >>> [(f.subject, f.content) for f in find_facts("I'm 34 and just started running.")]
    [('age', '34 years old'), ('hobby:running', 'started running')]
    >>> [(f.subject, f.content) for f in find_facts("Remember that my sister is called Joana.")]
    [('family:sister', 'sister is called Joana')]
    >>> find_facts("If I were allergic to nuts, what would I avoid?")
    []
"""

from __future__ import annotations

from langchain_tiered_memory.write.candidate import Candidate
from langchain_tiered_memory.write.rules.en import ENGLISH
from langchain_tiered_memory.write.rules.engine import FoundFact, Language, extract, own_statements
from langchain_tiered_memory.write.rules.referents import pronoun_names
from langchain_tiered_memory.write.rules.text import READ_LIMIT, normalise_message, readable_prefix
from langchain_tiered_memory.write.rules.zh import CHINESE

__all__ = [
    "LANGUAGES",
    "READ_LIMIT",
    "Candidate",
    "FoundFact",
    "find_facts",
    "find_statements",
    "normalise_message",
    "readable_prefix",
]

#: The languages the rules read, Chinese first (a clause with Chinese characters), then English.
LANGUAGES: tuple[Language, ...] = (CHINESE, ENGLISH)


def find_facts(text: str, *, previous: str = "") -> list[Candidate]:
    """The facts one user message states about the user, in the order said.

    Only the message's :func:`readable_prefix` is read (:data:`READ_LIMIT`
    characters), so the time is bounded whatever its length.

    Args:
        text: The user's message.
        previous: The user's previous message, for "the kids named her
            Clementine" (who is "her"?).
    """
    return extract(text, LANGUAGES, previous=previous, referents=pronoun_names)


def find_statements(text: str) -> list[str]:
    """The clauses of one user message that state something plainly about the user,
    whether or not a rule reads a fact in them (questions, hypotheticals, hedges,
    wishes, role-play, sarcasm, quoted text and other people's words left out):
    what may replace a current fact said in words no rule has.

    Example:
        >>> find_statements("We broke up in the summer. What if I move? Maybe I'll go vegan.")
        ['We broke up in the summer.']
    """
    return own_statements(text, LANGUAGES)
