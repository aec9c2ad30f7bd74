"""English rules: health and diet (allergies, conditions, medication, diets, fears)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    cut_tail,
    food,
    object_text,
    says,
    short_key,
    thing_fact,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    CONDITIONS,
    DIETS,
    I_AM,
    I_HAVE,
    MEDS,
    PRONOUNS,
    STATES,
)
from langchain_tiered_memory.write.rules.engine import Rule, rule


def _allergies(m: re.Match[str], _: str) -> list[tuple[str, str]]:
    negated = m.group("neg")
    items = [
        i
        for i in re.split(
            r",\s*|\s+and\s+|\s+or\s+|\s*&\s*", object_text(m.group("x"), allow_and=True)
        )
        if i
    ]
    prefix = f"{negated.strip()} allergic to" if negated else "allergic to"
    return [
        (f"allergy:{short_key(object_text(i))}", f"{prefix} {object_text(i)}")
        for i in items
        if object_text(i)
    ]


RULES: list[Rule] = [
    # -- health and diet (highest importance) --
    rule(
        rf"(?:{I_AM}|{I_HAVE} been|\bwe're|\bwe are|^)\s*{ADVERB}(?P<neg>not |no longer )?"
        rf"allergic to (?P<x>.+)",
        _allergies,
        importance=9.0,
    ),
    rule(
        rf"(?:{I_HAVE}(?: got)?|\bI've got|\bI got|^)\s*(?:a |an )?"
        r"(?:severe |serious |bad |mild )?(?P<x>[\w -]{2,25}?) allerg(?:y|ies)\b",
        lambda m, _: (
            (
                f"allergy:{short_key(object_text(m.group('x')))}",
                f"allergic to {object_text(m.group('x'))}",
            )
            if object_text(m.group("x")).lower() not in {"an", "a", "no", "any", "the"}
            else None
        ),
        importance=9.0,
    ),
    rule(
        rf"{I_AM} {ADVERB}(?:(?P<x>lactose|gluten|fructose|histamine|wheat|dairy|egg|soy|"
        r"caffeine|alcohol|sulphite|sulfite|fodmap)[- ]intolerant|intolerant to (?P<y>.+))",
        lambda m, _: (
            f"intolerance:{short_key(object_text(m.group('x') or m.group('y')))}",
            f"{object_text(m.group('x'))} intolerant"
            if m.group("x")
            else f"intolerant to {object_text(m.group('y'))}",
        ),
        importance=9.0,
    ),
    rule(
        rf"(?:\bI |^){ADVERB}(?:can't|cannot|can not|can no longer|shouldn't|mustn't|must not)"
        r" (?:eat|have|drink|tolerate|digest|touch|handle) (?:any )?(?P<x>.+)",
        thing_fact("avoids", "can't have {}", skip=frozenset()),
        importance=9.0,
    ),
    rule(
        rf"\bI {ADVERB}(?:don't|do not|never|no longer|avoid|stay away from|gave up|'ve given up|"
        r"have given up|cut out|'ve cut out) (?:eat |drink |eating |drinking )?(?P<x>(?:red )?meat|"
        r"pork|beef|lamb|chicken|fish|seafood|shellfish|dairy|milk|cheese|eggs|gluten|wheat|"
        r"sugar|alcohol|booze|caffeine|coffee|nuts|peanuts|soy|onions?|garlic|spicy food|"
        r"processed food|carbs|bread|fried food|mushrooms|tomatoes)\b",
        says("avoids:{x:key}", "avoids {x:lower}"),
        importance=8.5,
    ),
    rule(
        r"(?:^|\b(?:and|but|so|also)\s+)no (?P<x>[\w -]{2,25}?) for me\b",
        says("avoids:{x:key}", "no {x}"),
        importance=8.5,
    ),
    rule(
        r"(?:^|[,:]\s*|\b(?:and|but|because|since|so|honestly|apparently)\s+)(?P<x>(?:[\w-]+\s+)"
        r"{0,2}[\w-]+?) (?:always |really |just |instantly |immediately )?(?:makes|make|gives|give|"
        r"sends|send|puts|put|lands|land|leaves|leave) me (?:really |so |very |straight )?(?:sick|"
        r"ill|nauseous|queasy|bloated|break out|come out in hives|hives|a rash|migraines?|"
        r"a migraine|headaches?|a headache|itchy|wheezy|unwell|throw up|(?:to|in|into) (?:the )?"
        r"(?:hospital|a&e|er|emergency room|emergency))\b|"
        r"(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+){0,2}[\w-]+?) (?:wrecks|upsets|destroys|kills|messes "
        r"up|doesn't agree with|does not agree with|don't agree with|disagrees with) (?:my "
        r"(?:stomach|gut|tummy|skin|digestion)|me)\b",
        lambda m, _: (
            (
                f"avoids:{short_key(food(m.group('x') or m.group('y')))}",
                f"{food(m.group('x') or m.group('y'))} makes them unwell",
            )
            if (m.group("x") or m.group("y")).lower().split()[-1]
            not in {
                "it",
                "that",
                "this",
                "which",
                "he",
                "she",
                "they",
                "everything",
                "something",
                "stress",
                "work",
                "life",
                "you",
                "people",
                "mum",
                "mom",
                "dad",
            }
            else None
        ),
        importance=9.0,
    ),
    rule(
        rf"{I_AM} {ADVERB}(?:(?P<weeks>\d+|one|two|three|four|five|six|seven|eight|nine) "
        r"(?:weeks?|months?) )?pregnant\b",
        lambda m, _: (
            "health:pregnancy",
            f"{m.group('weeks')} {'weeks' if 'week' in m.group(0) else 'months'} pregnant"
            if m.group("weeks")
            else "pregnant",
        ),
        importance=9.0,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been) {ADVERB}(?:a |an )?(?P<x>{STATES})\b",
        lambda m, _: (
            None
            if m.group("x").lower() in {"vegan", "vegetarian", "pregnant"}
            else (f"health:{m.group('x').lower()}", m.group("x").lower())
        ),
        importance=9.0,
    ),
    rule(
        rf"(?:{I_HAVE}(?: got)?|\bI've got|\bI (?:suffer from|live with|was diagnosed with|got "
        rf"diagnosed with|have had)|{I_HAVE} (?:been diagnosed with|had)|^(?:diagnosed with))"
        rf" {ADVERB}(?:(?:mild|severe|bad|chronic|really bad|terrible|seasonal|diagnosed) )*"
        rf"(?P<x>{CONDITIONS})\b",
        says("health:{x:key}", "has {x:lower}"),
        importance=9.0,
    ),
    rule(
        r"\bI(?:'m| am)? (?:take|taking|'m on|am on|use|using) (?P<x>(?!the\b|a\b|an\b|my\b|"
        r"some\b|it\b|care\b|time\b|part\b|turns\b|notes\b|photos\b|pictures\b|the bus\b|"
        r"a break\b|breaks\b|walks\b|lessons\b)[A-Za-z][\w-]+(?-i: [A-Z0-9][\w-]*)?)"
        r"(?=[^.?!]*\b(?:\d+ ?(?:mg|mcg|µg|ml)|pills?|tablets?|capsules?|dose|medication|meds|"
        r"prescri\w+|every (?:morning|day|night|evening)|daily|twice a day|once a day|at night))",
        lambda m, c: (
            f"medication:{m.group('x').lower()}",
            "takes " + cut_tail(c[m.start("x") :], allow_and=False).strip(),
        ),
        importance=9.0,
    ),
    rule(
        r"\bmy (?:doctor|gp|psychiatrist|consultant|specialist) (?:has )?(?:put|started) me on "
        r"(?P<x>[\w-]+)",
        says("medication:{x:lower}", "takes {x}"),
        importance=9.0,
    ),
    rule(
        rf"(?:{I_AM}|\bwe're|\bwe are) {ADVERB}(?:a |an )?(?:strict |full |fully )?"
        rf"(?P<x>{DIETS})\b(?! (?:recipe|option|dish|restaurant|place|food|friend|menu))",
        says("diet", "{x:lower}"),
        importance=8.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been|\bI(?:'ll be| will be)?) {ADVERB}(?:doing|on|following|"
        r"trying|eating|sticking to) (?:a |the )?(?P<x>(?:(?:[\w-]+)\s+){0,2}?(?:diet|keto|paleo|"
        r"whole30|intermittent fasting|fasting|low[- ]carb|low[- ]fat|low[- ]fodmap|fodmap|"
        r"carnivore|plant-based diet))\b",
        says("diet", "{x:object}"),
        importance=8.5,
    ),
    rule(
        rf"(?:{I_HAVE}|\bI|^)\s*{ADVERB}(?:gone|went|switched to|turned|become|became|go) "
        rf"{ADVERB}(?:back to )?(?:a |being )?(?P<x>{DIETS})\b",
        says("diet", "{x:lower}"),
        importance=8.5,
    ),
    rule(
        r"(?:^|[,:]\s*|\b(?:and|but|honestly|apparently)\s+)(?P<x>(?:[\w-]+\s+){0,2}[\w-]+?) and I "
        r"(?:really )?(?:don't|do not|never) (?:get along|agree)|(?:^|[,:]\s*)(?P<y>(?:[\w-]+\s+)"
        r"{0,2}[\w-]+?) (?:is|are) (?:a no-go|off the menu|off-limits|off limits|a no-no|"
        r"a (?:hard |big )?no|not for me|out) for me\b|(?:^|[,:]\s*)(?P<z>(?:[\w-]+\s+){0,2}"
        r"[\w-]+?) (?:is|are) not for me\b",
        lambda m, _: (
            (
                f"avoids:{short_key(m.group('x') or m.group('y') or m.group('z'))}",
                f"avoids {(m.group('x') or m.group('y') or m.group('z')).strip().lower()}",
            )
            if (m.group("x") or m.group("y") or m.group("z")).lower().split()[-1] not in PRONOUNS
            else None
        ),
        importance=9.0,
    ),
    rule(
        r"\bI (?:always |really )?(?:react|reacted) (?:badly |terribly |"
        r"really badly )?to (?P<x>.+)",
        thing_fact("avoids", "reacts badly to {}"),
        importance=8.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been|^) {ADVERB}(?:off|avoiding|cutting out|staying off|steering "
        r"clear of) (?!to\b|work\b|sick\b|home\b|out\b|now\b|for\b|on\b|the hook\b|duty\b|today\b)"
        r"(?P<x>[\w -]{2,25}?)(?=\s*(?:$|[,.;!]|for\b|since\b|because\b|at the\b|these\b|now\b|"
        r"right\b|completely\b|entirely\b|altogether\b|this\b|until\b))",
        lambda m, _: (
            (f"avoids:{short_key(m.group('x'))}", f"avoids {object_text(m.group('x'))}")
            if object_text(m.group("x"))
            else None
        ),
        importance=8.5,
    ),
    rule(
        r"\bI (?:have to |need to |must |try to |always )?avoid (?P<x>.+)|\bmy (?:stomach|body|gut|"
        r"skin|system) (?:can't|cannot|doesn't|does not|won't) (?:handle|take|tolerate|do|like) "
        r"(?P<y>.+)",
        thing_fact("avoids", "avoids {}"),
        importance=8.5,
    ),
    rule(
        rf"\bI(?:'m| am)? (?:on|take|taking|'m taking|have to take|need to take) "
        rf"(?P<x>(?:{MEDS}))\b",
        says("medication:{x:key}", "takes {x}"),
        importance=9.0,
    ),
    rule(
        r"\b(?:we're|we are|I'm|I am) (?:now )?expecting (?P<x>a baby|our first|our second|twins|"
        r"a little (?:boy|girl)|a boy|a girl)",
        says("health:pregnancy", "expecting {x}"),
        importance=9.0,
    ),
    rule(
        r"\bI(?:'m| am)? (?:use|in|rely on) (?:a )?(?P<x>wheelchair|walking stick|cane|crutches|"
        r"mobility scooter|hearing aids?|guide dog)",
        says("health:mobility", "uses a {x}"),
        importance=8.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been|\bI) {ADVERB}(?:eat|eating|keep|keeping) (?:a |strictly |"
        rf"mostly |fully )?(?P<x>{DIETS})(?: diet)?\b",
        says("diet", "{x:lower}"),
        importance=8.5,
    ),
    rule(
        rf"{I_HAVE} been {ADVERB}(?:a )?(?P<x>{DIETS})\b",
        says("diet", "{x:lower}"),
        importance=8.5,
    ),
    rule(
        rf"(?:^|\b(?:and|but|so)\s+)being (?:a |an )?(?P<x>{DIETS})\b",
        says("diet", "{x:lower}"),
        importance=8.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} always been|^) {ADVERB}(?:afraid|scared|terrified|frightened|"
        r"petrified|phobic) of (?P<x>[^,.;!?]+)|\bI (?:have|'ve got) (?:a |an )?(?:real |serious |"
        r"bad )?(?:fear|phobia) of (?P<y>[^,.;!?]+)",
        thing_fact("fear", "afraid of {}", cut=cut_tail, skip=frozenset()),
        importance=7.0,
    ),
    rule(
        r"\bI (?:wear|need|have) (?P<x>glasses|contacts|contact lenses|hearing aids?|a hearing aid|"
        r"a brace|braces|a retainer|dentures|reading glasses|orthotics|insoles)\b",
        says("health:{x:key}", "wears {x}"),
        importance=7.0,
    ),
]
