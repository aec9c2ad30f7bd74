"""What the prompt already says: recalled records that would only repeat it.

A fact the user stated sits in core memory, often in the running summary or
the raw turn still in the buffer - and the archive holds it again, as the
turn record and as the fact record, so recall brings it back a third time.
:func:`drop_repeats` keeps a recalled record only if it adds something: a
record is a repeat when every one of its lines is already said by the other
sections (core memory, the summary, the buffered turns).

A line counts as said when, ignoring case, markup escapes and spacing, it
appears there verbatim, or when one line there holds each of its content
words (small function words and acknowledgements such as "ok" or "noted" do
not count as content; negations do). Scripts written without spaces
(Chinese, Japanese) have no word boundaries to split on: such a run counts
as held when it appears in the line as a substring. A record line that
brings one new word - a date, a name, a number - or combines words that no
single line combines, stays.

Example:
    >>> from langchain_tiered_memory.budget.context import RecalledMemory
    >>> core = "[human]\\n- allergy: allergic to peanuts (stated, turn 0, 2026-03-03)"
    >>> records = [RecalledMemory("user: I'm allergic to peanuts.\\nassistant: Noted."),
    ...            RecalledMemory("user: I fly to Lisbon on 12 May.")]
    >>> kept, repeats = drop_repeats(records, [core])
    >>> [r.text for r in kept], len(repeats)
    (['user: I fly to Lisbon on 12 May.'], 1)
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_tiered_memory.values import RecalledMemory

__all__ = ["drop_repeats", "is_repeat"]

# Function words and acknowledgements: a line made only of these says nothing new.
# Negations are not among them ("not allergic" is news next to "allergic"), nor
# words that are also months or names ("may").
_FILLER_TEXT = """
a an the and or but if so of to in on at by for from with about as into than then
is am are was were be been being do does did done have has had having would
shall should can could might must yes yeah yep ok okay sure alright
noted thanks thank please got great good cool nice right fine oh ah hmm
i me my mine myself you your yours we us our it its this that these those there
here he him his she her they them their what which who whom when where why how
just also too very really all any some more most much many such own same only
let lets ll ve re d s m
user assistant human ai tool system
"""
FILLER_WORDS = frozenset(_FILLER_TEXT.split())
_WORD = re.compile(r"\w+")
_SPACES = re.compile(r"\s+")
# a run of a script written without spaces (CJK ideographs, kana, hangul)
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _normal(text: str) -> str:
    return _SPACES.sub(" ", html.unescape(text).lower()).strip()


class _Said:
    """The other sections, line by line, with an index from word to line."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.lines = [_normal(line) for text in texts if text for line in text.splitlines()]
        self.lines = [line for line in self.lines if line]
        self.text = "\n".join(self.lines)
        self.index: dict[str, set[int]] = {}
        for number, line in enumerate(self.lines):
            for word in _WORD.findall(line):
                self.index.setdefault(word, set()).add(number)

    def _holding(self, word: str) -> set[int]:
        if _UNSPACED.search(word):  # no word boundaries: look for the run itself
            return {n for n, line in enumerate(self.lines) if word in line}
        return self.index.get(word, set())

    def covers(self, line: str) -> bool:
        """True if ``line`` is said verbatim, or one said line holds all its content words."""
        line = _normal(line)
        if not line or line in self.text:
            return True
        candidates: set[int] | None = None
        for word in _WORD.findall(line):
            if word in FILLER_WORDS:
                continue
            holding = self._holding(word)
            candidates = holding if candidates is None else candidates & holding
            if not candidates:
                return False
        return True


def is_repeat(text: str, said: Sequence[str]) -> bool:
    """True if every line of ``text`` is already said by ``said`` (see the module).

    Example:
        >>> is_repeat("home: lives in Paris", ["- home: lives in Paris (stated)"])
        True
        >>> is_repeat("home: moved to Berlin", ["- home: lives in Paris (stated)"])
        False
    """
    covered = _Said(said)
    return all(covered.covers(line) for line in text.splitlines())


def drop_repeats(
    recalled: Sequence[RecalledMemory], said: Sequence[str]
) -> tuple[list[RecalledMemory], list[RecalledMemory]]:
    """Split ``recalled`` into the records that add something and the repeats.

    Args:
        recalled: Recalled records, best first.
        said: The text the prompt already holds (core memory, the summary, the
            buffered turns' transcripts).

    Returns:
        ``(kept, repeats)``, each in the order given. A record is also a repeat
        of an earlier recalled record with the same text.
    """
    if not recalled:
        return [], []
    covered = _Said(said)
    kept: list[RecalledMemory] = []
    repeats: list[RecalledMemory] = []
    seen: set[str] = set()
    for item in recalled:
        key = _normal(item.text)
        if key in seen or all(covered.covers(line) for line in item.text.splitlines()):
            repeats.append(item)
        else:
            kept.append(item)
            seen.add(key)
    return kept, repeats
