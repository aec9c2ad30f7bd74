"""Compression of one thread, committed to the store: what a view runs when it is due.

:func:`~langchain_tiered_memory.tiers.buffer.compress` decides, as a pure
function, what a compression does to a buffer; :func:`compress_and_commit`
carries it out against a backend - the evicted turns archived, the summary
and the window moved, the audit event written, all in one transaction, and
only if the thread is still as the view read it - and records a failed
attempt (a summary that failed, an archive that refused the turns) so the
trigger backs off. Nothing is lost either way: a failed commit changes
nothing, and the turns stay in the buffer for the next attempt.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.tokens import resolve_token_counter
    >>> from langchain_tiered_memory.storage import open_backend
    >>> from langchain_tiered_memory.tiers.buffer import CompressionTriggers
    >>> from langchain_tiered_memory.tiers.summarize import summarizer_from
    >>> from langchain_tiered_memory.tiers.window import ThreadWindow
    >>> backend = open_backend(None, embeddings=None)
    >>> for i in range(12):
    ...     _ = backend.append_messages("ana", "t1", [HumanMessage(f"question {i} " * 20),
    ...                                               AIMessage(f"answer {i} " * 20)])
    >>> counter = resolve_token_counter("gpt-4o-mini")
    >>> window = ThreadWindow(counter)
    >>> read = backend.read_thread("ana", "t1", None)
    >>> window.apply(read.messages); window.head = read.head
    >>> done = compress_and_commit(
    ...     backend, window.state(), read.head, seen=read.head.last_seq, cap=400,
    ...     triggers=CompressionTriggers(), summarizer=summarizer_from(None, counter),
    ...     counter=counter, force=False)
    >>> done.event.kind, done.head.buffer_start > 0, done.head == backend.read_thread(
    ...     "ana", "t1", None).head
    ('compression', True, True)
    >>> backend.close()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.storage.base import MemoryBackend, ThreadHead
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.tiers.buffer import (
    BufferState,
    CompressionEvent,
    CompressionTriggers,
    compress,
)
from langchain_tiered_memory.tiers.summarize import Summarizer
from langchain_tiered_memory.values.turns import Turn

__all__ = ["Committed", "compress_and_commit"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Committed:
    """What :func:`compress_and_commit` did.

    Attributes:
        event: The compression event to report (``None``: nothing was due, or
            another view compressed these turns first).
        head: The thread's head as the backend wrote it, for the view to take
            without reading the thread back; ``None`` when the view must read
            it (another view moved the window, or a failed attempt was noted).
    """

    event: CompressionEvent | None
    head: ThreadHead | None


def compress_and_commit(
    backend: MemoryBackend,
    state: BufferState,
    head: ThreadHead,
    *,
    seen: int,
    cap: int,
    triggers: CompressionTriggers,
    summarizer: Summarizer,
    counter: TokenCounter,
    force: bool,
) -> Committed:
    """Compress ``state`` if due (or ``force``) and commit the result as one write.

    Args:
        backend: Where the thread lives.
        state: The buffer as the view holds it, read with ``head``.
        head: The head the commit is conditional on (compare-and-set).
        seen: The newest message ``seq`` the view has seen (messages after it
            count as new for the next trigger).
        cap, triggers, summarizer, counter, force: As for
            :func:`~langchain_tiered_memory.tiers.buffer.compress`.
    """
    evicted: list[Turn] = []
    result = compress(
        state,
        cap=cap,
        triggers=triggers,
        summarizer=summarizer,
        archive=evicted.extend,
        counter=counter,
        force=force,
    )
    event = result.event
    if event is None:
        return Committed(None, head)
    audit: dict[str, Any] = {
        "result": event.kind,
        "trigger": event.trigger,
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "turns": list(event.evicted_turns),
        "error": event.error,
    }
    new = result.state
    if event.kind not in ("compression", "page_out_unsummarized"):  # a summary that failed
        _note_attempt(backend, head, seen, new.failures, event, audit)
        return Committed(event, None)
    try:
        committed = backend.commit_compression(
            head,
            evicted=evicted,
            summary=new.summary,
            summarized_through=new.summarized_through,
            buffer_start=new.turns[0].index if new.turns else new.next_index,
            compress_seq=seen,
            failures=new.failures,
            audit=audit,
        )
    except Exception as exc:  # noqa: BLE001 - a failing archive must not lose turns
        # nothing changed (the commit is one transaction); retried later
        logger.error(
            "archiving turns %s failed (%r); buffer left unchanged", list(event.evicted_turns), exc
        )
        failed = CompressionEvent(
            "archive_failed",
            event.trigger,
            event.tokens_before,
            event.tokens_before,
            (),
            state.summary_tokens,
            repr(exc),
        )
        _note_attempt(backend, head, seen, state.failures, failed, audit)
        return Committed(failed, None)
    if committed is None:  # another view compressed these turns meanwhile
        return Committed(None, None)
    return Committed(event, committed)


def _note_attempt(
    backend: MemoryBackend,
    head: ThreadHead,
    seen: int,
    failures: int,
    event: CompressionEvent,
    audit: dict[str, Any],
) -> None:
    """Record a compression attempt that changed nothing, and its ``error`` event."""
    try:
        backend.note_compression_attempt(head, compress_seq=seen, failures=failures)
    except StorageError:
        logger.exception("could not record the failed compression attempt")
    payload = {**audit, "result": event.kind, "error": event.error}
    try:
        backend.audit.record_all(
            [("error", payload)], user_id=head.user_id, thread_id=head.thread_id
        )
    except StorageError:
        logger.exception("could not write the error audit event")
