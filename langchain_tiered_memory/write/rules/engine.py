"""The rule engine: a user message in, the facts it states about the user out.

Language-neutral: the words are elsewhere. A :class:`Language` brings its
rules (:class:`Rule`: a pattern and a builder that turns a match into
``(subject, content)`` pairs) and its whole-sentence hooks; the filters that
keep non-facts out (questions, hypotheticals, role-play, sarcasm, hedges) are
in :mod:`.filters`; splitting and normalising in :mod:`.text`. The engine

1. reads the message's :func:`~.text.readable_prefix`, normalised, without
   quoted text, and stops at a role-play or fiction frame;
2. splits it into sentences (a sarcastic one is skipped, someone else's
   reported words - "my mum says..." - are cut off; a language may skip or
   read a whole sentence) and clauses (a question or a hypothetical is
   skipped; a clause about someone else - "My friend got a job at NASA" -
   keeps only the facts that name them);
3. runs the clause's language's rules in order (a ``fallback`` rule only when
   no earlier rule matched), keeps one statement per content and, per
   subject, the later statement of the clause;
4. makes a denial ("not allergic to X") end the fact it denies, never add it,
   marks a hedged or wished-for clause ``hedged`` and merges one message's
   facts to one per subject (:func:`merge`).

Example:
    >>> import re
    >>> vegan = rule(r"\\bI'm (?P<x>vegan)\\b", lambda m, _: ("diet", m.group("x")), importance=8.5)
    >>> toy = Language("toy", rules=(vegan,))
    >>> [(f.subject, f.content, f.hedged) for f in extract("Maybe I'm vegan.", (toy,))]
    [('diet', 'vegan', True)]
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.text import strip_quoted
from langchain_tiered_memory.values.facts import FactCategory
from langchain_tiered_memory.write.candidate import Candidate, Op
from langchain_tiered_memory.write.rules.filters import (
    DESIRE,
    FRAME,
    HEDGE,
    HYPOTHETICAL,
    NEGATED,
    SARCASM,
    is_question,
    not_the_users,
    other_subject,
    reported_from,
)
from langchain_tiered_memory.write.rules.text import (
    clauses,
    normalise_message,
    readable_prefix,
    sentences,
)

__all__ = [
    "FILTERS",
    "Builder",
    "FoundFact",
    "Language",
    "Referents",
    "Rule",
    "by_group",
    "doubted",
    "emit",
    "extract",
    "hobby",
    "is_statement",
    "like",
    "merge",
    "own_sentences",
    "own_statements",
    "rule",
    "says",
    "wished",
]


#: The rules' former name for :class:`~langchain_tiered_memory.write.candidate.Candidate`
#: (deprecated: use ``Candidate``).
FoundFact = Candidate


#: A rule's builder: ``(match, clause) -> (subject, content)``, a list of them, or ``None``.
Builder = Callable[[re.Match[str], str], "list[tuple[str, str]] | tuple[str, str] | None"]


@dataclass(frozen=True)
class Rule:
    """One pattern and what a match of it states.

    Attributes:
        pattern: Searched in a clause (every match is built).
        build: Turns a match into ``(subject, content)`` pairs (or nothing).
        category: preference, fact, plan or task_state.
        importance: 1-10.
        fallback: Only when no earlier rule matched the clause.
        request: A how-to-answer request ("I'd like replies in Spanish" is not a wish).
        op: What its facts ask of core memory (``end``: "I don't live in Berlin any more").
    """

    pattern: re.Pattern[str]
    build: Builder
    category: FactCategory = "fact"
    importance: float = 5.0
    fallback: bool = False
    request: bool = False
    op: Op = "add"


def rule(
    pattern: str,
    build: Builder,
    category: FactCategory = "fact",
    importance: float = 5.0,
    *,
    flags: int = re.I,
    fallback: bool = False,
    request: bool = False,
    op: Op = "add",
) -> Rule:
    """A :class:`Rule` from a pattern string (case-insensitive unless ``flags`` say otherwise).

    Example:
        >>> rule(r"I'm (?P<x>\\d+)", lambda m, _: ("age", m.group("x"))).pattern.flags & re.I > 0
        True
    """
    return Rule(re.compile(pattern, flags), build, category, importance, fallback, request, op)


class _Filling(string.Formatter):
    """Fills a template with a match's named groups; a format spec names a filter."""

    def __init__(self, filters: Mapping[str, Callable[[str], str]]) -> None:
        self.filters = filters

    def format_field(self, value: Any, format_spec: str) -> str:
        return self.filters[format_spec](value) if format_spec else str(value)


