"""Calibrated recall scores: a record's score in [0, 1], and a floor below which nothing returns.

The rankers' scores (:mod:`~langchain_tiered_memory.recall.ranker`, the
hand-set :class:`~langchain_tiered_memory.recall.hybrid.RecallWeights`) only
order one query's candidates: most of their signals are scaled over those
candidates, so the best of a set of unrelated records scores as high as the
best of a set of perfect ones, and the learned score is any real number.
A :class:`Calibration` gives each candidate a score in [0, 1] from two
logistic models. The best-ranked candidate scores how likely the question
is answerable from memory at all, from two absolute signals - the best raw
cosine similarity of query and candidate, and the best share of the query's
content words a candidate holds (:func:`query_coverage`) - fitted on the
LoCoMo dev questions against half of the shipped unrelated questions, each
class weighing half. Each other candidate scores that times how likely a
record of its ranking score holds the answer, relative to the best one
(fitted on the same questions' labels: a candidate is relevant when it
holds a gold turn). Both are shipped as data (``_data/calibration.json``,
written by ``python -m tiered_memory_bench.calibrate``) beside the ranker's
weights, and the scores order the candidates as the ranker does.

Recall returns nothing when its best record scores below a floor
(:data:`DEFAULT_MIN_SCORE`, chosen by measurement: the share of unanswerable
questions for which nothing comes back, against the recall figures;
``benchmarks/README.md``), so a question whose answer is not in memory gets
nothing rather than the best of the rest.

There is one model per ranker (``"learned"``, ``"hand"``) and per kind of
archive: with vectors, and keyword-only (``*_keywords``: no candidate has a
dense score). The models were fitted for the default embedder (MiniLM), and
the floor applies by default only to it (:func:`default_min_score`):
another embedder's cosine similarities lie on another scale, so set a floor
for it by measurement (``Recaller(min_score=...)``).

Example:
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> query_coverage("What is my daughter called?", "user: my daughter is called Lea")
    1.0
    >>> query_coverage("what's the weather on Mars", "user: I'm allergic to peanuts")
    0.0
    >>> model = default_calibration("learned", dense=True)
    >>> peanut = MemoryRecord.new(user_id="u", kind="fact", text="user: I'm allergic to peanuts")
    >>> x = calibration_inputs([Candidate(peanut, dense=0.05)], [0.0], "weather on Mars?")
    >>> bool(model.probability(x)[0] < DEFAULT_MIN_SCORE)
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
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from langchain_tiered_memory.recall.signals import Candidate

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATED_EMBEDDER",
    "CALIBRATION_FORMAT",
    "DEFAULT_MIN_SCORE",
    "INPUTS",
    "Calibration",
    "CalibrationFileError",
    "calibration_inputs",
    "default_calibration",
    "default_min_score",
    "load_calibrations",
    "query_coverage",
]

#: The ``format`` a calibration file declares.
CALIBRATION_FORMAT = "langchain-tiered-memory/recall-calibration"

#: What a calibration model may weigh, each a column of :func:`calibration_inputs`.
INPUTS: tuple[str, ...] = (
    "score",  # the ranker's score (learned: any real; hand-set: a weighted sum of 0-1 signals)
    "best_dense",  # the best raw cosine similarity of query and candidate (0: no dense hit)
    "best_coverage",  # the best share of the query's content words a candidate holds
)

#: The relevance floor for the embedder the calibration was fitted with (measured in
#: benchmarks/README.md): recall returns nothing when no record scores this much.
DEFAULT_MIN_SCORE = 0.001
#: The embedder (its ``model_name``) the packaged calibration and its floor were fitted for.
CALIBRATED_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"

# Words that say what kind of question it is, not what it is about.
_FUNCTION_TEXT = """
a about after again all also am an and any anything are as at be been before being but by
can could did do does doing done during each else ever for from get got had has have having
he her here hers him his how i i'd i'll i'm i've if in into is it it's its just know let
like me mine my myself no not now of on once one only or other our out over please recall
remember remind said say says she should so some something tell than that the their them
then there these they thing things this those to told too up us was we were what what's
when where which while who whom why will with would you your yours
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)
_STEM = 6  # words are compared by their first six characters ("allergic" ~ "allergy")


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in _WORD.findall(text.casefold())}


