"""The signals recall scores a candidate by, computed once for one query's candidates.

A :class:`Candidate` is an archived record with its raw dense (cosine) and
keyword (BM25) scores. :func:`candidate_signals` computes every signal of
one query's candidates once, as :class:`Signals` (one entry per candidate),
which both scorers read: the hand-set sum in
:mod:`~langchain_tiered_memory.recall.weights` and the learned ranker in
:mod:`~langchain_tiered_memory.recall.ranker`. It is made of small pure
functions: they scale those scores over the candidates (:func:`min_max`,
:func:`keyword_scale`), let a turn borrow its previous turn's similarity
(:func:`borrow_from_previous`), measure recency (:func:`recency_score`),
find who a query is about (:func:`named_speakers`, :func:`addressed_roles`)
and how a record's date falls in the query's time window
(:func:`~.time_expressions.time_match`).

Example:
    >>> min_max([2.0, 4.0, None])
    [0.0, 1.0, 0.0]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from langchain_tiered_memory.recall.time_expressions import TimeWindow, query_window, time_match
from langchain_tiered_memory.records import MemoryRecord

__all__ = [
    "NEIGHBOUR_SHARE",
    "Candidate",
    "Signals",
    "addressed_roles",
    "borrow_from_previous",
    "candidate_signals",
    "holds_identifiers",
    "keyword_scale",
    "min_max",
    "named_speakers",
    "quoted_identifiers",
    "recency_score",
    "speaker_of",
    "strip_names",
    "text_words",
    "turn_key",
]

# A signal whose raw values span less than this over the candidates does not
# discriminate between them; min-max scaling it would blow noise up to 0..1.
# (For recency at 0.995/h this is about 12 minutes of age difference.)
_MIN_SPREAD = 1e-3
_WORD = re.compile(r"\w+", re.UNICODE)

#: The share of its previous turn's dense similarity a turn may borrow (the learned
#: ranker's features were computed with it; the hand-set weights default to it).
NEIGHBOUR_SHARE = 0.3


@dataclass(frozen=True)
class Candidate:
    """A record with its raw scores from the archive's two searches.

    Args:
        record: The archived record.
        dense: Cosine similarity to the query vector (``None``: not a dense hit).
        keyword: BM25 score, higher is better (``None``: no keyword match).

    Example:
        >>> r = MemoryRecord.new(user_id="u", kind="fact", text="tea")
        >>> Candidate(r, dense=0.7).keyword is None
        True
    """

    record: MemoryRecord
    dense: float | None = None
    keyword: float | None = None


def min_max(values: Sequence[float | None], *, min_spread: float = _MIN_SPREAD) -> list[float]:
    """Scale values to 0-1 over the present ones (missing values score 0).

    When the present values span less than ``min_spread`` the signal does not
    tell the candidates apart and every value scales to 0.

    Example:
        >>> min_max([2.0, 4.0, None, 3.0])
        [0.0, 1.0, 0.0, 0.5]
        >>> min_max([5.0, 5.0])
        [0.0, 0.0]
    """
    present = [v for v in values if v is not None]
    if not present:
        return [0.0] * len(values)
    low, high = min(present), max(present)
    if high - low < min_spread or high == low:
        return [0.0] * len(values)
    return [0.0 if v is None else (v - low) / (high - low) for v in values]


def keyword_scale(values: Sequence[float | None], *, floor: float = 0.5) -> list[float]:
    """Scale BM25 scores to 0-1 so that a lone or near-equal match keeps its strength.

    Min-max scaling over the matches gives the weakest match 0, the score of
    no match at all: a name that occurs in a single record would count for
    nothing. Here the bottom of the scale is the weakest match or ``floor``
    times the best, whichever is lower, so one match scores 1, matches of
    about equal strength all score high, and a spread-out set of matches
    scales as min-max did. Missing values (no match) score 0.

    Example:
        >>> keyword_scale([None, 7.5, None])
        [0.0, 1.0, 0.0]
        >>> keyword_scale([4.0, 3.0, None])
        [1.0, 0.5, 0.0]
        >>> keyword_scale([10.0, 1.0, 5.5])
        [1.0, 0.0, 0.5]
    """
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be in [0, 1), got {floor}")
    present = [v for v in values if v is not None]
    if not present or max(present) <= 0:
        return [0.0] * len(values)
    high = max(present)
    low = min(min(present), floor * high)
    if high - low < _MIN_SPREAD:
        return [0.0] * len(values)
    return [0.0 if v is None else max(0.0, (v - low) / (high - low)) for v in values]


def turn_key(record: MemoryRecord, offset: int = 0) -> tuple[Any, ...] | None:
    """``(thread, session, turn index + offset)`` of a turn record (``None`` for other records).

    Example:
        >>> r = MemoryRecord.new(user_id="u", kind="turn", text="hi", thread_id="t",
        ...                      metadata={"turn_index": 4, "session": 2})
        >>> turn_key(r), turn_key(r, -1)
        (('t', 2, 4), ('t', 2, 3))
    """
    index = record.metadata.get("turn_index")
    if record.kind != "turn" or not isinstance(index, int) or isinstance(index, bool):
        return None
    return (record.thread_id, record.metadata.get("session"), index + offset)


def borrow_from_previous(candidates: Sequence[Candidate], share: float) -> list[float | None]:
    """Dense scores where a turn may borrow ``share`` of its previous turn's score.

    A turn's score becomes ``max(own, (1 - share) * own + share * previous)``
    when the turn before it (same thread and session, ``metadata["turn_index"]``
    one less) is a dense candidate too: a short answer ("Yep! It's about
    loss and identity.") is then found by the question it answers ("Is that
    your third screenplay?"). Records without a turn index keep their score.

    Example:
        >>> q = MemoryRecord.new(user_id="u", kind="turn", text="Is it your third one?",
        ...                      thread_id="t", metadata={"turn_index": 4})
        >>> a = MemoryRecord.new(user_id="u", kind="turn", text="Yep! About loss.",
        ...                      thread_id="t", metadata={"turn_index": 5})
        >>> borrow_from_previous([Candidate(q, dense=0.8), Candidate(a, dense=0.4)], 0.5)
        [0.8, 0.6000000000000001]
    """
    if share <= 0:
        return [c.dense for c in candidates]
    dense_by_turn = {
        key: c.dense
        for c in candidates
        if c.dense is not None and (key := turn_key(c.record)) is not None
    }
    out: list[float | None] = []
    for c in candidates:
        own = c.dense
        key = turn_key(c.record, -1)
        previous = dense_by_turn.get(key) if key is not None else None
        if own is not None and previous is not None:
            own = max(own, (1 - share) * own + share * previous)
        out.append(own)
    return out


def recency_score(record: MemoryRecord, now: datetime, decay: float = 0.995) -> float:
    """``decay ** hours`` since the record was last accessed (or created).

    Example:
        >>> from datetime import timedelta
        >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
        >>> r = MemoryRecord.new(user_id="u", kind="fact", text="x",
        ...                      created_at=now - timedelta(hours=10))
        >>> round(recency_score(r, now), 4) == round(0.995 ** 10, 4)
        True
    """
    at = record.last_accessed_at or record.created_at
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    hours = max(0.0, (now - at).total_seconds() / 3600.0)
    return float(decay**hours)


def text_words(text: str) -> list[str]:
    """The words of ``text``, case-folded.

    Example:
        >>> text_words("Hi, Ana's DOG!")
        ['hi', 'ana', 's', 'dog']
    """
    return _WORD.findall(text.casefold())


def speaker_of(record: MemoryRecord) -> str | None:
    """Who spoke a record: its ``metadata["speaker"]`` (``None`` if unnamed)."""
    value = record.metadata.get("speaker")
    return str(value) if value else None


def named_speakers(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers whose name appears in ``query`` as a whole word (case-insensitive).

    Example:
        >>> sorted(named_speakers("When did Caroline's sister visit?", ["Caroline", "Mel"]))
        ['Caroline']
    """
    words = set(text_words(query))
    found = set()
    for name in speakers:
        parts = text_words(name)
        if parts and all(p in words for p in parts):
            found.add(name)
    return found


_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai"})
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
# "you" as the speaker of something said before (not "can you help me ...").
_ASSISTANT_SAID = re.compile(
    r"\byou\s+(?:said|told|mentioned|suggested|recommended|gave|provided|listed|shared|"
    r"explained|wrote|described|proposed|came up with)\b"
    r"|\bdid\s+you\s+(?:say|tell|mention|suggest|recommend|give|provide|list|share|explain|"
    r"write|describe|propose)\b"
    r"|\byour\s+(?:suggestions?|recommendations?|advice|answer|list|explanation)\b",
    re.IGNORECASE,
)


def addressed_roles(query: str, speakers: Iterable[str]) -> set[str]:
    """The chat roles a query is about, when records are spoken by roles, not names.

    Records of a plain chat carry ``speaker`` ``"user"``/``"human"`` or
    ``"assistant"``/``"ai"``. A question in the first person (*"what did I
    say about..."*) is about the user's turns; one that cites the assistant
    (*"the hotel you recommended"*) is about the assistant's. Asking the
    assistant for something (*"can you help me"*) names no past speaker.

    Example:
        >>> sorted(addressed_roles("Which breed is my puppy?", ["user", "assistant"]))
        ['user']
        >>> sorted(addressed_roles("Which hotel did you recommend?", ["user", "assistant"]))
        ['assistant']
        >>> sorted(addressed_roles("Can you recommend a hotel?", ["user", "assistant"]))
        []
        >>> sorted(addressed_roles("Remind me what you suggested", ["user", "assistant"]))
        ['assistant', 'user']
        >>> addressed_roles("Which breed is my puppy?", ["Ana", "Ben"])
        set()
    """
    found = set()
    for speaker in speakers:
        role = speaker.casefold()
        about_user = role in _USER_ROLES and _FIRST_PERSON.search(query)
        about_assistant = role in _ASSISTANT_ROLES and _ASSISTANT_SAID.search(query)
        if about_user or about_assistant:
            found.add(speaker)
    return found


def strip_names(query: str, names: Iterable[str]) -> str:
    """``query`` without these names (and their possessive ``'s``).

    Used for the dense query: a name in a question matches every turn that
    *addresses* that person; who said what is the speaker signal's job.
    Returns the query unchanged if nothing would be left.

    Example:
        >>> strip_names("What did Caroline's mentor say?", ["Caroline"])
        'What did mentor say?'
    """
    text = query
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(name)}(?:['’]s)?\b", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+([?.!,])", r"\1", " ".join(text.split()))
    return text if text_words(text) else query


# A number with a unit or an ordinal ("3rd", "10km", "1990s") is not an identifier.
_MEASURE = re.compile(r"\d+(?:st|nd|rd|th|s|k|km|kg|mb|gb|am|pm|h|m|min|yo)", re.IGNORECASE)
# Nor is a plain number written with separators ("1,200", "3.5", "1,2023").
_PLAIN_NUMBER = re.compile(r"[\d.,]+")
_EDGE = "\"'“”‘’«»()[]{}<>.,;:!?"


def quoted_identifiers(query: str) -> list[str]:
    """The codes and numbers in ``query`` that a record must hold verbatim.

    An identifier is a word with a digit in it that is not a plain count,
    year, amount or measure: five characters or more (``48213907``,
    ``4821-3907``), or letters and digits mixed (``B12``, ``XJ9K``).
    Case-folded, in the order they occur. (Titles in quotation marks are
    not: the answer about a quoted book is as often the turn after the one
    naming it, and ranking every turn that names it first cost LoCoMo
    recall.)

    Example:
        >>> quoted_identifiers("Where is order 4821-3907? And booking AB77?")
        ['4821-3907', 'ab77']
        >>> quoted_identifiers("What did Ana do on December 1,2023, the 3rd, with 1,200 people?")
        []
        >>> quoted_identifiers("Is flight LX1234 on time?")
        ['lx1234']
    """
    found: list[str] = []
    for token in query.split():
        token = token.strip(_EDGE).casefold()
        if not any(ch.isdigit() for ch in token) or _MEASURE.fullmatch(token):
            continue
        if _PLAIN_NUMBER.fullmatch(token) and not token.isdigit():
            continue
        mixed = any(ch.isalpha() for ch in token)
        if (len(token) >= 5 or (mixed and len(token) >= 3)) and token not in found:
            found.append(token)
    return found


def holds_identifiers(text: str, identifiers: Sequence[str]) -> int:
    """How many of ``identifiers`` (:func:`quoted_identifiers`) ``text`` holds as whole words.

    Example:
        >>> holds_identifiers("Order 4821-3907 is confirmed.", ["4821-3907"])
        1
        >>> holds_identifiers("Order 4821-39070 is confirmed.", ["4821-3907"])
        0
    """
    if not identifiers:
        return 0
    folded = " ".join(text.casefold().split())
    return sum(
        1
        for ident in identifiers
        if re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w]|-\w)", folded) is not None
    )


