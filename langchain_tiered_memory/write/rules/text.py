"""Text before the rules: normalising a message, its readable prefix, sentences and clauses.

Example:
    >>> clauses("I'm vegan - my wife isn't")
    ["I'm vegan", "my wife isn't"]
"""

from __future__ import annotations

import html
import re

__all__ = [
    "EMOJI",
    "READ_LIMIT",
    "clauses",
    "normalise_message",
    "readable_prefix",
    "sentences",
]

_INFORMAL = (
    (re.compile(r"\bi\b(?![.'])"), "I"),
    (re.compile(r"\bi'm\b|\bim\b|\bIm\b"), "I'm"),
    (re.compile(r"\bi've\b|\bive\b"), "I've"),
    (re.compile(r"\bi'd\b"), "I'd"),
    (re.compile(r"\bi'll\b"), "I'll"),
    (re.compile(r"\bdont\b"), "don't"),
    (re.compile(r"\bdoesnt\b"), "doesn't"),
    (re.compile(r"\bcant\b"), "can't"),
    (re.compile(r"\bisnt\b"), "isn't"),
    (re.compile(r"\bdidnt\b"), "didn't"),
    (re.compile(r"\bwhats\b"), "what's"),
)
_STRAIGHT = str.maketrans("’‘“”\u00a0", "''\"\" ")
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]+")


def normalise_message(text: str) -> str:
    """``text`` unescaped (``&quot;`` -> ``"``), with straight quotes, one space
    between words and common informal spellings fixed (``im`` -> ``I'm``).

    Example:
        >>> normalise_message("im vegan &amp; i love &quot;spicy&quot; food")
        'I\\'m vegan & I love "spicy" food'
    """
    for _ in range(3):  # doubly escaped text too
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    text = text.translate(_STRAIGHT)
    text = re.sub(r"[ \t]+", " ", text).strip()
    for pattern, replacement in _INFORMAL:
        text = pattern.sub(replacement, text)
    return text


#: How much of one message the rules read. Facts said in passing are in what a person
#: types; a longer message is a paste (a log, a document), and rules run over all of it
#: cost time that grows faster than its length (100,000 characters without breaks took
#: ~50 s, 10 MB never finished). The message itself is stored whole.
READ_LIMIT = 8_000


def readable_prefix(text: str, limit: int = READ_LIMIT) -> str:
    """The first ``limit`` characters of ``text``, cut after its last sentence end there
    (or its last space, or at ``limit`` when it has neither).

    Example:
        >>> readable_prefix("I'm vegan. " + "x" * 20, limit=15)
        "I'm vegan."
        >>> readable_prefix("short") == "short"
        True
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(mark) for mark in (". ", "! ", "? ", "\n", "。", "！", "？"))
    if end > 0:
        return head[: end + 1].rstrip()
    space = head.rfind(" ")
    return head[:space] if space > 0 else head


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+|\s*" + EMOJI.pattern + r"\s*")
_CLAUSE_BREAK = re.compile(
    r"\s*[;；]\s*|\s+[-–—]+\s+|\s*—\s*|,?\s+but\s+|,\s*so\s+|\s+so\s+(?=I\b|we\b|my\b|our\b)|"
    r",?\s+because\s+|,?\s+though\s+|,?\s+although\s+|,?\s+whereas\s+|,\s*anyway\b|"
    r"(?<=[\u4e00-\u9fff])[，,]\s*|，|(?:\s*\(\s*|\s*\)\s*)(?=[^)]*$)",
    re.I,
)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (at . ! ? 。！？, line breaks and emoji)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def clauses(sentence: str) -> list[str]:
    """``sentence`` cut into clauses (at ; dashes, "but", "because", Chinese commas...)."""
    pieces = [p.strip(" ,") for p in _CLAUSE_BREAK.split(sentence) if p and p.strip(" ,")]
    if sentence.rstrip().endswith(("?", "？")):
        # "I'm allergic to peanuts, is satay ok?": keep the statement, drop the question
        split = [q.strip() for p in pieces for q in re.split(r",\s+", p) if q.strip()]
        return split
    return pieces
