"""Retrieval bench: LoCoMo recall@k, NDCG@10 and recall within a token budget.

Protocol: per conversation, every turn is archived as one record (its
``dia_id`` kept in ``sources``) in a fresh
:class:`~langchain_tiered_memory.storage.sqlite.archive.SQLiteArchive`; then, for every
question of categories 1-4 that has evidence, the
:class:`~langchain_tiered_memory.recall.hybrid.Recaller` ranks the records and the
gold evidence ids they cover are scored. No LLM is involved.

* ``recall@k``: fraction of a question's gold turns covered by the first
  records, where a record costs as many of the ``k`` slots as the turns it
  covers (records are taken in rank order; one that no longer fits is skipped).
  So recall@10 means at most ten turns' worth of text.
* ``ndcg@10``: binary relevance over those (at most ten) turns.
* ``recall@614tok`` / ``recall@1228tok``: the same with a budget in tokens
  (``OpenAITokenCounter("gpt-4o-mini").count_text`` of each record's text):
  records in rank order while they fit.
* ``nothing_found``: the share of questions for which recall returns
  nothing (its relevance floor, ``min_score``): the scored questions
  (should be 0), LoCoMo's category-5 adversarial questions and the given
  unrelated questions (``data/unanswerable.json`` from the command line),
  asked of every conversation.

Gold ids that point to no turn of the conversation are dropped (three in the
LoCoMo release); questions left with no gold are skipped and counted.
Recall runs with ``touch=False``, so the order questions are asked in does not
change the results.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from tiered_memory_bench.datasets import (
    ...     DialogTurn, LocomoConversation, LocomoQuestion, Session)
    >>> turns = (DialogTurn("Ana", "D1:1", "I am allergic to peanuts."),
    ...          DialogTurn("Ben", "D1:2", "Noted, no peanuts."),
    ...          DialogTurn("Ana", "D1:3", "My dog is called Max."))
    >>> q = LocomoQuestion("What is the name of Ana's dog?", "Max", ("D1:3",), 4)
    >>> conv = LocomoConversation("c", "Ana", "Ben",
    ...                           (Session(1, "1:56 pm on 8 May, 2023", turns),), (q,))
    >>> report = run_retrieval_bench([conv], embeddings=DeterministicFakeEmbedding(size=16))
    >>> report["questions"], report["recall@5"]
    (1, 1.0)
"""

from __future__ import annotations

import importlib.resources
import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.recall.calibration import default_min_score
from langchain_tiered_memory.recall.hybrid import Fusion, Recaller, RecallWeights
from langchain_tiered_memory.recall.ranker import LinearRanker
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from tiered_memory_bench.datasets import DialogTurn, LocomoConversation, Session

__all__ = [
    "CATEGORIES",
    "RecordText",
    "RetrievalScore",
    "conversation_records",
    "load_unanswerable",
    "parse_session_date",
    "ranker_name",
    "run_retrieval_bench",
    "score_ranking",
]

#: LoCoMo question categories scored (5, adversarial, has no answer to find).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

#: What text each turn's record holds: ``"speaker"`` (``"Ana: text"``, the
#: default and measured best), ``"plain"`` (text only) or ``"dated"``
#: (``"[session date] Ana: text"``). Shared photos' captions are always kept.
RecordText = Literal["speaker", "plain", "dated"]

_EPOCH = datetime(2023, 1, 1, tzinfo=timezone.utc)


def ranker_name(ranker: LinearRanker | Literal["default"] | None) -> str:
    """How a bench report names the ranker: ``"learned (packaged)"``, ``"hand-set weights"``...

    Example:
        >>> ranker_name(None), ranker_name("default")
        ('hand-set weights', 'learned (packaged)')
    """
    if ranker is None:
        return "hand-set weights"
    if ranker == "default":
        return "learned (packaged)"
    return f"learned ({ranker.info.get('path', 'given')})"


def load_unanswerable(path: str | Path | None = None) -> list[str]:
    """The unrelated questions (default: the shipped ``data/unanswerable.json``).

    Example:
        >>> len(load_unanswerable()) >= 50
        True
    """
    if path is None:
        raw = importlib.resources.files("tiered_memory_bench") / "data" / "unanswerable.json"
        text = raw.read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    questions = data["questions"] if isinstance(data, dict) else data
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise ValueError(f"{path or 'unanswerable.json'}: 'questions' must be a list of strings")
    return questions


