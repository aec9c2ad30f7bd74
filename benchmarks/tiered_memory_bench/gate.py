"""Gate bench: how often the recall gate fires where it should, and where not.

* memory questions (LoCoMo or LongMemEval format): every one needs memory;
  each is gated against a keyword index of its own conversation;
* self-contained requests (a JSON list of strings): gated against the
  keyword index of a real conversation, so the gate is shown not to fire
  merely because memories exist.

Example:
    >>> from langchain_tiered_memory.recall.gate import TermIndex
    >>> r = run_gate_bench(["When did Ana move to Berlin?"], [TermIndex(["Ana moved"])],
    ...                    ["What is 17*23?"], TermIndex(["Ana moved"]))
    >>> r["memory_questions_fire_rate"], r["self_contained_fire_rate"]
    (1.0, 0.0)
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_tiered_memory.recall.gate import GateDecision, TermIndex, decide_recall

__all__ = ["load_memory_questions", "load_self_contained", "run_gate_bench"]


def load_self_contained(path: str | Path | None = None) -> list[str]:
    """The self-contained requests (default: the set shipped with the package)."""
    if path is None:
        data = importlib.resources.files("tiered_memory_bench") / "data"
        raw = (data / "self_contained.json").read_text(encoding="utf-8")
    else:
        raw = Path(path).read_text(encoding="utf-8")
    items = json.loads(raw)
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"{path}: expected a JSON list of strings")
    return items


def load_memory_questions(path: str | Path) -> tuple[list[str], list[TermIndex]]:
    """Questions and the keyword index of each one's conversation.

    Detects the format: LoCoMo (a list of conversations with ``qa``) or
    LongMemEval (a list of questions with ``haystack_sessions``; ``.gz`` ok).
    LoCoMo's adversarial category 5 is skipped (no answer in the conversation).
    """
    path = Path(path)
    if not path.exists():
        from tiered_memory_bench.datasets import LOCOMO_SOURCE, LONGMEMEVAL_SOURCE

        raise FileNotFoundError(
            f"Memory questions not found at {path}. {LOCOMO_SOURCE} {LONGMEMEVAL_SOURCE} "
            "Then pass --memory-questions PATH (once per file)."
        )
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    questions: list[str] = []
    indexes: list[TermIndex] = []
    for item in raw:
        if "haystack_sessions" in item:
            index = TermIndex(
                [t["content"] for session in item["haystack_sessions"] for t in session]
            )
            questions.append(item["question"])
            indexes.append(index)
        elif "conversation" in item:
            conv = item["conversation"]
            texts = [
                f"{t['speaker']}: {t.get('text', '')}"
                for key, value in conv.items()
                if key.startswith("session_") and isinstance(value, list)
                for t in value
            ]
            index = TermIndex(texts)
            for qa in item.get("qa", []):
                if int(qa.get("category", 0)) == 5:
                    continue
                questions.append(str(qa["question"]))
                indexes.append(index)
        else:
            raise ValueError(f"{path}: neither LoCoMo nor LongMemEval format")
    return questions, indexes


def _rate(decisions: Sequence[GateDecision]) -> float:
    return round(sum(d.recall for d in decisions) / len(decisions), 4) if decisions else 0.0


def run_gate_bench(
    memory_questions: Sequence[str],
    memory_indexes: Sequence[TermIndex],
    self_contained: Sequence[str],
    self_contained_index: TermIndex,
    *,
    decide: Callable[..., GateDecision] = decide_recall,
    on_item: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Gate every question and request; return rates, timings and misses."""
    mem = []
    for question, index in zip(memory_questions, memory_indexes, strict=True):
        mem.append(decide(question, entities=index))
        if on_item:
            on_item(1)
    sc = []
    for request in self_contained:
        sc.append(decide(request, entities=self_contained_index))
        if on_item:
            on_item(1)
    timings = [d.elapsed_ms for d in (*mem, *sc)]
    sc_timings = sorted(d.elapsed_ms for d in sc)
    return {
        "bench": "gate",
        "memory_questions": len(mem),
        "memory_questions_fire_rate": _rate(mem),
        "self_contained": len(sc),
        "self_contained_fire_rate": _rate(sc),
        "mean_decision_ms": round(statistics.fmean(timings), 4) if timings else 0.0,
        "p95_decision_ms": round(sorted(timings)[int(0.95 * (len(timings) - 1))], 4)
        if timings
        else 0.0,
        # where the rules say no - a learned gate embeds the prompt there
        "self_contained_mean_decision_ms": round(statistics.fmean(sc_timings), 4)
        if sc_timings
        else 0.0,
        "self_contained_p95_decision_ms": round(sc_timings[int(0.95 * (len(sc_timings) - 1))], 4)
        if sc_timings
        else 0.0,
        "memory_signals": dict(Counter(d.signal for d in mem)),
        "self_contained_signals": dict(Counter(d.signal for d in sc)),
        "missed_memory_questions": [
            q for q, d in zip(memory_questions, mem, strict=True) if not d.recall
        ],
        "fired_self_contained": [
            {"request": r, "reason": d.reason}
            for r, d in zip(self_contained, sc, strict=True)
            if d.recall
        ],
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
