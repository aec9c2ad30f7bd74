"""Summary-buffer short-term memory, as pure functions over a small state.

MemGPT's FIFO queue: the most recent turns verbatim, headed by a running
(recursive) summary of everything older. :func:`compress` decides whether to
compress, picks the oldest whole turns to evict, folds them into the summary,
hands them to the archive, and returns the new state - or the old state
unchanged when anything fails.

Order of operations, chosen so a failure can never lose a turn:

1. summarise (on failure: nothing changed; retried after more new tokens);
2. archive the evicted turns (on failure: nothing changed);
3. only then drop them from the buffer.

At the hard limit a failing summariser does not block eviction: the turns
are archived and leave the buffer without a summary ("paged out unsummarised")
and are folded into the summary at the next successful compression.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    >>> from langchain_tiered_memory.tiers.summarize import ExtractiveSummarizer
    >>> counter = OpenAITokenCounter("gpt-4o-mini")
    >>> state = BufferState()
    >>> for i in range(30):
    ...     state = append_messages(state, [HumanMessage(f"Fact {i}: I own {i} cats."),
    ...                                     AIMessage("Noted.")], counter)
    >>> archived = []
    >>> result = compress(state, cap=200, triggers=CompressionTriggers(),
    ...                   summarizer=ExtractiveSummarizer(counter), archive=archived.extend,
    ...                   counter=counter)
    >>> result.event.kind, result.state.turns[0].index > 0, len(archived) > 0
    ('compression', True, True)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from langchain_tiered_memory.budget.clipping import clip_text
from langchain_tiered_memory.budget.markup import summary_message
from langchain_tiered_memory.budget.tokens import TokenCounter, summary_cost, turn_tokens
from langchain_tiered_memory.tiers.summarize import Summarizer
from langchain_tiered_memory.values.turns import Turn, clean_text, group_turns

logger = logging.getLogger(__name__)

__all__ = [
    "ArchiveHook",
    "BufferState",
    "CompressionEvent",
    "CompressionResult",
    "CompressionTriggers",
    "InMemoryTurnArchive",
    "append_messages",
    "compress",
    "plan_eviction",
    "should_compress",
    "summary_cost",
    "summary_message",
    "turn_tokens",
]

ArchiveHook = Callable[[Sequence[Turn]], Any]


class InMemoryTurnArchive:
    """An archive hook that keeps evicted turns in a list, oldest first.

    Idempotent by turn index (a retried compression does not store a turn twice).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> archive = InMemoryTurnArchive()
        >>> archive([Turn(0, (HumanMessage("hi"),))])
        >>> archive([Turn(0, (HumanMessage("hi"),))])
        >>> len(archive.turns)
        1
    """

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self, turns: Sequence[Turn]) -> None:
        """Store the turns not stored yet."""
        with self._lock:
            for turn in turns:
                if turn.index not in self._seen:
                    self._seen.add(turn.index)
                    self.turns.append(turn)


@dataclass(frozen=True)
class CompressionTriggers:
    """When the buffer compresses, and how far.

    Args:
        soft_ratio: Compress once the buffer (summary + turns) reaches this
            share of its cap ...
        every_new_tokens: ... and at least this many tokens arrived since the
            last compression (capped at the gap between ``soft_ratio`` and
            ``target_ratio``, so small buffers still compress at the soft
            threshold). Stops compression from running every turn.
        hard_ratio: Past this share of the cap, compress at once.
        target_ratio: After compression, summary (counted at its cap) plus
            kept turns fit in this share of the cap.
        summary_ratio: Largest share of the buffer cap the summary may take.
        keep_last_turns: The newest turns never evicted (at least 1).

    Raises:
        ValueError: for ratios out of order (``0 < summary < target < soft <=
            hard``) or ``keep_last_turns < 1``.

    Example:
        >>> CompressionTriggers(soft_ratio=0.7).soft_ratio
        0.7
    """

    soft_ratio: float = 0.8
    every_new_tokens: int = 2000
    hard_ratio: float = 1.0
    target_ratio: float = 0.6
    summary_ratio: float = 0.2
    keep_last_turns: int = 1

    def __post_init__(self) -> None:
        if not (0 < self.summary_ratio < self.target_ratio < self.soft_ratio <= self.hard_ratio):
            raise ValueError(
                "Compression ratios must satisfy 0 < summary_ratio < target_ratio < "
                f"soft_ratio <= hard_ratio, got summary={self.summary_ratio}, "
                f"target={self.target_ratio}, soft={self.soft_ratio}, "
                f"hard={self.hard_ratio}."
            )
        if self.hard_ratio > 1:
            raise ValueError("hard_ratio must be <= 1: the buffer may not outgrow its cap.")
        if self.every_new_tokens < 0:
            raise ValueError("every_new_tokens must be >= 0.")
        if self.keep_last_turns < 1:
            raise ValueError("keep_last_turns must be >= 1: the current turn always stays.")


@dataclass(frozen=True)
class BufferState:
    """The short-term memory of one thread.

    Attributes:
        summary: The running summary of evicted turns.
        summary_tokens: Prompt cost of the summary message (0 when empty).
        summarized_through: Index of the newest turn folded into the summary.
        turns: The buffered turns, oldest first.
        unsummarized: Turns already archived and out of the buffer whose
            summary failed; folded in at the next successful compression.
        new_tokens: Tokens added since the last compression attempt.
        next_index: Index the next turn gets.
        failures: Consecutive failed summarisations.
    """

    summary: str = ""
    summary_tokens: int = 0
    summarized_through: int = -1
    turns: tuple[Turn, ...] = ()
    unsummarized: tuple[Turn, ...] = ()
    new_tokens: int = 0
    next_index: int = 0
    failures: int = 0

    @cached_property
    def turn_tokens(self) -> int:
        """Tokens of the buffered turns (summed once per state: states are immutable)."""
        return sum(t.tokens for t in self.turns)

    @property
    def tokens(self) -> int:
        """Tokens of the whole buffer: summary plus turns."""
        return self.summary_tokens + self.turn_tokens


@dataclass(frozen=True)
class CompressionEvent:
    """What one compression attempt did (an audit record).

    ``kind`` is ``compression`` (summarised and evicted), ``page_out_unsummarized``
    (hard limit with a failed summariser: evicted, summary pending),
    ``summary_failed`` (nothing changed) or ``archive_failed`` (nothing changed).
    """

    kind: Literal["compression", "page_out_unsummarized", "summary_failed", "archive_failed"]
    trigger: Literal["soft", "hard", "manual"]
    tokens_before: int
    tokens_after: int
    evicted_turns: tuple[int, ...]
    summary_tokens: int
    error: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass(frozen=True)
class CompressionResult:
    """The state after :func:`compress` and the event, if it ran."""

    state: BufferState
    event: CompressionEvent | None


def append_messages(
    state: BufferState,
    messages: Sequence[BaseMessage],
    counter: TokenCounter,
    *,
    at: datetime | None = None,
) -> BufferState:
    """Add messages to the buffer, extending the open turn or opening new ones.

    A human message opens a new turn (unless a tool call still waits for its
    result); AI and tool messages extend the newest turn. New turns are dated
    ``at`` (default: now), e.g. when importing an old conversation.

    Raises:
        ValueError: for a system message or a tool result without its call, or
            an ``at`` without a time zone.
    """
    if at is not None and at.tzinfo is None:
        raise ValueError("at must be timezone-aware, e.g. datetime(..., tzinfo=timezone.utc)")
    if not messages:
        return state
    turns = list(state.turns)
    head: list[BaseMessage] = []
    if turns:
        head = list(turns[-1].messages)
    grouped = group_turns([*head, *messages]) if head else group_turns(messages)
    added = 0
    next_index = state.next_index
    if head:
        first = grouped[0]
        last = turns[-1]
        tokens = turn_tokens(first, counter)
        added += tokens - last.tokens
        turns[-1] = last.with_messages(first, tokens)
        grouped = grouped[1:]
    for group in grouped:
        tokens = turn_tokens(group, counter)
        added += tokens
        turn = Turn(index=next_index, messages=tuple(group), tokens=tokens)
        turns.append(turn if at is None else replace(turn, created_at=at))
        next_index += 1
    return replace(
        state, turns=tuple(turns), new_tokens=state.new_tokens + added, next_index=next_index
    )


def should_compress(
    state: BufferState, *, cap: int, triggers: CompressionTriggers
) -> Literal["soft", "hard"] | None:
    """Which trigger fires now, if any (pure).

    Example:
        >>> should_compress(BufferState(), cap=100, triggers=CompressionTriggers())
    """
    evictable = len(state.turns) > triggers.keep_last_turns
    if not evictable:
        return None
    if state.tokens > triggers.hard_ratio * cap:
        return "hard"
    step = min(
        triggers.every_new_tokens,
        max(1, int((triggers.soft_ratio - triggers.target_ratio) * cap)),
    )
    if state.tokens >= triggers.soft_ratio * cap and state.new_tokens >= step:
        return "soft"
    return None


def plan_eviction(
    state: BufferState, *, cap: int, triggers: CompressionTriggers
) -> tuple[tuple[Turn, ...], tuple[Turn, ...]]:
    """Split the buffer into (turns to evict, turns to keep), oldest first.

    Evicts whole turns, oldest first, until the kept turns plus a summary at
    its cap fit in ``target_ratio`` of the cap. The newest
    ``keep_last_turns`` turns and any turn with a pending tool call stay.
    """
    turns = state.turns
    limit = int(triggers.target_ratio * cap) - int(triggers.summary_ratio * cap)
    protected = len(turns) - triggers.keep_last_turns
    remaining = sum(t.tokens for t in turns)
    cut = 0
    while cut < protected and remaining > limit:
        if turns[cut].has_pending_tool_calls:
            break
        remaining -= turns[cut].tokens
        cut += 1
    return turns[:cut], turns[cut:]


def _after_summary(
    state: BufferState,
    keep: tuple[Turn, ...],
    summary: str,
    through: int,
    counter: TokenCounter,
) -> BufferState:
    return replace(
        state,
        summary=summary,
        summary_tokens=summary_cost(summary, through, counter),
        summarized_through=through,
        turns=keep,
        unsummarized=(),
        new_tokens=0,
        failures=0,
    )


def _prepare(
    state: BufferState, cap: int, triggers: CompressionTriggers, force: bool
) -> tuple[Literal["soft", "hard", "manual"], tuple[Turn, ...], tuple[Turn, ...]] | None:
    trigger: Literal["soft", "hard", "manual"] | None = should_compress(
        state, cap=cap, triggers=triggers
    )
    if trigger is None and force:
        trigger = "manual"
    if trigger is None:
        return None
    evict, keep = plan_eviction(state, cap=cap, triggers=triggers)
    if not evict and not state.unsummarized:
        return None
    return trigger, evict, keep


def _finish(
    state: BufferState,
    trigger: Literal["soft", "hard", "manual"],
    evict: tuple[Turn, ...],
    keep: tuple[Turn, ...],
    summary: str | None,
    error: BaseException | None,
    archive: ArchiveHook,
    counter: TokenCounter,
    summary_budget: int,
) -> CompressionResult:
    before = state.tokens
    if summary is not None and counter.count_text(summary) > summary_budget:
        summary = clip_text(summary, summary_budget, counter, note="; summary clipped")
    evicted_ids = tuple(t.index for t in evict)
    if summary is None:
        logger.warning("summarisation failed (%s); buffer left unchanged", error)
        if trigger != "hard":
            failed = replace(state, new_tokens=0, failures=state.failures + 1)
            event = CompressionEvent(
                "summary_failed", trigger, before, before, (), state.summary_tokens, repr(error)
            )
            return CompressionResult(failed, event)
    try:
        if evict:
            archive(evict)
    except Exception as exc:  # noqa: BLE001 - a failing archive must not lose turns
        logger.error("archiving turns %s failed (%r); buffer left unchanged", evicted_ids, exc)
        event = CompressionEvent(
            "archive_failed", trigger, before, before, (), state.summary_tokens, repr(exc)
        )
        return CompressionResult(replace(state, new_tokens=0), event)
    if summary is None:
        paged = replace(
            state,
            turns=keep,
            unsummarized=state.unsummarized + evict,
            new_tokens=0,
            failures=state.failures + 1,
        )
        event = CompressionEvent(
            "page_out_unsummarized",
            trigger,
            before,
            paged.tokens,
            evicted_ids,
            paged.summary_tokens,
            repr(error),
        )
        return CompressionResult(paged, event)
    through = max([state.summarized_through, *(t.index for t in (*state.unsummarized, *evict))])
    new_state = _after_summary(state, keep, summary, through, counter)
    event = CompressionEvent(
        "compression",
        trigger,
        before,
        new_state.tokens,
        tuple(t.index for t in (*state.unsummarized, *evict)),
        new_state.summary_tokens,
    )
    logger.info(
        "compressed buffer %d -> %d tokens, evicted turns %s", before, new_state.tokens, evicted_ids
    )
    return CompressionResult(new_state, event)


def _summary_budget(cap: int, triggers: CompressionTriggers, counter: TokenCounter) -> int:
    header = summary_cost(" ", 10**6, counter)
    return max(16, int(triggers.summary_ratio * cap) - header)


def compress(
    state: BufferState,
    *,
    cap: int,
    triggers: CompressionTriggers,
    summarizer: Summarizer,
    archive: ArchiveHook,
    counter: TokenCounter,
    force: bool = False,
) -> CompressionResult:
    """Compress the buffer if a trigger fires (or ``force``); never loses a turn.

    Args:
        state: The current buffer.
        cap: The buffer section's cap in tokens.
        triggers: When and how far to compress.
        summarizer: Folds evicted turns into the running summary.
        archive: Called with the evicted turns before they leave the buffer.
        counter: The memory's token counter.
        force: Compress even if no trigger fires.

    Returns:
        The new state and the event (``None`` when nothing was due).
    """
    prepared = _prepare(state, cap, triggers, force)
    if prepared is None:
        return CompressionResult(state, None)
    trigger, evict, keep = prepared
    summary: str | None
    error: BaseException | None = None
    budget = _summary_budget(cap, triggers, counter)
    try:
        summary = summarizer.summarize(
            state.summary, (*state.unsummarized, *evict), max_tokens=budget
        )
        if not summary or not summary.strip():
            raise ValueError("empty summary")
        summary = clean_text(summary)  # stored with the thread: repaired as turns are
    except Exception as exc:  # noqa: BLE001 - any summariser failure leaves the buffer as is
        summary, error = None, exc
    return _finish(state, trigger, evict, keep, summary, error, archive, counter, budget)