def parse_session_date(text: str, fallback_index: int = 0) -> datetime:
    """Parse a LoCoMo session date (``"1:56 pm on 8 May, 2023"``) as UTC.

    Unparseable dates fall back to one day per session index from 2023-01-01.

    Example:
        >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
        '2023-05-08T13:56:00+00:00'
        >>> parse_session_date("someday", 3).date().isoformat()
        '2023-01-04'
    """
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return _EPOCH + timedelta(days=fallback_index)


def _record_text(session: Session, turn: DialogTurn, style: RecordText) -> str:
    if style == "plain":
        return turn.content()
    if style == "dated":
        return f"[{session.date_time}] {turn.speaker}: {turn.content()}"
    return f"{turn.speaker}: {turn.content()}"


def conversation_records(
    conv: LocomoConversation, *, record_text: RecordText = "speaker"
) -> list[MemoryRecord]:
    """One ``turn`` record per utterance, keyed and sourced by its ``dia_id``.

    Records carry ``metadata`` ``speaker``, ``session`` and ``turn_index``
    (the recall's speaker, session and neighbour signals use them) and are
    dated by their session.

    Example:
        >>> from tiered_memory_bench.datasets import DialogTurn, Session
        >>> conv = LocomoConversation("c", "Ana", "Ben", (Session(2, "1:56 pm on 8 May, 2023",
        ...     (DialogTurn("Ana", "D2:1", "Hi!"),)),))
        >>> r = conversation_records(conv)[0]
        >>> r.text, r.sources, r.metadata["session"]
        ('Ana: Hi!', ('D2:1',), 2)
    """
    records = []
    for n, (session, turn) in enumerate(conv.dialog_turns()):
        start = parse_session_date(session.date_time, session.index)
        records.append(
            MemoryRecord.new(
                id=f"{conv.sample_id}:{turn.dia_id}",
                user_id=conv.sample_id,
                thread_id=conv.sample_id,
                kind="turn",
                text=_record_text(session, turn, record_text),
                created_at=start + timedelta(seconds=n),
                sources=(turn.dia_id,),
                metadata={"speaker": turn.speaker, "session": session.index, "turn_index": n},
            )
        )
    return records


@dataclass(frozen=True)
class RetrievalScore:
    """Scores of one ranked list against one question's gold turns."""

    recall: dict[int, float]
    ndcg10: float
    recall_tokens: dict[int, float]


def _take(costs: Sequence[int], budget: int) -> list[int]:
    """Indices taken in rank order while they fit in ``budget`` (skipping ones that don't)."""
    taken, used = [], 0
    for i, cost in enumerate(costs):
        if used + cost > budget:
            continue
        taken.append(i)
        used += cost
        if used >= budget:
            break
    return taken


def score_ranking(
    covers: Sequence[Sequence[str]],
    gold: Sequence[str],
    *,
    ks: Sequence[int] = (1, 3, 5, 10),
    tokens: Sequence[int] | None = None,
    token_budgets: Sequence[int] = (614, 1228),
) -> RetrievalScore:
    """Score ranked records (each given by the turn ids it covers) against ``gold``.

    A record costs ``len(covers[i])`` of ``k`` (at least 1).

    Example:
        >>> s = score_ranking([["D1:1", "D1:2"], ["D1:3"], ["D1:4"]], ["D1:3", "D1:4"],
        ...                   ks=(1, 2, 3), tokens=[40, 10, 10], token_budgets=(20,))
        >>> s.recall, s.recall_tokens
        ({1: 0.5, 2: 0.0, 3: 0.5}, {20: 1.0})
    """
    gold_set = set(gold)
    costs = [max(1, len(c)) for c in covers]

    def covered(taken: Sequence[int]) -> set[str]:
        return {g for i in taken for g in covers[i]}

    recall = {
        k: len(gold_set & covered(_take(costs, k))) / len(gold_set) if gold_set else 0.0 for k in ks
    }
    flat = [g for i in _take(costs, 10) for g in covers[i]][:10]
    seen: set[str] = set()
    dcg = 0.0
    for pos, turn in enumerate(flat):
        if turn in gold_set and turn not in seen:
            seen.add(turn)
            dcg += 1 / math.log2(pos + 2)
    ideal = sum(1 / math.log2(pos + 2) for pos in range(min(len(gold_set), 10)))
    recall_tokens: dict[int, float] = {}
    if tokens is not None:
        for budget in token_budgets:
            got = covered(_take(tokens, budget))
            recall_tokens[budget] = len(gold_set & got) / len(gold_set) if gold_set else 0.0
    return RetrievalScore(recall, dcg / ideal if ideal else 0.0, recall_tokens)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _summary(rows: Sequence[RetrievalScore], ks: Sequence[int], budgets: Sequence[int]) -> dict:
    out: dict[str, Any] = {"questions": len(rows)}
    for k in ks:
        out[f"recall@{k}"] = _mean([r.recall[k] for r in rows])
    out["ndcg@10"] = _mean([r.ndcg10 for r in rows])
    for b in budgets:
        out[f"recall@{b}tok"] = _mean([r.recall_tokens[b] for r in rows])
    return out