@dataclass(frozen=True)
class Signals:
    """Every signal of one query's candidates, computed once: one entry per candidate.

    What both scorers read (:func:`candidate_signals` makes it). Each scaled
    signal is 0-1 over the candidates.

    Attributes:
        candidates: The candidates, in order.
        dense: The dense similarity, min-max scaled (0: not a dense hit).
        borrowed_raw: The raw dense similarity after a turn borrowed its share
            of the previous turn's (:func:`borrow_from_previous`).
        borrowed: Those, min-max scaled.
        keyword: The BM25 score, :func:`keyword_scale`'d (a lone match scores 1).
        speakers: Who spoke each record (:func:`speaker_of`).
        named: The speakers the query names (:func:`named_speakers`).
        roles: The chat roles the query is about, when it names no speaker
            (:func:`addressed_roles`).
        speaker: 1 for a record spoken by the one speaker the query names.
        role: 1 for a record spoken by the one chat role the query is about.
        recency: :func:`recency_score`, min-max scaled.
        importance: The record's importance, min-max scaled.
        time: How the record's date falls in the query's time window
            (:func:`~.time_expressions.time_match`; ``None``: no window).
        turns: Each record's :func:`turn_key` (``None``: not a turn).
    """

    candidates: tuple[Candidate, ...]
    dense: tuple[float, ...]
    borrowed_raw: tuple[float | None, ...]
    borrowed: tuple[float, ...]
    keyword: tuple[float, ...]
    speakers: tuple[str | None, ...]
    named: frozenset[str]
    roles: frozenset[str]
    speaker: tuple[float, ...]
    role: tuple[float, ...]
    recency: tuple[float, ...]
    importance: tuple[float, ...]
    time: tuple[float, ...] | None
    turns: tuple[tuple[Any, ...] | None, ...]


