"""Near-duplicate merging: one copy of what several records say reaches the prompt.

Two records are near-duplicates when their normalised texts are equal, their
word sets overlap by a Jaccard similarity of at least a threshold (0.9), or
the lower-ranked one's words are (95%) all in the better one; texts that
differ in a number never are. :func:`merge_near_duplicates` folds each into
the best-ranked copy in time close to linear in the number of records: each
text is compared only with the kept texts that share one of its rarest words
(prefix filtering), which finds every pair the all-pairs comparison finds.

Example:
    >>> dedupe_key("  I'm allergic to PEANUTS! ")
    'i m allergic to peanuts'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from langchain_tiered_memory.recall.signals import text_words
from langchain_tiered_memory.records import ScoredRecord

__all__ = ["dedupe_key", "fold_repeated_lines", "merge_near_duplicates"]

_DIGIT = re.compile(r"\d")
# A lower-ranked text whose distinct words are this much inside a kept one's adds nothing.
_CONTAINED = 0.95


def dedupe_key(text: str) -> str:
    """The text with case, punctuation and spacing normalised (equal keys = duplicates).

    Example:
        >>> dedupe_key("  I'm allergic to PEANUTS! ") == dedupe_key("I'm allergic to peanuts")
        True
    """
    return " ".join(text_words(text))


def _with_sources(kept: ScoredRecord, folded: ScoredRecord) -> ScoredRecord:
    """``kept`` with the ``sources`` of ``folded`` (merged into it) that it lacks."""
    extra = tuple(s for s in folded.record.sources if s not in kept.record.sources)
    if not extra:
        return kept
    record = replace(kept.record, sources=kept.record.sources + extra)
    return ScoredRecord(record, kept.score, kept.parts)


def _numbers(words: frozenset[str]) -> frozenset[str]:
    """The words with a digit in them (one pass over each word: linear in the text).

    Example:
        >>> sorted(_numbers(frozenset({"ran", "5", "km2", "today"})))
        ['5', 'km2']
    """
    return frozenset(w for w in words if _DIGIT.search(w))


def _near_duplicate(
    a: frozenset[str],
    b: frozenset[str],
    threshold: float,
    numbers_a: frozenset[str] | None = None,
    numbers_b: frozenset[str] | None = None,
) -> bool:
    """``a`` (a lower-ranked text) says nothing ``b`` does not: similar, or contained in it.

    Texts that differ in a number ("ran 5 km" / "ran 10 km") are never
    near-duplicates (``numbers_*``: their words with a digit, if known).
    """
    if len(a) < 4 or len(b) < 4:
        return False
    if (numbers_a if numbers_a is not None else _numbers(a)) != (
        numbers_b if numbers_b is not None else _numbers(b)
    ):
        return False
    shared = len(a & b)
    return shared / len(a | b) >= threshold or shared / len(a) >= _CONTAINED


def merge_near_duplicates(
    ranked: Sequence[ScoredRecord], *, k: int | None = None, threshold: float = 0.9
) -> list[ScoredRecord]:
    """Fold each near-duplicate into the best-ranked copy (so one copy reaches the prompt).

    A record is a near-duplicate of a better-ranked one when their
    normalised texts (:func:`dedupe_key`) are equal, their word sets have a
    Jaccard similarity of at least ``threshold``, or (95% of) its words are
    all in the better one; texts under four distinct words are compared
    exactly only, and texts that differ in a number are never merged. The
    copy kept gains the others' ``sources`` (a copy: the archive is not
    changed), so what it stands for stays traceable.

    Example:
        >>> from langchain_tiered_memory.records import MemoryRecord
        >>> def hit(text, score, source):
        ...     r = MemoryRecord.new(user_id="u", kind="turn", text=text, sources=(source,))
        ...     return ScoredRecord(r, score)
        >>> merged = merge_near_duplicates([
        ...     hit("user: I am allergic to peanuts, please remember that", 2.0, "turn:3"),
        ...     hit("I am allergic to peanuts!", 1.5, "turn:9"),
        ...     hit("My dog is called Max", 1.0, "turn:4")])
        >>> [(m.record.text, m.record.sources) for m in merged]  # doctest: +NORMALIZE_WHITESPACE
        [('user: I am allergic to peanuts, please remember that', ('turn:3', 'turn:9')),
         ('My dog is called Max', ('turn:4',))]
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    # Prefix filtering (Chaudhuri et al., 2006): a kept text can hold a share s
    # of a text's words only if it holds one of any |a| - floor(s |a|) + 1 of
    # them. Taking the words that the fewest kept texts contain, each text is
    # compared with the few kept texts that share one of its rarest words, not
    # with every kept text; the result is the same. Near-duplicates have the
    # same numbers, so the lists are kept per set of numbers.
    share = min(threshold, _CONTAINED)
    unique: list[ScoredRecord] = []
    kept_words: list[frozenset[str]] = []
    keys: dict[str, int] = {}
    postings_by_numbers: dict[frozenset[str], dict[str, list[int]]] = {}
    for item in ranked:
        key = dedupe_key(item.record.text)
        words = frozenset(key.split())
        numbers = _numbers(words)
        postings = postings_by_numbers.setdefault(numbers, {})
        into = keys.get(key)
        if into is None and len(words) >= 4:
            lists = sorted([postings.get(w, ()) for w in words], key=len)
            near = {
                j
                for found in lists[: len(words) - math.floor(share * len(words)) + 1]
                for j in found
            }
            into = next(
                (
                    j
                    for j in sorted(near)
                    if _near_duplicate(words, kept_words[j], threshold, numbers, numbers)
                ),
                None,
            )
        if into is not None:
            unique[into] = _with_sources(unique[into], item)
            continue
        if k is not None and len(unique) >= k:
            break
        keys[key] = len(unique)
        if len(words) >= 4:
            for w in words:
                postings.setdefault(w, []).append(len(unique))
        kept_words.append(words)
        unique.append(item)
    return unique


