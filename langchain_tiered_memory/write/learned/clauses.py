"""A user message split into clauses, each cleaned of its lead-in (pure).

Example:
    >>> split_clauses("btw my gate code is 4471. What's for dinner? Also I'm vegan lol")
    ['my gate code is 4471', "I'm vegan"]
    >>> split_clauses("记一下，我家wifi密码是 lotus2024。你好吗？")
    ['我家wifi密码是 lotus2024']
"""

from __future__ import annotations

import re

__all__ = ["clean_clause", "is_request", "read_with_contrast", "sentences", "split_clauses"]

# Sentence ends (a question mark ends a question, which is dropped); a full stop
# inside a token ("jo.hart@mail.com", "3.4kg") is not one.
_SENTENCE = re.compile(
    r"(?<=[.!?])\s+|(?<=[.!?])$|(?<=[。！？；;])\s*|\n+|\s+[-–—]+\s+|\s*——\s*|"
    # a clause joined by "so", "but", "which": each part is read on its own
    r",\s+(?=(?:so|but|which|though|although)\b)|，(?=所以|但是?|不过|可是)"
)
# A conditional or hypothetical clause ("If the promotion comes through...").
_CONDITIONAL = re.compile(
    r"^(?:if|unless|suppose|supposing|imagine|what if|assuming|in case|如果|要是|假如|假设|万一)",
    re.IGNORECASE,
)
# A request to the assistant, not a statement ("Find me a gym", "帮我规划").
_REQUEST = re.compile(
    r"^(?:please |pls |can you |could you |would you |will you )?(?:write|draft|find|give|help|"
    r"tell|explain|translate|proofread|recommend|suggest|list|make|summari[sz]e|convert|fix|"
    r"plan|book|order|fill|pick|remind|show|create|check|compare|sort|let's|lets|put together|"
    r"come up with|prepare|send|organi[sz]e|arrange|schedule|set up|choose|select|name|"
    r"think of|brainstorm|outline|rewrite|edit|polish|update|look up|search|calculate|"
    r"estimate|design|compose|generate|get me|describe|teach|quiz|rank|review|build|draw up|"
    r"map out)\b|"
    r"^(?:请|帮我|给我|麻烦|推荐|翻译|解释|我们来|帮忙)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(?:(?:and|but|so|also|anyway|anyways|btw|by the way|fyi|oh|ok|okay|well|"
    r"quick one|heads up|note for later|for the record|just so you know|"
    r"(?:please |can you |could you )?(?:remember|note|keep in mind|hang on to this)"
    r"(?: for me)?(?: that)?|顺便说一下|顺便说一句|顺便|对了|记一下|记住|帮我记着|"
    r"另外|还有|话说)[\s,:，：、-]*)+",
    re.IGNORECASE,
)
_TRAIL = re.compile(r"(?:[\s,]*(?:lol|haha+|lmao|:\)|:\(|xx|哈哈+))+[\s.!。！]*$", re.IGNORECASE)
_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")


def clean_clause(text: str) -> str:
    """The clause without its lead-in ("btw", "remember that", "对了"), trailing
    "lol", emoji or end punctuation.

    Example:
        >>> clean_clause("Can you hang on to this for me: the storage unit combo is 3390.")
        'the storage unit combo is 3390'
    """
    text = _EMOJI.sub("", text).strip()
    text = _LEAD.sub("", text)
    text = _TRAIL.sub("", text)
    return text.strip(" \t-–—,.;:!。！，；：")


def is_request(text: str) -> bool:
    """Whether ``text`` is a request to the assistant ("Find me a gym", "帮我规划").

    Example:
        >>> is_request("Give me a dinner idea for tonight"), is_request("I give blood monthly")
        (True, False)
    """
    return bool(_REQUEST.match(clean_clause(text)))


def split_clauses(text: str, *, max_clauses: int = 12) -> list[str]:
    """The statements of a message, cleaned; questions, requests to the assistant
    and fragments left out.

    Example:
        >>> split_clauses("use jo.h@x.com now. Find me a gym nearby. 帮我规划一下。")
        ['use jo.h@x.com now']
        >>> split_clauses("Type 1 diabetic here - any tips? If it rains I'll stay in.")
        ['Type 1 diabetic here']
        >>> split_clauses("My phone's a Pixel 7, so your steps don't help")
        ["My phone's a Pixel 7", "your steps don't help"]
    """
    out: list[str] = []
    for part in _SENTENCE.split(text[:4000]):
        part = part.strip()
        if not part or part.endswith(("?", "？")):
            continue
        clause = clean_clause(part)
        if is_request(clause) or _CONDITIONAL.match(clause):
            continue
        words = len(clause.split()) if clause.isascii() else len(clause)
        if words >= (2 if clause.isascii() else 4):
            out.append(clause)
        if len(out) >= max_clauses:
            break
    return out


def sentences(text: str) -> list[str]:
    """Every part of a message the clauses come from, cleaned, questions and requests
    included: where a rule's fact is looked for, to be read by the classifier.

    Example:
        >>> sentences("Story idea: a cat named Bosun. thoughts?")
        ['Story idea: a cat named Bosun', 'thoughts?']
    """
    parts = (clean_clause(part.strip()) for part in _SENTENCE.split(text[:4000]))
    return [part for part in parts if part]


_CONTRAST = re.compile(r"\s*[,，]\s*(?:but|though|although|但是?|不过|可是)", re.IGNORECASE)
_END = re.compile(r"[.!?。！？；;\n]")


def read_with_contrast(clause: str, text: str) -> str:
    """``clause`` with the contrast that follows it in ``text`` ("..., but I decided
    against it"), which can take back what the clause says; the clause alone when
    no contrast follows.

    Example:
        >>> read_with_contrast("I was going to learn the harp",
        ...     "I was going to learn the harp, but I gave up. Anyway.")
        'I was going to learn the harp, but I gave up'
        >>> read_with_contrast("I'm vegan", "I'm vegan. Hi")
        "I'm vegan"
    """
    at = text.find(clause)
    if at < 0:
        return clause
    rest = text[at + len(clause) :]
    if not _CONTRAST.match(rest):
        return clause
    end = _END.search(rest)
    return (clause + rest[: end.start() if end else len(rest)]).strip()