#: The filters every template may name: ``{x:lower}``, ``{x:title}``.
FILTERS: Mapping[str, Callable[[str], str]] = {"lower": str.lower, "title": str.title}


def says(
    subject: str,
    content: str,
    *,
    filters: Mapping[str, Callable[[str], str]] = FILTERS,
    needs: str = "",
) -> Builder:
    """A builder that states ``(subject, content)``, templates filled with the match's
    named groups (a group that took no part is empty, so ``{x}{y}`` is whichever of two
    alternatives matched); ``{x:name}`` passes the group through a filter first. With
    ``needs`` (``"x:name"``), nothing is stated when that filled field is empty.

    Example:
        >>> build = says("diet", "{x:lower}")
        >>> build(re.search(r"I'm (?P<x>\\w+)", "I'm Vegan"), "")
        ('diet', 'vegan')
        >>> says("allergy:{x}{y}", "allergic to {x}{y}")(re.search(
        ...     r"(?P<x>nuts) hurt|(?P<y>\\w+) allergy", "egg allergy"), "")
        ('allergy:egg', 'allergic to egg')
    """
    filling = _Filling(filters)
    needed = "{" + needs + "}" if needs else ""

    def build(match: re.Match[str], _clause: str) -> tuple[str, str] | None:
        groups = {k: v or "" for k, v in match.groupdict().items()}
        if needed and not filling.format(needed, **groups):
            return None
        return filling.format(subject, **groups), filling.format(content, **groups)

    return build


def by_group(**builders: Builder) -> Builder:
    """The builder of the first group named (in the order given) that took part in the
    match: one rule, several forms ("I'm 1.8 m tall" or "I weigh 70 kg").

    Example:
        >>> build = by_group(m=says("height", "{m} tall"), kg=says("weight", "weighs {kg}"))
        >>> build(re.search(r"(?P<m>\\d m)|(?P<kg>\\d+ kg)", "I weigh 70 kg"), "")
        ('weight', 'weighs 70 kg')
    """

    def build(match: re.Match[str], clause: str) -> list[tuple[str, str]] | tuple[str, str] | None:
        for group, each in builders.items():
            if match.group(group):
                return each(match, clause)
        return None

    return build


def like(pattern: str, build: Builder, **options: Any) -> Rule:
    """A rule for what the user likes or dislikes: a preference of importance 5.5."""
    return rule(pattern, build, "preference", 5.5, **options)


def hobby(pattern: str, build: Builder, **options: Any) -> Rule:
    """A rule for what the user does for fun: a preference of importance 5.0."""
    return rule(pattern, build, "preference", 5.0, **options)


def emit(built: object) -> list[tuple[str, str]]:
    """What a builder returned, as a list of ``(subject, content)`` pairs.

    Example:
        >>> emit(None), emit(("age", "34")), emit([("a", "b")])
        ([], [('age', '34')], [('a', 'b')])
    """
    if built is None:
        return []
    if isinstance(built, tuple):
        return [built]
    return list(built)  # type: ignore[call-overload]


def _never(_sentence: str) -> bool:
    return False


def _nothing(_sentence: str) -> list[Candidate]:
    return []


@dataclass(frozen=True)
class Language:
    """One language's part of the engine.

    Attributes:
        name: ``"en"``, ``"zh"``...
        rules: Run over each clause in order.
        script: A sentence or clause is in this language when this matches
            (``None``: the language of everything no other language claims).
        skip_sentence: A whole sentence that states nothing (a Chinese sentence
            that rejects or supposes as a whole).
        sentence_facts: Facts read from a whole sentence, before its clauses.
    """

    name: str
    rules: tuple[Rule, ...]
    script: re.Pattern[str] | None = None
    skip_sentence: Callable[[str], bool] = _never
    sentence_facts: Callable[[str], list[Candidate]] = _nothing


