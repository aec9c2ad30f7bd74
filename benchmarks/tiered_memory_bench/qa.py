"""End-to-end QA bench: LoCoMo questions answered from the memory, judged by an LLM.

Protocol, per conversation:

1. A fresh :class:`~langchain_tiered_memory.store.MemoryStore` (SQLite + FTS5
   + FAISS in a temporary directory) opens the conversation's memory, and
   every message is fed through it in order, as the tokens bench does:
   ``speaker_a`` as the user, ``speaker_b`` as the assistant, each message
   carrying its speaker's name, the first message of each session its date,
   and every turn dated with its session (``add_messages(..., at=...)``), so
   recalled memories show when they were said. Compression, page-out to the
   archive and fact extraction run as in normal use.
2. For every question of categories 1-4 (5, adversarial, is left out as in
   the Mem0 and Zep evaluations), ``memory.build_context(query=question)``
   assembles the budgeted prompt: the recall gate decides, and recall runs
   if it fires. The question itself is not stored (it would leak into the
   next questions); it is sent as a last human message asking for a brief
   answer, and its tokens are reserved in the budget (as ``tools_tokens``),
   so the whole prompt still fits ``context_window - output``.
3. The answer model replies; an LLM judge labels the reply against the gold
   answer with the Mem0 paper's LLM-as-a-Judge prompt
   (:data:`JUDGE_PROMPT`, verbatim from ``mem0/evaluation/metrics/llm_judge.py``),
   which asks for ``{"label": "CORRECT"|"WRONG"}``. A reply that cannot be
   parsed (:func:`parse_judge_label`) counts as WRONG and is counted in
   ``judge_failures``.

Accuracy is correct answers over questions, overall and by category. Prompt
tokens are counted with the memory's own exact counter; latency is the
answer model's wall time per question.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage
    >>> from tiered_memory_bench.datasets import (
    ...     DialogTurn, LocomoConversation, LocomoQuestion, Session)
    >>> turns = (DialogTurn("Ana", "D1:1", "I am allergic to peanuts."),
    ...          DialogTurn("Ben", "D1:2", "Noted, no peanuts."))
    >>> q = LocomoQuestion("What is Ana allergic to?", "peanuts", ("D1:1",), 4)
    >>> conv = LocomoConversation("c", "Ana", "Ben", (Session(1, "8 May 2023", turns),), (q,))
    >>> report = run_qa_bench(
    ...     [conv],
    ...     model=GenericFakeChatModel(messages=iter([AIMessage("Peanuts")])),
    ...     judge=GenericFakeChatModel(messages=iter([AIMessage('{"label": "CORRECT"}')])),
    ...     embeddings=DeterministicFakeEmbedding(size=16))
    >>> report["questions"], report["accuracy"], report["judge_failures"]
    (1, 1.0, 0)
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.summarize import Summarizer
from langchain_tiered_memory.values.turns import message_text
from langchain_tiered_memory.write.writer import Extractor
from tiered_memory_bench.datasets import (
    DialogTurn,
    LocomoConversation,
    LocomoQuestion,
    Session,
)
from tiered_memory_bench.retrieval import CATEGORIES, parse_session_date

__all__ = [
    "ANSWER_PROMPT",
    "JUDGE_PROMPT",
    "QA_SYSTEM_PROMPT",
    "Label",
    "model_label",
    "parse_judge_label",
    "plan_questions",
    "resolve_model",
    "run_qa_bench",
]

#: The judge's verdict.
Label = Literal["CORRECT", "WRONG"]

#: The memory's pinned system prompt for a conversation (speaker names filled in).
QA_SYSTEM_PROMPT = (
    "You answer questions about a long conversation between {speaker_a} and "
    "{speaker_b}, using only your memory of it: the memory sections below and the "
    "most recent messages. {speaker_a}'s messages appear as the user's and "
    "{speaker_b}'s as the assistant's. A date in brackets at the start of a message "
    "is when that session began; the time attribute of a recalled memory is when it "
    "was said."
)

#: The last (human) message of every answer prompt.
ANSWER_PROMPT = (
    "Question{asked}: {question}\n"
    "Answer from the memory above in a few words (a short phrase, not a sentence). "
    'Turn relative dates ("last year", "yesterday") into dates using the session '
    "dates. If the memory does not say, give your best guess."
)

#: Mem0's LLM-as-a-Judge prompt (``ACCURACY_PROMPT`` of
#: ``mem0/evaluation/metrics/llm_judge.py``), verbatim.
JUDGE_PROMPT = """
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""  # noqa: E501

