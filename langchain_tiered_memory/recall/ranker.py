"""A ranker that learns: the recall signals combined by a linear model fitted on data.

:func:`candidate_features` describes every candidate of one query by
:data:`FEATURES` - the dense and keyword scores scaled and ranked over the
candidates, what the neighbouring turns score, the speaker and session
signals, the time signal, and a few traits of the text (its length, whether
it asks a question, whether it holds a number, a proper noun or a time word,
each paired with the kind of question that wants it). A trait counts only as
much as the text matches the query (times its best scaled dense or keyword
score, as the time signal is): a question mark or a date lifts no unrelated
record. :class:`LinearRanker`
scores them as ``((x - mean) / scale) . weights``: a handful of numpy
operations per query.

The weights shipped in the package (``_data/ranker.json``, read by
:func:`default_ranker`) were fitted with a listwise softmax loss on the
LoCoMo dev conversations and the LongMemEval dev questions together, and
validated leave-one-conversation-out (and leave-questions-out for
LongMemEval); ``python -m tiered_memory_bench.train_ranker`` reproduces the file and the
cross-validated figures it records. Recency and importance are not
learned (the benchmarks ask about the whole history, so they could only
teach the model to ignore them): :class:`~.hybrid.RecallWeights` adds them
as it does to the hand-set score, and the hand-set weights stay the
fallback when the file cannot be read (``Recaller(ranker=None)`` uses them
on purpose).

Example:
    >>> from datetime import datetime, timezone
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    >>> dog = MemoryRecord.new(user_id="u", kind="turn", text="Ana: My dog is called Max.",
    ...                        metadata={"speaker": "Ana"})
    >>> tea = MemoryRecord.new(user_id="u", kind="turn", text="Ben: I like green tea.",
    ...                        metadata={"speaker": "Ben"})
    >>> x = candidate_features([Candidate(dog, 0.6, 2.0), Candidate(tea, 0.2, None)],
    ...                        query="What is Ana's dog called?", now=now)
    >>> x.shape == (2, len(FEATURES))
    True
    >>> ranker = default_ranker()
    >>> scores = ranker.score(x)
    >>> bool(scores[0] > scores[1])
    True
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from langchain_tiered_memory.recall.signals import Candidate, Signals, candidate_signals, min_max
from langchain_tiered_memory.recall.time_expressions import MONTH_NAMES, WEEKDAYS, TimeWindow

logger = logging.getLogger(__name__)

__all__ = [
    "FEATURES",
    "RANKER_FORMAT",
    "LinearRanker",
    "RankerFileError",
    "candidate_features",
    "default_ranker",
    "signal_features",
]

#: The features :func:`candidate_features` computes, in column order.
FEATURES: tuple[str, ...] = (
    "dense",  # cosine similarity, min-max scaled over the dense hits (0: not a hit)
    "dense_z",  # the same as a z-score over the dense hits (-3: not a hit)
    "dense_rank",  # log(1 + rank) among the dense hits (log(1 + n): not a hit)
    "dense_borrowed",  # dense after borrowing 30% of the previous turn's (borrow_from_previous)
    "dense_previous",  # the previous turn's scaled dense score (0: not a candidate)
    "dense_next",  # the next turn's
    "dense_window",  # the best scaled dense score of the turns two either side and itself
    "keyword",  # BM25, keyword_scale'd (a lone match scores 1)
    "keyword_missing",  # 1: no keyword match
    "keyword_rank",  # log(1 + rank) among the keyword hits (log(1 + n): none)
    "keyword_previous",  # the previous turn's scaled keyword score
    "keyword_next",  # the next turn's
    "speaker",  # spoken by the one person the query names
    "role",  # spoken by the chat role the query is about (first person: the user)
    "session",  # how well the record's session matches (the hand-set session signal)
    "session_dense",  # the best scaled dense score in the record's session
    "session_keyword",  # the best scaled keyword score in the record's session
    "session_size",  # candidates from the record's session, over the largest such count
    "session_rank",  # log(1 + rank) of the record within its session's candidates
    "time",  # time match with the query's time expression, times max(dense, keyword)
    "length",  # log(1 + words of the text)
    # the traits below are 0/1 times max(dense, keyword): they lift only matching texts
    "asks",  # the text ends in a question mark: it asks rather than tells
    "when_time_words",  # a "when" question, and the text holds a time word
    "how_many_number",  # a "how many/much/long/old/often" question, and the text a number
    "where_proper_noun",  # a "where" question, and the text a proper noun (a place?)
    "who_proper_noun",  # a "who" question, and the text a proper noun (a person?)
)

#: The ``format`` a ranker file declares.
RANKER_FORMAT = "langchain-tiered-memory/linear-ranker"

# What the session signal sums (the hand-set defaults; the model weighs the result).
_SESSION_TOP = 3
_SPEAKER_IN_SESSION = 0.5

_WHEN = re.compile(r"\s*(?:when|what\s+(?:date|time|year|month|day))\b", re.IGNORECASE)
_WHERE = re.compile(r"\s*where\b", re.IGNORECASE)
_WHO = re.compile(r"\s*who\b", re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much|long|old|often)\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|once|twice|dozen|hundred)\b",
    re.IGNORECASE,
)
_TIME_WORD = re.compile(  # the lookahead skips the words no alternative can start
    r"\b(?=[adfjlmnorstwy0-9])(?:yesterday|today|tomorrow|tonight|last|next|ago|since|"
    rf"recently|week|weekend|month|year|{'|'.join([*WEEKDAYS, *MONTH_NAMES])}|\d{{4}})\b",
    re.IGNORECASE,
)
# A capitalised word that does not open the text or a sentence: a name, a place, a title.
_PROPER_NOUN = re.compile(r"[^.!?\s]\s+[\"'(]?[A-Z][a-z]")


def _ranks(values: Sequence[float | None]) -> np.ndarray:
    """``log(1 + rank)`` of each present value (best first); ``log(1 + n)`` for missing ones."""
    n = len(values)
    present = [i for i, v in enumerate(values) if v is not None]
    out = np.full(n, math.log1p(n))
    order = sorted(present, key=lambda i: -values[i])  # type: ignore[operator]
    for rank, i in enumerate(order):
        out[i] = math.log1p(rank)
    return out


def _body(text: str) -> str:
    """The text after a leading ``"Speaker: "`` (its capital is not a proper noun)."""
    head, sep, rest = text.partition(": ")
    return rest if sep and len(head) <= 40 and "\n" not in head else text


def candidate_features(
    candidates: Sequence[Candidate],
    *,
    query: str,
    now: datetime,
    time_window: TimeWindow | Literal["auto"] | None = "auto",
) -> np.ndarray:
    """The ``(len(candidates), len(FEATURES))`` feature matrix of one query's candidates (pure).

    Args:
        candidates: Records with raw dense and/or keyword scores.
        query: The query text.
        now: The time relative time expressions are measured from.
        time_window: The window of the time features; ``"auto"`` reads it
            from ``query``, ``None`` turns them off.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langchain_tiered_memory.records import MemoryRecord
        >>> r = MemoryRecord.new(user_id="u", kind="turn", text="Ana: We met in Lisbon.")
        >>> x = candidate_features([Candidate(r, 0.5, 1.0)], query="Where did we meet?",
        ...                        now=datetime(2026, 1, 2, tzinfo=timezone.utc))
        >>> dict(zip(FEATURES, x[0].tolist()))["where_proper_noun"]
        1.0
    """
    signals = candidate_signals(candidates, query=query, now=now, time_window=time_window)
    return signal_features(signals, query=query)


def signal_features(signals: Signals, *, query: str) -> np.ndarray:
    """The feature matrix of :func:`candidate_features`, from the candidates' signals (pure).

    ``signals`` are those of :func:`~.signals.candidate_signals` with its
    default ``neighbour`` and ``keyword_floor`` (what the model was fitted on).
    """
    candidates = signals.candidates
    n = len(candidates)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    records = [c.record for c in candidates]
    dense_raw = [c.dense for c in candidates]
    keyword_raw = [c.keyword for c in candidates]
    dense = np.array(signals.dense)
    keyword = np.array(signals.keyword)
    present = np.array([v is not None for v in dense_raw])
    dense_z = np.full(n, -3.0)
    if present.any():
        values = np.array([v for v in dense_raw if v is not None])
        spread = float(values.std()) or 1.0
        dense_z[present] = np.clip((values - values.mean()) / spread, -3.0, 5.0)
    borrowed = np.array(signals.borrowed)

    index = {key: i for i, key in enumerate(signals.turns) if key is not None}
    neighbours = np.full((n, 4), -1, dtype=np.int64)  # i-2, i-1, i+1, i+2
    for i, key in enumerate(signals.turns):
        if key is not None:
            thread, session, turn = key
            for column, offset in enumerate((-2, -1, 1, 2)):
                neighbours[i, column] = index.get((thread, session, turn + offset), -1)
    padded_dense = np.append(dense, 0.0)  # index -1 reads the 0 at the end
    padded_keyword = np.append(keyword, 0.0)
    window = np.maximum(dense, padded_dense[neighbours].max(axis=1))

    speaker = np.array(signals.speaker)
    role = np.array(signals.role)

    base = dense + keyword + _SPEAKER_IN_SESSION * speaker
    groups: dict[Any, list[int]] = {}
    for i, record in enumerate(records):
        groups.setdefault((record.thread_id, record.metadata.get("session", record.id)), []).append(
            i
        )
    session_raw = np.zeros(n)
    session_dense = np.zeros(n)
    session_keyword = np.zeros(n)
    session_size = np.zeros(n)
    session_rank = np.zeros(n)
    relevance = dense + keyword
    for members in groups.values():
        at = np.array(members)
        session_raw[at] = np.sort(base[at])[::-1][:_SESSION_TOP].sum()
        session_dense[at] = dense[at].max()
        session_keyword[at] = keyword[at].max()
        session_size[at] = len(members)
        order = np.argsort(-relevance[at], kind="stable")
        ranks = np.empty(len(members))
        ranks[order] = np.arange(len(members))
        session_rank[at] = np.log1p(ranks)
    session = np.array(min_max(session_raw.tolist()))
    session_size /= session_size.max()

    timed = np.zeros(n) if signals.time is None else np.array(signals.time)

    texts = [r.text for r in records]
    bodies = [_body(t) for t in texts]
    matching = np.maximum(dense, keyword)  # what a trait of the text is worth

    def holds(pattern: re.Pattern[str], wanted: bool) -> np.ndarray:
        """``matching`` for the texts ``pattern`` finds in, when the query wants it (else 0)."""
        if not wanted:
            return np.zeros(n)
        return np.array([float(pattern.search(b) is not None) for b in bodies]) * matching

    names_place = bool(_WHERE.match(query))
    names_person = bool(_WHO.match(query))
    proper = holds(_PROPER_NOUN, names_place or names_person)
    columns = {
        "dense": dense,
        "dense_z": dense_z,
        "dense_rank": _ranks(dense_raw),
        "dense_borrowed": borrowed,
        "dense_previous": padded_dense[neighbours[:, 1]],
        "dense_next": padded_dense[neighbours[:, 2]],
        "dense_window": window,
        "keyword": keyword,
        "keyword_missing": np.array([float(v is None) for v in keyword_raw]),
        "keyword_rank": _ranks(keyword_raw),
        "keyword_previous": padded_keyword[neighbours[:, 1]],
        "keyword_next": padded_keyword[neighbours[:, 2]],
        "speaker": speaker,
        "role": role,
        "session": session,
        "session_dense": session_dense,
        "session_keyword": session_keyword,
        "session_size": session_size,
        "session_rank": session_rank,
        "time": timed * matching,
        "length": np.array([math.log1p(len(t.split())) for t in texts]),
        "asks": np.array([float(t.rstrip().endswith("?")) for t in texts]) * matching,
        "when_time_words": holds(_TIME_WORD, bool(_WHEN.match(query))),
        "how_many_number": holds(_NUMBER, bool(_HOW_MANY.search(query))),
        "where_proper_noun": proper * names_place,
        "who_proper_noun": proper * names_person,
    }
    return np.column_stack([columns[name] for name in FEATURES])


class RankerFileError(ValueError):
    """A ranker file that cannot be used: unreadable, of another format, or for other features."""


@dataclass(frozen=True)
class LinearRanker:
    """A linear model over :func:`candidate_features`: ``((x - mean) / scale) . weights``.

    Args:
        features: The feature names, in column order (must be :data:`FEATURES`).
        mean, scale: Standardisation of each feature (from the training data).
        weights: One weight per feature.
        info: What the file records about its training and validation.

    Example:
        >>> r = LinearRanker(("a", "b"), (0.0, 0.0), (1.0, 2.0), (1.0, -1.0))
        >>> r.score(np.array([[1.0, 2.0], [0.0, 0.0]])).tolist()
        [0.0, 0.0]
        >>> LinearRanker(("a",), (0.0,), (0.0,), (1.0,))
        Traceback (most recent call last):
        ...
        ValueError: scale must be positive
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    info: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ValueError("features, mean, scale and weights must have one entry per feature")
        if any(not s > 0 for s in self.scale):
            raise ValueError("scale must be positive")
        if not all(math.isfinite(v) for v in (*self.mean, *self.scale, *self.weights)):
            raise ValueError("mean, scale and weights must be finite")
        # numpy copies for scoring (the dataclass fields stay plain, hashable tuples)
        object.__setattr__(self, "_mean", np.array(self.mean))
        object.__setattr__(self, "_weights", np.array(self.weights) / np.array(self.scale))

    def score(self, features: np.ndarray) -> np.ndarray:
        """One score per row of ``features`` (higher is better)."""
        if features.ndim != 2 or features.shape[1] != len(self.features):
            raise ValueError(
                f"expected a matrix of {len(self.features)} feature columns, "
                f"got shape {features.shape}"
            )
        return np.asarray((features - self._mean) @ self._weights)  # type: ignore[attr-defined]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form :meth:`from_dict` reads (the ranker file's content)."""
        return {
            "format": RANKER_FORMAT,
            "version": 1,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            **dict(self.info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearRanker:
        """A ranker from :meth:`to_dict`'s form, checked against :data:`FEATURES`.

        Raises:
            RankerFileError: another format or version, or other features.
        """
        if data.get("format") != RANKER_FORMAT or data.get("version") != 1:
            raise RankerFileError(
                f"not a version-1 {RANKER_FORMAT} file (format {data.get('format')!r}, "
                f"version {data.get('version')!r})"
            )
        features = tuple(str(f) for f in data.get("features", ()))
        if features != FEATURES:
            missing = sorted(set(FEATURES) - set(features))
            extra = sorted(set(features) - set(FEATURES))
            raise RankerFileError(
                f"the ranker's features are not this library's: missing {missing}, "
                f"unknown {extra} (retrain it with python -m tiered_memory_bench.train_ranker)"
            )
        info = {
            k: v
            for k, v in data.items()
            if k not in {"format", "version", "features", "mean", "scale", "weights"}
        }
        try:
            return cls(
                features,
                tuple(float(v) for v in data["mean"]),
                tuple(float(v) for v in data["scale"]),
                tuple(float(v) for v in data["weights"]),
                info,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RankerFileError(f"bad ranker file: {exc}") from exc

    @classmethod
    def load(cls, path: str | Path) -> LinearRanker:
        """Read a ranker file (JSON, as written by ``python -m tiered_memory_bench.train_ranker``).

        Raises:
            RankerFileError: the file is missing, not JSON, or not a usable ranker.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RankerFileError(f"cannot read ranker file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise RankerFileError(f"ranker file {path} does not hold a JSON object")
        return cls.from_dict(data)


@lru_cache(maxsize=1)
def _packaged() -> LinearRanker | None:
    resource = importlib.resources.files("langchain_tiered_memory") / "_data" / "ranker.json"
    try:
        with importlib.resources.as_file(resource) as path:
            return LinearRanker.load(path)
    except RankerFileError as exc:
        logger.warning("the packaged ranker cannot be used (%s); recall uses RecallWeights", exc)
        return None


def default_ranker() -> LinearRanker | None:
    """The ranker shipped in the package (``_data/ranker.json``), read once.

    ``None`` (with a warning in the log) if the file is missing or unusable:
    recall then ranks by the hand-set :class:`~.hybrid.RecallWeights`.

    Example:
        >>> ranker = default_ranker()
        >>> ranker.features == FEATURES, "cross_validated" in ranker.info
        (True, True)
    """
    return _packaged()