#: Names given to someone mentioned before ("named him Biscuit"): ``(clause, context)`` to
#: ``(subject, content)`` pairs, where ``context`` is the message so far and the previous one.
Referents = Callable[[str, tuple[str, ...]], list[tuple[str, str]]]

_DENIED = re.compile(r"not\s", re.I)
_ANY = re.compile(r"\A")  # the rule of a fact no pattern of a rule found (a referent's name)
_NAMED = Rule(_ANY, lambda m, c: None, "fact", 7.0)


def _language(text: str, languages: Sequence[Language]) -> Language:
    for language in languages:
        if language.script is not None and language.script.search(text):
            return language
    return next(lang for lang in languages if lang.script is None)


def _clause_facts(
    clause: str, language: Language, referents: Referents | None, context: tuple[str, ...]
) -> list[tuple[int, str, str, Rule]]:
    found: list[tuple[int, str, str, Rule]] = []
    for each in language.rules:
        if each.fallback and found:
            continue
        for match in each.pattern.finditer(clause):
            for subject, content in emit(each.build(match, clause)):
                if subject and content and content.strip():
                    found.append((match.start(), subject, content.strip(), each))
    seen: set[str] = set()
    unique = []
    for item in found:  # two rules, one statement ("a root canal booked for ..."): the first
        if item[2] not in seen:
            seen.add(item[2])
            unique.append(item)
    if referents is not None:
        for subject, content in referents(clause, context):
            unique.append((len(clause), subject, content, _NAMED))
    return unique


def merge(facts: list[Candidate]) -> list[Candidate]:
    """One fact per subject for one message.

    A statement and its own negation ("I no longer live in Berlin; I live in
    Munich"): the positive one. Two positive statements ("I'm vegan now -
    went fully plant-based"): both, in one fact.

    Example:
        >>> [f.content for f in merge([Candidate("home_city", "no longer lives in Berlin"),
        ...                            Candidate("home_city", "lives in Munich")])]
        ['lives in Munich']
    """
    merged: dict[str, Candidate] = {}
    for fact in facts:
        old = merged.get(fact.subject)
        if old is None or (NEGATED.match(old.content) and not NEGATED.match(fact.content)):
            merged[fact.subject] = fact
        elif NEGATED.match(fact.content) and not NEGATED.match(old.content):
            continue
        elif fact.content.lower() not in old.content.lower():
            merged[fact.subject] = Candidate.found(
                fact.subject,
                f"{old.content}; {fact.content}",
                category=old.category,
                importance=max(old.importance, fact.importance),
                hedged=old.hedged and fact.hedged,
                op=old.op,
            )
    return list(merged.values())


def _own_sentences(text: str, languages: Sequence[Language]) -> Iterator[tuple[str, Language]]:
    """The sentences of a message that speak for the user, each with its language:
    steps 1 and 2 of the engine (quoted text, a role-play or fiction frame and what
    follows it, sarcasm, someone else's reported words and sentences a language
    skips are left out)."""
    text = strip_quoted(normalise_message(readable_prefix(text)))
    frame = FRAME.search(text)
    if frame:  # role-play or fiction: nothing from there on is about the user
        start = max(text.rfind(".", 0, frame.start()), text.rfind("。", 0, frame.start()))
        text = text[: start + 1] if start >= 0 else ""
    for sentence in sentences(text):
        if SARCASM.search(sentence):
            continue
        cut = reported_from(sentence, text)
        if cut is not None:  # someone else's words ("my mum says..."): not the user's facts
            sentence = sentence[:cut].rstrip(" ,;:，、")
            if not sentence:
                continue
        language = _language(sentence, languages)
        if language.skip_sentence(sentence):
            continue
        yield sentence, language


def own_sentences(text: str, languages: Sequence[Language]) -> list[str]:
    """The sentences of a message that speak for the user (what :func:`extract`
    reads; the learned extractor's clauses come from them too).

    Example:
        >>> toy = Language("toy", rules=())
        >>> own_sentences("I live in Leeds. Yeah right, I am a chef.", (toy,))
        ['I live in Leeds.']
    """
    return [sentence for sentence, _ in _own_sentences(text, languages)]


