"""English rules: where the user lives (and a completed move)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    no_longer,
    object_fact,
    object_text,
    says,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    I_AM,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule

RULES: list[Rule] = [
    # -- home --
    no_longer("live in", "home_city", "no longer lives in {}"),
    rule(
        rf"(?:\b(?:I|we) {ADVERB}(?:live|live|stay|reside)|(?:{I_AM}|\bwe're|\bwe are) "
        rf"{ADVERB}(?:living|based|located|settled)|^{ADVERB}(?:living|based)) "
        r"(?:in|near|outside|just outside) (?P<x>.+)",
        lambda m, _: (
            ("home_city", f"lives in {object_text(m.group('x'))}")
            if object_text(m.group("x"))
            and not re.match(r"(?i)(?:fear|hope|denial|sin|peace)\b", m.group("x"))
            else None
        ),
        importance=6.5,
    ),
    rule(
        r"(?:^|,\s*)(?:now |currently |these days )?(?:living|based) (?:in|near) (?P<x>.+)",
        object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    rule(
        r"(?:\b(?:my|our) (?:new )?|^)home(?: for me| for us| base)?(?: these days| now)? is "
        r"(?:in |now )?"
        r"(?!where\b|a\b|the\b|my\b|our\b|not\b|always\b|never\b)(?P<x>.+)",
        object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    rule(
        r"\b(?:my|our) (?:new )?(?:flat|apartment|house|place|home|condo|cottage) (?:is )?(?:in|"
        r"near)"
        r" (?P<x>.+)|\b(?:I|we) (?:just )?(?:bought|rent|rented|own) (?:a |an |our |my )?(?:\w+ )?"
        r"(?:flat|apartment|house|place|home|condo) in (?P<y>.+)",
        lambda m, _: (
            ("home_city", f"lives in {object_text(m.group('x') or m.group('y'))}")
            if object_text(m.group("x") or m.group("y"))
            else None
        ),
        importance=6.5,
    ),
    rule(
        r"\bhere in (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)",
        lambda m, c: (
            ("home_city", f"lives in {m.group('x')}")
            if not re.search(
                r"(?i)\b(?:visit|visiting|trip|holiday|vacation|conference|week|weekend|"
                r"few days|staying|business|tour)\b",
                c,
            )
            else None
        ),
        importance=6.0,
        flags=0,
    ),
    rule(
        r"\b(?i:I'm|I am) (?i:originally )?(?i:from) (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)*)|"
        r"\b(?i:I) (?i:grew up|was raised) in (?P<y>[A-Za-z][\w'-]+(?: [A-Z][\w'-]+)*)|"
        r"^(?i:born and raised|born and bred|grew up) in (?P<z>[A-Za-z][\w'-]+(?: [A-Z][\w'-]+)*)",
        says("hometown", "from {x}{y}{z}"),
        importance=5.5,
        flags=0,
    ),
    rule(
        r"\b(?i:I'm|I am|we're|we are) (?i:now |currently )?(?i:in|settled in) (?P<x>[A-Z][\w'-]+"
        r"(?: [A-Z][\w'-]+)*)(?= (?i:now|these days|for good|permanently)\b)",
        says("home_city", "lives in {x}"),
        importance=6.5,
        flags=0,
    ),
    rule(
        r"\b(?:I|we)(?:'ve| have) (?:lived|been living) in (?P<x>[^,.;!?]+?) (?:for|since)\b",
        object_fact("home_city", "lives in {}"),
        importance=6.5,
    ),
    rule(
        r"\b(?i:I'm|I am|we're|we are) (?P<x>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)-based\b",
        says("home_city", "lives in {x}"),
        importance=6.5,
        flags=0,
    ),
]


def completed_move(clause: str) -> list[tuple[str, str]]:
    """A completed move ("we ended up moving to Lyon", "moved here to Calgary in 2019")."""
    match = re.search(
        r"(?:\b(?:I|we)(?:'ve|'d| have| had)? |^|\bended up |\bfinally |\bjust |\bso )"
        rf"{ADVERB}(?:moved|relocated|emigrated|moving|relocating)(?: back| over| here| out| "
        r"house| away| again)*(?:,? (?:from (?P<from>[^,.;!?]+?) )?(?:to|into) (?P<x>.+))",
        clause,
        re.I,
    )
    if not match:
        return []
    progressive = re.search(r"\b(?:moving|relocating)\b", match.group(0), re.I)
    if progressive and not re.search(
        r"\b(?:ended up|finally|just|been)\s+(?:moving|relocating)", match.group(0), re.I
    ):
        return []  # "I'm moving to ..." is a plan (plan:move)
    place = object_text(match.group("x"))
    if not place or re.search(r"\b(?:flat|house|place|apartment|home|room)\b", place, re.I):
        return []  # "we moved to a bigger flat" says nothing about the city
    return [("home_city", f"moved to {place}")]


#: A completed move, read from the whole clause after every other rule.
MOVED = rule(r"\A", lambda _m, clause: completed_move(clause), importance=6.5)
