"""Retrieval bench on LongMemEval: sessions and turns, ours beside the peers.

Protocol (Wu et al., 2024, retrieval-only): memory is reset per question;
every turn of the question's haystack (user and assistant turns, with their
session id and date) is archived as one record; the system ranks turns for
the question; sessions are ranked by their best turn. Gold sessions are the
question's ``answer_session_ids``, gold turns those marked ``has_answer``.

Metrics, averaged over questions, for k in ``ks``:

* ``recall@k`` (the paper's ``recall_any@k``): a gold session is among the
  first k sessions;
* ``recall_all@k``: every gold session is among the first k;
* ``ndcg@k``: session NDCG (binary relevance, the paper's ``ndcg_any@k``);
* ``turn_recall_any@k``: a gold turn is among the first k turns (questions
  without marked turns are left out of the turn metrics and counted in
  ``questions_with_gold_turns``);
* ``turn_ndcg@k``: turn NDCG.

Systems, run on the same records and the same embedder (each text is
embedded once; every system reads the same cache):

* ``tiered-memory``: :class:`~langchain_tiered_memory.recall.hybrid.Recaller` over a
  :class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive` (the library's
  hybrid recall), with the session ranking of :func:`rank_sessions`;
* ``faiss``: LangChain's ``FAISS`` vector store as a ``VectorStoreRetriever``
  over the turns (dense only);
* ``inmemorystore``: LangGraph's ``InMemoryStore`` semantic search, what
  LangMem's search tool uses (dense only);
* ``bm25``: BM25 (``bm25s``) over date-prefixed turns, the issue's baseline.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> q = LongMemEvalQuestion(
    ...     "q1", "single-session-user", "What is my dog called?", "Max",
    ...     "2023/05/30 (Tue) 10:18", ("s1", "s2"),
    ...     ("2023/05/20 (Sat) 07:47", "2023/05/21 (Sun) 09:00"),
    ...     (({"role": "user", "content": "My dog is called Max.", "has_answer": True},
    ...       {"role": "assistant", "content": "Max is a lovely name."}),
    ...      ({"role": "user", "content": "Plan a trip to Rome."},)),
    ...     ("s1",))
    >>> report = run_longmemeval_bench([q], embeddings=DeterministicFakeEmbedding(size=16),
    ...                                systems=("tiered-memory", "bm25"))
    >>> report["questions"], report["recall@1"], report["peers"]["bm25"]["recall@1"]
    (1, 1.0, 1.0)
"""

from __future__ import annotations

import logging
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.recall.calibration import default_min_score
from langchain_tiered_memory.recall.hybrid import Recaller
from langchain_tiered_memory.recall.ranker import LinearRanker
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from tiered_memory_bench.datasets import LongMemEvalQuestion
from tiered_memory_bench.retrieval import ranker_name

logger = logging.getLogger(__name__)

__all__ = [
    "OURS",
    "PEERS",
    "SYSTEMS",
    "QuestionScore",
    "haystack_records",
    "parse_lme_date",
    "rank_sessions",
    "run_longmemeval_bench",
    "score_question",
]

#: Our system's name in the report.
OURS = "tiered-memory"
#: The peers, in the order they are reported.
PEERS = ("faiss", "inmemorystore", "bm25")
#: Every system the bench can run.
SYSTEMS = (OURS, *PEERS)

_EPOCH = datetime(2023, 1, 1, tzinfo=timezone.utc)

#: A ranker: (records, question) -> record ids, best first.
Ranker = Callable[[Sequence[MemoryRecord], LongMemEvalQuestion], list[str]]


def parse_lme_date(text: str, fallback_index: int = 0) -> datetime:
    """Parse a LongMemEval date (``"2023/05/20 (Sat) 07:47"``) as UTC.

    Example:
        >>> parse_lme_date("2023/05/20 (Sat) 07:47").isoformat()
        '2023-05-20T07:47:00+00:00'
        >>> parse_lme_date("?", 2).date().isoformat()
        '2023-01-03'
    """
    parts = text.split()
    if len(parts) >= 1:
        clock = parts[-1] if len(parts) >= 2 else "00:00"
        try:
            return datetime.strptime(f"{parts[0]} {clock}", "%Y/%m/%d %H:%M").replace(
                tzinfo=timezone.utc
            )
        except ValueError:
            pass
    return _EPOCH + timedelta(days=fallback_index)


