"""Excerpts of huge records: a recalled record costs a prompt what a normal one does.

A user can paste a 10 MB log. Its turn is archived whole (the keyword index
finds any word of it), but recall must not carry megabytes into scoring,
near-duplicate merging and the prompt. :func:`excerpt` cuts a record longer
than :data:`RECALL_EXCERPT_CHARS` to the window of that many characters that
holds most of the query's words (its rarest count most), marked with where it
sits in the whole; a record without a match in its text keeps its head. The
work is a few scans of the text, linear in its length.

Example:
    >>> text = "filler words here. " * 500 + "My locker code is 4711. " + "more filler. " * 500
    >>> part = excerpt(text, "locker code", size=60)
    >>> "locker code is 4711" in part, len(part) < 200
    (True, True)
    >>> excerpt("short text", "anything")
    'short text'
"""

from __future__ import annotations

import math
from bisect import bisect_right

from langchain_tiered_memory.recall.signals import text_words

__all__ = ["RECALL_EXCERPT_CHARS", "excerpt"]

#: The most characters of one record that recall scores and quotes (about 500 tokens).
RECALL_EXCERPT_CHARS = 2_000

# Positions kept per query word, and query words looked for: bounded work per record.
_MAX_HITS = 2_000
_MAX_WORDS = 8


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _positions(folded: str, word: str) -> list[int]:
    """Where ``word`` stands as a whole word in ``folded`` (at most :data:`_MAX_HITS`)."""
    positions: list[int] = []
    at = folded.find(word)
    tries = 0
    while at != -1 and len(positions) < _MAX_HITS and tries < 10 * _MAX_HITS:
        end = at + len(word)
        if (at == 0 or not _is_word_char(folded[at - 1])) and (
            end == len(folded) or not _is_word_char(folded[end])
        ):
            positions.append(at)
        tries += 1
        at = folded.find(word, end)
    return positions


def _hits(text: str, query: str) -> list[tuple[int, str, float]]:
    """``(position, word, weight)`` of the query's words in ``text``; a word found
    ``n`` times weighs ``1 / (1 + log n)``, so a rare word outweighs a common one."""
    words = sorted(set(text_words(query)), key=len, reverse=True)[:_MAX_WORDS]
    folded = text.casefold()
    scale = len(text) / max(1, len(folded))  # casefolding can lengthen a text ("ß" -> "ss")
    found: list[tuple[int, str, float]] = []
    for word in words:
        positions = _positions(folded, word)
        weight = 1.0 / (1.0 + math.log(len(positions))) if positions else 0.0
        found.extend((int(p * scale), word, weight) for p in positions)
    found.sort()
    return found


def _best_start(hits: list[tuple[int, str, float]], size: int) -> int:
    """Where the window of ``size`` characters with the most distinct query words begins."""
    starts = [p for p, _, _ in hits]
    best, best_score = 0, -1.0
    for i, (start, _, _) in enumerate(hits):
        end = bisect_right(starts, start + size - 1)
        weights: dict[str, float] = {}
        for _, word, weight in hits[i:end]:
            weights[word] = weight
        score = sum(weights.values())
        if score > best_score + 1e-12:
            best, best_score = start, score
    return best


def excerpt(text: str, query: str, *, size: int = RECALL_EXCERPT_CHARS) -> str:
    """``text`` itself if it has at most ``size`` characters, else the part of about
    ``size`` characters that best matches ``query``, marked as an excerpt.

    The window starts a quarter of its size before the first query word it
    holds (so the words around it come along) and is cut at spaces where there
    are any.

    Raises:
        ValueError: for a ``size`` below 1.

    Example:
        >>> part = excerpt("a " * 5_000 + "zebra " + "b " * 5_000, "zebra?", size=40)
        >>> part.splitlines()[0]
        '[excerpt: characters 9992-10029 of 20006; the whole record is in the archive]'
        >>> "zebra" in part
        True
    """
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    if len(text) <= size:
        return text
    hits = _hits(text, query)
    start = 0
    if hits:
        start = max(0, _best_start(hits, size) - size // 4)
    end = min(len(text), start + size)
    start = max(0, end - size)
    if start > 0 and (space := text.find(" ", start, start + 40)) != -1:
        start = space + 1  # begin with a whole word
    if end < len(text) and (space := text.rfind(" ", max(start + 1, end - 40), end)) != -1:
        end = space  # end with a whole word
    return (
        f"[excerpt: characters {start}-{end} of {len(text)}; the whole record is in the archive]"
        f"\n{text[start:end]}"
    )
