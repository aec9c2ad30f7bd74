"""Fit the recall calibration and measure the relevance floor.

Reproduces ``langchain_tiered_memory/_data/calibration.json`` (what
:func:`~langchain_tiered_memory.recall.calibration.default_calibration` loads)
and the table in ``benchmarks/README.md`` that chose
:data:`~langchain_tiered_memory.recall.calibration.DEFAULT_MIN_SCORE`:

1. **Candidates** as the ranker's training makes them
   (:mod:`tiered_memory_bench.train_ranker`): the LoCoMo dev questions of
   categories 1-4 and the LongMemEval dev questions, each candidate labelled
   relevant when it holds a gold turn; and, on the same archives, questions
   whose answer is not there: LoCoMo's category-5 (adversarial) questions
   and the shipped unrelated questions (``data/unanswerable.json``) asked of
   every LoCoMo conversation.
2. **Fit**: for each ranker (learned, hand-set) and archive kind (with
   vectors; keyword-only, the dense scores removed), a logistic regression of
   the label on :func:`~langchain_tiered_memory.recall.calibration.calibration_inputs`
   (the ranker's score, the raw cosine, the query's words covered), over
   the answerable questions' candidates only (Newton's method,
   deterministic). The unanswerable questions are not fitted on.
3. **Floor**: for each floor, the recall figures of the answerable questions
   (ranked through the library's own ``score_candidates`` with that floor)
   and the share of questions for which nothing scores above it - the
   unanswerable ones (should be high) and the answerable ones (should be 0).

Usage::

    python -m tiered_memory_bench.calibrate \\
        --locomo ../shared/data/locomo/locomo_dev.json \\
        --longmemeval ../shared/data/longmemeval/longmemeval_s_dev.json.gz \\
        --embed-cache vectors.sqlite --report calibration-report.json

``--no-write`` measures without writing the calibration file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

import langchain_tiered_memory
from langchain_tiered_memory.embeddings import default_embeddings
from langchain_tiered_memory.recall.calibration import (
    CALIBRATION_FORMAT,
    INPUTS,
    Calibration,
    calibration_inputs,
)
from langchain_tiered_memory.recall.hybrid import Recaller, score_candidates
from langchain_tiered_memory.recall.ranker import candidate_features, default_ranker
from langchain_tiered_memory.recall.signals import Candidate
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from tiered_memory_bench.datasets import load_locomo
from tiered_memory_bench.retrieval import conversation_records, load_unanswerable
from tiered_memory_bench.train_ranker import (
    LME_DEPTH,
    LOCOMO_DEPTH,
    Query,
    evaluate,
    locomo_queries,
    longmemeval_queries,
)

#: Floors measured (calibrated scores).
FLOORS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Records a question recalls when the nothing-found rate is measured (the library's default).
RECALL_K = 5


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def unanswerable_queries(
    path: Path, unrelated: Sequence[str], embeddings: Any, workdir: Path
) -> list[Query]:
    """LoCoMo's category-5 questions and ``unrelated`` asked of every conversation (no gold)."""
    out: list[Query] = []
    for n, conv in enumerate(load_locomo(path)):
        records = conversation_records(conv)
        archive = SQLiteArchive(workdir / f"u-{n}.sqlite", embeddings=embeddings)
        try:
            by_session: dict[Any, list[Any]] = {}
            for record in records:
                by_session.setdefault(record.metadata["session"], []).append(record)
            for chunk in by_session.values():
                archive.add(chunk)
            recaller = Recaller(archive, embeddings, touch=False)
            now = max(r.created_at for r in records) + timedelta(days=1)
            asked = [("adversarial", q.question) for q in conv.questions if q.category == 5]
            asked += [("unrelated", q) for q in unrelated]
            for kind, text in asked:
                candidates = recaller.candidates(text, user_id=conv.sample_id)
                out.append(
                    Query(
                        "unanswerable",
                        conv.sample_id,
                        kind,
                        text,
                        now,
                        candidates,
                        candidate_features(candidates, query=text, now=now),
                        np.zeros(len(candidates)),
                        [],
                    )
                )
        finally:
            archive.close()
        _log(f"unanswerable, {conv.sample_id}: {len(out)} questions so far")
    return out


def _keyword_only(q: Query) -> Query:
    """The query as a keyword-only archive sees it: keyword hits, no dense scores."""
    keep = [i for i, c in enumerate(q.candidates) if c.keyword is not None]
    candidates = [Candidate(q.candidates[i].record, None, q.candidates[i].keyword) for i in keep]
    return Query(
        q.dataset,
        q.group,
        q.kind,
        q.text,
        q.now,
        candidates,
        candidate_features(candidates, query=q.text, now=q.now),
        q.relevant[keep] if len(keep) else np.zeros(0),
        q.gold,
        q.gold_sessions,
        q.fold,
    )