# Lines shorter than this many words ("assistant: Noted.") are too common to say a record repeats.
_LINE_WORDS = 4


def fold_repeated_lines(
    ranked: Sequence[ScoredRecord], *, k: int | None = None, share: float = 0.5
) -> list[ScoredRecord]:
    """Fold a summary that opens like a better-ranked one, and mostly repeats it, into it.

    Running summaries carry their oldest lines forward ("[t2] user: My trip to
    Kyoto is on 14 April..." opens each of them), so the lines a question
    matches are the same in each, and three summaries would spend three
    recall slots on one line. A ``summary`` record of two lines or more
    whose first line opens a better-ranked summary kept already, and whose
    lines kept already (of four words or more, compared by
    :func:`dedupe_key`) make up at least ``share`` of its words, is folded
    into that summary (which gains its ``sources``, as in
    :func:`merge_near_duplicates`). Other records are left alone: turns
    share lines too ("assistant: I can't help with that.") without
    repeating each other.

    Example:
        >>> from langchain_tiered_memory.records import MemoryRecord
        >>> def hit(text, source):
        ...     r = MemoryRecord.new(user_id="u", kind="summary", text=text, sources=(source,))
        ...     return ScoredRecord(r, 1.0)
        >>> trip = "[t2] user: My trip to Kyoto is on 14 April at 9:40."
        >>> kept = fold_repeated_lines([hit(trip + "\\n[t6] user: A reply for Bob?", "turn:1"),
        ...                             hit(trip + "\\n[t15] user: Priya got promoted.", "turn:12"),
        ...                             hit("user: I play the cello.", "turn:20")])
        >>> [(h.record.text.splitlines()[-1], h.record.sources) for h in kept]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('[t6] user: A reply for Bob?', ('turn:1', 'turn:12')),
         ('user: I play the cello.', ('turn:20',))]
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    kept: list[ScoredRecord] = []
    holder: dict[str, int] = {}  # a kept line's key -> the kept record it is in
    for item in ranked:
        summary = item.record.kind == "summary"
        lines = [key for line in item.record.text.splitlines() if (key := dedupe_key(line))]
        long_lines = [key for key in lines if len(key.split()) >= _LINE_WORDS] if summary else []
        total = sum(len(key.split()) for key in lines)
        seen = [key for key in long_lines if key in holder]
        if (
            len(lines) >= 2
            and seen
            and lines[0] == seen[0]
            and sum(len(key.split()) for key in seen) >= share * total
        ):
            into = holder[seen[0]]
            kept[into] = _with_sources(kept[into], item)
            continue
        if k is not None and len(kept) >= k:
            break
        for key in long_lines:
            holder.setdefault(key, len(kept))
        kept.append(item)
    return kept
