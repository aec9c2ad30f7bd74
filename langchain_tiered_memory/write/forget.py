"""Forget requests: commands the memory carries out, never facts it keeps.

A user who says "forget what I said about Porto" or "delete everything you
know about me" gives an order. This module spots it (:func:`detect_forget`),
says what it reaches (:func:`forget_words`, :func:`text_matches`: every text
that holds all the request's words), and words what was done for the model
to pass on (:class:`ForgetReport`). Carrying it out is the store's job
(:func:`carry_out` hands it over): a forget by words deletes the matching core
facts (every version that says it), the turns of every thread of the user that
say it (from the buffer, the log and the archive), the summaries and records that carry them, their
embedding-cache entries and checkpoints, and the words from the audit log
(see :meth:`~langchain_tiered_memory.memory.TieredMemory.forget_about`).

Example:
    >>> request = detect_forget("Forget what I said about Porto.")
    >>> request
    ForgetRequest(target='Porto', everything=False)
    >>> words = forget_words(request.target)
    >>> text_matches(words, "Actually we moved again, to Porto"), text_matches(words, "Lisbon")
    (True, False)
    >>> ForgetReport(facts=1, turns=2).notice()  # what the model reads instead of the request
    '[The user asked to forget something. Deleted from memory: 1 fact and 2 conversation turns. Confirm briefly without repeating what was forgotten.]'
"""  # noqa: E501

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import HumanMessage

from langchain_tiered_memory.storage.base import (
    FORGET_NOTICE_ID,
    ForgetCounts,
    PurgesCheckpoints,
    Store,
)
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn, message_text

__all__ = [
    "ForgetReport",
    "ForgetRequest",
    "carry_out",
    "detect_forget",
    "facts_to_forget",
    "forget_requests",
    "forget_words",
    "text_matches",
]


@dataclass(frozen=True)
class ForgetRequest:
    """A user's explicit request to forget; ``target`` is what (``None`` = "that")."""

    target: str | None
    everything: bool = False


_FORGET_ALL = re.compile(
    r"\b(delete|forget|erase) (everything|all) (you know )?about me\b|"
    r"忘掉关于我的一切|删除.*关于我的",
    re.I,
)
_FORGET = re.compile(
    r"\b(?:please )?forget (?:that|this|it|what i (?:said|told you) about|"
    r"about|my)\b ?(.*?)[.!]?$|(?:忘掉|忘记)(.*?)[。！]?$",
    re.I,
)


def detect_forget(text: str) -> ForgetRequest | None:
    """Spot an explicit request to forget.

    Example:
        >>> detect_forget("Please forget what I said about my trip.")
        ForgetRequest(target='my trip', everything=False)
        >>> detect_forget("forget that") is None
        False
        >>> detect_forget("I forgot my keys") is None
        True
    """
    if _FORGET_ALL.search(text):
        return ForgetRequest(target=None, everything=True)
    match = _FORGET.search(text.strip())
    if not match:
        return None
    target = (match.group(1) or match.group(2) or "").strip() or None
    return ForgetRequest(target=target)


def forget_requests(turns: Sequence[Turn]) -> list[tuple[Turn, ForgetRequest]]:
    """The turns whose user messages ask to forget, each with its (first) request.

    Example:
        >>> turns = [Turn(0, (HumanMessage("I live in Porto."),)),
        ...          Turn(1, (HumanMessage("Please forget that."),))]
        >>> [(t.index, r.target) for t, r in forget_requests(turns)]
        [(1, None)]
    """
    found: list[tuple[Turn, ForgetRequest]] = []
    for turn in turns:
        for message in turn.messages:
            if isinstance(message, HumanMessage):
                request = detect_forget(message_text(message))
                if request is not None:
                    found.append((turn, request))
                    break
    return found


#: Words a request names its target with that say nothing about what to forget.
_STOP = frozenset(
    {
        "my",
        "the",
        "a",
        "an",
        "that",
        "this",
        "about",
        "what",
        "i",
        "said",
        "you",
        "it",
        "me",
        "our",
        "we",
        "us",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "and",
        "or",
        "with",
        "from",
        "is",
        "was",
        "were",
        "be",
        "all",
        "everything",
        "told",
        "please",
    }
)


def forget_words(target: str) -> tuple[str, ...]:
    """The words a text must all hold to be forgotten by a request for ``target``.

    Example:
        >>> forget_words("what I said about my daughter's school")
        ('daughter', 'school')
        >>> forget_words("the")
        ()
    """
    words = re.findall(r"\w+", target.lower())
    return tuple(dict.fromkeys(w for w in words if (w not in _STOP and len(w) > 1) or _cjk(w)))


def _cjk(word: str) -> bool:
    return any(ord(c) > 0x2E7F for c in word)


def _pattern(word: str) -> re.Pattern[str]:
    if _cjk(word):
        return re.compile(re.escape(word))
    stem = word[:-1] if len(word) > 3 and word.endswith("s") else word  # plans -> plan
    return re.compile(rf"(?<!\w){re.escape(stem)}(?:s|es)?(?!\w)", re.I)


def text_matches(words: Sequence[str], text: str) -> bool:
    """Whether ``text`` holds every one of ``words`` (each as a whole word, any case, with
    or without a plural ``s``). No words match nothing.

    Example:
        >>> text_matches(["daughter"], "family:daughter's"), text_matches(["live"], "lives")
        (True, True)
        >>> text_matches(["work"], "a workshop"), text_matches([], "anything")
        (False, False)
    """
    return bool(words) and all(_pattern(w).search(text) for w in words)


