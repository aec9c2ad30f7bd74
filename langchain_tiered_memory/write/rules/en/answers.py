"""English rules: how to answer (language, format, length, units, time zone, languages spoken)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    length_of,
    object_text,
    says,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    I_AM,
    I_HAVE,
    LANG,
    STANDING,
)
from langchain_tiered_memory.write.rules.engine import Builder, Rule, emit, rule


def _speaks(m: re.Match[str], _: str) -> list[tuple[str, str]]:
    listed = m.group("langs").strip(" ,")
    out = []
    for part in re.split(r",\s*|\s+and\s+|\s*&\s*", listed):
        lang = re.search(LANG, part, re.I)
        if lang:
            out.append((f"speaks:{lang.group(0).lower()}", f"speaks {part.strip()}"))
    return out


def standing(build: Builder) -> Builder:
    """``build``, for a clause that asks for it from now on ("always", "from now on",
    "please"...: :data:`~.words.STANDING`); nothing for a one-off."""

    def standing_request(m: re.Match[str], clause: str) -> list[tuple[str, str]]:
        return emit(build(m, clause)) if STANDING.search(clause) else []

    return standing_request


RULES: list[Rule] = [
    # -- how to answer --
    rule(
        rf"\b(?:reply|replies|replying|respond|responding|responses|answer|answers|answering|write|"
        rf"writing|talk|talking|speak|speaking|chat|message)"
        rf"(?: to me| me| us| back| with me)?(?: only| always)? in (?P<x>{LANG})\b|\b(?:switch|"
        rf"go|change|"
        rf"stick|keep it)"
        rf" (?:back )?(?:to|with) (?P<y>{LANG})(?=\s*(?:$|[,.!;]|please|from now|again|for|when|"
        rf"with))|^(?:and |also |oh and )?in (?P<w>{LANG}),? please\b|"
        rf"\buse (?P<z>{LANG})(?= (?:with me|from now|please|when|for (?:your )?(?:answers|"
        r"replies))|\s*[,.!]|$)",
        lambda m, _: (
            "answer_language",
            f"answer in {(m.group('x') or m.group('y') or m.group('z') or m.group('w')).title()}",
        ),
        importance=8.0,
        request=True,
    ),
    rule(
        r"(?:\b(?:use|prefer|always|please|only|stick to|give me|answer in|reply in|respond in|"
        r"format (?:it|answers|replies) as|in|as)\b[^.?!]{0,25}?\b(?P<x>bullet(?:ed)? points?|"
        r"bullets|"
        r"numbered (?:lists?|steps)|step[- ]by[- ]step|steps|lists?|tables?|plain text|no markdown|"
        r"markdown|short paragraphs|prose)\b|"
        r"^(?P<y>bullet(?:ed)? points?|bullets|numbered lists?|tables?|plain text|no markdown)"
        r" (?:please|only|always|from now on))",
        standing(says("answer_format", "answer in {x:lower}{y:lower}")),
        importance=8.0,
        request=True,
    ),
    rule(
        r"\b(?:don't|do not|never|no|stop|avoid|without|please no|skip the) (?:use |using |add "
        r"|adding |with |put |putting )?(?:any )?(?P<x>emojis?|emoticons|exclamation (?:marks|"
        r"points)"
        r"|jargon|slang|swearing|profanity|small talk|pleasantries|disclaimers|caveats)\b",
        says("answer_style", "no {x:lower} in answers"),
        importance=8.0,
        request=True,
    ),
    rule(
        r"\bkeep (?:your |the |all )?(?:answers?|replies|responses|it|things|them)(?: \w+)? "
        r"(?P<x>short|brief|concise|simple|detailed|under \d+ words|to \w+ sentences)\b|"
        r"\b(?P<y>short|brief|concise|detailed|longer|in-depth|one-line) (?:answers?|replies|"
        r"responses)(?= (?:please|only|from now|always)|\s*[,.!]|$)|\bno more than (?P<z>\w+ "
        r"(?:sentences|words|lines|paragraphs))\b",
        standing(lambda m, _: ("answer_length", f"answers {length_of(m).lower()}")),
        importance=8.0,
        request=True,
    ),
    rule(
        r"(?:\b(?:use|prefer|stick to|give me|always|in|only)\b[^.?!]{0,15}?\b(?P<x>metric|"
        r"imperial|celsius|fahrenheit)\b|^(?P<y>metric|imperial|celsius|fahrenheit)(?: units)? "
        r"(?:please|only))",
        standing(says("units", "uses {x:lower}{y:lower} units")),
        importance=8.0,
        request=True,
    ),
    rule(
        rf"(?:{I_AM}|\bwe're|\bwe are) {ADVERB}(?:on|in) (?:the )?(?P<x>(?:(?:central|eastern|"
        rf"western) "
        r"european|british summer|greenwich mean|indian standard|japan standard|china standard|"
        r"australian eastern)|pacific|eastern|central|mountain|atlantic|alaska|hawaii|greenwich|"
        r"gmt|utc|bst|cet|cest|eet|eest|ist|jst|kst|"
        r"aest|aedt|acst|awst|nzst|nzdt|pst|pdt|est|edt|cst|cdt|mst|mdt|(?:gmt|utc) ?[+-] ?\d+)"
        r"(?: standard| daylight)?(?P<t> time(?: zone)?| timezone| zone)?\b|\bmy time ?zone is "
        r"(?P<y>[\w+ -]+)",
        lambda m, _: (
            ("timezone", f"{(m.group('x') or object_text(m.group('y'))).title()} time")
            if m.group("y") or m.group("t") or len(m.group("x")) <= 5
            else None
        ),
        importance=8.0,
        request=True,
    ),
    rule(
        rf"\bI (?:also )?(?:speak|understand|read|can speak) (?P<langs>(?:(?:a (?:bit|little)"
        rf"(?: of)? |some |basic |fluent |decent |conversational |"
        rf"a few words of )?(?:{LANG})(?:,\s*|\s+and\s+|\s*&\s*"
        rf"|\s+plus\s+)?)+)",
        _speaks,
        importance=6.0,
    ),
    rule(
        rf"{I_AM} (?:fluent|native|bilingual|conversational|proficient) in (?P<langs>.+)|"
        rf"\bmy (?P<l4>{LANG}) is (?:\w+ )?(?:fluent|good|decent|basic|rusty|ok|okay|native|"
        r"conversational|pretty good|very good|not bad)\b|"
        rf"\bmy (?:native|first|mother) (?:language|tongue) is (?P<l2>{LANG})|"
        rf"{I_AM} a native (?P<l3>{LANG}) speaker",
        lambda m, _: (
            [(f"speaks:{m.group('l4').lower()}", m.group(0)[3:].strip())]
            if m.group("l4")
            else _speaks(m, "")
            if m.group("langs")
            else [
                (
                    f"speaks:{(m.group('l2') or m.group('l3')).lower()}",
                    f"native {(m.group('l2') or m.group('l3')).title()} speaker",
                )
            ]
        ),
        importance=6.0,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been) {ADVERB}(?:learning|studying) (?P<x>{LANG})\b",
        says("learning:{x:lower}", "learning {x:title}"),
        importance=5.5,
    ),
]
