"""English rules: people and pets (\"my wife's name is Sara\", \"our dog Rex\")."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    called,
    kin_subject,
    leading_names,
    someone_else,
)
from langchain_tiered_memory.write.rules.en.words import (
    KIN,
    NAME_STOP,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule


def _kin_named(m: re.Match[str], _: str) -> list[tuple[str, str]] | None:
    noun = m.group("kin")
    names = leading_names(m.group("name"))
    if not names:
        return None
    return [(kin_subject(noun), called(noun, names))]


RULES: list[Rule] = [
    # -- people and pets --
    rule(
        rf"\b(?:my|our) (?P<kin>{KIN})(?:'s|s'|s)? names? (?:is|are|'s) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    rule(
        rf"\b(?:my|our|the) (?:\w+ )?(?P<kin>{KIN}) (?:is|are|'s) (?:called|named) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    rule(
        rf"\b(?i:my|our|the) (?i:(?:new|little|baby|older|younger|big|eldest|youngest|rescue|two|"
        rf"three|"
        rf"other|lovely|gorgeous|adorable|old|beautiful|sweet|crazy) )*(?P<kin>(?i:{KIN})),? "
        r"(?P<name>[A-Z][\w'’-]+(?:(?:,\s*|\s+and\s+|\s*&\s*)[A-Z][\w'’-]+)*)",
        _kin_named,
        importance=7.0,
        flags=0,
    ),
    rule(
        rf"\b(?:a|an|our|my)\s+(?:[\w-]+\s+){{0,2}}?(?P<kin>{KIN})\s+(?:named|called)\s+"
        r"(?P<name>.+)",
        lambda m, c: None if someone_else(c[: m.start()]) else _kin_named(m, c),
        importance=7.0,
    ),
    rule(
        rf"\b(?:re)?(?:named|called|christened) (?:the|our|my) (?P<kin>{KIN}) (?P<name>.+)",
        _kin_named,
        importance=7.0,
    ),
    rule(
        rf"\bI(?:'ve| have)?(?: got)? (?P<count>a|an|one|two|three|four|five|six|\d) "
        rf"(?:(?:little|young|grown-up|grown|teenage|rescue|lovely|crazy|older|younger) )?"
        rf"(?P<kin>{KIN})\b(?:,? (?:called |named )?(?P<name>.+))?",
        lambda m, _: (
            [(kin_subject(m.group("kin")), called(m.group("kin"), leading_names(m.group("name"))))]
            if m.group("name") and leading_names(m.group("name"))
            else [
                (
                    f"{kin_subject(m.group('kin'))}:count",
                    f"has {m.group('count')} {m.group('kin').lower()}",
                )
            ]
            if m.group("count").lower() not in {"a", "an", "one"}
            else None
        ),
        importance=7.0,
    ),
    rule(
        rf"\b(?P<name>[A-Z][\w'’-]+), (?i:my|our) (?P<kin>(?i:{KIN}))\b",
        lambda m, _: (
            (kin_subject(m.group("kin")), called(m.group("kin"), [m.group("name")]))
            if m.group("name").lower() not in NAME_STOP
            else None
        ),
        importance=7.0,
        flags=0,
    ),
]
