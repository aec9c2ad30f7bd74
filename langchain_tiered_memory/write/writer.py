"""The writer: extraction and the write policy, for the view that owns a thread's watermark.

:class:`MemoryWriter` runs the extractor over turns not extracted yet (the
store keeps the watermark; :meth:`MemoryWriter.extract`) and hands every
candidate to the write policy (:mod:`.policy`): stated, confident facts are
promoted to core memory (superseding or ending what they replace, by the
declared attributes of :mod:`.attributes`); the rest are returned as
``possible`` for the archive. A turn holding a forget request (:mod:`.forget`) is
never extracted.

A failed model extraction leaves its turns not extracted; the caller retries
with the next turn, so no turn is skipped.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.tiers.core import CoreMemory
    >>> from langchain_tiered_memory.values.turns import Turn
    >>> writer = MemoryWriter(CoreMemory())
    >>> _ = writer.extract([Turn(0, (HumanMessage("I live in Paris."),))])
    >>> _ = writer.extract([Turn(1, (HumanMessage("I moved to Berlin."),))])
    >>> writer.core.get("home_city").content
    'moved to Berlin'
    >>> [f.content for f in writer.core.history("home_city")]
    ['lives in Paris', 'moved to Berlin']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.models import ECHO, LOCAL
from langchain_tiered_memory.storage.base import FactChange
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.facts import FactUpdate
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.candidate import Candidate
from langchain_tiered_memory.write.extraction import (
    LLMExtractor,
    RuleBasedExtractor,
)
from langchain_tiered_memory.write.forget import forget_requests
from langchain_tiered_memory.write.learned.earlier import EARLIER
from langchain_tiered_memory.write.policy import (
    MIN_CONFIDENCE,
    apply_decision,
    decide,
    resolve_subject,
)
from langchain_tiered_memory.write.staging import StagedFacts

logger = logging.getLogger(__name__)

__all__ = [
    "Extractor",
    "MemoryWriter",
    "StagedWrite",
    "WriteResult",
    "default_extractor",
    "extractor_from",
    "resolve_subject",
]


class Extractor(Protocol):
    """Anything with ``extract(turns) -> list[Candidate]`` and a ``calls`` count."""

    calls: int

    def extract(self, turns: Sequence[Turn]) -> list[Candidate]:
        """Facts found in ``turns``."""
        ...


@dataclass
class WriteResult:
    """What one :meth:`MemoryWriter.extract` call did."""

    promoted: list[FactUpdate] = field(default_factory=list)
    possible: list[Candidate] = field(default_factory=list)
    ended: list[CoreFact] = field(default_factory=list)
    forgotten: list[CoreFact] = field(default_factory=list)
    forget_everything: bool = False
    extraction_failed: bool = False
    extracted: bool = False


@dataclass(frozen=True)
class StagedWrite:
    """What :meth:`MemoryWriter.stage` would write: its result, and the fact changes
    (in order) to commit with the watermark."""

    result: WriteResult
    changes: tuple[FactChange, ...] = ()


class MemoryWriter:
    """Extract, promote, update and end facts.

    Args:
        core: The core memory to write to.
        extractor: The plain rules by default (this is the building block; a
            memory's offline default is :func:`default_extractor`, the rules with
            links); an :class:`LLMExtractor` batches.
        batch_turns: Turns per LLM extraction call (ignored for rule-based).
        min_confidence: Facts below it are never promoted.
        attributes: Which subjects hold one value at a time (default:
            :data:`~langchain_tiered_memory.write.attributes.DEFAULT_ATTRIBUTES`).
    """

    def __init__(
        self,
        core: CoreMemory,
        *,
        extractor: Extractor | None = None,
        batch_turns: int = 8,
        min_confidence: float = MIN_CONFIDENCE,
        attributes: AttributeSchema | None = None,
    ) -> None:
        if batch_turns < 1:
            raise ValueError("batch_turns must be >= 1")
        if not 0 <= min_confidence <= 1:
            raise ValueError("min_confidence must be between 0 and 1")
        if attributes is not None and not isinstance(attributes, AttributeSchema):
            raise TypeError(
                f"attributes must be an AttributeSchema, got {type(attributes).__name__}"
            )
        self.core = core
        self.extractor: Extractor = extractor or RuleBasedExtractor()
        self.batch_turns = batch_turns
        self.min_confidence = min_confidence
        self.attributes = attributes or AttributeSchema()
        # the rules (and offline extractors that say ``batched = False``) run every turn
        self._batched = not isinstance(self.extractor, RuleBasedExtractor) and getattr(
            self.extractor, "batched", True
        )

    @property
    def calls(self) -> int:
        """LLM calls made by the extractor so far."""
        return int(getattr(self.extractor, "calls", 0))

    def extract(self, turns: Sequence[Turn], *, flush: bool = False) -> WriteResult:
        """Extract facts from ``turns`` (turns not extracted yet, oldest first) if due,
        writing them to :attr:`core` as it goes.

        Rule-based extraction is always due; an LLM extractor waits for
        ``batch_turns`` turns (or ``flush``). Turns holding a forget request
        are never extracted. ``result.extracted`` says whether it ran (and
        succeeded): only then may the caller mark the turns as done. A view
        with a store commits a batch with its watermark instead (:meth:`stage`).
        """
        return self._extract(turns, flush=flush, core=self.core)

    def stage(self, turns: Sequence[Turn], *, flush: bool = False) -> StagedWrite:
        """:meth:`extract`, with every write staged instead of written: the result, and
        the changes to hand to
        :meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`
        with the watermark (so the batch's facts and its watermark commit as one).

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> writer = MemoryWriter(CoreMemory())
            >>> staged = writer.stage([Turn(0, (HumanMessage("I live in Paris."),))])
            >>> [c.fact.content for c in staged.changes], writer.core.get("home_city")
            (['lives in Paris'], None)
        """
        store = StagedFacts(self.core.store, self.core.user_id, extraction=self.extraction)
        core = CoreMemory(store=store, user_id=self.core.user_id, thread_id=self.core.thread_id)
        result = self._extract(turns, flush=flush, core=core, staged=store)
        return StagedWrite(result, tuple(store.changes))

    @property
    def extraction(self) -> str:
        """The extractor's name in audit events (``"rules"`` for the rule-based one)."""
        if isinstance(self.extractor, RuleBasedExtractor):
            return "rules"
        return str(getattr(self.extractor, "name", None) or type(self.extractor).__name__)

    def _extract(
        self,
        turns: Sequence[Turn],
        *,
        flush: bool,
        core: CoreMemory,
        staged: StagedFacts | None = None,
    ) -> WriteResult:
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
            self._apply(facts, result, batch, core, staged)
        result.extracted = True
        return result

    def _apply(
        self,
        facts: Sequence[Candidate],
        result: WriteResult,
        turns: Sequence[Turn],
        core: CoreMemory,
        staged: StagedFacts | None,
    ) -> None:
        """Every candidate through the write policy (:func:`~.policy.decide`), in order."""
        # A fact is as old as the turn that stated it (an imported turn may be years old).
        said_at = {t.index: t.created_at for t in turns}
        # an extractor that links a fact to the current facts it may replace (by meaning)
        link = getattr(self.extractor, "supersedes", None)
        for fact in facts:
            if staged is not None:
                staged.turn = fact.source_turn
            earlier: list[CoreFact] = []
            if callable(link):
                fact = replace(fact, subject=resolve_subject(fact.subject, core))
                linked, earlier = link(fact, core.active())
                if linked is None:  # nothing to write; what it may replace moves out
                    _retire_earlier(core, earlier, fact.source_turn)
                    continue
                fact = linked
            decision = decide(
                fact,
                core.history(),
                schema=self.attributes,
                min_confidence=self.min_confidence,
            )
            if decision.action == "possible":
                result.possible.append(decision.candidate)
            else:
                when = said_at.get(fact.source_turn) if fact.source_turn is not None else None
                applied = apply_decision(decision, core, said_at=when)
                result.promoted.extend(applied.promoted)
                result.ended.extend(applied.ended)
                if not applied.promoted and not applied.ended:
                    continue
            _retire_earlier(core, earlier, fact.source_turn)


def _retire_earlier(core: CoreMemory, earlier: Sequence[CoreFact], turn: int | None) -> None:
    """An unsure link's older facts moved out of the current ones, kept as earlier ones."""
    if earlier:
        core.store.retire_facts(
            core.user_id,
            [f.id for f in earlier],
            reason=f"{EARLIER} possibly replaced by turn {turn}",
        )


def default_extractor() -> Extractor:
    """The offline default: the rules with supersession by meaning (``"rules+links"``,
    :class:`~langchain_tiered_memory.write.learned.LinkedRulesExtractor`).

    It writes exactly the rules' facts, and links each statement no rule read to the
    current facts it may replace, so an update worded in a way no rule has does not
    leave the old value current. It became the default by issue 31's landing rule:
    on a blind file written before the work and run once (``facts_blind_r6``, 170
    items, English and Chinese) stale shown as current fell from 0.289 (the plain
    rules) to 0.178, false facts stayed at 0.031 and core hit rose from 0.229 to
    0.257 (``benchmarks/README.md``). ``extractor="rules"`` gives the plain rules,
    which load no embedder.

    Example:
        >>> type(default_extractor()).__name__
        'LinkedRulesExtractor'
    """
    from langchain_tiered_memory.write.learned import LinkedRulesExtractor

    return LinkedRulesExtractor()


def extractor_from(spec: Any) -> Extractor | None:
    """The fact extractor for ``extractor=``: ``None`` (the offline default,
    :func:`default_extractor`), ``"rules+links"`` (the same), ``"rules"`` (the plain
    rules), ``"learned"``
    (:class:`~langchain_tiered_memory.write.learned.LearnedExtractor`, offline), an
    :class:`~langchain_tiered_memory.write.writer.Extractor`, or a model spec (wrapped
    in :class:`~langchain_tiered_memory.write.extraction.LLMExtractor`).

    Raises:
        TypeError: for something that is neither.

    Example:
        >>> type(extractor_from("rules")).__name__, type(extractor_from(None)).__name__
        ('RuleBasedExtractor', 'LinkedRulesExtractor')
    """
    if spec is None:
        return default_extractor()
    if isinstance(spec, str) and spec.strip().lower() == "rules":
        return RuleBasedExtractor()
    if isinstance(spec, str) and spec.strip().lower() == "learned":
        from langchain_tiered_memory.write.learned import LearnedExtractor

        return LearnedExtractor()
    if isinstance(spec, str) and spec.strip().lower() == "rules+links":
        return default_extractor()
    if isinstance(spec, str | BaseChatModel):
        return LLMExtractor(spec)
    if callable(getattr(spec, "extract", None)):
        return spec
    raise TypeError(
        "extractor must be an Extractor, a chat model, an init_chat_model string, "
        f"{LOCAL!r}, {ECHO!r}, 'rules+links', 'rules' or 'learned'; got {type(spec).__name__}"
    )
