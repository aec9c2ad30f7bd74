"""Where evicted turns go.

The buffer hands every evicted turn to an *archive hook* - any callable taking
a sequence of :class:`~langchain_tiered_memory.turns.Turn` - before the turn
leaves the buffer. If the hook raises, the turn stays in the buffer.

:class:`InMemoryTurnArchive` is the simplest hook: a list, idempotent by turn
index (a retried compression does not store a turn twice).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.turns import Turn
    >>> archive = InMemoryTurnArchive()
    >>> archive([Turn(0, (HumanMessage("hi"),))])
    >>> archive([Turn(0, (HumanMessage("hi"),))])
    >>> len(archive.turns)
    1
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langchain_tiered_memory.turns import Turn

__all__ = ["InMemoryTurnArchive"]


class InMemoryTurnArchive:
    """Archive hook that keeps evicted turns in a list, oldest first."""

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