def run_retrieval_bench(
    conversations: Sequence[LocomoConversation],
    *,
    embeddings: Embeddings,
    embedder_name: str | None = None,
    ks: Sequence[int] = (1, 3, 5, 10),
    token_budgets: Sequence[int] = (614, 1228),
    weights: RecallWeights | None = None,
    ranker: LinearRanker | Literal["default"] | None = "default",
    fusion: Fusion = "minmax",
    strip_speaker_names: bool = True,
    dense_candidates: int = 200,
    keyword_candidates: int = 50,
    dedupe: bool = True,
    record_text: RecordText = "speaker",
    model: str = "gpt-4o-mini",
    depth: int = 80,
    workdir: str | Path | None = None,
    on_turns: Callable[[int], None] | None = None,
    on_question: Callable[[int], None] | None = None,
    per_question: bool = False,
    min_score: float | Literal["default"] | None = "default",
    unanswerable: Sequence[str] = (),
) -> dict[str, Any]:
    """Archive every turn, recall for every scored question, return the JSON-ready report.

    Args:
        conversations: LoCoMo conversations.
        embeddings: The embedder the archive and the recaller use.
        embedder_name: Reported as ``embedder`` (default: the class name).
        ks: Turn budgets for ``recall@k`` (``ndcg@10`` is always computed).
        token_budgets: Token budgets for ``recall@<n>tok``.
        weights, ranker, fusion, strip_speaker_names, dense_candidates,
            keyword_candidates, dedupe: The recall recipe (defaults: the
            library's defaults; ``ranker=None``: the hand-set weights).
        record_text: What each record's text holds (see :data:`RecordText`).
        model: Whose tokenizer counts the token budgets.
        depth: Records ranked per question (enough to fill every budget).
        workdir: Where the archives go (default: a temporary directory).
        on_turns: Progress callback, called with the number of turns archived.
        on_question: Progress callback, called once per question.
        per_question: Add a ``per_question`` list (question, category, gold
            ids, the ids of the first ten turns' worth of records, recall@k).
        min_score: Recall's relevance floor (``"default"``: the library's for
            this embedder, ``None``: none; see
            :class:`~langchain_tiered_memory.recall.hybrid.Recaller`).
        unanswerable: Questions whose answer is in no conversation, asked of
            each one beside its category-5 (adversarial) questions: the
            report's ``nothing_found`` gives the share of each kind of
            question (and of the scored ones) for which recall returns
            nothing.
    """
    started = time.perf_counter()
    counter = OpenAITokenCounter(model)
    max_k = max([10, *ks])
    rows: list[tuple[int, RetrievalScore]] = []
    per_conv: list[dict[str, Any]] = []
    ingest_seconds = 0.0
    turns_total = 0
    skipped = 0
    latencies: list[float] = []
    questions_out: list[dict[str, Any]] = []
    empty: dict[str, list[bool]] = {"answerable": [], "adversarial": [], "unrelated": []}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for conv in conversations:
            records = conversation_records(conv, record_text=record_text)
            tokens = {r.id: counter.count_text(r.text) for r in records}
            archive = SQLiteArchive(Path(tmp) / f"{len(per_conv)}.sqlite", embeddings=embeddings)
            try:
                t0 = time.perf_counter()
                by_session: dict[Any, list[MemoryRecord]] = {}
                for record in records:
                    by_session.setdefault(record.metadata["session"], []).append(record)
                for chunk in by_session.values():
                    archive.add(chunk)
                    if on_turns is not None:
                        on_turns(len(chunk))
                ingest_seconds += time.perf_counter() - t0
                turns_total += len(records)
                recaller = Recaller(
                    archive,
                    embeddings,
                    weights=weights,
                    ranker=ranker,
                    k=max(depth, max_k),
                    dense_candidates=max(dense_candidates, depth),
                    keyword_candidates=keyword_candidates,
                    fusion=fusion,
                    strip_speaker_names=strip_speaker_names,
                    dedupe=dedupe,
                    touch=False,
                    min_score=min_score,
                )
                now = max(r.created_at for r in records) + timedelta(days=1) if records else None
                known = {t.dia_id for _, t in conv.dialog_turns()}
                conv_rows: list[RetrievalScore] = []
                for question in conv.questions:
                    if question.category not in CATEGORIES or not question.evidence:
                        continue
                    gold = [g for g in question.evidence if g in known]
                    if not gold:
                        skipped += 1
                        continue
                    q0 = time.perf_counter()
                    ranked = recaller.recall(question.question, user_id=conv.sample_id, now=now)
                    latencies.append(time.perf_counter() - q0)
                    score = score_ranking(
                        [list(s.record.sources) for s in ranked],
                        gold,
                        ks=ks,
                        tokens=[
                            tokens.get(s.record.id) or counter.count_text(s.record.text)
                            for s in ranked
                        ],
                        token_budgets=token_budgets,
                    )
                    rows.append((question.category, score))
                    empty["answerable"].append(not ranked)
                    if per_question:
                        costs = [max(1, len(s.record.sources)) for s in ranked]
                        questions_out.append(
                            {
                                "sample_id": conv.sample_id,
                                "question": question.question,
                                "category": question.category,
                                "gold": gold,
                                "top10": [
                                    g for i in _take(costs, 10) for g in ranked[i].record.sources
                                ],
                            }
                            | {f"recall@{k}": v for k, v in score.recall.items()}
                        )
                    conv_rows.append(score)
                    if on_question is not None:
                        on_question(1)
                asked = [("adversarial", q.question) for q in conv.questions if q.category == 5]
                for kind, text in [*asked, *(("unrelated", q) for q in unanswerable)]:
                    empty[kind].append(not recaller.recall(text, user_id=conv.sample_id, now=now))
            finally:
                archive.close()
            per_conv.append(
                {"sample_id": conv.sample_id, "turns": len(records)}
                | _summary(conv_rows, ks, token_budgets)
            )
    scores = [s for _, s in rows]
    report: dict[str, Any] = {
        "bench": "retrieval",
        "dataset": "locomo",
        "embedder": embedder_name or type(embeddings).__name__,
        "conversations": len(per_conv),
        "turns": turns_total,
    }
    report |= _summary(scores, ks, token_budgets)
    report |= {
        "skipped_questions": skipped,
        "ingest_turns_per_second": round(turns_total / ingest_seconds, 1)
        if ingest_seconds
        else None,
        "recall_ms_p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "recall_ms_p95": round(sorted(latencies)[int(0.95 * (len(latencies) - 1))] * 1000, 1)
        if latencies
        else None,
        "seconds": round(time.perf_counter() - started, 2),
        "recipe": {
            "weights": vars(weights) if weights is not None else None,
            "min_score": default_min_score(embeddings) if min_score == "default" else min_score,
            "ranker": ranker_name(ranker),
            "fusion": fusion,
            "strip_speaker_names": strip_speaker_names,
            "dense_candidates": dense_candidates,
            "keyword_candidates": keyword_candidates,
            "dedupe": dedupe,
            "record_text": record_text,
        },
        "nothing_found": {
            kind: {"questions": len(flags), "rate": _mean([float(f) for f in flags])}
            for kind, flags in empty.items()
        },
        "by_category": {
            f"{cat} {name}": _summary([s for c, s in rows if c == cat], ks, token_budgets)
            for cat, name in CATEGORIES.items()
        },
        "per_conversation": per_conv,
    }
    if per_question:
        report["per_question"] = questions_out
    return report
