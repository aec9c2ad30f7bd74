"""English rules: what stops holding ("I'm not pregnant any more") and a birth.

An ending is a candidate with ``op="end"`` whose subject (``~words``) points
at the current fact that mentions those words; the write policy ends that
fact (it stays in the history). These rules are fallbacks: a clause another
rule read ("I don't like coffee any more") is not an ending as well.

Example:
    >>> from langchain_tiered_memory.write.rules import find_facts
    >>> [(f.subject, f.op) for f in find_facts("I'm not pregnant any more.")]
    [('~pregnant', 'end')]
    >>> [(f.subject, f.content) for f in find_facts("Our baby was born on 3 May!")]
    [('birth', 'baby born 3 May')]
"""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import object_text, short_key
from langchain_tiered_memory.write.rules.en.words import DATE, I_AM
from langchain_tiered_memory.write.rules.engine import Rule, rule

_LEADING = re.compile(r"^(?:with|at|in|on|for|into|a|an|the|my|our)\s+", re.I)


def _ending(m: re.Match[str], _: str) -> tuple[str, str] | None:
    thing = _LEADING.sub("", object_text(m.group("x")))
    key = short_key(thing)
    return (f"~{key}", f"no longer {m.group('x').strip()}") if key else None


def _birth(m: re.Match[str], clause: str) -> tuple[str, str]:
    when = re.search(DATE, clause[m.end() :], re.I)
    return "birth", "baby born" + (f" {when.group(0)}" if when else "")


RULES: list[Rule] = [
    rule(
        rf"(?:{I_AM}|\bwe're|\bwe are) (?:not|no longer) (?P<x>[\w' -]{{2,30}}?)"
        r"(?: any ?more| now)\b",
        _ending,
        fallback=True,
        op="end",
    ),
    rule(
        r"\bI (?:don't|do not|no longer) (?P<x>(?!like\b|love\b|enjoy\b|want\b|need\b|know\b|"
        r"think\b|mind\b|care\b)[\w' -]{2,30}?) any ?more\b",
        _ending,
        fallback=True,
        op="end",
    ),
    rule(
        r"\b(?:(?:my|our) (?:baby|little one|son|daughter|twins|boy|girl)(?: [A-Z][\w'-]+)? "
        r"(?:was|were) born|I gave birth|we had (?:the|our) baby)\b",
        _birth,
        importance=8.0,
    ),
]
