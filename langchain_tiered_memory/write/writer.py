"""The write policy: what becomes a memory, where it goes, and how it changes.

:class:`MemoryWriter` watches new turns and

* extracts facts (rule-based at once, or an LLM in batches of ``batch_turns``
  turns so upkeep costs at most ``1 / batch_turns`` calls per turn);
* **promotes** only stated, confident facts into core memory; inferred or
  uncertain ones are returned for the archive, marked "possibly";
* **updates** without loss: a new fact about the same subject supersedes the
  old one, which stays in the history with its time and reason;
* **forgets** on an explicit request ("forget that", "delete everything you
  know about me"), returning what was removed so the caller removes it from
  the archive too.

A failed LLM extraction keeps its turns pending and retries after the next
batch, so no turn is skipped.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.tiers.core import CoreMemory
    >>> from langchain_tiered_memory.values.turns import Turn
    >>> writer = MemoryWriter(CoreMemory())
    >>> _ = writer.observe([Turn(0, (HumanMessage("I live in Paris."),))])
    >>> _ = writer.observe([Turn(1, (HumanMessage("I moved to Berlin."),))])
    >>> writer.core.get("home_city").content
    'moved to Berlin'
    >>> [f.content for f in writer.core.history("home_city")]
    ['lives in Paris', 'moved to Berlin']
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.models import ECHO, LOCAL
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory, FactUpdate
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.extraction import (
    ExtractedFact,
    LLMExtractor,
    RuleBasedExtractor,
)
from langchain_tiered_memory.write.forget import forget_in_core, forget_requests
from langchain_tiered_memory.write.learned.earlier import EARLIER

logger = logging.getLogger(__name__)

__all__ = ["Extractor", "MemoryWriter", "WriteResult", "extractor_from", "resolve_subject"]


class Extractor(Protocol):
    """Anything with ``extract(turns) -> list[ExtractedFact]`` and a ``calls`` count."""

    calls: int

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """Facts found in ``turns``."""
        ...

    async def aextract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """Async twin of :meth:`extract`."""
        ...


@dataclass
class WriteResult:
    """What one :meth:`MemoryWriter.observe` call did."""

    promoted: list[FactUpdate] = field(default_factory=list)
    possible: list[ExtractedFact] = field(default_factory=list)
    forgotten: list[CoreFact] = field(default_factory=list)
    forget_everything: bool = False
    extraction_failed: bool = False
    extracted: bool = False


_STOP = {"my", "the", "a", "an", "that", "this", "about", "what", "i", "said", "you", "it"}


def resolve_subject(subject: str, core: CoreMemory, *, block: str = "human") -> str:
    """The subject a new fact updates, when the extractor could only point at it.

    * ``"budget:*"`` ("I can go up to 850 now"): the newest current fact whose
      subject starts with ``budget:``, else ``"budget"``;
    * ``"~coffee"`` ("I switched from coffee to tea"): the newest current fact
      that mentions those words, else ``"usual"``;
    * ``"plan:check-up"`` when no such plan exists ("they moved my check-up
      to Thursday"): the newest plan whose text names a check-up;
    * anything else as it is.

    Example:
        >>> from langchain_tiered_memory.tiers.core import CoreFact
        >>> core = CoreMemory([CoreFact.new("budget:laptop", "budget for laptop: 600")])
        >>> resolve_subject("budget:*", core), resolve_subject("budget:*", CoreMemory())
        ('budget:laptop', 'budget')
    """
    current = [
        f for f in core.history() if f.status in ("active", "archived") and f.block == block
    ][::-1]  # newest first
    if subject.endswith(":*"):
        prefix = subject[:-1]
        match = next((f for f in current if f.subject.startswith(prefix)), None)
        return match.subject if match else subject[:-2]
    if subject.startswith("~"):
        words = [w for w in subject[1:].split() if w not in _STOP]
        match = next(
            (
                f
                for f in current
                if words
                and all(
                    re.search(rf"\b{re.escape(w)}", f"{f.subject} {f.content}", re.I) for w in words
                )
            ),
            None,
        )
        return match.subject if match else "usual"
    if subject.startswith("plan:") and not any(f.subject == subject for f in current):
        word = subject.split(":", 1)[1]
        match = next(
            (
                f
                for f in current
                if f.subject.startswith("plan:")
                and re.search(rf"\b{re.escape(word)}\b", f.content, re.I)
            ),
            None,
        )
        return match.subject if match else subject
    return subject


class MemoryWriter:
    """Extract, promote, update and forget facts.

    Args:
        core: The core memory to write to.
        extractor: Rule-based by default; an :class:`LLMExtractor` batches.
        batch_turns: Turns per LLM extraction call (ignored for rule-based).
        min_confidence: Facts below it are never promoted.
    """

    def __init__(
        self,
        core: CoreMemory,
        *,
        extractor: Extractor | None = None,
        batch_turns: int = 8,
        min_confidence: float = 0.75,
    ) -> None:
        if batch_turns < 1:
            raise ValueError("batch_turns must be >= 1")
        if not 0 <= min_confidence <= 1:
            raise ValueError("min_confidence must be between 0 and 1")
        self.core = core
        self.extractor: Extractor = extractor or RuleBasedExtractor()
        self.batch_turns = batch_turns
        self.min_confidence = min_confidence
        self.pending: list[Turn] = []
        # the rules (and offline extractors that say ``batched = False``) run every turn
        self._batched = not isinstance(self.extractor, RuleBasedExtractor) and getattr(
            self.extractor, "batched", True
        )
        self._observed_through = -1

    @property
    def calls(self) -> int:
        """LLM calls made by the extractor so far."""
        return int(getattr(self.extractor, "calls", 0))

    def _new(self, turns: Sequence[Turn]) -> list[Turn]:
        fresh = [t for t in turns if t.index > self._observed_through]
        if fresh:
            self._observed_through = max(t.index for t in fresh)
        return fresh

    def _due(self, flush: bool) -> list[Turn]:
        if not self._batched:
            batch, self.pending = self.pending, []
            return batch
        if self.pending and (flush or len(self.pending) >= self.batch_turns):
            return list(self.pending)
        return []

    def observe(self, turns: Sequence[Turn], *, flush: bool = False) -> WriteResult:
        """Process turns not seen before (each turn is observed once).

        Args:
            turns: Recent turns (already-observed ones are skipped).
            flush: Extract now even if the batch is not full (e.g. at compression).
        """
        result = WriteResult()
        fresh = self._new(turns)
        self.pending.extend(self._forget_requests(fresh, result))
        batch = self._due(flush)
        if batch:
            try:
                facts = self.extractor.extract(batch)
            except Exception as exc:  # noqa: BLE001 - retried with the next batch
                logger.warning(
                    "fact extraction failed (%r); %d turns stay pending", exc, len(batch)
                )
                result.extraction_failed = True
                return result
            self.pending = [t for t in self.pending if t not in batch]
            self._apply(facts, result, batch)
        return result

    def extract(self, turns: Sequence[Turn], *, flush: bool = False) -> WriteResult:
        """Extract facts from ``turns`` (turns not extracted yet, oldest first) if due.

        Rule-based extraction is always due; an LLM extractor waits for
        ``batch_turns`` turns (or ``flush``). Turns holding a forget request
        are never extracted. ``result.extracted`` says whether it ran (and
        succeeded): only then may the caller mark the turns as done.
        """
        result = WriteResult()
        asked = {t.index for t, _ in forget_requests(turns)}
        batch = [t for t in turns if t.index not in asked]
        if self._batched and not flush and len(batch) < self.batch_turns:
            return result
        if batch:
            try:
                facts = self.extractor.extract(batch)
            except Exception as exc:  # noqa: BLE001 - retried with the next batch
                logger.warning(
                    "fact extraction failed (%r); %d turns stay pending", exc, len(batch)
                )
                result.extraction_failed = True
                return result
            self._apply(facts, result, batch)
        result.extracted = True
        return result

    async def aobserve(self, turns: Sequence[Turn], *, flush: bool = False) -> WriteResult:
        """Async twin of :meth:`observe`."""
        result = WriteResult()
        fresh = self._new(turns)
        self.pending.extend(self._forget_requests(fresh, result))
        batch = self._due(flush)
        if batch:
            try:
                facts = await self.extractor.aextract(batch)
            except Exception as exc:  # noqa: BLE001
                logger.warning(
                    "fact extraction failed (%r); %d turns stay pending", exc, len(batch)
                )
                result.extraction_failed = True
                return result
            self.pending = [t for t in self.pending if t not in batch]
            self._apply(facts, result, batch)
        return result

    def _apply(
        self, facts: Sequence[ExtractedFact], result: WriteResult, turns: Sequence[Turn]
    ) -> None:
        # A fact is as old as the turn that stated it (an imported turn may be years old).
        said_at = {t.index: t.created_at for t in turns}
        # an extractor that links a fact to the current facts it may replace (by meaning)
        link = getattr(self.extractor, "supersedes", None)
        for fact in facts:
            earlier: list[CoreFact] = []
            if callable(link):
                fact = replace(fact, subject=resolve_subject(fact.subject, self.core))
                fact, earlier = link(fact, self.core.active())
            if fact.stated and fact.confidence >= self.min_confidence:
                dated = {}
                if fact.source_turn in said_at:
                    dated["created_at"] = said_at[fact.source_turn]
                subject = resolve_subject(fact.subject, self.core)
                update = self.core.upsert(
                    CoreFact.new(
                        subject,
                        fact.content,
                        category=fact.category,
                        confidence=fact.confidence,
                        stated=True,
                        source_turn=fact.source_turn,
                        source="user",
                        importance=fact.importance,
                        valid_from=fact.valid_from,
                        valid_until=fact.valid_until,
                        **dated,
                    ),
                    reason=f"superseded by turn {fact.source_turn}",
                )
                if not update.unchanged:
                    result.promoted.append(update)
                    if earlier:  # unsure link: the older fact is kept as an earlier one
                        self.core.store.retire_facts(
                            self.core.user_id,
                            [f.id for f in earlier],
                            reason=f"{EARLIER} possibly replaced by turn {fact.source_turn}",
                        )
            else:
                result.possible.append(
                    replace(fact, subject=resolve_subject(fact.subject, self.core))
                )
                if earlier:  # a possible update: the older fact is shown as an earlier one
                    self.core.store.retire_facts(
                        self.core.user_id,
                        [f.id for f in earlier],
                        reason=f"{EARLIER} possibly replaced by turn {fact.source_turn}",
                    )

    def _forget_requests(self, turns: Sequence[Turn], result: WriteResult) -> list[Turn]:
        """Carry out forget requests on core memory (:mod:`.forget`); return the turns left
        for extraction (a request is never extracted)."""
        asked = forget_requests(turns)
        for _, request in asked:
            result.forgotten.extend(forget_in_core(self.core, request))
            if request.everything:
                result.forget_everything = True
                self.pending.clear()
        done = {t.index for t, _ in asked}
        return [t for t in turns if t.index not in done]


def extractor_from(spec: Any) -> Extractor | None:
    """The fact extractor for ``extractor=``: ``None``/``"rules"`` (rule-based),
    ``"learned"`` (:class:`~langchain_tiered_memory.write.learned.LearnedExtractor`, offline),
    an :class:`~langchain_tiered_memory.write.writer.Extractor`, or a model spec (wrapped in
    :class:`~langchain_tiered_memory.write.extraction.LLMExtractor`).

    Raises:
        TypeError: for something that is neither.

    Example:
        >>> extractor_from("rules") is None
        True
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "rules"):
        return None
    if isinstance(spec, str) and spec.strip().lower() == "learned":
        from langchain_tiered_memory.write.learned import LearnedExtractor

        return LearnedExtractor()
    if isinstance(spec, str | BaseChatModel):
        return LLMExtractor(spec)
    if callable(getattr(spec, "extract", None)):
        return spec
    raise TypeError(
        "extractor must be an Extractor, a chat model, an init_chat_model string, "
        f"{LOCAL!r}, {ECHO!r}, 'learned' or 'rules'; got {type(spec).__name__}"
    )
