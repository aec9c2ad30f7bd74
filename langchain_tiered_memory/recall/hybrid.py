"""Recall: which archived records come back for a query, and in what order.

Two scorers rank one query's candidates, both reading their signals,
computed once per candidate (:func:`~.signals.candidate_signals`). By
default :class:`Recaller` uses the learned one
(:mod:`~langchain_tiered_memory.recall.ranker`: a linear model over those
signals and a few more, fitted on LoCoMo and LongMemEval dev data and
validated across conversations); ``ranker=None`` - and the pure
:func:`score_candidates` by default - uses the hand-set one
(:mod:`~langchain_tiered_memory.recall.weights`: the signals summed with
:class:`~.weights.RecallWeights`), which is also the fallback when the
packaged model cannot be read. Near-duplicates merge into their best-ranked
copy (:func:`~.dedupe.merge_near_duplicates`); superseded facts are left out
and the turns that stated them rank below the fact now current
(:func:`rank_below_replacements`).

:class:`Recaller` runs this against an archive: it embeds the query once (with
the names of the speakers it asks about taken out, since a name in the
question otherwise pulls in every turn that *addresses* that person), pulls
dense and keyword candidates, scores them, marks the winners as accessed and
returns them.

The defaults are the recipe measured best with ``tiered-memory bench
retrieval`` on LoCoMo: each signal was added only if it lifted recall@5 /
@10. The learned ranker was fitted on LoCoMo and LongMemEval dev
data and validated leave-one-conversation-out; most of its gain comes from
weights fitted rather than set, the rest from the neighbours' scores over a
window, the keyword score of the previous turn, and traits of the text
matched to the kind of question (*when* / a time word, *how many* / a
number), each counted times the text's match. The figures of each step,
and what was measured and left out (``python -m
tiered_memory_bench.recall_levers``: session digests, session-diverse
packing, wider candidate nets, entity-overlap and two-speaker features,
pseudo-relevance feedback, entity links across sessions, a small neural
network), are in ``benchmarks/README.md`` ("retrieval - LoCoMo evidence
recall").

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> a = MemoryRecord.new(user_id="u", kind="fact", text="allergic to peanuts",
    ...                      importance=9, created_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> b = MemoryRecord.new(user_id="u", kind="turn", text="likes jazz", importance=3,
    ...                      created_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    >>> ranked = score_candidates([Candidate(a, dense=0.8, keyword=2.0),
    ...                            Candidate(b, dense=0.5, keyword=None)], now=now)
    >>> [r.record.text for r in ranked]
    ['allergic to peanuts', 'likes jazz']
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.recall.calibration import (
    Calibration,
    calibration_inputs,
    default_calibration,
    default_min_score,
)
from langchain_tiered_memory.recall.dedupe import fold_repeated_lines, merge_near_duplicates
from langchain_tiered_memory.recall.excerpt import RECALL_EXCERPT_CHARS, excerpt
from langchain_tiered_memory.recall.ranker import (
    FEATURES,
    LinearRanker,
    default_ranker,
    signal_features,
)
from langchain_tiered_memory.recall.signals import (
    Candidate,
    Signals,
    candidate_signals,
    holds_identifiers,
    named_speakers,
    quoted_identifiers,
    speaker_of,
    strip_names,
)
from langchain_tiered_memory.recall.time_expressions import TimeWindow
from langchain_tiered_memory.recall.weights import Fusion, RecallWeights, hand_scores
from langchain_tiered_memory.records import MemoryRecord, RecordKind, ScoredRecord, utcnow
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.values import RecalledMemory

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_K",
    "Candidate",
    "Fusion",
    "RecallArchive",
    "RecallWeights",
    "Recaller",
    "merge_candidates",
    "rank_below_replacements",
    "score_candidates",
    "stale_turns",
    "to_recalled_memories",
]

#: Records returned by default: past the third to fifth memory, most are noise.
DEFAULT_K = 5


def score_candidates(
    candidates: Sequence[Candidate],
    *,
    now: datetime | None = None,
    weights: RecallWeights | None = None,
    k: int | None = DEFAULT_K,
    query: str | None = None,
    recency_decay: float = 0.995,
    relevance_floor: float | None = None,
    fusion: Fusion = "minmax",
    rrf_k: int = 60,
    dedupe: bool = True,
    near_duplicate: float = 0.9,
    session_top: int = 3,
    keyword_floor: float = 0.5,
    time_window: TimeWindow | Literal["auto"] | None = "auto",
    ranker: LinearRanker | None = None,
    calibration: Calibration | Literal["default"] | None = None,
    min_score: float | None = None,
) -> list[ScoredRecord]:
    """Rank candidates by their weighted, scaled signals or by a learned model (pure).

    Args:
        candidates: Records with raw dense and/or keyword scores.
        now: The time recency is measured from (default: now, UTC).
        weights: Signal weights (default :class:`RecallWeights`).
        k: Return at most this many (default 5; ``None``: all, ranked).
        query: The query text; needed only for the speaker signal.
        recency_decay: Recency multiplier per hour since last access.
        relevance_floor: Drop candidates whose raw dense similarity is below
            this *and* that matched no keyword (cosine scales differ between
            embedders, so there is no universal default; ``None`` keeps all).
        fusion: ``"minmax"`` (weighted sum of scaled scores, the measured
            best), ``"rrf"`` (reciprocal-rank fusion) or ``"both"`` (their mean).
        rrf_k: The RRF constant.
        dedupe: Merge near-duplicates into the best-ranked copy: records with
            the same normalised text, a word-set Jaccard similarity of at least
            ``near_duplicate``, or whose words are (95%) all in a better-ranked
            record, and summaries that open like a better-ranked one and mostly
            repeat it (running summaries carry their oldest lines forward,
            :func:`~.dedupe.fold_repeated_lines`).
            The copy kept gains the others' ``sources``.
        near_duplicate: Jaccard threshold for near-duplicates (texts of four
            or more distinct words).
        session_top: The session signal sums this many best relevance scores.
        keyword_floor: See :func:`~.signals.keyword_scale` (a lone keyword match scores 1).
        time_window: The window the time signal matches records against;
            ``"auto"`` reads it from ``query`` (:func:`~.time_expressions.query_window`,
            relative to ``now``), ``None`` turns the signal off.
        ranker: Score by this learned model instead
            (:class:`~langchain_tiered_memory.recall.ranker.LinearRanker`, e.g.
            :func:`~langchain_tiered_memory.recall.ranker.default_ranker`): its
            score of :func:`~langchain_tiered_memory.recall.ranker.candidate_features`
            plus ``weights.recency`` and ``weights.importance`` times those
            signals. The other weights, ``fusion``, ``session_top`` and
            ``keyword_floor`` then do not apply; ``parts`` holds the scaled
            dense, keyword, speaker, session and time signals as the model saw
            them and ``learned``, the model's score.
        calibration: Turn the ranking scores into calibrated scores in [0, 1]
            (:mod:`~langchain_tiered_memory.recall.calibration`): a
            :class:`~.calibration.Calibration`, or ``"default"`` for the
            packaged model of this ranker (learned or hand-set) and archive
            (with or without dense scores). ``parts["rank_score"]`` then
            keeps the ranking score. ``None``: scores stay uncalibrated.
        min_score: The relevance floor: return nothing when no candidate
            scores at least this (with a calibration, a calibrated score, e.g.
            :data:`~.calibration.DEFAULT_MIN_SCORE`) or holds an identifier
            the query quotes. Otherwise the best ``k`` come back, each with
            its score. (A floor per record would cut what the lower ranks
            find: measured, it costs recall; ``benchmarks/README.md``.)

    A record that holds more of the codes, numbers and quoted names of the
    query (:func:`~.signals.quoted_identifiers`: ``"4821-3907"``,
    ``"LX1234"``, a phrase in quotes) ranks before one that holds fewer,
    whatever the other signals say: a near miss (``"4821-3970"``) never
    outranks the exact one.

    Returns:
        :class:`~langchain_tiered_memory.records.ScoredRecord` items, best
        first; ``parts`` holds each scaled signal and ``score`` their
        weighted sum (or its calibrated value; ``parts["identifiers"]``, the
        quoted identifiers the record holds, when the query has any).

    Example:
        >>> from datetime import timedelta, timezone
        >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
        >>> def rec(text, hours, importance=5.0):
        ...     return MemoryRecord.new(user_id="u", kind="fact", text=text,
        ...                             importance=importance,
        ...                             created_at=now - timedelta(hours=hours))
        >>> cands = [Candidate(rec("old but relevant", 1000), dense=0.9),
        ...          Candidate(rec("fresh, less relevant", 1), dense=0.6),
        ...          Candidate(rec("Old but relevant!", 2000), dense=0.85)]
        >>> [s.record.text for s in score_candidates(cands, now=now)]
        ['old but relevant', 'fresh, less relevant']
        >>> w = RecallWeights(relevance=1.0, recency=2.0)
        >>> [s.record.text for s in score_candidates(cands, now=now, weights=w, k=1)]
        ['fresh, less relevant']
    """
    weights = weights or RecallWeights()
    now = now or utcnow()
    if relevance_floor is not None:
        candidates = [
            c
            for c in candidates
            if c.keyword is not None or (c.dense is not None and c.dense >= relevance_floor)
        ]
    if not candidates:
        return []
    if ranker is not None:  # the signals as the model was fitted on them
        signals = candidate_signals(
            candidates,
            query=query or "",
            now=now,
            recency_decay=recency_decay,
            time_window=time_window,
        )
        scored = _learned_scores(signals, ranker, weights, query or "")
    else:
        signals = candidate_signals(
            candidates,
            query=query or "",
            now=now,
            neighbour=weights.neighbour,
            keyword_floor=keyword_floor,
            recency_decay=recency_decay,
            # a time weight of 0 turns the signal off: the query is not read for a window
            time_window=None if time_window == "auto" and not weights.time else time_window,
        )
        scored = hand_scores(signals, weights, fusion=fusion, rrf_k=rrf_k, session_top=session_top)
    model = _calibration_for(calibration, ranker, candidates)
    if model is not None:
        inputs = calibration_inputs(candidates, [s.score for s in scored], query or "")
        calibrated = model.probability(inputs)
        scored = [
            ScoredRecord(s.record, float(p), s.parts | {"rank_score": s.score})
            for s, p in zip(scored, calibrated, strict=True)
        ]
    identifiers = quoted_identifiers(query) if query else []
    if identifiers:
        scored = [
            ScoredRecord(
                s.record,
                s.score,
                s.parts | {"identifiers": holds_identifiers(s.record.text, identifiers)},
            )
            for s in scored
        ]
    if calibration == "default" and model is None:
        min_score = None  # no packaged model (logged): a floor on raw scores would mean nothing
    if min_score is not None and not any(
        s.score >= min_score or s.parts.get("identifiers") for s in scored
    ):
        return []  # nothing is relevant enough: no best-of-the-rest
    scored.sort(key=lambda s: (-s.parts.get("identifiers", 0), -s.score))
    if not dedupe:
        return scored[:k] if k is not None else scored
    if k is None or not any(s.record.kind == "summary" for s in scored):
        return fold_repeated_lines(merge_near_duplicates(scored, k=k, threshold=near_duplicate))
    # summaries may fold into one another (fold_repeated_lines): merge a spare margin
    merged = merge_near_duplicates(scored, k=2 * k + 8, threshold=near_duplicate)
    return fold_repeated_lines(merged, k=k)


_COLUMN = {name: i for i, name in enumerate(FEATURES)}


def _calibration_for(
    calibration: Calibration | Literal["default"] | None,
    ranker: LinearRanker | None,
    candidates: Sequence[Candidate],
) -> Calibration | None:
    """The calibration model to apply (``"default"``: the packaged one for this case)."""
    if calibration != "default":
        return calibration
    dense = any(c.dense is not None for c in candidates)
    return default_calibration("hand" if ranker is None else "learned", dense=dense)


def _learned_scores(
    signals: Signals, ranker: LinearRanker, weights: RecallWeights, query: str
) -> list[ScoredRecord]:
    """Each candidate with the ranker's score plus the weighted recency and importance."""
    features = signal_features(signals, query=query)
    learned = ranker.score(features)
    recency, importance = signals.recency, signals.importance
    total = (
        learned + weights.recency * np.array(recency) + weights.importance * np.array(importance)
    )
    shown = {
        "relevance": features[:, _COLUMN["dense"]],
        "keyword": features[:, _COLUMN["keyword"]],
        "speaker": np.maximum(features[:, _COLUMN["speaker"]], features[:, _COLUMN["role"]]),
        "session": features[:, _COLUMN["session"]],
        "time": features[:, _COLUMN["time"]],
    }
    return [
        ScoredRecord(
            candidate.record,
            float(total[i]),
            {name: float(values[i]) for name, values in shown.items()}
            | {"recency": recency[i], "importance": importance[i], "learned": float(learned[i])},
        )
        for i, candidate in enumerate(signals.candidates)
    ]