def _content_stems(query: str) -> set[str]:
    words = [w for w in _WORD.findall(query.casefold()) if len(w) > 1]
    return {w[:_STEM] for w in words if w not in _FUNCTION_WORDS}


def query_coverage(query: str, text: str) -> float:
    """The share of the query's content words that ``text`` holds (0-1; 0 if it has none).

    Words are case-folded and compared by their first six characters, so
    ``"allergy"`` finds ``"allergic"``; question and function words
    (*what*, *my*, *remember*) do not count.

    Example:
        >>> query_coverage("Where did Ana go skiing?", "Ana: I go skiing in Andorra")
        1.0
        >>> query_coverage("Where did Ana go skiing?", "Ana: I love Lisbon")
        0.3333333333333333
    """
    wanted = _content_stems(query)
    if not wanted:
        return 0.0
    return len(wanted & _stems(text)) / len(wanted)


def calibration_inputs(
    candidates: Sequence[Candidate], scores: Sequence[float], query: str
) -> np.ndarray:
    """The ``(len(candidates), len(INPUTS))`` matrix a :class:`Calibration` reads (pure).

    Args:
        candidates: One query's candidates.
        scores: The ranker's score of each, in the same order.
        query: The query.

    Example:
        >>> from langchain_tiered_memory.records import MemoryRecord
        >>> r = MemoryRecord.new(user_id="u", kind="fact", text="likes green tea")
        >>> s = MemoryRecord.new(user_id="u", kind="fact", text="plays chess")
        >>> calibration_inputs([Candidate(r, dense=0.5), Candidate(s, dense=0.1)], [2.0, -1.0],
        ...                    "green tea?").tolist()
        [[2.0, 0.5, 1.0], [-1.0, 0.5, 1.0]]
    """
    if len(scores) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    wanted = _content_stems(query)
    n = len(candidates)
    out = np.zeros((n, len(INPUTS)))
    if n == 0:
        return out
    out[:, 0] = np.asarray(scores, dtype=float)
    out[:, 1] = max(float(c.dense or 0.0) for c in candidates)
    if wanted:
        out[:, 2] = max(len(wanted & _stems(c.record.text)) for c in candidates) / len(wanted)
    return out


class CalibrationFileError(ValueError):
    """A calibration file that cannot be used: unreadable, of another format or version."""


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))


