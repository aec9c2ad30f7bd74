"""A user message split into clauses, each cleaned of its lead-in (pure).

Example:
    >>> split_clauses("btw my gate code is 4471. What's for dinner? Also I'm vegan lol")
    ['my gate code is 4471', "I'm vegan"]
    >>> split_clauses("记一下，我家wifi密码是 lotus2024。你好吗？")
    ['我家wifi密码是 lotus2024']
"""

from __future__ import annotations

import re

__all__ = ["clean_clause", "split_clauses"]

# Sentence ends (a question mark ends a question, which is dropped).
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
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


def split_clauses(text: str, *, max_clauses: int = 12) -> list[str]:
    """The statements of a message, cleaned; questions and fragments left out."""
    out: list[str] = []
    for part in _SENTENCE.split(text[:4000]):
        part = part.strip()
        if not part or part.endswith(("?", "？")):
            continue
        clause = clean_clause(part)
        words = len(clause.split()) if clause.isascii() else len(clause)
        if words >= (2 if clause.isascii() else 4):
            out.append(clause)
        if len(out) >= max_clauses:
            break
    return out