_CATEGORY_NAMES = {**CATEGORIES, 5: "adversarial"}
_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_BARE_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def parse_judge_label(reply: str) -> Label | None:
    """The judge's label, or ``None`` if the reply cannot be read.

    A JSON object with a ``label`` key anywhere in the reply wins (code fences
    and surrounding prose are fine; the key and value are case-insensitive).
    Failing that, a reply naming exactly one of the upper-case words
    ``CORRECT`` / ``WRONG`` gives that label (the prompt asks the judge to
    finish with one and never to write both).

    Example:
        >>> parse_judge_label('```json\\n{"label": "CORRECT"}\\n```')
        'CORRECT'
        >>> parse_judge_label("The dates differ, so: WRONG")
        'WRONG'
        >>> parse_judge_label("CORRECT or WRONG? Hard to say.") is None
        True
        >>> parse_judge_label('{"label": "maybe"}') is None
        True
    """
    for match in _JSON_OBJECT.finditer(reply):
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        for key, value in data.items():
            if str(key).strip().lower() == "label" and isinstance(value, str):
                label = value.strip().upper()
                if label == "CORRECT":
                    return "CORRECT"
                if label == "WRONG":
                    return "WRONG"
    found = set(_BARE_LABEL.findall(reply))
    if found == {"CORRECT"}:
        return "CORRECT"
    if found == {"WRONG"}:
        return "WRONG"
    return None


def resolve_model(spec: BaseChatModel | str) -> BaseChatModel:
    """A chat model from an object or a name (one resolver: ``models.require_chat_model``).

    ``"local"`` is the offline SmolLM2 of :mod:`langchain_tiered_memory.models`;
    any other string goes to ``init_chat_model`` with ``temperature=0``.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> fake = GenericFakeChatModel(messages=iter([]))
        >>> resolve_model(fake) is fake
        True
    """
    from langchain_tiered_memory.models import require_chat_model

    return require_chat_model(spec, what="model", temperature=0)


def model_label(spec: BaseChatModel | str) -> str:
    """A model's name for the report (the string, or the object's model name).

    Example:
        >>> model_label("openai:gpt-4o-mini")
        'openai:gpt-4o-mini'
    """
    if isinstance(spec, str):
        return spec
    for attr in ("model_name", "model", "model_path"):
        value = getattr(spec, attr, None)
        if isinstance(value, str) and value:
            return f"{type(spec).__name__}({value})"
    return type(spec).__name__


def plan_questions(
    conversations: Sequence[LocomoConversation],
    *,
    limit: int | None = None,
    categories: Collection[int] = tuple(CATEGORIES),
) -> list[tuple[LocomoConversation, list[LocomoQuestion]]]:
    """The questions to ask, by conversation, in file order.

    ``limit`` caps the number of questions; conversations left with none are
    dropped (and so never fed).

    Example:
        >>> from tiered_memory_bench.datasets import LocomoConversation
        >>> qs = tuple(LocomoQuestion(f"q{i}", "a", (), c) for i, c in enumerate([4, 5, 2]))
        >>> plan = plan_questions([LocomoConversation("c", "A", "B", (), qs)], limit=2)
        >>> [q.question for q in plan[0][1]]
        ['q0', 'q2']
    """
    plan: list[tuple[LocomoConversation, list[LocomoQuestion]]] = []
    left = limit
    for conv in conversations:
        if left is not None and left <= 0:
            break
        chosen = [q for q in conv.questions if q.category in categories]
        if left is not None:
            chosen = chosen[:left]
            left -= len(chosen)
        if chosen:
            plan.append((conv, chosen))
    return plan


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] if ordered else 0.0


def _message(
    conv: LocomoConversation, session: Session, turn: DialogTurn, *, first: bool, dated: bool
) -> BaseMessage:
    return conv.to_message(session, turn, first=first or dated)


def _feed(
    memory: TieredMemory,
    conv: LocomoConversation,
    *,
    date_every_message: bool,
    on_turn: Callable[[int], None] | None,
) -> None:
    for n, (session, turn) in enumerate(conv.dialog_turns()):
        first = n == 0 or session.turns[0] is turn
        at = parse_session_date(session.date_time, session.index) + timedelta(seconds=n)
        memory.add_messages(
            [_message(conv, session, turn, first=first, dated=date_every_message)], at=at
        )
        if on_turn is not None:
            on_turn(1)


