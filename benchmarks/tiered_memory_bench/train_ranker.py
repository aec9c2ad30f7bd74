"""Train the learned recall ranker and validate it across conversations.

Reproduces ``langchain_tiered_memory/_data/ranker.json`` (the weights
:func:`~langchain_tiered_memory.recall.ranker.default_ranker` loads) and the
cross-validated figures recorded in it:

1. **Candidates**, as the retrieval benches make them: every LoCoMo turn of a
   conversation in one :class:`SQLiteArchive` (``bench.retrieval``'s
   records), every LongMemEval haystack turn in one archive per question
   (``bench.longmemeval``'s records); for each question the
   :class:`Recaller`'s dense (200) and keyword (50) candidates.
2. **Features**: :func:`candidate_features` of each question's candidates;
   a candidate is relevant when it covers a gold turn (LoCoMo ``evidence``,
   LongMemEval ``has_answer``).
3. **Fit**: a linear model with a listwise softmax loss (each question's
   probability mass on its relevant candidates, ListNet-style), L2 penalty,
   full-batch Adam from zero weights - deterministic. LoCoMo questions
   weigh 1; the LongMemEval questions together weigh ``--lme-weight`` times
   the LoCoMo ones (there are 15 times fewer of them), and put
   ``--session-share`` of their weight on the mass of their gold sessions'
   candidates (the session bench ranks a session by its best turn, so the
   turn a session is found by need not be the gold one).
4. **Validation**: six folds; fold *i* holds out LoCoMo conversation *i*
   and a sixth of the LongMemEval questions (dealt round-robin in
   question-type order, so each fold holds every type); the model is
   fitted on the rest and ranks the held-out questions with the library's
   own :func:`score_candidates` (near-duplicate merging included). The
   figures are the benches' metrics (LoCoMo recall@k and within 614 /
   1,228 tokens; LongMemEval session recall_all@k and turn recall_any@k)
   for the cross-validated models, the model fitted on everything
   (in-sample) and the hand-set :class:`RecallWeights`.

Usage::

    python -m tiered_memory_bench.train_ranker \\
        --locomo ../shared/data/locomo/locomo_dev.json \\
        --longmemeval ../shared/data/longmemeval/longmemeval_s_dev.json.gz \\
        --embed-cache vectors.sqlite \\
        --out langchain_tiered_memory/_data/ranker.json --report ranker-cv.json

``--no-write`` validates without writing the ranker file. The default
embedder (MiniLM, 64 tokens) is the one the weights are for.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

import langchain_tiered_memory
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.embeddings import default_embeddings
from langchain_tiered_memory.recall.hybrid import Recaller, score_candidates
from langchain_tiered_memory.recall.ranker import FEATURES, LinearRanker, candidate_features
from langchain_tiered_memory.recall.signals import Candidate
from langchain_tiered_memory.records import MemoryRecord, ScoredRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from tiered_memory_bench.datasets import load_locomo, load_longmemeval
from tiered_memory_bench.longmemeval import haystack_records, parse_lme_date, score_question
from tiered_memory_bench.retrieval import CATEGORIES, conversation_records, score_ranking

FOLDS = 6
LOCOMO_KS = (1, 3, 5, 10)
LME_KS = (1, 3, 5, 10)
BUDGETS = (614, 1228)
# records ranked per question, as the benches rank them
LOCOMO_DEPTH = 80
LME_DEPTH = 200


@dataclass
class Query:
    """One question with its candidates, their features and what counts as found."""

    dataset: str  # "locomo" or "longmemeval"
    group: str  # the conversation (LoCoMo) or the question id (LongMemEval)
    kind: str  # the LoCoMo category name or the LongMemEval question type
    text: str
    now: datetime
    candidates: list[Candidate]
    features: np.ndarray
    relevant: np.ndarray
    gold: list[str]
    gold_sessions: list[str] = field(default_factory=list)
    fold: int = 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


#: Records to archive beside a conversation's turns (given the turns), for levers.
ExtraRecords = Callable[[list[MemoryRecord]], list[MemoryRecord]]


def locomo_queries(
    path: Path,
    embeddings: Any,
    workdir: Path,
    *,
    extra_records: ExtraRecords | None = None,
    dense: int = 200,
    keyword: int = 50,
) -> list[Query]:
    """Every scored LoCoMo question with its candidates (the retrieval bench's protocol).

    ``extra_records`` adds records to each archive (a lever to measure);
    ``dense`` and ``keyword`` are the candidates pulled per question.
    """
    out: list[Query] = []
    for n, conv in enumerate(load_locomo(path)):
        records = conversation_records(conv)
        archive = SQLiteArchive(workdir / f"locomo-{n}.sqlite", embeddings=embeddings)
        try:
            by_session: dict[Any, list[Any]] = {}
            for record in records:
                by_session.setdefault(record.metadata["session"], []).append(record)
            for chunk in by_session.values():
                archive.add(chunk)
            if extra_records is not None:
                archive.add(extra_records(records))
            recaller = Recaller(
                archive, embeddings, touch=False, dense_candidates=dense, keyword_candidates=keyword
            )
            now = max(r.created_at for r in records) + timedelta(days=1)
            known = {t.dia_id for _, t in conv.dialog_turns()}
            for question in conv.questions:
                gold = [g for g in question.evidence if g in known]
                if question.category not in CATEGORIES or not gold:
                    continue
                candidates = recaller.candidates(question.question, user_id=conv.sample_id)
                relevant = np.array(
                    [float(bool(set(c.record.sources) & set(gold))) for c in candidates]
                )
                out.append(
                    Query(
                        "locomo",
                        conv.sample_id,
                        CATEGORIES[question.category],
                        question.question,
                        now,
                        candidates,
                        candidate_features(candidates, query=question.question, now=now),
                        relevant,
                        gold,
                        fold=n % FOLDS,
                    )
                )
        finally:
            archive.close()
        _log(f"LoCoMo {conv.sample_id}: {len(out)} questions so far")
    return out


def longmemeval_queries(
    path: Path,
    embeddings: Any,
    workdir: Path,
    *,
    extra_records: ExtraRecords | None = None,
    dense: int = 200,
    keyword: int = 50,
) -> list[Query]:
    """Every LongMemEval question with its haystack's candidates (one archive each)."""
    out: list[Query] = []
    questions = load_longmemeval(path)
    # dealt round-robin in question-type order: every fold gets each type about equally
    fold_of = {
        q.question_id: i % FOLDS
        for i, q in enumerate(sorted(questions, key=lambda q: (q.question_type, q.question_id)))
    }
    for n, question in enumerate(questions):
        records = haystack_records(question)
        archive = SQLiteArchive(workdir / f"lme-{n}.sqlite", embeddings=embeddings)
        try:
            archive.add(records)
            if extra_records is not None:
                archive.add(extra_records(records))
            recaller = Recaller(
                archive, embeddings, touch=False, dense_candidates=dense, keyword_candidates=keyword
            )
            now = parse_lme_date(question.question_date, len(question.sessions))
            candidates = recaller.candidates(question.question, user_id=question.question_id)
        finally:
            archive.close()
        (workdir / f"lme-{n}.sqlite").unlink(missing_ok=True)
        gold = [r.id for r in records if r.metadata["has_answer"]]
        fold = fold_of[question.question_id]
        out.append(
            Query(
                "longmemeval",
                question.question_id,
                question.question_type,
                question.question,
                now,
                candidates,
                candidate_features(candidates, query=question.question, now=now),
                np.array([float(c.record.id in set(gold)) for c in candidates]),
                gold,
                list(question.answer_session_ids),
                fold=fold,
            )
        )
        if (n + 1) % 10 == 0:
            _log(f"LongMemEval: {n + 1} questions")
    return out


def _session_targets(q: Query) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's session (numbered within the query) and whether it is a gold one."""
    sessions = [str(c.record.metadata.get("session", c.record.id)) for c in q.candidates]
    number = {s: i for i, s in enumerate(dict.fromkeys(sessions))}
    gold = set(q.gold_sessions)
    return np.array([number[s] for s in sessions]), np.array([s in gold for s in sessions])


def fit(
    queries: Sequence[Query],
    *,
    lme_weight: float,
    l2: float,
    iterations: int,
    rate: float,
    session_share: float = 0.0,
    features: Sequence[str] = FEATURES,
) -> LinearRanker:
    """The linear ranker minimising the weighted listwise softmax loss (deterministic).

    A question with gold sessions (LongMemEval's) puts ``session_share`` of
    its weight on a session-level loss: the probability mass on its gold
    sessions' candidates, however it is spread inside each session (the
    session bench ranks a session by its best turn), each gold session
    counting equally. ``features`` names the columns of the queries' feature
    matrices.
    """
    if not 0.0 <= session_share <= 1.0:
        raise ValueError(f"session_share must be in [0, 1], got {session_share}")

    def by_session(q: Query) -> bool:
        return session_share > 0 and bool(q.gold_sessions) and bool(_session_targets(q)[1].any())

    used = [q for q in queries if q.relevant.any() or by_session(q)]
    if not used:
        raise ValueError("no question has a relevant candidate to learn from")
    stacked = np.concatenate([q.features for q in used])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-6] = 1.0
    x = (stacked - mean) / scale
    sizes = np.array([len(q.candidates) for q in used])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    segment = np.repeat(np.arange(len(used)), sizes)
    target = np.concatenate(
        [q.relevant / q.relevant.sum() if q.relevant.any() else q.relevant for q in used]
    )
    # the session loss: candidates grouped by (query, session); gold sessions weigh 1/count
    groups, session_target, offset = [], [], 0
    for q in used:
        number, gold = _session_targets(q)
        groups.append(number + offset)
        offset += int(number.max()) + 1
        count = len(set(number[gold].tolist()))
        session_target.append(gold / count if by_session(q) else np.zeros(len(gold)))
    group = np.concatenate(groups)
    session_mass = np.concatenate(session_target)
    locomo = sum(1 for q in used if q.dataset == "locomo")
    lme = len(used) - locomo
    # the LongMemEval questions together weigh lme_weight times the LoCoMo ones (alone: 1 each)
    lme_each = lme_weight * locomo / lme if lme and locomo else 1.0
    per_query = np.array([1.0 if q.dataset == "locomo" else lme_each for q in used])
    per_query /= per_query.sum()
    share = np.array([session_share if by_session(q) else 0.0 for q in used])
    turn_weight = per_query * (1.0 - share) * np.array([float(q.relevant.any()) for q in used])
    session_weight = per_query * share
    weights = np.zeros(x.shape[1])
    m = np.zeros_like(weights)
    v = np.zeros_like(weights)
    for t in range(1, iterations + 1):
        s = x @ weights
        top = np.maximum.reduceat(s, starts)
        e = np.exp(s - top[segment])
        p = e / np.add.reduceat(e, starts)[segment]
        residual = (p - target) * turn_weight[segment]
        if session_share > 0:
            in_session = np.zeros(offset)
            np.add.at(in_session, group, e)
            within = e / in_session[group]
            residual += (p - session_mass * within) * session_weight[segment]
        grad = x.T @ residual + l2 * weights
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        weights -= rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return LinearRanker(
        tuple(features),
        tuple(float(a) for a in mean),
        tuple(float(a) for a in scale),
        tuple(round(float(a), 6) for a in weights),
    )


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