@dataclass(frozen=True)
class Calibration:
    """Two logistic models that give each candidate of a query its calibrated score.

    ``sigmoid(best_dense * weights[1] + best_coverage * weights[2] +
    intercepts[1])`` is how likely the question is answerable from these
    candidates at all: the best-ranked candidate's score.
    ``sigmoid(score * weights[0] + intercepts[0])`` is how likely a record of
    that ranking score is the one an answerable question needs; each other
    candidate scores the first times its value relative to the best one's.
    (A ranking score describes a record among the query's candidates, so it
    says how much less likely the others are, not how likely the best is:
    with a handful of candidates it is low whatever they hold.)

    Args:
        weights: One weight per input of :data:`INPUTS`.
        intercepts: The bias of each of the two models.
        info: What the file records about the fit.

    Example:
        >>> c = Calibration((1.0, 0.0, 0.0), (0.0, 100.0))
        >>> c.probability(np.array([[100.0, 0.3, 1.0], [0.0, 0.3, 1.0]])).round(3).tolist()
        [1.0, 0.5]
        >>> Calibration((1.0,), (0.0, 0.0))
        Traceback (most recent call last):
        ...
        ValueError: a calibration needs 3 weights (score, best_dense, best_coverage), got 1
    """

    weights: tuple[float, ...]
    intercepts: tuple[float, float]
    info: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if len(self.weights) != len(INPUTS):
            raise ValueError(
                f"a calibration needs {len(INPUTS)} weights ({', '.join(INPUTS)}), "
                f"got {len(self.weights)}"
            )
        if len(self.intercepts) != 2:
            raise ValueError(f"a calibration needs 2 intercepts, got {len(self.intercepts)}")
        if not all(math.isfinite(v) for v in (*self.weights, *self.intercepts)):
            raise ValueError("calibration weights and intercepts must be finite")

    def probability(self, inputs: np.ndarray) -> np.ndarray:
        """The calibrated score (0-1) of each candidate of one query (:func:`calibration_inputs`).

        The best-ranked candidate scores how likely the question is
        answerable from memory; the others that times how likely a record of
        their ranking score holds the answer, relative to the best one's.
        """
        if len(inputs) == 0:
            return np.zeros(0)
        w = self.weights
        record = _sigmoid(inputs[:, 0] * w[0] + self.intercepts[0])
        answerable = _sigmoid(inputs[:, 1] * w[1] + inputs[:, 2] * w[2] + self.intercepts[1])
        return np.asarray(answerable * record / max(float(record.max()), 1e-300))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form :meth:`from_dict` reads."""
        return {
            "weights": list(self.weights),
            "intercepts": list(self.intercepts),
            **dict(self.info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """A model from :meth:`to_dict`'s form.

        Raises:
            CalibrationFileError: missing or malformed weights.
        """
        try:
            info = {k: v for k, v in data.items() if k not in {"weights", "intercepts"}}
            low, high = (float(v) for v in data["intercepts"])
            return cls(tuple(float(v) for v in data["weights"]), (low, high), info)
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationFileError(f"bad calibration model: {exc}") from exc


def load_calibrations(path: str | Path) -> dict[str, Calibration]:
    """The models of a calibration file (JSON, as ``tiered_memory_bench.calibrate`` writes).

    Raises:
        CalibrationFileError: the file is missing, not JSON, or not a usable calibration.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationFileError(f"cannot read calibration file {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
        raise CalibrationFileError(f"{path} is not a {CALIBRATION_FORMAT} file")
    if data.get("version") != 1 or tuple(data.get("inputs", ())) != INPUTS:
        raise CalibrationFileError(
            f"{path}: version {data.get('version')!r} with inputs {data.get('inputs')!r}; "
            f"this library reads version 1 with inputs {list(INPUTS)}"
        )
    models = data.get("models")
    if not isinstance(models, dict):
        raise CalibrationFileError(f"{path} has no models")
    return {str(name): Calibration.from_dict(model) for name, model in models.items()}


@lru_cache(maxsize=1)
def _packaged() -> dict[str, Calibration]:
    resource = importlib.resources.files("langchain_tiered_memory") / "_data" / "calibration.json"
    try:
        with importlib.resources.as_file(resource) as path:
            return load_calibrations(path)
    except CalibrationFileError as exc:
        logger.warning("the packaged recall calibration cannot be used (%s)", exc)
        return {}


def default_calibration(ranker: Literal["learned", "hand"], *, dense: bool) -> Calibration | None:
    """The packaged model for this ranker and archive (``dense``: candidates have vectors).

    ``None`` (with a warning in the log) if the file is missing or unusable:
    scores are then left uncalibrated and no floor applies.

    Example:
        >>> default_calibration("learned", dense=True).weights[0] > 0
        True
    """
    return _packaged().get(ranker if dense else f"{ranker}_keywords")


def default_min_score(embeddings: object) -> float | None:
    """The default relevance floor for recall with ``embeddings``.

    :data:`DEFAULT_MIN_SCORE` for the embedder the packaged calibration was
    fitted and measured with (:data:`CALIBRATED_EMBEDDER`, the offline
    default); ``None`` (no floor) for any other, whose cosine similarities lie
    on another scale, and for keyword-only recall, where it was not measured.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> default_min_score(DeterministicFakeEmbedding(size=8)) is None
        True
        >>> default_min_score(None) is None
        True
    """
    if getattr(embeddings, "model_name", None) == CALIBRATED_EMBEDDER:
        return DEFAULT_MIN_SCORE
    return None
