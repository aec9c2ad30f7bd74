"""When a view's turns are extracted: inside the add (the rules), or in batches off it
(a model extractor).

:class:`ExtractionScheduler` is the extraction job of a
:class:`~langchain_tiered_memory.memory.TieredMemory` view. With the rules (or any
:class:`~langchain_tiered_memory.write.writer.Extractor` given) every add extracts
the turns past the store's watermark at once and commits what they write with the
watermark past them in one compare-and-set transaction
(:meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`; the
writes are staged first, :meth:`~langchain_tiered_memory.write.writer.MemoryWriter.stage`):
a crash between the facts and the watermark cannot happen, and a batch another view or
process committed first is not written again (the add re-reads and extracts what is
still pending). With a model extractor an add only asks a
:class:`~langchain_tiered_memory.write.background.BackgroundWorker` for a run once
``extract_every`` turns are pending (or a compression takes pending turns out of
the window); the run extracts each due batch and commits it with the watermark in
one transaction
(:meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`),
so the add never waits for the model.

What it reads of its view (the thread, the writer, the extractor settings) it reads
at each use, through the :class:`ExtractingView` protocol, and the view's
lock guards every read of the view's copy.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory import TieredMemory
    >>> memory = TieredMemory(context_window=4096, extractor="rules")
    >>> _ = memory.add_messages([HumanMessage("I live in Lyon."), AIMessage("Noted.")])
    >>> memory.core.get("home_city").content, memory.head.extracted_through
    ('lives in Lyon', 0)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.records import MemoryRecord, fact_record
from langchain_tiered_memory.storage.base import MemoryBackend, RecordStore, ThreadHead
from langchain_tiered_memory.tiers.buffer import BufferState
from langchain_tiered_memory.tiers.core import CoreMemory
from langchain_tiered_memory.values.facts import FactUpdate
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.background import BackgroundWorker
from langchain_tiered_memory.write.consolidation import Reflector
from langchain_tiered_memory.write.model_extractor import (
    MalformedAnswer,
    ModelExtractor,
    plan_changes,
)
from langchain_tiered_memory.write.policy import possible_record
from langchain_tiered_memory.write.writer import MemoryWriter

logger = logging.getLogger(__name__)

#: How many times in a row an add extracts again after another writer committed first.
_RACES = 3

__all__ = ["ExtractingView", "ExtractionScheduler"]


def _span(turns: Sequence[Turn]) -> str:
    indexes = sorted(t.index for t in turns)
    if not indexes:
        return "(none)"
    return str(indexes[0]) if len(indexes) == 1 else f"{indexes[0]}-{indexes[-1]}"


class ExtractingView(Protocol):
    """What :class:`ExtractionScheduler` reads of the view it extracts for."""

    user_id: str
    thread_id: str
    backend: MemoryBackend
    writer: MemoryWriter
    model_extractor: ModelExtractor | None
    extract_every: int
    reflector: Reflector | None
    counter: TokenCounter
    budget: TokenBudget

    @property
    def head(self) -> ThreadHead:
        """The thread's head as the view last read it."""
        ...

    @property
    def core(self) -> CoreMemory:
        """The user's core memory."""
        ...

    @property
    def archive(self) -> RecordStore:
        """The store's archive."""
        ...