#: Ranks one query's candidates: the records in order (at most the depth given).
Rank = Callable[[Query, int], Sequence[ScoredRecord]]


def ranked_by(ranker_for: Callable[[Query], LinearRanker | None]) -> Rank:
    """Rank with the library's :func:`score_candidates` and ``ranker_for(query)`` (None: hand)."""

    def rank(q: Query, depth: int) -> Sequence[ScoredRecord]:
        return score_candidates(
            q.candidates, now=q.now, query=q.text, k=depth, ranker=ranker_for(q)
        )

    return rank


def evaluate(queries: Sequence[Query], rank: Rank) -> dict[str, Any]:
    """The benches' metrics for each query ranked by ``rank`` (as deep as the benches rank)."""
    counter = OpenAITokenCounter("gpt-4o-mini")
    locomo: dict[str, list[Any]] = defaultdict(list)
    lme: dict[str, list[Any]] = defaultdict(list)
    for q in queries:
        ranked = rank(q, LOCOMO_DEPTH if q.dataset == "locomo" else LME_DEPTH)
        if q.dataset == "locomo":
            score = score_ranking(
                [list(h.record.sources) for h in ranked],
                q.gold,
                ks=LOCOMO_KS,
                tokens=[counter.count_text(h.record.text) for h in ranked],
                token_budgets=BUDGETS,
            )
            locomo["all"].append(score)
            locomo[q.kind].append(score)
        else:
            ids = [h.record.id for h in ranked]
            sessions = {h.record.id: str(h.record.metadata["session"]) for h in ranked}
            lme["all"].append(
                score_question(ids, sessions, q.gold_sessions, q.gold, question_type=q.kind)
            )
            lme[q.kind].append(lme["all"][-1])

    def locomo_summary(rows: Sequence[Any]) -> dict[str, float]:
        out: dict[str, float] = {"questions": len(rows)}
        for k in LOCOMO_KS:
            out[f"recall@{k}"] = _mean([r.recall[k] for r in rows])
        for b in BUDGETS:
            out[f"recall@{b}tok"] = _mean([r.recall_tokens[b] for r in rows])
        return out

    def lme_summary(rows: Sequence[Any]) -> dict[str, float]:
        out: dict[str, float] = {"questions": len(rows)}
        turns = [r.turn for r in rows if r.turn is not None]
        for k in LME_KS:
            out[f"recall_all@{k}"] = _mean([r.session[f"recall_all@{k}"] for r in rows])
            out[f"turn_recall_any@{k}"] = _mean([t[f"turn_recall_any@{k}"] for t in turns])
        return out

    result: dict[str, Any] = {}
    if locomo:
        result["locomo"] = locomo_summary(locomo.pop("all")) | {
            "by_category": {k: locomo_summary(v) for k, v in sorted(locomo.items())}
        }
    if lme:
        result["longmemeval"] = lme_summary(lme.pop("all")) | {
            "by_type": {k: lme_summary(v) for k, v in sorted(lme.items())}
        }
    return result


