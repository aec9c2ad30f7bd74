"""What of a message is the sender's own words: text helpers the write and recall layers share.

:func:`strip_quoted` takes out quoted passages (someone else's words, or text
to translate or proofread), so neither the fact rules
(:mod:`.write.fact_rules`) nor the recall gate (:mod:`.recall.gate`) reads
them as the user speaking. A leaf: it imports nothing from the package.
"""

from __future__ import annotations

import re

__all__ = ["strip_quoted"]

_DOUBLE_QUOTED = re.compile(r'"([^"\n]*)"|«([^»\n]*)»|「([^」\n]*)」|『([^』\n]*)』')
_SINGLE_OPEN = re.compile(r"(?:(?<=\s)|(?<=^)|(?<=[:(\[]))'(?=\S)")
_SINGLE_CLOSE = re.compile(r"(?<=\S)'(?=\s|$|[.,;:!?)\]])")
_TRANSFORM = re.compile(
    r"\b(?:translate|proofread|proof-read|rewrite|paraphrase|summari[sz]e|correct|edit|check|"
    r"polish|reword|improve|fix)\b[^:\n]*:|(?:翻译|润色|改写|修改|总结|校对)[^：:\n]*[：:]",
    re.I,
)


def _long_quote(inner: str) -> bool:
    cjk = len(re.findall(r"[\u4e00-\u9fff]", inner))
    return len(inner.split()) >= 3 or cjk >= 6


def strip_quoted(text: str) -> str:
    """``text`` without quoted passages (someone else's words, or text to work on).

    Quotes of three words or more go (with what follows "translate/proofread
    ...:"); shorter ones keep their words without the marks ("'since'",
    scare quotes).

    Example:
        >>> strip_quoted("Proofread this: 'I've lived in Leeds all my life.' Thanks!")
        'Proofread this:'
        >>> strip_quoted('I love "spicy" food.')
        'I love spicy food.'
    """
    match = _TRANSFORM.search(text)
    if match:
        text = text[: match.end()]

    def double(m: re.Match[str]) -> str:
        inner = next(g for g in m.groups() if g is not None)
        return " " if _long_quote(inner) else inner

    text = _DOUBLE_QUOTED.sub(double, text)
    out: list[str] = []
    pos = 0
    while True:
        opening = _SINGLE_OPEN.search(text, pos)
        if not opening:
            break
        closing = _SINGLE_CLOSE.search(text, opening.end())
        if not closing:
            break
        inner = text[opening.end() : closing.start()]
        out.append(text[pos : opening.start()])
        out.append(" " if _long_quote(inner) else inner)
        pos = closing.end()
    out.append(text[pos:])
    return re.sub(r" {2,}", " ", "".join(out)).strip()
