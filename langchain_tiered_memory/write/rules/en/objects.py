"""English objects of a rule: where an object ends, its update key, names, kin and verb forms.

Example:
    >>> object_text("the window seat, thanks")
    'window seat'
    >>> short_key("window seats on long flights"), leading_names("Milo and Astrid, start")
    ('window seats', ['Milo', 'Astrid'])
"""

from __future__ import annotations

import re
from collections.abc import Callable

from langchain_tiered_memory.write.rules import engine
from langchain_tiered_memory.write.rules.en.words import (
    ANIMAL,
    BREED_TO_SPECIES,
    MONTHS,
    NAME_STOP,
    PRONOUNS,
    RELATIONS,
    SPECIES,
    WEEKDAYS,
)
from langchain_tiered_memory.write.rules.engine import Builder

_TAIL = re.compile(
    r"\s*[,.;:!?()\[\]]|\s+(?:for|with|since|because|after|before|when|while|which|where|"
    r"who|that|so|but|or|though|although|until|as|if|then|plus|btw|lol|haha|tbh|honestly|"
    r"has|have|is|are|was|were|means|makes|gets|feels|can|will|keeps|"
    r"anyway|though|like|from now on|these days|at the moment|currently|lately|recently|"
    r"already|too|as well|now|again|anymore|any more|either|at all|right now|every|each|"
    r"way too much|so much|a lot|very much|and I|and we|and my|and the|and it|and then|"
    r"over the|in the (?:summer|spring|autumn|winter|morning|evening)|"
    rf"(?:in|on|at|by|from|over) (?:the )?(?:\d+(?:st|nd|rd|th)?|(?:{MONTHS})\b|"
    rf"(?:{WEEKDAYS})\b)|"
    r"(?:last|next|this|a few|a couple of) (?:year|month|week|weekend|day|summer|spring|"
    r"autumn|winter|night|time)s?)\b",
    re.I,
)
_TAIL_AND = re.compile(r"\s+and\s+", re.I)
_LEAD = re.compile(r"^(?:the|a|an|my|our|some|any|really|very|so|just)\s+", re.I)


def cut_tail(text: str, *, allow_and: bool = False) -> str:
    """``text`` up to where the object ends (a comma, a conjunction, a time phrase)."""
    match = _TAIL.search(text)
    if match:
        text = text[: match.start()]
    if not allow_and:
        match = _TAIL_AND.search(text)
        if match:
            text = text[: match.start()]
    return text.strip(" '\"-–—")


def short_key(text: str) -> str:
    """A short, stable update key ("window seats on long flights" -> "window seats")."""
    text = re.split(
        r"\s+(?:on|in|at|for|with|during|when|from|to|of|about|after|before)\s+",
        text.lower(),
        maxsplit=1,
    )[0]
    words = re.sub(r"[^\w\s'-]", " ", text).split()
    drop = {"the", "a", "an", "my", "our", "some", "any", "really", "very", "so", "much"}
    words = [w for w in words if w not in drop]
    return " ".join(words[:3])


def object_text(text: str, *, allow_and: bool = False) -> str:
    text = cut_tail(text, allow_and=allow_and)
    while True:
        stripped = _LEAD.sub("", text)
        if stripped == text:
            return text
        text = stripped


def leading_names(text: str) -> list[str]:
    """Capitalised names at the start of ``text`` ("Milo and Astrid, start ..." -> both)."""
    found: list[str] = []
    for part in re.split(r",\s*|\s+and\s+|\s*&\s*", text):
        match = re.match(r"([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)", part.strip())
        if not match or match.group(1).lower() in NAME_STOP:
            break
        found.append(match.group(1))
        if not re.fullmatch(r"[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?", part.strip()):
            break
    return found


def species_of(noun: str) -> str:
    noun = noun.lower()
    return BREED_TO_SPECIES.get(noun) or SPECIES.get(noun, noun)


def kin_subject(noun: str) -> str:
    noun = noun.lower()
    animal = re.fullmatch(ANIMAL, noun)
    return f"pet:{species_of(noun)}" if animal else f"family:{noun}"


def says(subject: str, content: str, *, needs: str = "") -> Builder:
    """:func:`~langchain_tiered_memory.write.rules.engine.says` with the English filters:
    ``{x:lower}``, ``{x:title}``, ``{x:strip}``, ``{x:key}`` (:func:`short_key`),
    ``{x:object}`` (:func:`object_text`) and ``{x:cut}`` (:func:`cut_tail`).

    Example:
        >>> says("avoids:{x:key}", "avoids {x:lower}")(re.search(r"no (?P<x>.+)", "no Dairy"), "")
        ('avoids:dairy', 'avoids dairy')
    """
    return engine.says(subject, content, filters=FILTERS, needs=needs)


