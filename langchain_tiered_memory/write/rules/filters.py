"""What keeps a clause from becoming a fact: the words of non-facts (English and Chinese).

Questions, hypotheticals, role-play and fiction frames, sarcasm, hedges,
wishes, plans rejected; and the negations a message's merge prefers the
positive statement over.

Example:
    >>> is_question("Should I move to Berlin?"), is_question("Can you reply in Spanish")
    (True, False)
    >>> bool(HYPOTHETICAL.search("If I were allergic to nuts"))
    True
"""

from __future__ import annotations

import re

__all__ = [
    "DESIRE",
    "FRAME",
    "HEDGE",
    "HYPOTHETICAL",
    "NEGATED",
    "REJECTED",
    "SARCASM",
    "ZH_QUESTION",
    "is_question",
]

FRAME = re.compile(
    r"\bimagine (?:you(?:'re| are)|I(?:'m| am))\b|\bact as (?:a|an|my|if|though)\b|"
    r"\byou are (?:a|an|my) (?:[\w-]+ ){0,3}(?:assistant|expert|writer|consultant|coach|"
    r"teacher|tutor|character|bot)\b|\b(?:let'?s |we could )?role[- ]?play|\bpretend (?:that |"
    r"to be |you|I|we)|"
    r"\blet'?s pretend\b|\bplay a game where\b|\bin character\b|\bact as (?:if|though)\b|"
    r"\bmy character\b|\bthe (?:narrator|protagonist|main character|hero|heroine)\b|"
    r"\bin my (?:novel|story|book|script|screenplay|game|campaign)\b|角色扮演|假装|扮演",
    re.I,
)
SARCASM = re.compile(
    r"^(?:oh,? )?(?:sure|yeah,? right|right),|\byeah,? right\b|\bas if\b|\bjust kidding\b|"
    r"\bjk\b|\bkidding\b|/s\b|开玩笑",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|but|also|anyway|now|well|hey|hi|quick question|first "
    r"(?:question|thing)|one more thing|question),?:?\s+)*(?:what|what's|whats|when|where|"
    r"which|who|whom|whose|why|how|do|does|did|is|are|was|were|am|isn't|aren't|can(?!'t)|"
    r"could|should|shall|would|will|may|might|have|has|had|any)\b",
    re.I,
)
_POLITE_REQUEST = re.compile(
    r"^(?:please,? )?(?:can|could|would|will) you (?:please )?(?:always |only |just |now )?"
    r"(?:reply|respond|answer|write|speak|talk|use|keep|stick|switch|stop|remember|note|format|"
    r"give me (?:your |the )?(?:answers|replies|responses))\b",
    re.I,
)
HYPOTHETICAL = re.compile(
    r"\b(?:(?:even )?if|unless) (?:I|I'm|I'd|I've|I was|I were|we|we're|we'd|my|our)\b|"
    r"^(?:if|unless)\b|\b(?:suppose|supposing|imagine|imagining|hypothetically|what if|"
    r"in theory|let's say|assuming|wish|were I)\b|\bI(?:'d| would) (?:be|have|live|move|go|"
    r"get|need|probably|definitely)\b|如果|假如|假设|要是|万一|想象",
    re.I,
)
HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|not sure|i think|i guess|i suppose|"
    r"thought about|thinking about|thinking of|considered|considering|toying with|"
    r"was going to|were going to|wanted to|planned to|was planning to|were planning to|"
    r"hoping to|hope to|wondering|almost|nearly|decided against|changed my mind)\b|"
    r"也许|可能|大概|或许|本来想|原本想|想过|考虑过|算了|打算",
    re.I,
)
DESIRE = re.compile(
    r"\b(?:want to|wanna|would love to|'d love to|would like to|'d like to|dream of|dreaming of|"
    r"someday|one day|aspire to|hope to|hoping to)\b|想要|希望|梦想",
    re.I,
)
REJECTED = re.compile(r"\b(?:nah|decided against|changed my mind|fell through)\b|算了", re.I)
ZH_QUESTION = re.compile(
    r"[吗呢]$|什么|怎么|哪|多少|为什么|是否|要不要|可不可以|能不能|有没有|几点|几个|几天"
)


def is_question(clause: str) -> bool:
    """A question (a polite request such as "Can you reply in Spanish" is not one)."""
    if _POLITE_REQUEST.search(clause):
        return False
    stripped = clause.rstrip(" .!")
    if stripped.endswith(("?", "？")):
        return True
    if re.search(r"[\u4e00-\u9fff]", clause) and ZH_QUESTION.search(stripped):
        return True
    return bool(_QUESTION_START.search(clause))


NEGATED = re.compile(r"^(?:no longer|not|dislikes|不再|不)\b", re.I)
