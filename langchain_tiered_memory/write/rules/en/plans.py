"""English rules: plans, goals and numbers (events, moves, trips, budgets, contacts)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    garment,
    object_text,
    says,
    short_key,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    AMOUNT,
    DATE,
    EMAIL,
    EVENTS,
    GENERIC_EVENTS,
    I_AM,
    I_HAVE,
    PHONE,
    RELATIONS,
    word_set,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule

_EVENT_MODIFIERS = word_set("new next first big upcoming little annual usual own final ")


def _plan(m: re.Match[str], clause: str) -> tuple[str, str] | None:
    after = re.search(DATE, clause[m.end() :], re.I)
    if after:
        # "The dental surgery called and moved my check-up to Thursday": the check-up
        if re.search(rf"\b(?:{EVENTS})\b", clause[m.end() : m.end() + after.start()], re.I):
            return None
    elif not re.search(DATE, clause[: m.start()], re.I):
        return None
    head = m.group("event").lower()
    modifiers = [w for w in (m.group("mod") or "").lower().split() if w not in _EVENT_MODIFIERS]
    key = head
    if head in GENERIC_EVENTS and modifiers:
        key = modifiers[-1].removesuffix("'s")
    # the comma-separated pieces from the event to its date ("Reply in Spanish please,
    # I have a B2 exam in May" -> "I have a B2 exam in May")
    pieces = re.split(r"(?<=,)\s+", clause)
    spans, offset = [], 0
    for piece in pieces:
        spans.append((offset, offset + len(piece), piece))
        offset += len(piece) + 1
    first = next((i for i, (a, b, _) in enumerate(spans) if a <= m.start() < b + 1), 0)
    last = max((i for i, (_, _, p) in enumerate(spans) if re.search(DATE, p, re.I)), default=first)
    clause = " ".join(p for _, _, p in spans[min(first, last) : max(first, last) + 1])
    clause = re.sub(r",$", "", clause.strip())
    content = re.sub(
        r"^(?:scratch that|update|quick update|actually|ok|okay|so|also|btw|oh|and|fyi|"
        r"just so you know|heads up)[,:!]?\s+",
        "",
        clause,
        flags=re.I,
    )
    content = re.sub(r"\s+(?:so|and) I(?:'ll|'m| will| am)\b.*$", "", content)
    return f"plan:{key}", content.rstrip(" .!")


def _budget(thing: str | None, amount: str) -> tuple[str, str]:
    amount = amount.strip()
    if thing:
        key = short_key(re.sub(r"\b(?:new|next|first|second-hand|used)\b", "", thing))
        key = key.split()[-1] if key else ""
        if key:
            return f"budget:{key}", f"budget for {object_text(thing)}: {amount}"
    return "budget:*", f"budget: {amount}"


def _family_plan(m: re.Match[str], _clause: str) -> tuple[str, str] | None:
    """ "my daughter Mia starts school in September": the dated plan of someone named."""
    rest = re.split(r"[.,;!?]", m.group("rest"))[0].strip()
    if not re.search(DATE, rest, re.I) or re.search(rf"\b(?:{EVENTS})\b", rest, re.I):
        return None  # no date, or an event the event rule reads
    what = re.sub(rf"\s*{DATE}.*$", "", rest, flags=re.I).strip()
    what = re.sub(r"\s+(?:on|in|at|by|from|for)$", "", what, flags=re.I)
    key = short_key(what)
    if not key:
        return None
    kin = m.group("kin").lower()
    who = f"{kin} {m.group('name')}" if m.group("name") else kin
    return f"plan:{kin} {key}", f"{who} {m.group('verb').lower()} {rest}"


RULES: list[Rule] = [
    rule(
        rf"\b(?i:my|our) (?P<kin>(?i:{RELATIONS}))(?:,? (?P<name>[A-Z][\w'-]+),?)? "
        r"(?P<verb>(?i:(?:is |'s |will )?(?:starts?|starting|begins?|beginning|"
        r"graduates?|graduating)))\b(?P<rest>.*)",
        _family_plan,
        category="plan",
        importance=7.0,
        flags=0,
    ),
    # -- plans, goals, numbers --
    rule(
        rf"(?:\b(?:my|our|the|a|an)\s+|"
        rf"^)(?P<mod>(?:[\w'-]+\s+){{0,2}}?)(?P<event>{EVENTS})\b(?!-)",
        _plan,
        category="plan",
        importance=7.0,
    ),
    rule(
        r"(?:\b(?:my|our|the|a|an)\s+|^)(?P<mod>(?:[\w'-]+\s+){0,2}?)(?P<event>[\w-]{3,})"
        r"(?= (?:is |'s |was |got |has been )?(?:booked|scheduled|planned|set|arranged|fixed|due|"
        r"pencilled in|penciled in|confirmed|rescheduled|postponed|moved|pushed|brought forward|"
        r"happening|coming up)\b)",
        _plan,
        category="plan",
        importance=7.0,
    ),
    rule(
        rf"(?:(?:{I_AM}|\bwe're|\bwe are|\bI'll be|\bwe'll be|\bI will be)\s+{ADVERB}|^)"
        r"(?:moving|relocating|emigrating) (?:back )?(?:to|abroad to) (?P<x>.+)",
        lambda m, c: (
            (
                "plan:move",
                f"moving to {object_text(m.group('x'))}"
                + (
                    f" {d.group(0)}"
                    if (d := re.search(DATE, c[m.end("x") - len(m.group("x")) :], re.I))
                    else ""
                ),
            )
            if object_text(m.group("x"))
            else None
        ),
        category="plan",
        importance=7.0,
    ),
    rule(
        rf"(?:{I_AM}|\bwe're|\bwe are|\bI'll be|\bwe'll be) {ADVERB}(?:going|heading|flying|"
        r"travell?ing|off|driving|visiting) (?:back )?(?:to )?(?P<x>.+)",
        lambda m, c: (
            (
                "plan:trip",
                f"going to {object_text(m.group('x'))}"
                + (f" {d.group(0)}" if (d := re.search(DATE, c, re.I)) else ""),
            )
            if re.search(DATE, c, re.I)
            and object_text(m.group("x"))
            and not re.match(
                r"(?i)(?:bed|sleep|work|the gym|school|try|be|have|get|make|do)\b", m.group("x")
            )
            else None
        ),
        category="plan",
        importance=7.0,
    ),
    rule(
        r"\b(?:my |our )?(?:main |big |new |one )?(?:goal|aim|target|resolution|ambition|dream)"
        r"(?: for (?:this|next|the) (?:year|month|summer|season|spring|autumn|winter))?"
        r"(?: is|:)\s*(?:to )?(?P<x>[^.;!?]+)",
        lambda m, _: (
            ("goal", f"goal: {m.group('x').strip(' ,')}") if m.group("x").strip() else None
        ),
        category="plan",
        importance=6.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been) {ADVERB}training for (?:a |an |the |my )?(?P<x>[^,.;!?]+)",
        says("goal", "training for {x:strip}"),
        category="plan",
        importance=6.5,
    ),
    rule(
        r"\bI (?i:drive|own|'m driving|am driving|have got|'ve got) (?i:a|an) (?P<x>(?:(?:\d{4}|"
        r"old|new|used|second-hand|little|red|blue|black|white|silver|grey|gray|green|electric|"
        r"hybrid|battered|trusty) )*(?:[A-Z][\w-]*)(?: (?:[A-Z0-9][\w-]*|hybrid|estate|"
        r"hatchback|saloon|SUV|van|truck|pickup|convertible))*)",
        says("car", "drives a {x}"),
        importance=5.5,
        flags=0,
    ),
    rule(
        r"\bmy car is (?:a|an) (?P<x>[^,.;!?]+)",
        says("car", "drives a {x:cut}"),
        importance=5.5,
    ),
    rule(
        rf"\b(?:my |our |the )?budget(?: for (?:the |a |an |my |our )?(?P<thing>[\w -]{{2,25}}?))?"
        rf"(?: is| of|'s|:| =| will be| would be)\s*(?:about |around |roughly |up to |max |maximum "
        rf"|under |below |no more than |£|\$|€)?(?P<amount>{AMOUNT})|\b(?P<thing2>[\w-]+) "
        rf"budget(?: is| of|'s|:)\s*(?:about |around |roughly |up to |max )?(?P<amount2>{AMOUNT})",
        lambda m, _: _budget(
            m.group("thing") or m.group("thing2"), m.group("amount") or m.group("amount2")
        ),
        importance=6.0,
        request=True,
    ),
    rule(
        rf"\bkeep (?:it|the (?P<thing>(?:[\w-]+ ){{0,2}}?[\w-]+)|things|costs|spending) "
        rf"(?:under|below|within|to|at) (?:about |around )?(?P<amount5>{AMOUNT})|"
        rf"\b(?:I|we) (?:can't|cannot|don't want to|won't) (?:spend|pay) more than (?P<amount3>"
        rf"{AMOUNT})|\b(?:I|we) (?:have|'ve got) (?:about |around |"
        rf"roughly )?(?P<amount4>{AMOUNT})"
        rf" to spend|"
        rf"\b(?:I|we) (?:can|could) (?:now |finally )?(?:spend|afford|go up to|stretch to|do|pay)"
        rf"(?: up to| as much as| around)? (?P<amount>{AMOUNT})|\b(?:go|spend|stretch) up to "
        rf"(?P<amount2>{AMOUNT})",
        lambda m, _: _budget(
            m.group("thing") if m.group("thing") not in (None, "cost", "total") else None,
            m.group("amount")
            or m.group("amount2")
            or m.group("amount3")
            or m.group("amount4")
            or m.group("amount5"),
        ),
        importance=6.0,
        request=True,
    ),
    rule(
        r"\bI(?:'m| am)? (?:a |an )?(?:(?:uk|us|eu|european) )?size (?P<x>\w+(?:[.,]\d)?)"
        r"(?P<rest>(?: in (?P<g>shoes?|jeans|trousers|pants|dresses|tops|shirts|t-shirts|"
        r"bras?|rings?|boots))?(?: \((?:uk|us|eu)\)| (?:uk|us|eu))?)|\bI (?:wear|take) (?:a )?"
        r"(?:(?:uk|us|eu) )?size (?P<x2>\w+(?:[.,]\d)?)(?: (?:in )?(?P<g2>shoes?|jeans|trousers|"
        r"dresses|boots))?|\bmy (?P<g3>shoe|dress|ring|jeans|waist|trouser|shirt|bra|collar|boot)"
        r" size is (?P<x3>\w+)",
        lambda m, c: (
            "size:" + garment(m.group("g") or m.group("g2") or m.group("g3")),
            f"size {m.group('x') or m.group('x2') or m.group('x3')}"
            + (f"{m.group('rest')}" if m.group("rest") else "")
            + (f" ({m.group('g2') or m.group('g3')})" if m.group("g2") or m.group("g3") else ""),
        ),
        importance=5.5,
    ),
    rule(
        rf"(?P<x>{EMAIL})",
        lambda m, c: (
            ("email", f"email {m.group('x')}")
            if re.search(r"\b(?:my|me|I|use|reach|contact|email is|new email)\b", c, re.I)
            and not re.search(
                rf"\b(?:his|her|their|(?:{RELATIONS})'s)\s+(?:\w+\s+)?(?:email|"
                r"address)",
                c[: m.start()],
                re.I,
            )
            else None
        ),
        importance=6.5,
    ),
    rule(
        rf"\b(?:phone|mobile|cell|number|tel|telephone|whatsapp|call me on|text me on|reach me on)"
        rf"\b[^.!?]{{0,40}}?(?P<x>{PHONE})",
        lambda m, c: (
            ("phone", f"phone {m.group('x').strip()}")
            if not re.search(
                rf"\b(?:his|her|their|(?:{RELATIONS})'s)\s+(?:\w+\s+)?(?:phone|mobile|"
                r"number)",
                c[: m.start("x")],
                re.I,
            )
            else None
        ),
        importance=6.5,
    ),
    rule(
        r"\bmy (?:home |new |postal )?address is (?P<x>[^.;!?]+)",
        says("address", "address: {x:strip}"),
        importance=6.5,
    ),
]