def is_statement(clause: str) -> bool:
    """Whether a clause states something (not a question, not a hypothetical).

    Example:
        >>> is_statement("I'm vegan"), is_statement("If I were vegan"), is_statement("Am I?")
        (True, False, False)
    """
    return not (is_question(clause) or HYPOTHETICAL.search(clause))


def doubted(clause: str) -> bool:
    """Whether a clause is said with doubt ("maybe", "I was going to").

    Example:
        >>> doubted("I was going to buy a Vespa"), doubted("I bought a Vespa")
        (True, False)
    """
    return bool(HEDGE.search(clause))


def wished(clause: str) -> bool:
    """Whether a clause says a wish ("I'd love to", "someday", 希望).

    Example:
        >>> wished("I'd love to live in Lisbon"), wished("I live in Lisbon")
        (True, False)
    """
    return bool(DESIRE.search(clause))


# a condition anywhere in a clause ("starting there next month if the references go through")
_CONDITION = re.compile(r"\b(?:if|unless|provided)\b|如果|要是|假如|万一|的话", re.I)


def own_statements(text: str, languages: Sequence[Language]) -> list[str]:
    """The clauses of a message the user states plainly about themselves, whatever
    the rules make of them: what the engine reads (:func:`extract`), without
    questions, hypotheticals, hedged or wished-for clauses and clauses about
    someone else ("My friend got a job at NASA").

    Example:
        >>> toy = Language("toy", rules=())
        >>> own_statements("Maybe I'll move. Got the keys to a flat in Leith! Is it far?", (toy,))
        ['Got the keys to a flat in Leith!']
        >>> own_statements("Starting at KPMG if the references go through.", (toy,))
        []
        >>> own_statements("My friend got a job at NASA. Imagine I'm a pilot.", (toy,))
        []
    """
    return [
        clause
        for sentence, _ in _own_sentences(text, languages)
        for clause in clauses(sentence)
        if not (
            is_question(clause)
            or HYPOTHETICAL.search(clause)
            or _CONDITION.search(clause)
            or HEDGE.search(clause)
            or DESIRE.search(clause)
            or other_subject(clause) is not None
        )
    ]


def extract(
    text: str,
    languages: Sequence[Language],
    *,
    previous: str = "",
    referents: Referents | None = None,
) -> list[Candidate]:
    """The facts one user message states about the user, in the order said.

    Args:
        text: The user's message (only its :func:`~.text.readable_prefix` is read).
        languages: The languages to read it in; exactly one has ``script=None``.
        previous: The user's previous message (context for ``referents``).
        referents: Names given to someone mentioned before.
    """
    results: list[Candidate] = []
    previous = normalise_message(readable_prefix(previous))
    said = ""  # the message up to the clause being read (for "her name's Pickle")
    for sentence, language in _own_sentences(text, languages):
        results.extend(language.sentence_facts(sentence))
        for clause in clauses(sentence):
            before, said = said, f"{said} {clause}"
            if is_question(clause) or HYPOTHETICAL.search(clause):
                continue
            doubt = bool(HEDGE.search(clause))
            desire = bool(DESIRE.search(clause))
            best: dict[str, tuple[int, str, Rule]] = {}
            found = _clause_facts(
                clause, _language(clause, languages), referents, (before, previous)
            )
            person = other_subject(clause)
            if person is not None:  # "My friend got a job at NASA": only facts about them
                # (or a name they gave: "My daughter named him Sheldon")
                found = [
                    f for f in found if f[3] is _NAMED or not not_the_users(f[1], f[2], person)
                ]
            for position, subject, content, each in found:
                # the same subject twice in one clause: the later statement wins
                if subject not in best or position >= best[subject][0]:
                    best[subject] = (position, content, each)
            for subject, (_, content, each) in sorted(best.items(), key=lambda kv: kv[1][0]):
                # a statement that something is not so ends it if known, never adds it
                op: Op = "end" if _DENIED.match(content) else each.op
                results.append(
                    Candidate.found(
                        subject,
                        " ".join(content.split()),
                        category=each.category,
                        importance=each.importance,
                        hedged=doubt or (desire and not each.request),
                        op=op,
                    )
                )
    return merge(results)