def _fact_thread(fact: MemoryRecord) -> str | None:
    thread = fact.metadata.get("thread_id") or fact.thread_id
    return str(thread) if thread else None


def stale_turns(
    ranked: Sequence[ScoredRecord], superseded: Iterable[MemoryRecord]
) -> dict[str, MemoryRecord]:
    """The ranked turns that stated a superseded fact: turn record id -> that fact.

    A fact record names the turn it was taken from in ``sources`` (e.g.
    ``"turn:3"``) and its thread in ``metadata["thread_id"]``; a turn record
    carries the same source. Facts whose ``metadata["superseded"]`` is not
    true are ignored.

    Example:
        >>> old = MemoryRecord.new(user_id="u", kind="fact", text="home_city: lives in Paris",
        ...     sources=("turn:3",), metadata={"thread_id": "t1", "superseded": True})
        >>> paris = MemoryRecord.new(user_id="u", thread_id="t1", kind="turn", id="u:t1:turn:3",
        ...     text="user: I live in Paris", sources=("turn:3",))
        >>> {k: v.text for k, v in stale_turns([ScoredRecord(paris, 1.0)], [old]).items()}
        {'u:t1:turn:3': 'home_city: lives in Paris'}
    """
    stated: dict[tuple[str | None, str], MemoryRecord] = {}
    for fact in superseded:
        if fact.kind == "fact" and fact.metadata.get("superseded"):
            for source in fact.sources:
                stated.setdefault((_fact_thread(fact), source), fact)
    if not stated:
        return {}
    found: dict[str, MemoryRecord] = {}
    for hit in ranked:
        record = hit.record
        if record.kind != "turn":
            continue
        for source in record.sources:
            match = stated.get((record.thread_id, source)) or stated.get((None, source))
            if match is not None:
                found[record.id] = match
                break
    return found