def thing_fact(
    prefix: str,
    template: str,
    *,
    cut: Callable[[str], str] | None = None,
    skip: frozenset[str] = PRONOUNS,
) -> Builder:
    """A builder for ``(prefix:key, template with the thing)``: the thing is group ``x``
    (or ``y`` when ``x`` took no part) cut where it ends (``cut``, default
    :func:`object_text`); nothing when there is none or it is one of ``skip`` (default:
    a pronoun, "I avoid it").

    Example:
        >>> build = thing_fact("avoids", "avoids {}")
        >>> build(re.search(r"avoid (?P<x>.+)", "I avoid fried food at night"), "")
        ('avoids:fried food', 'avoids fried food at night')
        >>> build(re.search(r"avoid (?P<x>.+)", "I avoid it"), "") is None
        True
    """

    def build(match: re.Match[str], _said: str) -> tuple[str, str] | None:
        groups = match.groupdict()
        thing = (cut or object_text)(groups.get("x") or groups.get("y") or "")
        if not thing or thing.lower() in skip:
            return None
        return f"{prefix}:{short_key(thing)}", template.format(thing)

    return build


def no_longer(doing: str, subject: str, template: str) -> engine.Rule:
    """The rule of "I no longer live in Berlin", "I don't work at Acme": the object of
    what the user no longer does (``doing``, a pattern) as ``(subject, template with it)``.

    Example:
        >>> r = no_longer("live in", "home_city", "no longer lives in {}")
        >>> r.build(r.pattern.search("I don't live in Berlin any more"), "")
        ('home_city', 'no longer lives in Berlin')
    """
    return engine.rule(
        rf"\bI (?:no longer|don't|do not) {doing} (?P<x>.+)",
        object_fact(subject, template),
        importance=6.5,
    )


def object_fact(subject: str, template: str, *, group: str = "x") -> Builder:
    """A builder for ``(subject, template with the object)``, or nothing without an object.

    The object is ``group`` of the match cut where it ends (:func:`object_text`).
    """

    def build(match: re.Match[str], _said: str) -> tuple[str, str] | None:
        obj = object_text(match.group(group))
        return (subject, template.format(obj)) if obj else None

    return build


_OTHER_OWNER = re.compile(
    rf"\b(?:(?i:(?:my|our|his|her|their|a) (?:[\w-]+ )?(?:neighbou?rs?|friends?|colleagues?|"
    rf"coworkers?|boss|{RELATIONS})|he|she|they)|(?!(?:I|We|You)\b)[A-Z][a-z]+)\s+"
    r"(?i:has|had|have|got|adopted|owns|bought|keeps)\b[^.]*$"
)


def someone_else(before: str) -> bool:
    """ "My neighbour has a parrot called Kiwi": the parrot is not the user's."""
    return bool(_OTHER_OWNER.search(before)) and not re.search(
        r"\b(?:I|we)(?:'ve| have|'d)?\s+(?:got|have|adopted|bought|own|rescued)\b[^.]*$",
        before,
        re.I,
    )


def called(noun: str, names: list[str]) -> str:
    """ "twins are called Milo and Astrid"."""
    plural = len(names) > 1 or (noun.lower().endswith("s") and noun.lower() not in {"boss"})
    return f"{noun.lower()} {'are' if plural else 'is'} called {' and '.join(names)}"


def length_of(m: re.Match[str]) -> str:
    return m.group("x") or m.group("y") or f"no more than {m.group('z')}"


def food(text: str) -> str:
    """ "Anything with sesame" -> "sesame"."""
    return re.sub(
        r"(?i)^(?:anything|everything|something|food|stuff) (?:with|containing) ", "", text.strip()
    )


def third_person(verb: str) -> str:
    """ "wear" -> "wears", "can't" -> "can't", "'ve got" -> "has"."""
    verb = verb.lower()
    fixed = {
        "have": "has",
        "'ve got": "has",
        "can't": "can't",
        "cannot": "can't",
        "don't": "doesn't",
        "never": "never",
        "care for": "cares for",
        "look after": "looks after",
        "suffer from": "suffers from",
        "teach": "teaches",
    }
    return fixed.get(verb, verb + "s")


def conjugate(phrase: str) -> str:
    """ "play the cello" -> "plays the cello"."""
    verb, _, rest = phrase.partition(" ")
    third = {"do": "does", "go": "goes"}.get(verb.lower(), verb + "s")
    return f"{third} {rest}".strip()


def garment(word: str | None) -> str:
    if not word:
        return "clothes"
    word = word.lower()
    singular = {
        "shoe": "shoes",
        "boot": "shoes",
        "boots": "shoes",
        "trouser": "trousers",
        "pants": "trousers",
        "jean": "jeans",
        "dresses": "dress",
        "tops": "top",
        "shirts": "shirt",
        "t-shirts": "t-shirt",
        "bras": "bra",
        "rings": "ring",
    }
    return singular.get(word, word)


#: The filters English templates may name (:func:`says`).
FILTERS = {
    **engine.FILTERS,
    "strip": str.strip,
    "key": short_key,
    "object": object_text,
    "cut": cut_tail,
}
