"""Tokens bench: replay LoCoMo conversations turn by turn under a budget.

For every message of every conversation the memory assembles the prompt the
model would get next; the bench counts it exactly and checks it against the
budget. It reports prompt sizes, violations, the cost of the full history at
the last turn, compressions run and LLM calls per turn.

Example:
    >>> from langchain_tiered_memory.bench.datasets import (
    ...     DialogTurn, LocomoConversation, Session)
    >>> turns = tuple(DialogTurn("A" if i % 2 == 0 else "B", f"D1:{i+1}",
    ...               f"Message {i} about Paris and {i} apples.") for i in range(80))
    >>> conv = LocomoConversation("c", "A", "B", (Session(1, "8 May 2023", turns),))
    >>> result = run_tokens_bench([conv], context_window=1024)
    >>> result["violations"], result["turns"], result["summaries"] > 0
    (0, 80, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import SystemMessage

from langchain_tiered_memory.bench.datasets import LocomoConversation
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.summarize import LLMSummarizer, Summarizer
from langchain_tiered_memory.tokens import TokenCounter
from langchain_tiered_memory.writer import Extractor

__all__ = ["BENCH_SYSTEM_PROMPT", "run_tokens_bench"]

BENCH_SYSTEM_PROMPT = (
    "You are a friendly assistant in a long-running conversation. Use the "
    "memory sections to stay consistent with what was said before."
)


def run_tokens_bench(
    conversations: Sequence[LocomoConversation],
    *,
    model: str = "gpt-4o-mini",
    context_window: int = 4096,
    summarizer_factory: Callable[[TokenCounter], Summarizer] | None = None,
    extractor_factory: Callable[[], Extractor] | None = None,
    extract_every: int = 8,
    on_turn: Callable[[int], None] | None = None,
    keep_series: bool = False,
) -> dict[str, Any]:
    """Replay ``conversations`` and return the JSON-ready report.

    Args:
        conversations: LoCoMo conversations.
        model: Model whose tokenizer and per-message overhead are used.
        context_window: Window size in tokens.
        summarizer_factory: Builds the summariser from the memory's counter
            (default: the extractive summariser, no LLM).
        extractor_factory: Builds the fact extractor (default: rule-based, no LLM).
        extract_every: Turns per LLM extraction call.
        on_turn: Progress callback, called once per replayed message.
        keep_series: Include per-turn prompt and full-history tokens.
    """
    started = time.perf_counter()
    per_conv: list[dict[str, Any]] = []
    all_prompts: list[int] = []
    violations = 0
    summaries = 0
    failures = 0
    llm_calls = 0
    summary_calls = 0
    extraction_calls = 0
    facts = 0
    budget_input = 0
    for conv in conversations:
        memory = TieredMemory(
            model=model,
            context_window=context_window,
            system_prompt=BENCH_SYSTEM_PROMPT,
            extractor=extractor_factory() if extractor_factory else None,
            extract_every=extract_every,
        )
        if summarizer_factory is not None:
            memory.summarizer = summarizer_factory(memory.counter)
        budget_input = memory.budget.input_budget
        counter = memory.counter
        full = counter.count_messages([SystemMessage(BENCH_SYSTEM_PROMPT)])
        prompts: list[int] = []
        fulls: list[int] = []
        for n, (session, turn) in enumerate(conv.dialog_turns()):
            first = n == 0 or session.turns[0] is turn
            message = conv.to_message(session, turn, first=first)
            memory.add_messages([message])
            full += counter.count_messages([message]) - counter.count_messages([])
            context = memory.build_context()
            prompts.append(context.total_tokens)
            fulls.append(full)
            if context.total_tokens > budget_input:
                violations += 1
            if on_turn is not None:
                on_turn(1)
        conv_summaries = sum(1 for e in memory.events if e.kind == "compression")
        conv_failures = sum(1 for e in memory.events if e.kind != "compression")
        summaries += conv_summaries
        failures += conv_failures
        if isinstance(memory.summarizer, LLMSummarizer):
            summary_calls += memory.summarizer.calls
        extraction_calls += memory.writer.calls
        llm_calls = summary_calls + extraction_calls
        facts += len(memory.core.history())
        all_prompts.extend(prompts)
        row: dict[str, Any] = {
            "sample_id": conv.sample_id,
            "turns": len(prompts),
            "max_prompt_tokens": max(prompts, default=0),
            "final_prompt_tokens": prompts[-1] if prompts else 0,
            "full_history_final_tokens": fulls[-1] if fulls else 0,
            "final_vs_full": round(prompts[-1] / fulls[-1], 4) if fulls else None,
            "summaries": conv_summaries,
            "archived_turns": len(getattr(memory.archive, "turns", [])),
        }
        if keep_series:
            row["prompt_tokens"] = prompts
            row["full_history_tokens"] = fulls
        per_conv.append(row)
    turns = len(all_prompts)
    full_final = [c["full_history_final_tokens"] for c in per_conv]
    final = [c["final_prompt_tokens"] for c in per_conv]
    return {
        "bench": "tokens",
        "model": model,
        "context_window": context_window,
        "conversations": len(per_conv),
        "turns": turns,
        "budget_input_tokens": budget_input,
        "max_prompt_tokens": max(all_prompts, default=0),
        "mean_prompt_tokens": round(sum(all_prompts) / turns, 1) if turns else 0,
        "violations": violations,
        "final_prompt_tokens_mean": round(sum(final) / len(final), 1) if final else 0,
        "full_history_final_tokens": round(sum(full_final) / len(full_final), 1)
        if full_final
        else 0,
        "final_vs_full_mean": round(sum(final) / sum(full_final), 4) if full_final else None,
        "summaries": summaries,
        "summary_failures": failures,
        "llm_calls": llm_calls,
        "llm_calls_per_turn": round(llm_calls / turns, 4) if turns else 0.0,
        "summary_llm_calls": summary_calls,
        "extraction_llm_calls": extraction_calls,
        "core_fact_versions": facts,
        "seconds": round(time.perf_counter() - started, 2),
        "per_conversation": per_conv,
    }


def plot_tokens(result: dict[str, Any], path: str) -> None:
    """Draw prompt tokens per turn (tiered vs full history) with the budget line.

    Needs ``matplotlib`` (``pip install 'langchain-tiered-memory[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Plotting needs matplotlib: pip install 'langchain-tiered-memory[plot]'"
        ) from exc
    conv = result["per_conversation"][0]
    if "prompt_tokens" not in conv:
        raise ValueError("run the bench with keep_series=True to plot it")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    xs = range(1, len(conv["prompt_tokens"]) + 1)
    ax.plot(xs, conv["full_history_tokens"], label="full history", color="#c44e52")
    ax.plot(xs, conv["prompt_tokens"], label="tiered memory", color="#4c72b0")
    ax.axhline(
        result["budget_input_tokens"],
        ls="--",
        color="grey",
        label=f"input budget ({result['budget_input_tokens']} tokens)",
    )
    ax.set_xlabel(f"turn (conversation {conv['sample_id']})")
    ax.set_ylabel("prompt tokens")
    ax.set_title(f"Prompt tokens per turn, {result['model']}, window {result['context_window']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