def _embedder_name(embeddings: Any) -> str:
    name = getattr(embeddings, "model_name", "") or type(embeddings).__name__
    length = getattr(embeddings, "max_length", None)
    return f"{name} ({length} tokens)" if length else name


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train(
    locomo: Path,
    longmemeval: Path | None,
    embeddings: Any,
    *,
    lme_weight: float = 0.3,
    l2: float = 1e-3,
    iterations: int = 400,
    rate: float = 0.05,
    session_share: float = 0.5,
) -> tuple[LinearRanker, dict[str, Any]]:
    """Fit the ranker on every question and cross-validate it; ``(ranker, report)``.

    The ranker's ``info`` records the data (file names and SHA-256), the
    settings and the headline figures; the report has them by category and
    question type, for the cross-validated models, the final one (in-sample)
    and the hand-set weights.
    """
    with tempfile.TemporaryDirectory() as tmp:
        queries = locomo_queries(locomo, embeddings, Path(tmp))
        if longmemeval is not None:
            queries += longmemeval_queries(longmemeval, embeddings, Path(tmp))
    settings: dict[str, Any] = {
        "lme_weight": lme_weight,
        "l2": l2,
        "iterations": iterations,
        "rate": rate,
        "session_share": session_share,
    }

    def fitted(subset: Sequence[Query]) -> LinearRanker:
        return fit(
            subset,
            lme_weight=lme_weight,
            l2=l2,
            iterations=iterations,
            rate=rate,
            session_share=session_share,
        )

    folds = sorted({q.fold for q in queries})
    if len(folds) < 2:
        raise ValueError(
            "cross-validation needs questions in two folds or more: give two LoCoMo "
            "conversations or more, or LongMemEval questions as well"
        )
    _log(f"{len(queries)} questions; cross-validating ({len(folds)} folds)")
    fold_models = {f: fitted([q for q in queries if q.fold != f]) for f in folds}
    model = fitted(queries)
    report = {
        "cross_validated": evaluate(queries, ranked_by(lambda q: fold_models[q.fold])),
        "in_sample": evaluate(queries, ranked_by(lambda q: model)),
        "hand_weights": evaluate(queries, ranked_by(lambda q: None)),
    }
    data: dict[str, Any] = {"locomo": {"file": locomo.name, "sha256": _sha256(locomo)}}
    if longmemeval is not None:
        data["longmemeval"] = {"file": longmemeval.name, "sha256": _sha256(longmemeval)}
    info = {
        "trained": {
            "script": "python -m tiered_memory_bench.train_ranker",
            "embedder": _embedder_name(embeddings),
            "data": data,
            "questions": {
                "locomo": sum(1 for q in queries if q.dataset == "locomo"),
                "longmemeval": sum(1 for q in queries if q.dataset == "longmemeval"),
            },
            "folds": FOLDS,
            "loss": "listwise softmax over each question's candidates (LongMemEval: half "
            "over its gold turns, half over its gold sessions), L2, Adam",
            **settings,
        },
        **{name: headline(rows) for name, rows in report.items()},
    }
    return LinearRanker(model.features, model.mean, model.scale, model.weights, info), report


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo-format JSON file.")
    parser.add_argument("--longmemeval", type=Path, help="LongMemEval JSON(.gz) file.")
    parser.add_argument("--embed-cache", type=Path, help="Embedding cache (SQLite file).")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(langchain_tiered_memory.__file__).parent / "_data" / "ranker.json",
        help="Where to write the ranker (default: the package's _data/ranker.json; in a "
        "checkout installed with pip install -e, the repository's).",
    )
    parser.add_argument("--report", type=Path, help="Also write the full report here (JSON).")
    parser.add_argument("--no-write", action="store_true", help="Validate only.")
    parser.add_argument("--lme-weight", type=float, default=0.3)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument(
        "--session-share",
        type=float,
        default=0.5,
        help="Share of each LongMemEval question's weight on the session-level loss.",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    try:
        ranker, report = train(
            args.locomo,
            args.longmemeval,
            default_embeddings(cache_path=args.embed_cache),
            lme_weight=args.lme_weight,
            l2=args.l2,
            iterations=args.iterations,
            rate=args.rate,
            session_share=args.session_share,
        )
    except (ValueError, FileNotFoundError) as exc:
        _log(f"error: {exc}")
        return 2
    for name, rows in report.items():
        _log(f"{name}: {json.dumps(headline(rows))}")
    _log("weights: " + json.dumps(dict(zip(FEATURES, ranker.weights, strict=True))))
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(ranker.to_dict(), indent=1) + "\n", encoding="utf-8")
        _log(f"wrote {args.out}")
    if args.report is not None:
        full: dict[str, Any] = {"ranker": ranker.to_dict(), **report}
        full["seconds"] = round(time.perf_counter() - started, 1)
        args.report.write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")
        _log(f"wrote {args.report}")
    return 0


def headline(rows: dict[str, Any]) -> dict[str, Any]:
    """The overall figures without the breakdowns (what the ranker file records)."""
    return {
        name: {k: v for k, v in summary.items() if not isinstance(v, dict)}
        for name, summary in rows.items()
    }


if __name__ == "__main__":
    sys.exit(main())