def haystack_records(question: LongMemEvalQuestion) -> list[MemoryRecord]:
    """One ``turn`` record per haystack turn, id ``"<session id>:<turn index>"``.

    The record's text is the turn's content; ``metadata`` holds the ``session``
    id, the ``speaker`` (role), the ``turn_index`` in its session, the session
    ``date`` and ``has_answer``. Records
    are dated by their session (plus one second per turn, keeping the order).

    Example:
        >>> q = LongMemEvalQuestion("q", "t", "?", "", "", ("s1",), ("2023/05/20 (Sat) 07:47",),
        ...                         (({"role": "user", "content": "Hi"},),), ("s1",))
        >>> r = haystack_records(q)[0]
        >>> r.id, r.text, r.metadata["session"], r.created_at.isoformat()
        ('q:s1:0', 'Hi', 's1', '2023-05-20T07:47:00+00:00')
    """
    records: list[MemoryRecord] = []
    for n, (session_id, date, session) in enumerate(
        zip(question.session_ids, question.session_dates, question.sessions, strict=True)
    ):
        start = parse_lme_date(date, n)
        for t, turn in enumerate(session):
            records.append(
                MemoryRecord.new(
                    id=f"{question.question_id}:{session_id}:{t}",
                    user_id=question.question_id,
                    thread_id=session_id,
                    kind="turn",
                    text=str(turn.get("content", "")),
                    created_at=start + timedelta(seconds=t),
                    sources=(f"{session_id}:{t}",),
                    metadata={
                        "speaker": str(turn.get("role", "")),
                        "session": session_id,
                        "turn_index": t,
                        "date": date,
                        "has_answer": bool(turn.get("has_answer", False)),
                    },
                )
            )
    return records


def rank_sessions(turn_sessions: Iterable[str]) -> list[str]:
    """Sessions in the order of their best turn.

    Example:
        >>> rank_sessions(["b", "a", "b", "c"])
        ['b', 'a', 'c']
    """
    return list(dict.fromkeys(turn_sessions))


