"""The hand-set scorer: each candidate's signals summed with :class:`RecallWeights`.

:class:`~langchain_tiered_memory.recall.hybrid.Recaller` ranks with the
learned ranker (:mod:`~langchain_tiered_memory.recall.ranker`) by default;
``ranker=None`` - and the pure
:func:`~langchain_tiered_memory.recall.hybrid.score_candidates` by default -
uses this one, which is also the fallback when the packaged model cannot be
read. Both read the same :class:`~.signals.Signals`.

The score is Generative Agents' (Park et al., 2023) with keyword matching
added, because names, dates and numbers are where dense embeddings fail. Each
signal is scaled to 0-1 over the candidates, then the signals are summed with
:class:`RecallWeights`:

* ``relevance``: the dense (cosine) similarity of the query and the record,
  min-max scaled; a turn may borrow a share of its previous turn's similarity
  (:func:`~.signals.borrow_from_previous`), so a short reply is found by the
  question it answers;
* ``keyword``: the record's BM25 score for the query (FTS5 in the archive),
  scaled by :func:`~.signals.keyword_scale` so that a lone match (a name or
  number in a single record) scores 1 rather than the 0 min-max would give it;
* ``recency``: ``recency_decay ** hours`` since the record was last recalled
  (or written), 0.995 per hour as in Generative Agents;
* ``importance``: the record's 1-10 importance;
* ``speaker``: 1 for records spoken by a person the query names (records
  carry their speaker in ``metadata["speaker"]``) or, when records are spoken
  by chat roles, by the role the query is about
  (:func:`~.signals.addressed_roles`: first person for the user, *"you
  recommended"* for the assistant);
* ``session``: how well the record's session matches, i.e. the sum of the
  three best relevance scores among candidates of the same
  ``metadata["session"]`` (a session that matches well lifts its turns); a
  record without a session counts as a session of its own, and when no
  candidate has one the signal is off;
* ``time``: for a query with a time expression (*"in July 2023"*, *"two
  weeks ago"*, :mod:`~langchain_tiered_memory.recall.time_expressions`), how well
  the record's date falls in that window, times its best scaled dense or
  keyword score (a date narrows down among matching records).

Dense and keyword scores are fused as a weighted sum of their scaled values
(``fusion="minmax"``); reciprocal-rank fusion (``"rrf"``) and the mean of
both (``"both"``) are there to compare. A signal that barely varies over the
candidates (say, importance when every record has 5) contributes 0 rather
than amplifying noise.

Example:
    >>> from datetime import datetime, timezone
    >>> from langchain_tiered_memory.recall.signals import Candidate, candidate_signals
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> a = MemoryRecord.new(user_id="u", kind="fact", text="allergic to peanuts", created_at=now)
    >>> b = MemoryRecord.new(user_id="u", kind="fact", text="likes jazz", created_at=now)
    >>> signals = candidate_signals([Candidate(a, dense=0.8, keyword=2.0),
    ...                              Candidate(b, dense=0.5)], query="peanuts?", now=now)
    >>> [round(s.score, 2) for s in hand_scores(signals, RecallWeights())]
    [2.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_tiered_memory.recall.signals import NEIGHBOUR_SHARE, Signals, min_max
from langchain_tiered_memory.records import ScoredRecord

__all__ = ["Fusion", "RecallWeights", "hand_scores"]

#: How the dense and keyword signals are combined.
Fusion = Literal["minmax", "rrf", "both"]


@dataclass(frozen=True)
class RecallWeights:
    """Weights of the min-max scaled signals in the recall score.

    The defaults are the best generalising recipe on LoCoMo (dense and keyword
    equally weighted, a speaker and a session signal) plus light recency and
    importance terms, which cannot help there (every question asks about the
    whole history) but order otherwise-equal memories in live use.

    Args:
        relevance: Dense (embedding) similarity.
        keyword: BM25 keyword match.
        recency: ``recency_decay ** hours`` since last access (or creation).
        importance: The record's 1-10 importance.
        speaker: Records spoken by the one speaker the query names.
        session: How well the record's session matches the query.
        time: Records written inside the window of a time expression in the
            query (*"in July 2023"*, *"two weeks ago"*), less the further
            outside (:mod:`~langchain_tiered_memory.recall.time_expressions`), times
            the record's best scaled dense or keyword score (a date narrows
            down among matching records; it lifts no unrelated one).
        neighbour: The share (0-1) of the previous turn's dense similarity a
            turn may borrow when that is higher than its own, so a short reply
            ("Yes, three of them!") is found by the question it answers.

    Example:
        >>> RecallWeights().relevance, RecallWeights(recency=1.0).recency
        (1.0, 1.0)
        >>> RecallWeights(keyword=-1)
        Traceback (most recent call last):
        ...
        ValueError: weight keyword must be >= 0, got -1
    """

    relevance: float = 1.0
    keyword: float = 1.0
    recency: float = 0.1
    importance: float = 0.1
    speaker: float = 0.5
    session: float = 1.0
    time: float = 2.0
    neighbour: float = NEIGHBOUR_SHARE

    def __post_init__(self) -> None:
        for name in (
            "relevance",
            "keyword",
            "recency",
            "importance",
            "speaker",
            "session",
            "time",
            "neighbour",
        ):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"weight {name} must be >= 0, got {value}")
        if self.neighbour > 1:
            raise ValueError(f"neighbour is a share of 0-1, got {self.neighbour}")


def _rrf(values: Sequence[float | None], k: int) -> list[float]:
    present = {i: v for i, v in enumerate(values) if v is not None}
    order = sorted(present, key=lambda i: -present[i])
    out = [0.0] * len(values)
    for rank, i in enumerate(order):
        out[i] = 1.0 / (k + rank + 1)
    return out


def hand_scores(
    signals: Signals,
    weights: RecallWeights,
    *,
    fusion: Fusion = "minmax",
    rrf_k: int = 60,
    session_top: int = 3,
) -> list[ScoredRecord]:
    """Each candidate with the weighted sum of its scaled signals (pure).

    ``signals`` are those of :func:`~.signals.candidate_signals` with
    ``neighbour=weights.neighbour``. ``parts`` holds each scaled signal.

    Args:
        signals: The candidates' signals.
        weights: The weight of each signal.
        fusion: ``"minmax"`` (weighted sum of scaled scores, the measured
            best), ``"rrf"`` (reciprocal-rank fusion) or ``"both"`` (their mean).
        rrf_k: The RRF constant.
        session_top: The session signal sums this many best relevance scores.
    """
    candidates = signals.candidates
    dense = signals.borrowed
    keyword = signals.keyword
    relevance = [
        weights.relevance * d + weights.keyword * w for d, w in zip(dense, keyword, strict=True)
    ]
    if fusion in ("rrf", "both"):
        keyword_raw = [c.keyword for c in candidates]
        fused = [
            weights.relevance * d + weights.keyword * w
            for d, w in zip(
                _rrf(signals.borrowed_raw, rrf_k), _rrf(keyword_raw, rrf_k), strict=True
            )
        ]
        top = weights.relevance + weights.keyword
        scaled = [top * v for v in min_max(fused, min_spread=0.0)]
        if fusion == "both":
            scaled = [(a + b) / 2 for a, b in zip(relevance, scaled, strict=True)]
        relevance = scaled
    elif fusion != "minmax":
        raise ValueError(f"fusion must be 'minmax', 'rrf' or 'both', got {fusion!r}")

    # the one speaker the query names or, if it names none, the one chat role it is about
    by_role = not signals.named
    speaker = signals.role if by_role else signals.speaker
    if not weights.speaker:
        speaker = (0.0,) * len(candidates)

    # What a session's turns add up to: relevance, plus the speaker when a person
    # is named. A role is in every session, so it would only favour long ones.
    base = [
        r + (0.0 if by_role else weights.speaker * s)
        for r, s in zip(relevance, speaker, strict=True)
    ]
    session = [0.0] * len(candidates)
    if weights.session and any("session" in c.record.metadata for c in candidates):
        groups: dict[Any, list[float]] = {}
        for c, b in zip(candidates, base, strict=True):
            key = c.record.metadata.get("session")
            if key is not None:
                groups.setdefault((c.record.thread_id, key), []).append(b)
        totals = {g: sum(sorted(v, reverse=True)[:session_top]) for g, v in groups.items()}
        raw_session = []
        for c, b in zip(candidates, base, strict=True):
            key = c.record.metadata.get("session")
            raw_session.append(totals[(c.record.thread_id, key)] if key is not None else b)
        session = min_max(raw_session)

    recency, importance, timed = signals.recency, signals.importance, signals.time
    scored: list[ScoredRecord] = []
    for i, candidate in enumerate(candidates):
        parts = {
            "relevance": dense[i],
            "keyword": keyword[i],
            "speaker": speaker[i],
            "session": session[i],
            "recency": recency[i],
            "importance": importance[i],
            # a date narrows down among matching records: it lifts no unrelated one
            "time": timed[i] * max(dense[i], keyword[i]) if timed else 0.0,
        }
        score = (
            relevance[i]
            + weights.speaker * speaker[i]
            + weights.session * session[i]
            + weights.recency * recency[i]
            + weights.importance * importance[i]
            + weights.time * parts["time"]
        )
        scored.append(ScoredRecord(candidate.record, score, parts))
    return scored