def rank_below_replacements(
    ranked: Sequence[ScoredRecord], replaced_by: dict[str, MemoryRecord]
) -> list[ScoredRecord]:
    """Put each outdated record right after the current fact that replaced it.

    ``replaced_by`` maps the id of a ranked turn whose fact was superseded to
    the fact record now current. That fact comes first (moved up if it is
    ranked lower, inserted with the turn's score if it is not ranked at all),
    then the turn, whose copy is marked ``metadata["outdated_by"]`` (the
    fact's id), which :func:`to_recalled_memories` shows in its source.
    Superseded fact records themselves are dropped.

    Example:
        >>> def hit(kind, text, score, **meta):
        ...     return ScoredRecord(MemoryRecord.new(user_id="u", kind=kind, text=text,
        ...                                          id=text, metadata=meta), score)
        >>> paris = hit("turn", "user: I live in Paris", 2.0)
        >>> old = hit("fact", "home_city: lives in Paris", 1.8, superseded=True)
        >>> berlin = hit("fact", "home_city: moved to Berlin", 1.2)
        >>> out = rank_below_replacements([paris, old, berlin], {paris.record.id: berlin.record})
        >>> [(h.record.text, h.record.metadata.get("outdated_by")) for h in out]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('home_city: moved to Berlin', None),
         ('user: I live in Paris', 'home_city: moved to Berlin')]
    """
    out: list[ScoredRecord] = []
    placed: set[str] = set()
    for hit in ranked:
        record = hit.record
        if record.kind == "fact" and record.metadata.get("superseded"):
            continue
        if record.id in placed:
            continue
        current = replaced_by.get(record.id)
        if current is not None and current.id != record.id:
            if current.id not in placed:
                ranked_current = next((h for h in ranked if h.record.id == current.id), None)
                score = max(hit.score, ranked_current.score if ranked_current else hit.score)
                parts = dict(ranked_current.parts) if ranked_current else {}
                out.append(ScoredRecord(current, score, parts | {"replaces": 1.0}))
                placed.add(current.id)
            record = replace(record, metadata={**record.metadata, "outdated_by": current.id})
            hit = ScoredRecord(record, hit.score, hit.parts)
        out.append(hit)
        placed.add(record.id)
    return out


