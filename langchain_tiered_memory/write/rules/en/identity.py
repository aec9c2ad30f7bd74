"""English rules: identity (name, age, birthday, nationality, height)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import says
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    DATE,
    I_AM,
    LANGUAGES,
    NAME_STOP,
    NATIONALITIES,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule


def _age(m: re.Match[str], _: str) -> tuple[str, str]:
    return "age", f"{m.group('age')} years old"


RULES: list[Rule] = [
    # -- identity --
    rule(
        r"\b(?i:my (?:first )?name is|my name's|I go by|people call me|everyone calls me) "
        r"(?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)",
        says("name", "{x}"),
        importance=7.5,
        flags=0,
    ),
    rule(
        r"\b(?i:call me) (?P<x>[A-Z][\w'-]+)\b",
        says("name", "{x}"),
        importance=7.5,
        flags=0,
    ),
    rule(
        r"(?:^|\b(?i:hi|hello|hey)[,!]?\s+)I'm (?P<x>[A-Z][a-z]+)\b"
        r"(?![ -](?:[a-z]|[A-Z]\w+ [a-z]))",
        lambda m, _: (
            None
            if re.fullmatch(NATIONALITIES + "|" + LANGUAGES, m.group("x").lower())
            or m.group("x").lower() in NAME_STOP
            else ("name", m.group("x"))
        ),
        importance=7.5,
        flags=0,
    ),
    rule(
        rf"{I_AM} (?P<age>\d{{1,2}})(?: years? old| yrs? old| y/?o| years young)?"
        r"(?=\s*(?:$|[,.;!)]|and\b|but\b|so\b|now\b|this\b|next\b|years?\b|yrs?\b|y/?o\b|"
        r"myself\b|btw\b|lol\b|with\b|-ish\b))",
        _age,
        importance=6.5,
    ),
    rule(
        r"\bI(?:'m| am) an? (?P<age>\d{1,2})[- ]year[- ]old\b|\bI (?:just |recently )?turned "
        r"(?P<age2>\d{1,2})\b",
        says("age", "{age}{age2} years old"),
        importance=6.5,
    ),
    rule(
        rf"\bmy (?:birthday|bday|b-day|date of birth|dob)(?: is|'s)?(?: on)? (?P<x>{DATE})",
        says("birthday", "birthday {x}"),
        importance=7.5,
    ),
    rule(
        rf"\bI was born (?:on )?(?P<x>{DATE}(?:,? \d{{4}})?|in \d{{4}})",
        says("birthday", "born {x}"),
        importance=7.0,
    ),
    rule(
        rf"{I_AM} {ADVERB}(?:half )?(?P<x>{NATIONALITIES})\b(?! (?:food|cuisine|class|course|"
        r"lessons?|speaker|film|dish|music))",
        says("nationality", "{x:title}"),
        importance=6.0,
    ),
    rule(
        r"^(?P<age>\d{1,2}) (?:years old|yrs old|y/?o|year old)\b|\bI(?:'ll| will) be (?P<age2>"
        r"\d{1,2}) (?:next|this|in|on|soon)\b|\bI(?:'m| am) in my (?P<dec>(?:early |mid |late |"
        r"mid-)?"
        r"(?:twenties|thirties|forties|fifties|sixties|seventies|eighties|[2-8]0s))\b",
        lambda m, _: (
            "age",
            f"{m.group('age')} years old"
            if m.group("age")
            else f"turning {m.group('age2')} soon"
            if m.group("age2")
            else f"in their {m.group('dec')}",
        ),
        importance=6.5,
    ),
    rule(
        r"\bI(?:'m| am) (?P<x>\d(?:[.,]\d{1,2})? ?m|1\d\d ?cm|\d ?(?:ft|foot|feet|')(?: ?\d{1,2}"
        r"(?: ?in(?:ches)?|\")?)?)(?: tall)?\b|\bI weigh (?:about |around )?(?P<w>\d{2,3} ?(?:kg|"
        r"kilos|lbs|pounds|stone(?: \d+)?))",
        lambda m, _: (
            ("height", f"{m.group('x')} tall")
            if m.group("x")
            else ("weight", f"weighs {m.group('w')}")
        ),
        importance=5.5,
    ),
    rule(
        r"\bas (?:someone|somebody|a person|a woman|a man|a guy|a girl|a lady|a mum|a mom|a dad|"
        r"a parent) (?:who's|who is|who just turned|who turned|aged|of) (?P<age>\d{1,2})\b",
        _age,
        importance=6.5,
    ),
]
