"""What of a message is the sender's own words: text helpers the write and recall layers share.

:func:`strip_quoted` takes out quoted passages (someone else's words, or text
to translate or proofread), so neither the fact rules
(:mod:`.write.rules`) nor the recall gate (:mod:`.recall.gate`) reads
them as the user speaking. Linear in the text: every pattern is bounded. A leaf:
it imports nothing from the package.
"""

from __future__ import annotations

import re

__all__ = ["strip_quoted"]

_CJK = re.compile(r"[\u4e00-\u9fff]")
_DOUBLE_QUOTED = re.compile(
    r'"([^"\n]{0,2000})"|«([^»\n]{0,2000})»|「([^」\n]{0,2000})」|『([^』\n]{0,2000})』'
)
_SINGLE_OPEN = re.compile(r"(?:(?<=\s)|(?<=^)|(?<=[:(\[]))'(?=\S)")
_SINGLE_CLOSE = re.compile(r"(?<=\S)'(?=\s|$|[.,;:!?)\]])")
#: "Translate / proofread ... :" (English, Chinese) - what follows is text to work on.
_TRANSFORM = (
    re.compile(
        r"\b(?:translate|proofread|proof-read|rewrite|paraphrase|summari[sz]e|correct|edit|check|"
        r"polish|reword|improve|fix)\b[^:\n]{0,200}:",
        re.I,
    ),
    re.compile(r"(?:翻译|润色|改写|修改|总结|校对)[^：:\n]{0,100}[：:]"),
)


def _long_quote(inner: str) -> bool:
    return len(inner.split()) >= 3 or len(_CJK.findall(inner)) >= 6


def strip_quoted(text: str) -> str:
    """``text`` without quoted passages (someone else's words, or text to work on).

    Quotes of three words or more go (and everything after "translate /
    proofread / polish ...:", in English or Chinese); shorter ones keep their
    words without the marks ("'since'", scare quotes).

    Example:
        >>> strip_quoted("Proofread this: 'I've lived in Leeds all my life.' Thanks!")
        'Proofread this:'
        >>> strip_quoted('I love "spicy" food.')
        'I love spicy food.'
        >>> strip_quoted("帮我润色一下：我叫李明，在上海工作。")
        '帮我润色一下：'
    """
    for pattern in _TRANSFORM:
        match = pattern.search(text)
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
