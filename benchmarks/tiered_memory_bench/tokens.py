"""Tokens bench: replay LoCoMo conversations turn by turn under a budget.

For every message of every conversation the memory assembles the prompt the
model would get next; the bench counts it exactly and checks it against the
budget. It reports prompt sizes, violations, the cost of the full history at
the last turn, compressions run, LLM calls per turn and *prefix reuse*: the
share of each prompt's tokens that open it exactly as the previous prompt
did (whole leading messages, see :func:`shared_prefix_tokens`) - what a
provider's prompt cache can reuse (OpenAI caches identical prefixes of 1,024+
tokens automatically, Anthropic at ``cache_control`` breakpoints). It is the
mean over every prompt that has a previous one in its conversation.

The gate runs on every message and recalled records reach the prompts: by
default each memory recalls from its private in-memory store (keywords
only); with ``dense_recall=True`` each conversation is replayed into an
on-disk :class:`~langchain_tiered_memory.store.MemoryStore` in a temporary
directory with the default offline embedder (dense + keyword recall, as in
production; slower).

With ``peers=PEERS`` it replays the same messages through the peer
strategies of :mod:`tiered_memory_bench.peers` (full history,
``trim_messages``, LangMem's ``SummarizationNode``, langchain-classic's
``ConversationSummaryBufferMemory``), counts their prompts with the same
counter and reports them side by side under ``"peers"``.

Example:
    >>> from tiered_memory_bench.datasets import (
    ...     DialogTurn, LocomoConversation, Session)
    >>> turns = tuple(DialogTurn("A" if i % 2 == 0 else "B", f"D1:{i+1}",
    ...               f"Message {i} about Paris and {i} apples.") for i in range(80))
    >>> conv = LocomoConversation("c", "A", "B", (Session(1, "8 May 2023", turns),))
    >>> result = run_tokens_bench([conv], context_window=1024)
    >>> result["violations"], result["turns"], result["summaries"] > 0
    (0, 80, True)
    >>> 0.5 < result["prefix_reuse_mean"] <= 1
    True
    >>> side = run_tokens_bench([conv], context_window=1024,
    ...                         peers=("full_history", "trim_messages"))["peers"]["strategies"]
    >>> side["trim_messages"]["violations"], side["full_history"]["violations"] > 0
    (0, True)
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.summarize import LLMSummarizer, Summarizer
from langchain_tiered_memory.write.writer import Extractor
from tiered_memory_bench.datasets import LocomoConversation
from tiered_memory_bench.peers import PEERS, MemoCounter, Peer, make_peer

__all__ = ["BENCH_SYSTEM_PROMPT", "run_tokens_bench", "shared_prefix_tokens"]

BENCH_SYSTEM_PROMPT = (
    "You are a friendly assistant in a long-running conversation. Use the "
    "memory sections to stay consistent with what was said before."
)


def _message_key(message: BaseMessage) -> tuple[Any, ...]:
    """What a provider sees of a message (ids and metadata are not sent)."""
    return (
        message.type,
        message.name,
        repr(message.content),
        repr(getattr(message, "tool_calls", None)),
        getattr(message, "tool_call_id", None),
    )


def shared_prefix_tokens(
    previous: Sequence[BaseMessage],
    current: Sequence[BaseMessage],
    count: Callable[[Sequence[BaseMessage]], int],
) -> int:
    """Tokens of the leading messages of ``current`` identical to ``previous``'s.

    Messages are compared as a provider sees them (role, name, content, tool
    calls); the shared run is costed with ``count`` (a prompt's token count,
    reply priming included, which is subtracted). Whole messages only: a
    message that differs counts as not reused even if it starts the same, so
    the figure is a lower bound of what a token-level cache reuses.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
        >>> count = OpenAITokenCounter("gpt-4o-mini").count_messages
        >>> a = [SystemMessage("Be brief."), HumanMessage("Hi")]
        >>> b = [*a, HumanMessage("Where is Lisbon?")]
        >>> shared_prefix_tokens(a, b, count) == count(a) - count([])
        True
        >>> shared_prefix_tokens(b, [SystemMessage("Be kind."), *b[1:]], count)
        0
    """
    shared = 0
    for old, new in zip(previous, current, strict=False):
        if old is not new and _message_key(old) != _message_key(new):
            break
        shared += 1
    return count(list(current[:shared])) - count([]) if shared else 0


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
    peers: Sequence[str] = (),
    peer_model: BaseChatModel | None = None,
    dense_recall: bool = False,
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
        peers: Peer strategies to replay alongside (names from
            :data:`~tiered_memory_bench.peers.PEERS`); their report
            goes under ``"peers"``.
        peer_model: The summariser chat model of the summarising peers - give
            the same model ``summarizer_factory`` wraps. Default: the
            extractive summariser behind a fake chat model
            (:class:`~tiered_memory_bench.peers.ExtractiveChatModel`).
        dense_recall: Replay into a temporary on-disk
            :class:`~langchain_tiered_memory.store.MemoryStore` with the default
            embedder (dense + keyword recall) instead of each memory's private
            in-memory store (keyword recall).

    Raises:
        ValueError: for an unknown peer name.
        ImportError: if a peer's package is missing.
    """
    for name in peers:
        if name not in PEERS:
            raise ValueError(f"unknown peer {name!r}; valid: {', '.join(PEERS)}")
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
    summary_tokens = 0
    strategies: dict[str, dict[str, Any]] = {}
    reuse: list[float] = []
    recalled_prompts = 0
    stores = ExitStack()
    for conv in conversations:
        options: dict[str, Any] = {
            "model": model,
            "context_window": context_window,
            "system_prompt": BENCH_SYSTEM_PROMPT,
            "extractor": extractor_factory() if extractor_factory else None,
            "extract_every": extract_every,
        }
        if dense_recall:
            from langchain_tiered_memory.store import MemoryStore

            folder = stores.enter_context(tempfile.TemporaryDirectory())
            store = stores.enter_context(MemoryStore(folder))
            memory = store.memory("bench", conv.sample_id, **options)
        else:
            memory = TieredMemory(**options)
        if summarizer_factory is not None:
            memory.summarizer = summarizer_factory(memory.counter)
        budget_input = memory.budget.input_budget
        counter = memory.counter
        full = counter.count_messages([SystemMessage(BENCH_SYSTEM_PROMPT)])
        prompts: list[int] = []
        fulls: list[int] = []
        summary_tokens = int(memory.triggers.summary_ratio * memory.buffer_cap)
        memo = MemoCounter(counter)
        conv_peers: list[Peer] = [
            make_peer(
                name,
                counter=memo,
                system_prompt=BENCH_SYSTEM_PROMPT,
                input_budget=budget_input,
                summary_tokens=summary_tokens,
                model=peer_model,
            )
            for name in peers
        ]
        peer_tokens: list[list[int]] = [[] for _ in conv_peers]
        peer_reuse: list[list[float]] = [[] for _ in conv_peers]
        peer_last: list[list[BaseMessage] | None] = [None for _ in conv_peers]
        last: list[BaseMessage] | None = None
        conv_reuse: list[float] = []
        for n, (session, turn) in enumerate(conv.dialog_turns()):
            first = n == 0 or session.turns[0] is turn
            message = conv.to_message(session, turn, first=first)
            memory.add_messages([message])
            full += counter.count_messages([message]) - counter.count_messages([])
            context = memory.build_context()
            prompts.append(context.total_tokens)
            fulls.append(full)
            recalled_prompts += bool(context.recalled)
            if last is not None:
                shared = shared_prefix_tokens(last, context.messages, memo)
                conv_reuse.append(shared / context.total_tokens)
            last = context.messages
            if context.total_tokens > budget_input:
                violations += 1
            for i, (peer, series) in enumerate(zip(conv_peers, peer_tokens, strict=True)):
                prompt = peer.add(message)
                series.append(memo(prompt))
                previous = peer_last[i]
                if previous is not None and series[-1]:
                    shared = shared_prefix_tokens(previous, prompt, memo)
                    peer_reuse[i].append(shared / series[-1])
                peer_last[i] = list(prompt)
            if on_turn is not None:
                on_turn(1)
        reuse.extend(conv_reuse)
        conv_summaries = sum(1 for e in memory.events if e.kind == "compression")
        conv_failures = sum(1 for e in memory.events if e.kind != "compression")
        summaries += conv_summaries
        failures += conv_failures
        if isinstance(memory.summarizer, LLMSummarizer):
            summary_calls += memory.summarizer.calls
        if peers:
            # one summariser call per compression attempt (LLM or extractive alike)
            ours_calls = (
                memory.summarizer.calls
                if isinstance(memory.summarizer, LLMSummarizer)
                else len(memory.events)
            )
            _accumulate(strategies, "tiered_memory", prompts, ours_calls, budget_input, conv_reuse)
            strategies["tiered_memory"]["settings"] = (
                f"TieredMemory(context_window={context_window}): buffer cap "
                f"{memory.buffer_cap}, summary cap {summary_tokens}"
            )
            for peer, series, shares in zip(conv_peers, peer_tokens, peer_reuse, strict=True):
                _accumulate(
                    strategies, peer.name, series, peer.summarizer_calls, budget_input, shares
                )
                strategies[peer.name]["settings"] = peer.settings
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
            "prefix_reuse_mean": _mean(conv_reuse),
        }
        if keep_series:
            row["prompt_tokens"] = prompts
            row["full_history_tokens"] = fulls
        per_conv.append(row)
    stores.close()
    turns = len(all_prompts)
    full_final = [c["full_history_final_tokens"] for c in per_conv]
    final = [c["final_prompt_tokens"] for c in per_conv]
    report: dict[str, Any] = {
        "bench": "tokens",
        "model": model,
        "context_window": context_window,
        "conversations": len(per_conv),
        "turns": turns,
        "budget_input_tokens": budget_input,
        "max_prompt_tokens": max(all_prompts, default=0),
        "mean_prompt_tokens": round(sum(all_prompts) / turns, 1) if turns else 0,
        "violations": violations,
        "prefix_reuse_mean": _mean(reuse),
        "dense_recall": dense_recall,
        "prompts_with_recall": recalled_prompts,
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
    if peers:
        report["peers"] = {
            "summarizer": _peer_summarizer_note(peer_model, summarizer_factory),
            "token_counter": counter.name if conversations else None,
            "input_budget_tokens": budget_input,
            "summary_tokens": summary_tokens,
            "strategies": {name: _finish(row) for name, row in strategies.items()},
        }
    return report


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _accumulate(
    strategies: dict[str, dict[str, Any]],
    name: str,
    series: Sequence[int],
    summarizer_calls: int,
    budget: int,
    reuse: Sequence[float],
) -> None:
    row = strategies.setdefault(
        name,
        {
            "turns": 0,
            "sum": 0,
            "max_prompt_tokens": 0,
            "violations": 0,
            "finals": [],
            "calls": 0,
            "reuse": [],
        },
    )
    row["reuse"].extend(reuse)
    row["turns"] += len(series)
    row["sum"] += sum(series)
    row["max_prompt_tokens"] = max(row["max_prompt_tokens"], max(series, default=0))
    row["violations"] += sum(1 for t in series if t > budget)
    row["finals"].append(series[-1] if series else 0)
    row["calls"] += summarizer_calls


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    turns, finals = row["turns"], row["finals"]
    return {
        "settings": row.get("settings", ""),
        "max_prompt_tokens": row["max_prompt_tokens"],
        "mean_prompt_tokens": round(row["sum"] / turns, 1) if turns else 0,
        "violations": row["violations"],
        "prefix_reuse_mean": _mean(row["reuse"]),
        "final_prompt_tokens_mean": round(sum(finals) / len(finals), 1) if finals else 0,
        "summarizer_calls": row["calls"],
        "summarizer_calls_per_turn": round(row["calls"] / turns, 4) if turns else 0.0,
    }


def _peer_summarizer_note(
    peer_model: BaseChatModel | None,
    summarizer_factory: Callable[[TokenCounter], Summarizer] | None,
) -> str:
    if peer_model is not None:
        return (
            f"every strategy summarises with the same chat model ({type(peer_model).__name__}); "
            "summarizer_calls are real model calls"
        )
    ours = "a custom summariser" if summarizer_factory else "ExtractiveSummarizer (no LLM)"
    return (
        f"ours: {ours}. LangMem and langchain-classic call ExtractiveChatModel, a "
        "deterministic fake chat model that answers their summarisation prompts with "
        "ExtractiveSummarizer's output, capped at summary_tokens: same summariser, "
        "offline and comparable. summarizer_calls count summarisation requests each "
        "strategy makes (each would be one LLM call with an LLM summariser)."
    )


def plot_tokens(result: dict[str, Any], path: str) -> None:
    """Draw prompt tokens per turn (tiered vs full history) with the budget line.

    Needs ``matplotlib`` (a dependency of the benches: ``pip install -e ./benchmarks``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"Plotting needs matplotlib: {install_hint('bench')}") from exc
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