def _excerpted(candidate: Candidate, query: str) -> Candidate:
    """The candidate with its record's text cut to the excerpt that best matches ``query``."""
    record = replace(candidate.record, text=excerpt(candidate.record.text, query))
    return replace(candidate, record=record)


def merge_candidates(
    dense: Iterable[tuple[MemoryRecord, float]],
    keyword: Iterable[tuple[MemoryRecord, float]],
) -> list[Candidate]:
    """Join the archive's dense and keyword hits into one candidate per record id.

    Example:
        >>> r = MemoryRecord.new(user_id="u", kind="fact", text="tea", id="r1")
        >>> merge_candidates([(r, 0.8)], [(r, 3.2)])
        [Candidate(record=..., dense=0.8, keyword=3.2)]
    """
    table: dict[str, dict[str, Any]] = {}
    for record, score in dense:
        table.setdefault(record.id, {"record": record})["dense"] = float(score)
    for record, score in keyword:
        table.setdefault(record.id, {"record": record})["keyword"] = float(score)
    return [Candidate(**row) for row in table.values()]


class RecallArchive(Protocol):
    """What :class:`Recaller` needs from an archive (``SQLiteArchive`` has it)."""

    def dense_search(
        self, query: Any, where: RecordFilter, /, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """Cosine-similarity hits for a query vector among the records ``where`` admits,
        best first."""
        ...

    def keyword_search(
        self, query: str, where: RecordFilter, /, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        """BM25 hits (higher is better) among the records ``where`` admits, best first."""
        ...


@dataclass
class Recaller:
    """Hybrid recall over an archive, one query at a time.

    Args:
        archive: Anything with ``dense_search`` and ``keyword_search`` (and
            optionally ``touch``), e.g.
            :class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive`.
        embeddings: Embeds the query, once per recall (archives whose vector
            index embeds by itself, like ``VectorStoreArchive``, get the text).
        weights: Signal weights. Giving them with ``ranker="default"``
            selects the hand-set scorer, which they steer (every weight
            applies); with a :class:`~.ranker.LinearRanker` of your own only
            ``recency`` and ``importance`` apply, added to its score.
            ``None`` (the default): the learned ranker, with
            :class:`RecallWeights`' default recency and importance terms.
        ranker: How candidates are scored: ``"default"`` (the learned ranker
            shipped in the package, :func:`~.ranker.default_ranker`, unless
            ``weights`` are given; the hand-set weights if it cannot be
            read), a :class:`~.ranker.LinearRanker` of your own, or ``None``
            for the hand-set ``weights``.
        k: Records returned by default.
        dense_candidates: Dense hits pulled per query (a wide net, so most
            keyword hits get a dense score too).
        keyword_candidates: Keyword hits pulled per query.
        fusion: How dense and keyword scores combine (see :func:`score_candidates`).
        strip_speaker_names: Take the names of the speakers the query asks
            about out of the text that is embedded (and keyword-searched).
        recency_decay, relevance_floor, dedupe: see :func:`score_candidates`.
        calibrated: Report calibrated scores in [0, 1]
            (:mod:`~langchain_tiered_memory.recall.calibration`, the packaged
            model of the ranker in use); ``False``: the ranker's own scores.
        min_score: The relevance floor: recall returns nothing when no
            candidate's calibrated score reaches it, so a question whose
            answer is not in memory recalls nothing rather than the best of
            the rest. ``"default"``: :data:`~.calibration.DEFAULT_MIN_SCORE`
            with the embedder it was measured for (the offline default,
            :func:`~.calibration.default_min_score`), no floor with any
            other; ``None``: no floor. A record holding a code or number the
            query quotes always counts.
        touch: Mark returned records as accessed (drives recency), with the
            archive's ``note_access`` (batched, off the recall's path) if it
            has one, else its ``touch``.
        supersession: Superseded fact records are left out, and a turn that
            stated one ranks right below the fact now current (looked up by
            id with the archive's ``get`` if it was not a candidate), marked
            as outdated (:func:`rank_below_replacements`). Superseded facts
            are found among the candidates, so this costs no extra search.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> peanut = MemoryRecord.new(user_id="ana", kind="fact",
        ...                           text="Ana is allergic to peanuts")
        >>> jazz = MemoryRecord.new(user_id="ana", kind="fact", text="Ana likes jazz")
        >>> class TinyArchive:
        ...     def dense_search(self, vector, where, *, n=50):
        ...         return [(peanut, 0.2), (jazz, 0.1)]
        ...     def keyword_search(self, text, where, *, n=50):
        ...         return [(peanut, 1.5)] if "peanut" in text else []
        >>> recaller = Recaller(TinyArchive(), DeterministicFakeEmbedding(size=8), k=1)
        >>> [r.record.text for r in recaller.recall("any peanut dishes?", user_id="ana")]
        ['Ana is allergic to peanuts']
    """

    archive: RecallArchive
    embeddings: Embeddings | None
    weights: RecallWeights | None = None
    ranker: LinearRanker | Literal["default"] | None = "default"
    k: int = DEFAULT_K
    dense_candidates: int = 200
    keyword_candidates: int = 50
    fusion: Fusion = "minmax"
    strip_speaker_names: bool = True
    recency_decay: float = 0.995
    relevance_floor: float | None = None
    dedupe: bool = True
    touch: bool = True
    supersession: bool = True
    calibrated: bool = True
    min_score: float | Literal["default"] | None = "default"

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.weights is not None and not isinstance(self.weights, RecallWeights):
            raise TypeError(f"weights must be RecallWeights or None, got {self.weights!r}")
        floor = self.floor()
        if floor is not None and self.calibrated and not 0.0 <= floor <= 1.0:
            raise ValueError(f"min_score is a calibrated score in [0, 1], got {floor}")
        if not (
            self.ranker is None or self.ranker == "default" or isinstance(self.ranker, LinearRanker)
        ):
            raise ValueError(
                f"ranker must be 'default', a LinearRanker or None, got {self.ranker!r}"
            )

    def recall(
        self,
        query: str,
        *,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int | None = None,
        now: datetime | None = None,
    ) -> list[ScoredRecord]:
        """The best ``k`` records of ``user_id`` for ``query``, best first.

        Args:
            query: What to recall for (free text).
            user_id: Whose memories to search (always filtered).
            thread_id, kinds, since, until: Further filters.
            k: How many (default: the recaller's ``k``).
            now: The time recency is measured from, and the access time
                written back (default: now).
        """
        if not query.strip():
            return []
        candidates = self.candidates(
            query, user_id=user_id, thread_id=thread_id, kinds=kinds, since=since, until=until
        )
        when = now or utcnow()
        want = k or self.k
        superseded = [
            c.record
            for c in candidates
            if c.record.kind == "fact" and c.record.metadata.get("superseded")
        ]
        ranked = score_candidates(
            candidates,
            now=when,
            weights=self.weights,
            k=want + len(superseded) if self.supersession else want,
            query=query,
            recency_decay=self.recency_decay,
            relevance_floor=self.relevance_floor,
            fusion=self.fusion,
            dedupe=self.dedupe,
            ranker=self.scorer(),
            calibration="default" if self.calibrated else None,
            min_score=self.floor(),
        )
        if self.supersession and superseded:
            ranked = self._resolve_superseded(ranked, superseded, candidates, user_id)[:want]
        logger.debug("recall %r: %d candidates -> %d", query, len(candidates), len(ranked))
        if self.touch and ranked:
            ids = [r.record.id for r in ranked]
            note = getattr(self.archive, "note_access", None)
            if note is not None:  # written in the background: recall does not wait for it
                note(ids, when, user_id=user_id)
            elif (touch := getattr(self.archive, "touch", None)) is not None:
                touch(ids, when, user_id=user_id)
        return ranked

    def floor(self) -> float | None:
        """The relevance floor in force (``min_score``, ``"default"`` resolved).

        Example:
            >>> Recaller(None, None).floor() is None  # keyword-only: not measured, no floor
            True
            >>> Recaller(None, None, min_score=0.2).floor()
            0.2
        """
        if self.min_score == "default":
            return default_min_score(self.embeddings)
        return self.min_score

    def scorer(self) -> LinearRanker | None:
        """The learned ranker recall scores with, or ``None`` for the hand-set weights.

        Example:
            >>> Recaller(None, None).scorer() is default_ranker()
            True
            >>> Recaller(None, None, weights=RecallWeights(recency=5.0)).scorer() is None
            True
        """
        if self.ranker == "default":
            return default_ranker() if self.weights is None else None
        return self.ranker

    def candidates(
        self,
        query: str,
        *,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Candidate]:
        """The archive's dense and keyword hits for ``query``, one candidate per record.

        What :meth:`recall` scores: the keyword hits, then the dense hits for
        the query embedded once (without the names of the speakers it asks
        about, see ``strip_speaker_names``), joined by record id. A record
        longer than :data:`~langchain_tiered_memory.recall.excerpt.RECALL_EXCERPT_CHARS`
        (a pasted log, a huge tool call) comes as its excerpt that best matches
        the query (:func:`~langchain_tiered_memory.recall.excerpt.excerpt`): what
        is scored, merged and quoted costs what a normal record does.
        """
        where = RecordFilter(user_id, thread_id, kinds, since, until)
        keyword = self.archive.keyword_search(query, where, n=self.keyword_candidates)
        dense_query = query
        if self.strip_speaker_names:
            speakers = {s for record, _ in keyword if (s := speaker_of(record))}
            named = named_speakers(query, speakers)
            if named:
                dense_query = strip_names(query, named)
                if dense_query != query:
                    keyword = self.archive.keyword_search(
                        dense_query, where, n=self.keyword_candidates
                    )
        index = getattr(self.archive, "index", None)
        if getattr(index, "needs_vectors", True) and self.embeddings is not None:
            query_input: Any = self.embeddings.embed_query(dense_query)
        else:  # e.g. VectorStoreArchive: the vector store embeds the text itself
            query_input = dense_query
        dense = self.archive.dense_search(query_input, where, n=self.dense_candidates)
        logger.debug(
            "recall %r (dense query %r): %d dense, %d keyword",
            query,
            dense_query,
            len(dense),
            len(keyword),
        )
        return [
            c if len(c.record.text) <= RECALL_EXCERPT_CHARS else _excerpted(c, query)
            for c in merge_candidates(dense, keyword)
        ]

    def _resolve_superseded(
        self,
        ranked: list[ScoredRecord],
        superseded: list[MemoryRecord],
        candidates: Sequence[Candidate],
        user_id: str,
    ) -> list[ScoredRecord]:
        """Rank turns of superseded facts below the facts now current (see ``supersession``)."""
        stale = stale_turns(ranked, superseded)
        known = {c.record.id: c.record for c in candidates}
        get = getattr(self.archive, "get", None)

        def lookup(fact_id: str) -> MemoryRecord | None:
            from langchain_tiered_memory.ids import fact_record_id

            for key in (fact_id, fact_record_id(user_id, fact_id)):
                if key in known:
                    return known[key]
            if get is None:
                return None
            found = get([fact_id, fact_record_id(user_id, fact_id)], user_id=user_id)
            for record in found:
                known[record.id] = record
            return found[0] if found else None

        replaced_by: dict[str, MemoryRecord] = {}
        for turn_id, fact in stale.items():
            current: MemoryRecord | None = fact
            for _ in range(8):  # follow Paris -> Berlin -> Munich, without looping forever
                if current is None or not current.metadata.get("superseded"):
                    break
                next_id = current.metadata.get("superseded_by")
                current = lookup(str(next_id)) if next_id else None
            if current is not None and not current.metadata.get("superseded"):
                replaced_by[turn_id] = current
        return rank_below_replacements(ranked, replaced_by)

    async def arecall(
        self,
        query: str,
        *,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int | None = None,
        now: datetime | None = None,
    ) -> list[ScoredRecord]:
        """Async twin of :meth:`recall` (runs it in a worker thread).

        Example:
            >>> import asyncio
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> class Empty:
            ...     def dense_search(self, vector, where, **kw): return []
            ...     def keyword_search(self, text, where, **kw): return []
            >>> r = Recaller(Empty(), DeterministicFakeEmbedding(size=4))
            >>> asyncio.run(r.arecall("anything?", user_id="u"))
            []
        """
        return await asyncio.to_thread(
            self.recall,
            query,
            user_id=user_id,
            thread_id=thread_id,
            kinds=kinds,
            since=since,
            until=until,
            k=k,
            now=now,
        )


def _possibly(metadata: dict[str, Any]) -> bool:
    if metadata.get("possibly") or metadata.get("inferred"):
        return True
    if metadata.get("stated") is False:
        return True
    confidence = metadata.get("confidence")
    return isinstance(confidence, (int, float)) and confidence < 0.75


def to_recalled_memories(scored: Sequence[ScoredRecord]) -> list[RecalledMemory]:
    """Turn ranked records into prompt-ready :class:`~.context.RecalledMemory` items.

    ``possibly`` is set for inferred or low-confidence records
    (``metadata``: ``possibly``/``inferred`` true, ``stated`` false, or
    ``confidence`` below 0.75). A turn whose fact was superseded
    (``metadata["outdated_by"]``, see :func:`rank_below_replacements`) says so
    in its ``source``.

    Example:
        >>> r = MemoryRecord.new(user_id="u", kind="fact", text="may like sushi",
        ...                      sources=("turn:7",), metadata={"stated": False})
        >>> m = to_recalled_memories([ScoredRecord(r, 1.25)])[0]
        >>> m.text, m.source, m.score, m.possibly
        ('may like sushi', 'fact turn:7', 1.25, True)
    """
    items = []
    for hit in scored:
        record = hit.record
        origin = ", ".join(record.sources[:3])
        if len(record.sources) > 3:
            origin += ", ..."
        source = f"{record.kind} {origin}".strip()
        if record.metadata.get("outdated_by"):
            source += " (outdated: a newer fact replaced it)"
        items.append(
            RecalledMemory(
                text=record.text,
                source=source,
                created_at=record.created_at,
                score=hit.score,
                record_id=record.id,
                possibly=_possibly(record.metadata),
            )
        )
    return items