def facts_to_forget(request: ForgetRequest, facts: Sequence[CoreFact]) -> list[CoreFact]:
    """The facts of ``facts`` a request reaches: all of them for "everything", the newest
    for "forget that", else those whose subject or content holds the target's words.

    Example:
        >>> facts = [CoreFact.new("home_city", "moved to Lisbon"),
        ...          CoreFact.new("family:daughter", "has a daughter, Mia")]
        >>> [f.subject for f in facts_to_forget(ForgetRequest("my daughter"), facts)]
        ['family:daughter']
    """
    if request.everything:
        return list(facts)
    if request.target is None:
        return [max(facts, key=lambda f: f.created_at)] if facts else []
    words = forget_words(request.target)
    return [f for f in facts if text_matches(words, f"{f.subject} {f.content}")]


def forget_in_core(core: CoreMemory, request: ForgetRequest) -> list[CoreFact]:
    """Carry out ``request`` on core memory alone (every version of each subject it
    reaches); returns the versions removed.

    Example:
        >>> core = CoreMemory([CoreFact.new("home_city", "moved to Lisbon")])
        >>> [f.content for f in forget_in_core(core, ForgetRequest("Lisbon"))], core.active()
        (['moved to Lisbon'], [])
    """
    if request.everything:
        return core.clear()
    removed: list[CoreFact] = []
    for fact in facts_to_forget(request, core.active()):
        removed += core.forget(subject=fact.subject)
    return removed


@dataclass(frozen=True)
class ForgetReport:
    """What one forget deleted: fact versions, archive records and conversation turns.

    Attributes:
        facts: Core fact versions deleted.
        records: Archive records deleted (turns, summaries, facts, observations).
        turns: Conversation turns deleted from the threads (the request's own not counted).
        everything: The whole user was forgotten.
    """

    facts: int = 0
    records: int = 0
    turns: int = 0
    everything: bool = False

    @classmethod
    def from_counts(cls, counts: ForgetCounts) -> ForgetReport:
        """The report of what a backend's forget by words deleted."""
        return cls(facts=len(counts.facts), records=counts.records, turns=counts.turns)

    @property
    def found(self) -> bool:
        """Whether anything was deleted."""
        return self.everything or bool(self.facts or self.records or self.turns)

    def summary(self) -> str:
        """What was deleted, in a few words (no forgotten text).

        Example:
            >>> ForgetReport(facts=2, records=3).summary(), ForgetReport().summary()
            ('2 facts and 3 archived records', 'nothing')
        """
        parts = [
            _count(n, word)
            for n, word in (
                (self.facts, "fact"),
                (self.records, "archived record"),
                (self.turns, "conversation turn"),
            )
            if n
        ]
        if self.everything:
            return "everything about the user" + (f" ({', '.join(parts)})" if parts else "")
        if not parts:
            return "nothing"
        return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"

    def notice(self) -> str:
        """What the model reads in place of the request (the request names what is
        forgotten, so it cannot stay): what was deleted, or that nothing matched.

        Example:
            >>> ForgetReport().notice()
            '[The user asked to forget something. Nothing in memory matched it, so nothing was deleted; tell the user so briefly without repeating it.]'
        """  # noqa: E501
        if not self.found:
            return (
                "[The user asked to forget something. Nothing in memory matched it, so nothing "
                "was deleted; tell the user so briefly without repeating it.]"
            )
        return (
            f"[The user asked to forget something. Deleted from memory: {self.summary()}. "
            "Confirm briefly without repeating what was forgotten.]"
        )


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def carry_out(
    store: Store,
    core: CoreMemory,
    asked: Sequence[ForgetRequest],
    turns: Sequence[int],
    *,
    user_id: str,
    thread_id: str,
) -> ForgetReport:
    """Carry out forget requests in ``store`` for ``user_id`` (``core``: the user's core
    memory); ``turns``: the request turns of ``thread_id``, replaced by the notice of what
    was deleted (:meth:`ForgetReport.notice`). "Everything" forgets the whole user; else
    the store forgets by the requests' words (a bare "forget that": the newest fact).

    Example:
        >>> from langchain_tiered_memory import TieredMemory
        >>> m = TieredMemory(context_window=4096)
        >>> _ = m.write_fact(CoreFact.new("home_city", "lives in Porto"))
        >>> carry_out(m.store, m.core, [ForgetRequest("Porto")], [],
        ...           user_id=m.user_id, thread_id=m.thread_id).facts
        1
    """
    backend = store.backend
    if any(request.everything for request in asked):
        facts = len(backend.load_facts(user_id)[1])
        records = store.forget_user(user_id)
        report = ForgetReport(facts=facts, records=records, everything=True)
        if turns:
            notice = HumanMessage(report.notice(), id=f"{FORGET_NOTICE_ID}{uuid.uuid4().hex}")
            backend.append_messages(user_id, thread_id, [notice])
        return report
    word_sets = [forget_words(r.target) for r in asked if r.target]
    word_sets = [w for w in word_sets if w]
    subjects = [
        f.subject
        for r in asked
        if not (r.target and forget_words(r.target))
        for f in facts_to_forget(ForgetRequest(None), core.active())
    ]

    def match(text: str) -> bool:
        return any(text_matches(words, text) for words in word_sets)

    counts = backend.forget_matching(
        user_id,
        thread_id,
        match=match,
        subjects=subjects,
        requests=turns,
        notice=lambda c: ForgetReport.from_counts(c).notice(),
        purge=store.purge_checkpoints if isinstance(store, PurgesCheckpoints) else None,
    )
    return ForgetReport.from_counts(counts)