def _inputs(q: Query, ranker: Any) -> tuple[np.ndarray, np.ndarray]:
    """Calibration inputs and labels of every candidate of ``q`` (ranked, not cut)."""
    ranked = score_candidates(
        q.candidates, now=q.now, query=q.text, k=None, dedupe=False, ranker=ranker
    )
    by_id = {c.record.id: i for i, c in enumerate(q.candidates)}
    order = [by_id[s.record.id] for s in ranked]
    x = calibration_inputs([q.candidates[i] for i in order], [s.score for s in ranked], q.text)
    return x, q.relevant[order]


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    l2: float = 1e-4,
    steps: int = 50,
) -> tuple[np.ndarray, float]:
    """``(weights, intercept)`` of a logistic regression (Newton's method, deterministic).

    Inputs are standardised inside; the weights are for the raw inputs.

    Example:
        >>> x = np.array([[0.0], [1.0], [2.0], [3.0]])
        >>> w, b = fit_logistic(x, np.array([0.0, 0.0, 1.0, 1.0]))
        >>> bool(w[0] > 0), bool(abs(b + 1.5 * w[0]) < 1e-6)
        (True, True)
    """
    weight = np.ones(len(x)) if sample_weight is None else sample_weight / sample_weight.mean()
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.column_stack([(x - mean) / scale, np.ones(len(x))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2 * len(x))
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ ((p - y) * weight) + penalty * w
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    weights = w[:-1] / scale
    return weights, float(w[-1] - (mean * weights).sum())


def fit_calibration(
    answerable: Sequence[Query], unrelated: Sequence[Query], ranker: Any
) -> Calibration:
    """The two models of a :class:`Calibration` for this ranker.

    The record model: ``holds a gold turn`` on the ranking score, over the
    answerable questions' candidates. The question model: ``answerable`` on
    the best cosine and the best word coverage of each question's
    candidates, answerable questions against ``unrelated`` ones, each class
    weighing half.
    """
    pairs = [_inputs(q, ranker) for q in answerable if len(q.candidates)]
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    (score_weight,), score_intercept = fit_logistic(x[:, :1], y)
    rows = [_inputs(q, ranker)[0][0, 1:] for q in [*answerable, *unrelated] if len(q.candidates)]
    labels = np.array(
        [1.0] * sum(1 for q in answerable if len(q.candidates))
        + [0.0] * sum(1 for q in unrelated if len(q.candidates))
    )
    balance = np.where(labels == 1.0, 0.5 / labels.mean(), 0.5 / (1.0 - labels.mean()))
    match_weights, match_intercept = fit_logistic(np.array(rows), labels, sample_weight=balance)
    return Calibration(
        (round(float(score_weight), 6), *(round(float(v), 6) for v in match_weights)),
        (round(score_intercept, 6), round(match_intercept, 6)),
        {
            "candidates": len(y),
            "relevant": int(y.sum()),
            "answerable_questions": int(labels.sum()),
            "unrelated_questions": int(len(labels) - labels.sum()),
        },
    )


def _gated(ranked: Sequence[Any], floor: float) -> Sequence[Any]:
    """``ranked`` as recall returns it at this floor: all, or nothing if none reaches it."""
    return ranked if any(r.score >= floor or r.parts.get("identifiers") for r in ranked) else []


def measure(
    answerable: Sequence[Query],
    unanswerable: Sequence[Query],
    models: dict[str, Calibration],
    *,
    fitted_unrelated: set[str],
    floors: Sequence[float] = FLOORS,
) -> dict[str, Any]:
    """Recall figures and nothing-found rates at each floor, for the learned and hand rankers.

    Each question is ranked once, calibrated, through the library's
    ``score_candidates``; a floor then returns a question's ranking whole or,
    when no record reaches it, nothing (what ``min_score`` does).
    """
    out: dict[str, Any] = {}
    for name, ranker in (("learned", default_ranker()), ("hand", None)):
        ranked: dict[int, Sequence[Any]] = {}
        for q in [*answerable, *unanswerable]:
            depth = LME_DEPTH if q.dataset == "longmemeval" else LOCOMO_DEPTH
            ranked[id(q)] = score_candidates(
                q.candidates,
                now=q.now,
                query=q.text,
                k=depth,
                ranker=ranker,
                calibration=models[
                    name + ("" if any(c.dense is not None for c in q.candidates) else "_keywords")
                ],
            )
        groups = {
            "adversarial": [q for q in unanswerable if q.kind == "adversarial"],
            "unrelated_held_out": [
                q for q in unanswerable if q.kind == "unrelated" and q.text not in fitted_unrelated
            ],
            "unrelated_fitted": [
                q for q in unanswerable if q.kind == "unrelated" and q.text in fitted_unrelated
            ],
            "answerable": list(answerable),
        }
        rows = []
        for floor in floors:

            def rank(
                q: Query, depth: int, floor: float = floor, ranked: dict[int, Any] = ranked
            ) -> Sequence[Any]:
                return list(_gated(ranked[id(q)], floor))[:depth]

            row: dict[str, Any] = {"floor": floor, **evaluate(answerable, rank)}
            for group, queries in groups.items():
                empty = sum(1 for q in queries if not _gated(ranked[id(q)][:RECALL_K], floor))
                row[f"nothing_found_{group}"] = round(empty / len(queries), 4) if queries else None
            for dataset in ("locomo", "longmemeval"):
                row.get(dataset, {}).pop("by_category", None)
                row.get(dataset, {}).pop("by_type", None)
            rows.append(row)
            _log(f"{name} floor {floor}: {json.dumps(row)}")
        out[name] = rows
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo-format JSON file.")
    parser.add_argument("--longmemeval", type=Path, help="LongMemEval JSON(.gz) file.")
    parser.add_argument("--unanswerable", type=Path, help="Unrelated questions (JSON).")
    parser.add_argument("--embed-cache", type=Path, help="Embedding cache (SQLite file).")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(langchain_tiered_memory.__file__).parent / "_data" / "calibration.json",
        help="Where to write the calibration (default: the package's _data/calibration.json).",
    )
    parser.add_argument("--report", type=Path, help="Also write the floor table here (JSON).")
    parser.add_argument("--no-write", action="store_true", help="Measure only.")
    parser.add_argument(
        "--queries-cache",
        type=Path,
        help="Keep the questions' candidates in this (pickle) file; reruns read it.",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    if args.queries_cache is not None and args.queries_cache.exists():
        with args.queries_cache.open("rb") as f:
            answerable, unanswerable = pickle.load(f)
    else:
        embeddings = default_embeddings(cache_path=args.embed_cache)
        with tempfile.TemporaryDirectory() as tmp:
            answerable = locomo_queries(args.locomo, embeddings, Path(tmp))
            if args.longmemeval is not None:
                answerable += longmemeval_queries(args.longmemeval, embeddings, Path(tmp))
            unanswerable = unanswerable_queries(
                args.locomo, load_unanswerable(args.unanswerable), embeddings, Path(tmp)
            )
        if args.queries_cache is not None:
            with args.queries_cache.open("wb") as f:
                pickle.dump((answerable, unanswerable), f)
    _log(f"{len(answerable)} answerable, {len(unanswerable)} unanswerable questions")
    # every other unrelated question is fitted on (no candidate relevant); the rest is held out
    fitted_unrelated = set(load_unanswerable(args.unanswerable)[0::2])
    negatives = [q for q in unanswerable if q.kind == "unrelated" and q.text in fitted_unrelated]
    models: dict[str, Calibration] = {}
    for name, ranker in (("learned", default_ranker()), ("hand", None)):
        models[name] = fit_calibration(answerable, negatives, ranker)
        models[name + "_keywords"] = fit_calibration(
            [_keyword_only(q) for q in answerable], [_keyword_only(q) for q in negatives], ranker
        )
        for key in (name, name + "_keywords"):
            _log(f"{key}: {models[key].to_dict()}")
    table = measure(answerable, unanswerable, models, fitted_unrelated=fitted_unrelated)
    data: dict[str, Any] = {"locomo": {"file": args.locomo.name, "sha256": _sha256(args.locomo)}}
    if args.longmemeval is not None:
        data["longmemeval"] = {
            "file": args.longmemeval.name,
            "sha256": _sha256(args.longmemeval),
        }
    document = {
        "format": CALIBRATION_FORMAT,
        "version": 1,
        "inputs": list(INPUTS),
        "models": {name: model.to_dict() for name, model in models.items()},
        "trained": {
            "script": "python -m tiered_memory_bench.calibrate",
            "data": data,
            "questions": {
                "answerable": len(answerable),
                "unanswerable": len(unanswerable),
            },
            "fit": "two logistic regressions (Newton's method): 'holds a gold turn' on the "
            "ranking score, over the answerable questions' candidates; 'answerable' on the best "
            "cosine and the best word coverage of a question's candidates, the answerable "
            "questions against every other unrelated question (data/unanswerable.json), each "
            "class weighing half",
        },
    }
    if not args.no_write:
        args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        _log(f"wrote {args.out}")
    if args.report is not None:
        report: dict[str, Any] = {"calibration": document, "floors": table}
        report["seconds"] = round(time.perf_counter() - started, 1)
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        _log(f"wrote {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
