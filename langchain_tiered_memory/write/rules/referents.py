"""Names given to someone mentioned before: "named him Biscuit", "(her name's Pickle)", "她叫朵朵".

Example:
    >>> pronoun_names("the kids named her Clementine", ("we got a rescue beagle",))
    [('pet:dog', 'beagle is called Clementine')]
"""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import called, kin_subject
from langchain_tiered_memory.write.rules.en.words import KIN, NAME_STOP
from langchain_tiered_memory.write.rules.zh import ZH_PET, ZH_REL

REFERENT = re.compile(
    rf"\b(?:my|our|the|a|an|his|her|their)\s+(?:[\w-]+\s+)?({KIN})\b|({ZH_REL}|{ZH_PET})",
    re.I,
)


def last_referent(*texts: str) -> str | None:
    """The last person or animal mentioned in ``texts`` (searched last text first)."""
    for text in texts:
        found = [m.group(1) or m.group(2) for m in REFERENT.finditer(text)]
        if found:
            return found[-1]
    return None


def pronoun_names(clause: str, context: tuple[str, ...]) -> list[tuple[str, str]]:
    """ "named him Biscuit", "(her name's Pickle)": the name of the referent."""
    out = []
    for m in re.finditer(
        r"\b(?:(?:re)?named|called|christened) (?:him|her|it|them) (?P<a>[A-Z][\w'’-]+)|"
        r"\b(?:her|his|its|their) names?(?: is|'s| are) (?P<b>[A-Z][\w'’-]+)",
        clause,
    ):
        name = m.group("a") or m.group("b")
        if name.lower() in NAME_STOP:
            continue
        before = re.sub(
            rf"(?i)\b(?:the|my|our)\s+(?:\w+\s+)?(?:{KIN})\s+$", "", clause[: m.start()]
        )  # "the kids named her ...": not the kids
        noun = last_referent(before, *context)
        if noun is None:
            continue
        out.append((kin_subject(noun), called(noun, [name])))
    for m in re.finditer(
        r"(?:她|他|它)(?:叫|的名字叫|名叫)(?P<n>[\u4e00-\u9fff]{1,4}?)(?=[，。！？,.!?]|$)", clause
    ):
        noun = last_referent(clause[: m.start()], *context)
        if noun is not None:
            kind = "pet" if re.fullmatch(ZH_PET, noun) else "family"
            out.append((f"{kind}:{noun}", f"{noun}叫{m.group('n')}"))
    return out