def run_qa_bench(
    conversations: Sequence[LocomoConversation],
    *,
    model: BaseChatModel | str,
    judge: BaseChatModel | str,
    context_window: int = 4096,
    token_model: str = "gpt-4o-mini",
    embeddings: Embeddings | str | None = None,
    summarizer_factory: Callable[[TokenCounter], Summarizer] | None = None,
    extractor_factory: Callable[[], Extractor] | None = None,
    limit: int | None = None,
    categories: Collection[int] = tuple(CATEGORIES),
    date_every_message: bool = False,
    workdir: str | Path | None = None,
    on_turn: Callable[[int], None] | None = None,
    on_question: Callable[[int], None] | None = None,
    per_question: bool = True,
) -> dict[str, Any]:
    """Feed each conversation through the memory, answer and judge its questions.

    Args:
        conversations: LoCoMo conversations.
        model: The answer model: a chat model or a name for :func:`resolve_model`.
        judge: The judge model, likewise.
        context_window: The memory's window in tokens.
        token_model: Whose tokenizer counts (the budget and the reported tokens).
        embeddings: The archive's embedder (an object, ``"e5"``/``"minilm"``, or
            ``None`` for the library default), shared by every conversation.
        summarizer_factory: Builds the summariser from the memory's counter
            (default: extractive, no LLM).
        extractor_factory: Builds the fact extractor (default: rule-based).
        limit: Ask at most this many questions in all (conversations are fed
            only if one of their questions is asked).
        categories: LoCoMo categories to ask (default 1-4).
        date_every_message: Prefix every message, not only each session's
            first, with its session date.
        workdir: Where the stores go (default: a temporary directory).
        on_turn: Progress callback, called once per message fed.
        on_question: Progress callback, called once per question judged.
        per_question: Include every question, answer and label in the report.

    Returns:
        The JSON-ready report (see ``benchmarks/README.md``).
    """
    started = time.perf_counter()
    answer_model = resolve_model(model)
    judge_model = resolve_model(judge)
    if embeddings is None or isinstance(embeddings, str):
        from langchain_tiered_memory.embeddings import default_embeddings

        embeddings = default_embeddings(embeddings)
    plan = plan_questions(conversations, limit=limit, categories=categories)
    rows: list[dict[str, Any]] = []
    ingest_seconds = 0.0
    turns_fed = 0
    input_budget = 0
    counter_name = ""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n, (conv, questions) in enumerate(plan):
            with MemoryStore(Path(tmp) / f"conv{n}", embeddings=embeddings) as store:
                memory = store.memory(
                    conv.sample_id,
                    conv.sample_id,
                    model=token_model,
                    context_window=context_window,
                    system_prompt=QA_SYSTEM_PROMPT.format(
                        speaker_a=conv.speaker_a, speaker_b=conv.speaker_b
                    ),
                    extractor=extractor_factory() if extractor_factory else None,
                )
                if summarizer_factory is not None:
                    memory.summarizer = summarizer_factory(memory.counter)
                input_budget = memory.budget.input_budget
                counter_name = memory.counter.name
                t0 = time.perf_counter()
                _feed(memory, conv, date_every_message=date_every_message, on_turn=on_turn)
                ingest_seconds += time.perf_counter() - t0
                turns_fed += len(conv.dialog_turns())
                last_date = conv.sessions[-1].date_time if conv.sessions else ""
                for question in questions:
                    rows.append(_ask(memory, conv, question, answer_model, judge_model, last_date))
                    if on_question is not None:
                        on_question(1)
    return _report(
        rows,
        model=model_label(model),
        judge=model_label(judge),
        context_window=context_window,
        input_budget=input_budget,
        counter_name=counter_name,
        embedder=_embedder_label(embeddings),
        conversations=len(plan),
        turns=turns_fed,
        ingest_seconds=ingest_seconds,
        seconds=time.perf_counter() - started,
        per_question=per_question,
    )


