"""The buffer window a view holds: its copy of a thread, caught up from the turn log.

A :class:`~langchain_tiered_memory.memory.TieredMemory` keeps no lasting state;
what it shows of its thread is a :class:`ThreadWindow` - the turns from the
window's start, their token counts, the head it was read with - caught up at
every read with the messages the log has added since (one small query when
nothing changed) and moved when the view's own compression commits.

Example:
    >>> from datetime import datetime, timezone
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.tokens import resolve_token_counter
    >>> from langchain_tiered_memory.storage.base import LoggedMessage, ThreadHead
    >>> at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> window = ThreadWindow(resolve_token_counter("gpt-4o-mini"))
    >>> window.apply([LoggedMessage(1, 0, at, HumanMessage("hi")),
    ...               LoggedMessage(2, 0, at, AIMessage("hello"))])
    >>> window.head = ThreadHead("ana", "t1", next_turn=1, last_seq=2, exists=True)
    >>> [t.index for t in window.state().turns], window.state().turn_tokens > 0
    ([0], True)
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from langchain_tiered_memory.storage.base import LogCursor, LoggedMessage, ThreadHead
from langchain_tiered_memory.tiers.buffer import BufferState, summary_cost, turn_tokens
from langchain_tiered_memory.values.turns import Turn

__all__ = ["ThreadWindow"]


class ThreadWindow:
    """A view's copy of a thread's buffer window, caught up from the turn log.

    :meth:`apply` takes messages read from the log, :meth:`trim` drops the
    turns that left the window, and :meth:`state` is the window as a
    :class:`~langchain_tiered_memory.tiers.buffer.BufferState` for
    :attr:`head`. Everything is kept incrementally - turns in order, their token total,
    the tokens that arrived since the last compression - so catching up
    after an add costs what was added, not the size of the buffer. Token
    counts are the view's own (its counter), so views with different models
    can share a thread.
    """

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.head: ThreadHead | None = None
        self.cursor: LogCursor | None = None
        self.reset()

    def reset(self) -> None:
        """Forget every message (the thread is read whole next)."""
        self.log: dict[int, list[LoggedMessage]] = {}
        self.order: list[int] = []  # turn indices, ascending
        self.turns: list[Turn] = []  # the turns, in that order
        self.message_tokens: dict[int, int] = {}  # seq -> tokens
        self._new: tuple[int, int] = (-1, 0)  # (compress_seq, tokens of messages after it)
        self._total: tuple[int, int] = (-1, 0)  # (buffer_start, tokens of turns from it)
        self._state: BufferState | None = None
        self._state_head: ThreadHead | None = None
        self._summary: tuple[str, int, int] = ("", -1, 0)

    def apply(self, messages: Sequence[LoggedMessage]) -> None:
        """Take messages read from the log (new ones, or more of a turn already held)."""
        if not messages:
            return
        dirty: dict[int, None] = {}
        since, new = self._new
        for logged in messages:
            self.log.setdefault(logged.turn, []).append(logged)
            dirty[logged.turn] = None
            tokens = turn_tokens([logged.message], self.counter)
            self.message_tokens[logged.seq] = tokens
            if logged.seq > since:
                new += tokens
        self._new = (since, new)
        start, total = self._total
        for index in dirty:
            rows = self.log[index]
            msgs = tuple(m.message for m in rows)
            turn = Turn(index, msgs, turn_tokens(msgs, self.counter), rows[0].at)
            at = bisect.bisect_left(self.order, index)
            if at < len(self.order) and self.order[at] == index:
                old = self.turns[at]
                self.turns[at] = turn
                if index >= start:
                    total += turn.tokens - old.tokens
            else:
                self.order.insert(at, index)
                self.turns.insert(at, turn)
                if index >= start:
                    total += turn.tokens
        self._total = (start, total)
        self._state = None

    def trim(self, start: int) -> None:
        """Drop the turns before ``start`` (they left the window)."""
        cut = bisect.bisect_left(self.order, start)
        if not cut:
            return
        for index in self.order[:cut]:
            for logged in self.log.pop(index):
                self.message_tokens.pop(logged.seq, None)
        del self.order[:cut], self.turns[:cut]
        self._new = (-1, 0)  # recounted by the next state()
        self._total = (-1, 0)
        self._state = None

    def state(self) -> BufferState:
        """The window as a buffer state for :attr:`head` (cached until either changes)."""
        head = self.head
        assert head is not None
        if self._state is not None and self._state_head == head:
            return self._state
        if self._new[0] != head.compress_seq:  # a compression moved the mark: recount
            since = head.compress_seq
            self._new = (since, sum(t for s, t in self.message_tokens.items() if s > since))
        first = bisect.bisect_left(self.order, head.buffer_start)
        if self._total[0] != head.buffer_start:
            self._total = (head.buffer_start, sum(t.tokens for t in self.turns[first:]))
        lo = bisect.bisect_right(self.order, head.summarized_through)
        if (head.summary, head.summarized_through) != self._summary[:2]:
            cost = summary_cost(head.summary, head.summarized_through, self.counter)
            self._summary = (head.summary, head.summarized_through, cost)
        state = BufferState(
            summary=head.summary,
            summary_tokens=self._summary[2],
            summarized_through=head.summarized_through,
            turns=tuple(self.turns[first:]),
            unsummarized=tuple(self.turns[lo:first]),
            new_tokens=self._new[1],
            next_index=head.next_turn,
            failures=head.failures,
        )
        state.__dict__["turn_tokens"] = self._total[1]  # the cached sum, kept incrementally
        self._state, self._state_head = state, head
        return state
