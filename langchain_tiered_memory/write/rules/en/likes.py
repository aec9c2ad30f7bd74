"""English rules: likes, dislikes and hobbies (and the fallbacks)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    conjugate,
    cut_tail,
    object_text,
    says,
    short_key,
    thing_fact,
    third_person,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    HOBBIES,
    I_AM,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule


def _likes(m: re.Match[str], clause: str) -> tuple[str, str] | None:
    thing = object_text(m.group("x"))
    if not thing or thing.lower() in {"it", "that", "this", "them", "you", "him", "her"}:
        return None
    verb = m.group("verb").lower()
    negative = bool(m.groupdict().get("neg"))
    if negative:
        no_longer = re.search(r"\bno longer\b|\bany ?more\b|\bnot .* now\b", clause, re.I)
        content = f"no longer likes {thing}" if no_longer else f"dislikes {thing}"
    else:
        content = f"{verb}s {thing}" if not verb.endswith("s") else f"{verb} {thing}"
    return f"likes:{short_key(thing)}", content


def _usual(m: re.Match[str], _: str) -> tuple[str, str] | None:
    thing = object_text(m.group("x"))
    what = (m.groupdict().get("what") or "").strip().lower()
    if not thing:
        return None
    label = m.group("label").lower()
    return (
        f"favourite:{what}" if what else "usual"
    ), f"{label}{' ' + what if what else ''}: {thing}"


RULES: list[Rule] = [
    # -- likes, hobbies --
    rule(
        rf"\bI {ADVERB}(?P<neg>don't|do not|no longer|can't stand|cannot stand|hate|dislike|"
        r"detest|loathe|can't bear|despise|'m not a fan of|am not a fan of|'m not into|am not "
        r"into)(?P<verb> (?:like|enjoy|love|care for|care about|follow|fancy)|) (?P<x>.+)",
        lambda m, c: (
            _likes(m, c)
            if m.group("verb").strip()
            or m.group("neg").lower() not in {"don't", "do not", "no longer"}
            else None
        ),
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"\bI {ADVERB}(?P<verb>love|like|enjoy|adore|prefer)\b(?! (?:to|it|that|this|when|how|"
        r"the way|you|your|him|her|them|what|if|a lot of what|replies|answers|responses|"
        r"(?:the |these |those |that |this |your |all )?(?:idea|ideas|tip|tips|suggestion|"
        r"suggestions|sound|look|fact|option|options|recommendation|recommendations|approach|"
        r"list|plan|sound of|thought)|"
        r"(?:short|long|brief|detailed) (?:replies|answers))\b) (?P<x>.+)",
        _likes,
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"(?:{I_AM}) {ADVERB}(?:(?:really|totally|so|very|huge|big|massive) )?(?P<verb>into|a "
        r"(?:big |huge |massive )?fan of|obsessed with|crazy about|passionate about|mad about|"
        r"addicted to) (?P<x>.+)",
        thing_fact("likes", "into {}", skip=frozenset()),
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"{I_AM} an? (?:big|huge|massive|massive|die-hard|diehard|"
        rf"lifelong) (?P<x>[\w' -]{{2,25}}?)"
        r" fan\b|\bI can't get enough of (?P<y>.+)",
        thing_fact("likes", "loves {}", skip=frozenset()),
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"{I_AM} not (?:big on|keen on|a big fan of|really into|into|fond of) (?P<x>.+)|"
        r"(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+){0,2}[\w-]+?) (?:isn't|is not|aren't|"
        r"are not) (?:really )?"
        r"my (?:thing|cup of tea|jam|scene)",
        thing_fact("likes", "dislikes {}"),
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"{I_AM} an? (?P<adj>keen|avid|passionate|enthusiastic|amateur|regular|serious|big|huge|"
        r"competitive|casual|weekend|club) (?P<x>(?:[\w-]+ )?\w+(?:er|ist|or))\b",
        says("hobby:{x:key}", "{adj} {x}"),
        category="preference",
        importance=5.0,
    ),
    rule(
        r"\bmy (?P<label>go-to|usual|regular|favou?rite|fave|fav)(?: (?P<what>[\w -]{2,20}?))?"
        r"(?: order)? (?:is|are|'s|has to be) (?P<x>.+)",
        _usual,
        category="preference",
        importance=5.5,
    ),
    rule(
        rf"\bI {ADVERB}(?:play|do|practi[sc]e|go) (?:the |a bit of |some )?(?P<x>{HOBBIES})\b",
        lambda m, _: (f"hobby:{short_key(m.group('x'))}", conjugate(m.group(0)[2:].strip())),
        category="preference",
        importance=5.0,
    ),
    rule(
        rf"(?:\bI(?:'ve| have)?|^|\band) {ADVERB}(?:started|taken up|took up|got into|gotten into"
        rf"|began|picked up|been) (?P<x>{HOBBIES})\b(?: (?:instead|lately|again|regularly|a lot|"
        r"recently|every|for|three|twice))?",
        lambda m, _: (
            f"hobby:{short_key(m.group('x'))}",
            f"started {m.group('x').lower()}"
            if "been" not in m.group(0)
            else f"does {m.group('x').lower()}",
        ),
        category="preference",
        importance=5.0,
    ),
    rule(
        rf"\b(?P<x>{HOBBIES})(?: \w+)? (?P<f>(?:once|twice|three times|four times|five times|"
        r"\d+ times|every|each|several times|a few times|(?:one|two|three|four|five|six|\d+) "
        r"(?:evenings|mornings|nights|days|times|afternoons|sessions)) (?:a|per|every|each) "
        r"(?:week|month|day|weekend))",
        says("hobby:{x:key}", "{x:lower} {f}"),
        category="preference",
        importance=5.0,
    ),
    rule(
        r"(?:^|\bI(?:'ve| have)? )(?:cancelled|canceled|quit|stopped|dropped|ditched|gave up|"
        r"given up|"
        r"left|sold|ended) (?P<old>[^,.;!?]+?),? (?:and )?(?:I(?:'ve| have)? |now )?(?:joined|"
        r"switched to|started|got|moved to|gone for|went for|bought|signed up (?:for|with)|"
        r"picked up|taken up|took up) (?P<new>[^,.;!?]+)",
        lambda m, _: (
            (f"~{short_key(m.group('old'))}", f"{cut_tail(m.group('new'))}")
            if cut_tail(m.group("new"))
            else None
        ),
        category="preference",
        importance=5.5,
        fallback=True,
    ),
    rule(
        r"\bI(?:'ve| have)? (?:switched|changed|moved over|moved on) "
        r"(?:from (?P<from>[^,.;!?]+?) )?to (?P<x>[^,.;!?]+)",
        lambda m, _: (
            (
                f"~{short_key(m.group('from'))}" if m.group("from") else "usual",
                f"switched to {object_text(m.group('x'))}",
            )
            if object_text(m.group("x"))
            else None
        ),
        category="preference",
        importance=5.5,
        fallback=True,
    ),
    rule(
        r"^(?:(?:btw|also|oh and|and|but|so|honestly|fyi|just so you know|for context|fwiw|"
        r"for the record|full disclosure)[,:]?\s+)*(?:I|we) (?:(?:also|still|usually|always|"
        r"normally|really|actually|currently|now|mostly|only|basically) )*(?P<verb>wear|use|own|"
        r"work|live|speak|drive|ride|play|keep|eat|drink|take|volunteer|coach|study|teach|run|"
        r"care for|look after|suffer from)"
        r" (?!(?:a |any |no |some |the )?(?:question|questions|idea|ideas|clue|time|problem|"
        r"problems|issue|issues|doubt|feeling|thought|thoughts|choice|fun|way|chance|trouble|"
        r"plans|plan|meeting|call)\b|to\b|it\b|that\b|this\b|them\b|you\b|been\b|had\b|know\b|"
        r"think\b|want\b|need\b|like\b|mind\b|care\b|see\b|remember\b|understand\b|get\b|"
        r"believe\b|wait\b|do\b|go\b|say\b|tell\b|find\b|imagine\b|help\b|stop\b|figure\b|"
        r"really\b|even\b|sure\b|\w+ing\b)(?P<x>[^,.;!?]{3,60})",
        lambda m, c: (
            (
                f"about:{m.group('verb').lower().lstrip(chr(39))} "
                f"{short_key(cut_tail(m.group('x')))}",
                f"{third_person(m.group('verb'))} {cut_tail(m.group('x'))}",
            )
            if len(cut_tail(m.group("x")).split()) >= 1 and cut_tail(m.group("x"))
            else None
        ),
        importance=4.0,
        fallback=True,
    ),
    rule(
        r"(?:^|\b(?:please|pls|also|and|oh and|just) )(?:remember|don't forget|keep in mind)"
        r" (?:that )?(?!the following\b|this\b|these\b)"
        r"(?!(?:that|this|it|to|when|me)\b)(?P<x>.{6,})",
        lambda m, _: (f"note:{short_key(object_text(m.group('x')))}", object_text(m.group("x"))),
        importance=6.0,
        fallback=True,
    ),
]