def _ask(
    memory: TieredMemory,
    conv: LocomoConversation,
    question: LocomoQuestion,
    answer_model: BaseChatModel,
    judge_model: BaseChatModel,
    last_date: str,
) -> dict[str, Any]:
    """Build the context, answer, judge: one question's row."""
    asked = f" (asked after the last session, {last_date})" if last_date else ""
    ask = HumanMessage(ANSWER_PROMPT.format(asked=asked, question=question.question))
    counter = memory.counter
    reserve = counter.count_messages([ask]) - counter.count_messages([])
    saved = memory.tools_tokens
    memory.tools_tokens = saved + reserve  # the question must fit in the budget too
    try:
        context = memory.build_context(query=question.question)
    finally:
        memory.tools_tokens = saved
    prompt = [*context.messages, ask]
    row: dict[str, Any] = {
        "sample_id": conv.sample_id,
        "question": question.question,
        "category": question.category,
        "gold": question.answer,
        "prompt_tokens": counter.count_messages(prompt),
        "recalled": len(context.recalled),
        "gate": context.gate.reason if context.gate else None,
        "gate_fired": bool(context.gate and context.gate.recall),
        "answer": "",
        "answer_ms": None,
        "label": "WRONG",
        "judge_reply": None,
        "error": None,
    }
    t0 = time.perf_counter()
    try:
        reply = answer_model.invoke(prompt)
    except Exception as exc:  # noqa: BLE001 - a failed call is a wrong answer, counted apart
        row["error"] = f"answer model failed: {exc!r}"
        return row
    row["answer_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    row["answer"] = message_text(reply).strip() if isinstance(reply, BaseMessage) else str(reply)
    judge_prompt = JUDGE_PROMPT.format(
        question=question.question, gold_answer=question.answer, generated_answer=row["answer"]
    )
    try:
        verdict = judge_model.invoke([HumanMessage(judge_prompt)])
    except Exception as exc:  # noqa: BLE001 - counted as a judge failure
        row["error"] = f"judge failed: {exc!r}"
        row["judge_failure"] = True
        return row
    text = message_text(verdict) if isinstance(verdict, BaseMessage) else str(verdict)
    row["judge_reply"] = text
    label = parse_judge_label(text)
    row["judge_failure"] = label is None
    row["label"] = label or "WRONG"
    return row


def _embedder_label(embeddings: Embeddings) -> str:
    kind = type(embeddings).__name__
    name = getattr(embeddings, "model_name", None)
    return f"{kind}({name})" if isinstance(name, str) else kind


def _accuracy(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    correct = sum(1 for r in rows if r["label"] == "CORRECT")
    return {
        "questions": len(rows),
        "correct": correct,
        "accuracy": round(correct / len(rows), 4) if rows else 0.0,
    }


def _report(
    rows: Sequence[dict[str, Any]],
    *,
    model: str,
    judge: str,
    context_window: int,
    input_budget: int,
    counter_name: str,
    embedder: str,
    conversations: int,
    turns: int,
    ingest_seconds: float,
    seconds: float,
    per_question: bool,
) -> dict[str, Any]:
    tokens = [r["prompt_tokens"] for r in rows]
    latencies = [r["answer_ms"] for r in rows if r["answer_ms"] is not None]
    overall = _accuracy(rows)
    report: dict[str, Any] = {
        "bench": "qa",
        "dataset": "locomo",
        "model": model,
        "judge": judge,
        "context_window": context_window,
        "input_budget_tokens": input_budget,
        "token_counter": counter_name,
        "embedder": embedder,
        "conversations": conversations,
        "turns": turns,
        "questions": overall["questions"],
        "correct": overall["correct"],
        "accuracy": overall["accuracy"],
        "judge_failures": sum(1 for r in rows if r.get("judge_failure")),
        "answer_failures": sum(
            1 for r in rows if r["error"] and r["error"].startswith("answer model")
        ),
        "prompt_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else 0.0,
        "prompt_tokens_p50": _percentile(tokens, 0.5),
        "prompt_tokens_p95": _percentile(tokens, 0.95),
        "prompt_tokens_max": max(tokens, default=0),
        "budget_violations": sum(1 for t in tokens if t > input_budget),
        "answer_ms_p50": round(_percentile(latencies, 0.5), 1),
        "answer_ms_p95": round(_percentile(latencies, 0.95), 1),
        "gate_fire_rate": round(sum(r["gate_fired"] for r in rows) / len(rows), 4) if rows else 0.0,
        "recalled_mean": round(statistics.fmean(r["recalled"] for r in rows), 2) if rows else 0.0,
        "ingest_turns_per_second": round(turns / ingest_seconds, 1) if ingest_seconds else None,
        "seconds": round(seconds, 2),
        "protocol": (
            "LoCoMo categories 1-4; answer from TieredMemory.build_context(query=question); "
            "judge: Mem0's LLM-as-a-Judge prompt, unparseable verdicts count as WRONG"
        ),
        "by_category": {
            f"{cat} {_CATEGORY_NAMES.get(cat, 'other')}": _accuracy(
                [r for r in rows if r["category"] == cat]
            )
            for cat in sorted({r["category"] for r in rows})
        },
    }
    if per_question:
        report["per_question"] = list(rows)
    return report