def _ndcg(ranked: Sequence[str], gold: set[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


@dataclass(frozen=True)
class QuestionScore:
    """One question's scores: session metrics, and turn metrics if it has gold turns."""

    question_type: str
    session: dict[str, float]
    turn: dict[str, float] | None


def score_question(
    ranked_turns: Sequence[str],
    turn_session: dict[str, str],
    gold_sessions: Iterable[str],
    gold_turns: Iterable[str],
    *,
    question_type: str = "",
    ks: Sequence[int] = (1, 3, 5, 10),
) -> QuestionScore:
    """Score one ranked list of turn ids.

    Example:
        >>> s = score_question(["t3", "t1", "t2"], {"t1": "A", "t2": "B", "t3": "C"},
        ...                    ["A", "B"], ["t2"], ks=(1, 2, 3))
        >>> s.session["recall@2"], s.session["recall_all@2"], s.session["recall_all@3"]
        (1.0, 0.0, 1.0)
        >>> s.turn["turn_recall_any@2"], s.turn["turn_recall_any@3"]
        (0.0, 1.0)
    """
    gold_s, gold_t = set(gold_sessions), set(gold_turns)
    sessions = rank_sessions(turn_session[t] for t in ranked_turns)
    session: dict[str, float] = {}
    for k in ks:
        top = set(sessions[:k])
        session[f"recall@{k}"] = float(bool(gold_s & top))
        session[f"recall_all@{k}"] = float(bool(gold_s) and gold_s <= top)
        session[f"ndcg@{k}"] = _ndcg(sessions, gold_s, k)
    turn: dict[str, float] | None = None
    if gold_t:
        turn = {}
        for k in ks:
            turn[f"turn_recall_any@{k}"] = float(bool(gold_t & set(ranked_turns[:k])))
            turn[f"turn_ndcg@{k}"] = _ndcg(list(ranked_turns), gold_t, k)
    return QuestionScore(question_type, session, turn)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def summarize(scores: Sequence[QuestionScore], ks: Sequence[int]) -> dict[str, Any]:
    """Average question scores into the report's metrics."""
    with_turns = [s.turn for s in scores if s.turn is not None]
    out: dict[str, Any] = {
        "questions": len(scores),
        "questions_with_gold_turns": len(with_turns),
    }
    for name in ("recall", "recall_all", "ndcg"):
        for k in ks:
            out[f"{name}@{k}"] = _mean([s.session[f"{name}@{k}"] for s in scores])
    for name in ("turn_recall_any", "turn_ndcg"):
        for k in ks:
            out[f"{name}@{k}"] = _mean([t[f"{name}@{k}"] for t in with_turns])
    return out


# -- rankers -------------------------------------------------------------------------------


def _date_prefixed(record: MemoryRecord) -> str:
    return (
        f"[{record.metadata.get('date', '')}] {record.metadata.get('speaker', '')}: {record.text}"
    )


def bm25_ranker(depth: int) -> Ranker:
    """BM25 (``bm25s``, English stopwords) over date-prefixed turns."""
    try:
        import bm25s
    except ImportError as exc:
        raise ImportError(f"the BM25 peer needs bm25s: {install_hint('bench')}") from exc

    logging.getLogger("bm25s").setLevel(logging.WARNING)

    def rank(records: Sequence[MemoryRecord], question: LongMemEvalQuestion) -> list[str]:
        corpus = bm25s.tokenize(
            [_date_prefixed(r) for r in records], stopwords="en", show_progress=False
        )
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        query = bm25s.tokenize([question.question], stopwords="en", show_progress=False)
        if not query.vocab:
            return []
        docs, _ = retriever.retrieve(
            query, k=min(depth, len(records)), show_progress=False, n_threads=1
        )
        return [records[int(i)].id for i in docs[0]]

    return rank


def faiss_ranker(embeddings: Embeddings, depth: int) -> Ranker:
    """LangChain's ``FAISS`` vector store as a ``VectorStoreRetriever``."""
    from langchain_community.vectorstores import FAISS

    def rank(records: Sequence[MemoryRecord], question: LongMemEvalQuestion) -> list[str]:
        store = FAISS.from_texts(
            [r.text for r in records], embeddings, metadatas=[{"id": r.id} for r in records]
        )
        retriever = store.as_retriever(search_kwargs={"k": min(depth, len(records))})
        return [d.metadata["id"] for d in retriever.invoke(question.question)]

    return rank


def _distinct_text_batches(records: Sequence[MemoryRecord]) -> list[list[MemoryRecord]]:
    """Split records into batches in which no text repeats (fewest batches, order kept).

    Example:
        >>> recs = [MemoryRecord.new(user_id="u", kind="turn", text=t) for t in "aba"]
        >>> [[r.text for r in b] for b in _distinct_text_batches(recs)]
        [['a', 'b'], ['a']]
    """
    batches: list[list[MemoryRecord]] = []
    seen: list[set[str]] = []
    for record in records:
        level = sum(1 for texts in seen if record.text in texts)
        if level == len(batches):
            batches.append([])
            seen.append(set())
        batches[level].append(record)
        seen[level].add(record.text)
    return batches


def inmemorystore_ranker(embeddings: Embeddings, depth: int) -> Ranker:
    """LangGraph's ``InMemoryStore`` with an embedding index (LangMem's search)."""
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    dims = len(embeddings.embed_query("dimension probe"))

    def rank(records: Sequence[MemoryRecord], question: LongMemEvalQuestion) -> list[str]:
        store = InMemoryStore(index={"embed": embeddings, "dims": dims, "fields": ["text"]})
        namespace = ("memories", question.question_id)
        # InMemoryStore.batch raises when two items of one batch share a text
        # (it embeds each distinct text once but expects one vector per item),
        # so repeated texts go in later batches.
        for batch in _distinct_text_batches(records):
            store.batch([PutOp(namespace, r.id, {"text": r.text}) for r in batch])
        hits = store.search(namespace, query=question.question, limit=min(depth, len(records)))
        return [h.key for h in hits]

    return rank


def ours_ranker(embeddings: Embeddings, depth: int, workdir: Path, **recipe: Any) -> Ranker:
    """The library's :class:`Recaller` over a fresh :class:`SQLiteArchive` per question."""

    settings = dict(recipe)
    settings["dense_candidates"] = max(depth, settings.get("dense_candidates", 200))

    def rank(records: Sequence[MemoryRecord], question: LongMemEvalQuestion) -> list[str]:
        folder = Path(tempfile.mkdtemp(dir=workdir))
        archive = SQLiteArchive(folder / "archive.sqlite", embeddings=embeddings)
        try:
            archive.add(list(records))
            recaller = Recaller(archive, embeddings, k=depth, touch=False, **settings)
            now = parse_lme_date(question.question_date, len(question.sessions))
            ranked = recaller.recall(question.question, user_id=question.question_id, now=now)
            return [s.record.id for s in ranked]
        finally:
            archive.close()
            shutil.rmtree(folder, ignore_errors=True)

    return rank


def _rankers(
    systems: Sequence[str],
    embeddings: Embeddings,
    depth: int,
    workdir: Path,
    ranker: LinearRanker | Literal["default"] | None = "default",
    min_score: float | Literal["default"] | None = "default",
) -> dict[str, Ranker]:
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {unknown}; valid: {', '.join(SYSTEMS)}")
    factories: dict[str, Callable[[], Ranker]] = {
        OURS: lambda: ours_ranker(embeddings, depth, workdir, ranker=ranker, min_score=min_score),
        "faiss": lambda: faiss_ranker(embeddings, depth),
        "inmemorystore": lambda: inmemorystore_ranker(embeddings, depth),
        "bm25": lambda: bm25_ranker(depth),
    }
    return {name: factories[name]() for name in systems}


def run_longmemeval_bench(
    questions: Sequence[LongMemEvalQuestion],
    *,
    embeddings: Embeddings,
    embedder_name: str | None = None,
    systems: Sequence[str] = SYSTEMS,
    ks: Sequence[int] = (1, 3, 5, 10),
    depth: int = 200,
    ranker: LinearRanker | Literal["default"] | None = "default",
    workdir: str | Path | None = None,
    on_question: Callable[[int], None] | None = None,
    per_question: bool = False,
    min_score: float | Literal["default"] | None = "default",
) -> dict[str, Any]:
    """Rank every question's haystack with each system; return the JSON-ready report.

    Our system's metrics are at the top level (as in the LoCoMo bench); every
    system, ours included, is also under ``systems`` and the peers under
    ``peers``.

    Args:
        questions: LongMemEval questions (memory is reset for each).
        embeddings: The one embedder every dense system uses. Wrap a slow one
            in a cache (the local embedders take ``cache_path``): each
            haystack is embedded once and read from the cache by the others.
        embedder_name: Reported as ``embedder`` (default: the class name).
        systems: Which of :data:`SYSTEMS` to run (ours first if present).
        ks: Cut-offs for every metric.
        depth: Turns ranked per question.
        ranker: Our recall's ranker (``None``: the hand-set weights).
        workdir: Where the per-question archives go (default: a temporary
            directory).
        on_question: Progress callback, called once per question.
        per_question: Add every question's top sessions and turns per system.
        min_score: Our recall's relevance floor (``"default"``: the library's
            for this embedder, ``None``: none); the
            report's ``nothing_found`` is the share of questions for which
            it returned nothing (every question here has an answer).
    """
    if not questions:
        raise ValueError("no questions to run: check --data and --limit")
    started = time.perf_counter()
    depth = max(depth, max(ks))
    scores: dict[str, list[QuestionScore]] = {name: [] for name in systems}
    latency: dict[str, list[float]] = {name: [] for name in systems}
    details: list[dict[str, Any]] = []
    nothing: list[str] = []  # the questions our recall returned nothing for
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rankers = _rankers(systems, embeddings, depth, Path(tmp), ranker, min_score)
        for question in questions:
            records = haystack_records(question)
            turn_session = {r.id: str(r.metadata["session"]) for r in records}
            gold_turns = [r.id for r in records if r.metadata["has_answer"]]
            row: dict[str, Any] = {"question_id": question.question_id}
            for name, rank in rankers.items():
                t0 = time.perf_counter()
                ranked = rank(records, question)
                latency[name].append(time.perf_counter() - t0)
                if name == OURS and not ranked:
                    nothing.append(question.question_id)
                score = score_question(
                    ranked,
                    turn_session,
                    question.answer_session_ids,
                    gold_turns,
                    question_type=question.question_type,
                    ks=ks,
                )
                scores[name].append(score)
                if per_question:
                    row[name] = {
                        "sessions": rank_sessions(turn_session[t] for t in ranked)[:10],
                        "turns": ranked[:10],
                    } | score.session
            if per_question:
                details.append(
                    row
                    | {
                        "question": question.question,
                        "question_type": question.question_type,
                        "gold_sessions": list(question.answer_session_ids),
                        "gold_turns": gold_turns,
                    }
                )
            if on_question is not None:
                on_question(1)
    types = sorted({q.question_type for q in questions})
    by_system: dict[str, dict[str, Any]] = {}
    for name in systems:
        rows = scores[name]
        by_system[name] = summarize(rows, ks) | {
            "seconds_per_question_p50": round(statistics.median(latency[name]), 3),
            "by_type": {t: summarize([s for s in rows if s.question_type == t], ks) for t in types},
        }
    report: dict[str, Any] = {
        "bench": "retrieval",
        "dataset": "longmemeval",
        "embedder": embedder_name or type(embeddings).__name__,
        "turns": sum(len(s) for q in questions for s in q.sessions),
        "depth": depth,
        "ranker": ranker_name(ranker),
        "min_score": default_min_score(embeddings) if min_score == "default" else min_score,
    }
    main = OURS if OURS in by_system else systems[0]
    report |= by_system[main]
    if OURS in scores:
        report["nothing_found"] = {
            "answerable": {
                "questions": len(questions),
                "rate": round(len(nothing) / len(questions), 4),
            }
        }
    report["systems"] = by_system
    report["peers"] = {name: by_system[name] for name in systems if name != OURS}
    report["seconds"] = round(time.perf_counter() - started, 2)
    if per_question:
        report["per_question"] = details
    return report