def candidate_signals(
    candidates: Sequence[Candidate],
    *,
    query: str,
    now: datetime,
    neighbour: float = NEIGHBOUR_SHARE,
    keyword_floor: float = 0.5,
    recency_decay: float = 0.995,
    time_window: TimeWindow | Literal["auto"] | None = "auto",
) -> Signals:
    """The :class:`Signals` of one query's candidates (pure).

    Args:
        candidates: Records with raw dense and/or keyword scores.
        query: The query text (``""``: no speaker or time signal).
        now: The time recency and relative time expressions are measured from.
        neighbour: The share of the previous turn's dense similarity a turn may borrow.
        keyword_floor: See :func:`keyword_scale`.
        recency_decay: Recency multiplier per hour since last access.
        time_window: The window of the time signal; ``"auto"`` reads it from
            ``query`` (:func:`~.time_expressions.query_window`), ``None``: no
            time signal.

    Example:
        >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
        >>> ana = MemoryRecord.new(user_id="u", kind="turn", text="My dog is Max.",
        ...                        metadata={"speaker": "Ana"}, created_at=now)
        >>> ben = MemoryRecord.new(user_id="u", kind="turn", text="I like tea.",
        ...                        metadata={"speaker": "Ben"}, created_at=now)
        >>> s = candidate_signals([Candidate(ana, 0.6, 2.0), Candidate(ben, 0.2)],
        ...                       query="What is Ana's dog called?", now=now)
        >>> s.dense, s.keyword, s.speaker, s.time
        ((1.0, 0.0), (1.0, 0.0), (1.0, 0.0), None)
    """
    records = [c.record for c in candidates]
    borrowed_raw = borrow_from_previous(candidates, neighbour)
    speakers = tuple(speaker_of(r) for r in records)
    present = {s for s in speakers if s}
    named = named_speakers(query, present) if query else set()
    roles = set() if named or not query else addressed_roles(query, present)
    if time_window == "auto":
        time_window = query_window(query, now=now) if query else None
    return Signals(
        candidates=tuple(candidates),
        dense=tuple(min_max([c.dense for c in candidates])),
        borrowed_raw=tuple(borrowed_raw),
        borrowed=tuple(min_max(borrowed_raw)),
        keyword=tuple(keyword_scale([c.keyword for c in candidates], floor=keyword_floor)),
        speakers=speakers,
        named=frozenset(named),
        roles=frozenset(roles),
        speaker=tuple(float(len(named) == 1 and s in named) for s in speakers),
        role=tuple(float(len(roles) == 1 and s in roles) for s in speakers),
        recency=tuple(min_max([recency_score(r, now, recency_decay) for r in records])),
        importance=tuple(min_max([float(r.importance) for r in records])),
        time=(
            tuple(time_match(r.created_at, time_window) for r in records)
            if time_window is not None
            else None
        ),
        turns=tuple(turn_key(r) for r in records),
    )