class ExtractionScheduler:
    """Extract a view's turns past the watermark: in the add, or batched in the background.

    Args:
        view: The view extracted for.
        lock: The view's lock (held around every read of its copy of the thread).
        refresh: Catches the view's copy up with the store; returns the buffer.
        moved: Gives the view a head this scheduler committed.
    """

    def __init__(
        self,
        view: ExtractingView,
        *,
        lock: threading.RLock,
        refresh: Callable[[], BufferState],
        moved: Callable[[ThreadHead], None],
    ) -> None:
        self.view = view
        self.lock = lock
        self.refresh = refresh
        self.moved = moved
        self.held: dict[int, Turn] = {}  # pending turns a compression took out of the window
        self.flush_due = False
        self.worker = BackgroundWorker(
            self.run_model_batches,
            name=f"tiered-memory-extract:{view.user_id}/{view.thread_id}",
        )

    def pending(self, state: BufferState) -> list[Turn]:
        """Turns of ``state`` facts were not extracted from yet."""
        through = self.view.head.extracted_through
        return [t for t in state.turns if t.index > through]

    def extract(
        self, state: BufferState, *, flush: bool = False, held: Sequence[Turn] = ()
    ) -> None:
        """Extract facts from the turns of ``state`` not extracted yet (the store keeps
        the watermark).

        With a model extractor this only asks the background worker for a run
        (``held``: pending turns a compression is taking out of the window, kept
        for it); the add never waits for the model. Otherwise the writer's extractor
        runs now and its writes commit with the watermark as one.
        """
        view = self.view
        if view.model_extractor is not None:
            for turn in held:
                self.held.setdefault(turn.index, turn)
            self.flush_due = self.flush_due or flush
            if flush or len(self.pending(state)) >= view.extract_every:
                self.worker.request()
            return
        for turn in held:  # the rules extract them now, with the window's pending ones
            self.held.setdefault(turn.index, turn)
        for _ in range(_RACES):  # a batch another writer committed first: again from its head
            head = view.head
            through = head.extracted_through
            pending = {t.index: t for t in self.held.values() if t.index > through}
            pending.update({t.index: t for t in state.turns if t.index > through})
            if not pending:
                self.held.clear()
                return
            turns = [pending[i] for i in sorted(pending)]
            if self._commit_by_rules(turns, head, flush=flush) is not False:
                return
            state = self.refresh()
        logger.warning(  # nothing written: the next add extracts what is pending
            "thread %s/%s: the extraction watermark moved under %d attempts in a row",
            view.user_id,
            view.thread_id,
            _RACES,
        )

    def _commit_by_rules(
        self, turns: Sequence[Turn], head: ThreadHead, *, flush: bool
    ) -> bool | None:
        """Extract ``turns`` with the writer's extractor and commit what it writes with the
        watermark past them, as one (compare-and-set from ``head``;
        :meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`).

        Returns True when committed, False when another writer moved the watermark first
        (nothing written; the caller re-reads), ``None`` when the extractor did not run
        (a batched extractor not due yet, or one that failed: the turns stay pending).
        """
        view = self.view
        staged = view.writer.stage(turns, flush=flush)
        if not staged.result.extracted:
            return None
        possible = [
            possible_record(f, user_id=view.user_id, thread_id=view.thread_id)
            for f in staged.result.possible
        ]
        through = max(t.index for t in turns)
        if staged.changes or possible:
            done = view.backend.commit_extraction(head, through, staged.changes, records=possible)
            moved = None if done is None else done.head
        else:  # nothing to write with it: the watermark alone (compare-and-set too)
            done, moved = None, view.backend.advance_extraction(head, through)
        if moved is None:  # another writer moved the watermark: nothing of this was written
            return False
        self._advanced(head, through)
        if done is not None:
            self.observe(done.updates, possible)
        return True

    def observe(self, updates: Sequence[FactUpdate], possible: Sequence[MemoryRecord]) -> None:
        """Show the reflector (if any) what was written; archive its observations."""
        reflector, view = self.view.reflector, self.view
        if reflector is None:
            return
        written = [fact_record(view.user_id, u.fact) for u in updates] + list(possible)
        observations = reflector.observe(written)
        if observations:
            view.archive.add(observations)

    def run_model_batches(self) -> None:
        """The background worker's job: extract every due batch with the model, each
        committed with the watermark in one transaction
        (:meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`).

        The model is called outside the view's lock. A batch another view committed
        first is dropped and the rest re-read; a model or storage failure leaves the
        batch due for the next run (nothing of it was written). The rules extract,
        in order, a turn too long for any call within the input budget (all the
        pending turns when not even the instructions fit) and the turns of a call
        the model answered out of schema; the watermark then moves past them as
        the rules path moves it, so no turn is skipped or extracted twice.
        """
        view = self.view
        extractor = view.model_extractor
        if extractor is None:  # the view went back to the rules: its next add extracts
            return
        flush = False
        for _ in range(1000):  # every due batch; the bound only guards against a loop
            with self.lock:
                state = self.refresh()
                head = view.head
                flush, self.flush_due = flush or self.flush_due, False
                through = head.extracted_through
                pending = {t.index: t for t in self.held.values() if t.index > through}
                pending.update({t.index: t for t in state.turns if t.index > through})
                turns = [pending[i] for i in sorted(pending)]
                facts = view.core.active()
                budget = view.budget.input_budget
            if not turns or (not flush and len(turns) < view.extract_every):
                return
            try:
                try:
                    answer = extractor.decide(
                        turns, facts, counter=view.counter, max_input_tokens=budget
                    )
                except MalformedAnswer as exc:  # asking again would most likely get the same
                    logger.warning("%s: the rules extract turns %s instead", exc, _span(exc.turns))
                    self._by_rules(exc.turns or turns[:1], head)
                    continue
                if answer is None:  # not even the oldest turn fits a call: the rules take it
                    alone = extractor.overhead(view.counter) < budget
                    by_rules = turns[:1] if alone else turns
                    logger.info(
                        "the extraction prompt cannot fit turn %s in %d input tokens: the "
                        "rules extract turns %s",
                        turns[0].index,
                        budget,
                        _span(by_rules),
                    )
                    self._by_rules(by_rules, head)
                    continue
                changes, possible, dropped = plan_changes(
                    answer,
                    user_id=view.user_id,
                    thread_id=view.thread_id,
                    schema=view.writer.attributes,
                )
                done = view.backend.commit_extraction(
                    head, answer.through, changes, records=possible
                )
            except BaseException:
                with self.lock:  # nothing was written: the batch stays due, as its flush
                    self.flush_due = self.flush_due or flush
                raise
            if dropped:
                logger.info("model extraction: %d decisions dropped: %s", len(dropped), dropped)
            if done is None:  # another view committed this batch: read where it is
                with self.lock:
                    self.refresh()
                continue
            self._advanced(head, answer.through)
            self.observe(done.updates, possible)

    def _advanced(self, head: ThreadHead, through: int) -> None:
        """Take a watermark this scheduler moved to ``through`` from where ``head`` saw it
        (the view's head may have moved on since: only the watermark is taken)."""
        view = self.view
        with self.lock:
            for index in [i for i in self.held if i <= through]:
                del self.held[index]
            mine = view.head
            if mine.generation == head.generation:
                self.moved(replace(mine, extracted_through=max(mine.extracted_through, through)))

    def _by_rules(self, turns: Sequence[Turn], head: ThreadHead) -> None:
        """Extract ``turns`` (the oldest pending ones) with the writer's extractor - the
        rules - and commit what they write with the watermark past them, as one
        (compare-and-set from ``head``), as an add does without a model: for a turn too
        long for any model call, or a batch the model answered out of schema. When another
        writer moved the watermark first nothing is written (the run re-reads)."""
        committed = self._commit_by_rules(turns, head, flush=True)
        if committed is None:
            raise RuntimeError(f"the rules could not extract turns {_span(turns)}")
        if not committed:
            with self.lock:  # another writer moved the watermark: read where it is
                self.refresh()

    def flush(self, timeout: float | None = None) -> bool:
        """Extract every pending turn now and wait for it (with a model extractor);
        False if ``timeout`` seconds passed first."""
        if self.view.model_extractor is None:
            return True
        with self.lock:
            state = self.refresh()
            if not self.pending(state) and not self.held:
                return self.worker.wait(timeout)
            self.flush_due = True
            self.worker.request()
        return self.worker.wait(timeout)
