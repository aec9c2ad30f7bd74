"""Clip text and messages to a token cap, with a visible marker.

Nothing is clipped silently: the kept text carries a marker saying how much
was cut and where the full text lives (the archive).

Example:
    >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    >>> counter = OpenAITokenCounter("gpt-4o-mini")
    >>> out = clip_text("word " * 500, 40, counter)
    >>> counter.count_text(out) <= 40 and "clipped" in out
    True
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.values.turns import message_text

__all__ = ["clip_message", "clip_text"]


def _marker(cut_tokens: int, note: str) -> str:
    return f"\n[... {cut_tokens} tokens clipped{note} ...]\n"


def clip_text(text: str, max_tokens: int, counter: TokenCounter, *, note: str = "") -> str:
    """Keep the head and tail of ``text`` within ``max_tokens``, marking the cut.

    Works with any counter: the cut points are found by binary search over
    characters, so the result is exact for the counter given.

    Args:
        text: The text to clip.
        max_tokens: Cap for the result (marker included).
        counter: Counts tokens of a string.
        note: Appended to the marker, e.g. ``"; full text archived as turn 12"``.

    Returns:
        ``text`` unchanged if it fits, else a clipped copy that fits (possibly
        only the marker, or ``""`` when not even the marker fits).
    """
    total = counter.count_text(text)
    if total <= max_tokens:
        return text
    marker = _marker(total, note)
    if counter.count_text(marker) > max_tokens:
        short = f"[{total} tokens clipped]"
        return short if counter.count_text(short) <= max_tokens else ""
    encoding = getattr(counter, "encoding", None)
    if encoding is not None:
        fast = _clip_by_tokens(text, max_tokens, total, encoding, counter, note)
        if fast is not None:
            return fast
    lo, hi = 0, len(text)
    best = marker
    # largest n such that head(n * 2/3) + marker + tail(n / 3) fits
    while lo <= hi:
        mid = (lo + hi) // 2
        head_n, tail_n = (mid * 2) // 3, mid - (mid * 2) // 3
        tail = text[len(text) - tail_n :] if tail_n else ""
        kept_tokens = counter.count_text(text[:head_n] + tail)
        candidate = text[:head_n] + _marker(total - kept_tokens, note) + tail
        if counter.count_text(candidate) <= max_tokens:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def _clip_by_tokens(
    text: str, max_tokens: int, total: int, encoding: Any, counter: TokenCounter, note: str
) -> str | None:
    """Token-level head/tail cut for tiktoken-style counters (``None`` if off)."""
    ids = encoding.encode(text, disallowed_special=())
    room = max_tokens - counter.count_text(_marker(total, note)) - 2
    while room > 0:
        head_n = (room * 2) // 3
        tail_n = room - head_n
        head = encoding.decode(ids[:head_n])
        tail = encoding.decode(ids[len(ids) - tail_n :]) if tail_n else ""
        candidate = head + _marker(total - room, note) + tail
        if counter.count_text(candidate) <= max_tokens:
            return candidate
        room -= max(1, room // 20)
    return None


def clip_message(
    message: BaseMessage, max_tokens: int, counter: TokenCounter, *, note: str = ""
) -> BaseMessage:
    """Return a copy of ``message`` whose prompt cost is at most ``max_tokens``.

    Only the text content is clipped; ids, names, tool calls and
    ``tool_call_id`` are kept, so a tool result stays paired with its call.
    Non-text content blocks are replaced by their text rendering.

    Raises:
        ValueError: if even an empty copy of the message exceeds ``max_tokens``
            (e.g. its tool-call arguments alone are larger).
    """
    empty = message.model_copy(update={"content": ""})
    base = counter.count_messages([empty]) - counter.count_messages([])
    if isinstance(message, AIMessage) and message.tool_calls and base > max_tokens:
        raise ValueError(
            f"A tool call's arguments alone take {base} tokens, more than the "
            f"{max_tokens} available. Shorten the tool call or raise the budget."
        )
    if base > max_tokens:
        raise ValueError(f"Message overhead ({base} tokens) exceeds the {max_tokens} available.")
    text = message_text(message)
    clipped = clip_text(text, max_tokens - base, counter, note=note)
    result = message.model_copy(update={"content": clipped})
    # a counter may not be additive: shrink until the exact cost fits
    while counter.count_messages([result]) - counter.count_messages([]) > max_tokens:
        budget = max(0, counter.count_text(clipped) - 8)
        clipped = clip_text(text, budget, counter, note=note) if budget else ""
        result = message.model_copy(update={"content": clipped})
        if not clipped:
            break
    return result
