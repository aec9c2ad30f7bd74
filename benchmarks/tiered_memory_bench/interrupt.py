"""What a bench leaves when it is stopped: the sizes that finished.

A long bench (a million-record ``overhead`` run, ``writes`` at 100,000 turns)
measures one size after another. Stopped with Ctrl-C, it raises
:class:`BenchInterrupted` carrying the result so far (``"interrupted": True``,
the finished sizes only), and the command line prints and writes that
instead of exiting empty-handed.

Example:
    >>> result = {"sizes": {}}
    >>> try:
    ...     with keep_partial(result):
    ...         result["sizes"]["100"] = {"add_p50_ms": 0.8}
    ...         raise KeyboardInterrupt
    ... except BenchInterrupted as stopped:
    ...     stopped.partial
    {'sizes': {'100': {'add_p50_ms': 0.8}}, 'interrupted': True}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["BenchInterrupted", "keep_partial"]


class BenchInterrupted(KeyboardInterrupt):
    """A bench stopped by Ctrl-C; ``partial`` is its result up to the last finished size."""

    def __init__(self, partial: dict[str, Any]) -> None:
        super().__init__("interrupted")
        self.partial = partial


@contextmanager
def keep_partial(result: dict[str, Any]) -> Iterator[None]:
    """Turn a Ctrl-C inside the block into :class:`BenchInterrupted` with ``result``."""
    try:
        yield
    except BenchInterrupted:
        raise
    except KeyboardInterrupt as exc:
        result["interrupted"] = True
        raise BenchInterrupted(result) from exc
