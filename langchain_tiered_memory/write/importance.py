"""Importance: how much a memory matters, 1-10 (Generative Agents' poignancy).

The default is a cheap heuristic: health and safety facts score highest, then
identity, plans with dates, preferences; small talk lowest. Importance feeds
recall scoring and decides which core facts leave first when core memory is full.

Example:
    >>> rate_importance("I'm allergic to peanuts")
    9.0
    >>> rate_importance("haha nice") < rate_importance("My flight is on 14 April at 9:40")
    True
"""

from __future__ import annotations

import re

from langchain_tiered_memory.recall.time_expressions import MONTH_NAMES

__all__ = ["rate_importance"]

_RULES: tuple[tuple[re.Pattern[str], float], ...] = (
    (
        re.compile(
            r"allerg|anaphyla|diabet|epilep|pregnan|medicat|asthma|"
            r"过敏|糖尿病|怀孕|药",
            re.I,
        ),
        9.0,
    ),
    (re.compile(r"\b(my name is|call me|birthday|passport|address)\b|我叫|名字|生日", re.I), 7.5),
    (
        re.compile(
            r"\b(deadline|flight|trip|wedding|appointment|interview|exam|meeting)\b|"
            r"航班|旅行|婚礼|约会|面试|考试|会议",
            re.I,
        ),
        7.0,
    ),
    (
        re.compile(
            r"\b(moved|live in|work (as|at|for)|job|married|divorc|kids?|son|daughter)\b|"
            r"搬|住在|工作",
            re.I,
        ),
        6.5,
    ),
    (
        re.compile(
            r"\b(prefer|love|hate|like|favou?rite|no longer|vegetarian|vegan)\b|"
            r"喜欢|讨厌|不再",
            re.I,
        ),
        6.0,
    ),
    (re.compile(r"\b(remember|don't forget|promise|decided|agreed)\b|记住|决定", re.I), 6.5),
)
_DATE_OR_NUMBER = re.compile(
    rf"\d|\b({'|'.join(MONTH_NAMES)})\b",
    re.I,
)


def rate_importance(text: str, *, category: str | None = None) -> float:
    """Heuristic importance of ``text`` on a 1-10 scale (no LLM).

    Args:
        text: The memory's text.
        category: Optional fact category (``plan`` and ``preference`` get a floor).
    """
    score = 2.0
    for pattern, value in _RULES:
        if pattern.search(text):
            score = max(score, value)
    if _DATE_OR_NUMBER.search(text):
        score = min(10.0, score + 1.0) if score > 2.0 else 4.0
    floors = {"plan": 6.0, "preference": 5.5, "task_state": 5.0, "fact": 4.0}
    if category in floors:
        score = max(score, floors[category])
    return float(score)
