"""The offline demo: replay a scripted multi-session conversation and show the
memory at work - a token bar per turn, compressions and page-outs, and at the
end where each early fact sits in the late questions' context.

Run it with ``tiered-memory demo``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from rich.console import Console
from rich.text import Text

from langchain_tiered_memory.budget.context import CORE_HEADER, RECALL_HEADER, ContextWindow
from langchain_tiered_memory.budget.markup import SUMMARY_HEADER
from langchain_tiered_memory.cli.demo_script import LATE_QUESTIONS, SESSIONS
from langchain_tiered_memory.cli.output import clip, plain_console, print_wrapped
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionEvent
from langchain_tiered_memory.values.turns import message_text

__all__ = [
    "SYSTEM_PROMPT",
    "DemoResult",
    "describe_event",
    "locate_fact",
    "recall_label",
    "run_demo",
    "token_bar",
]

SYSTEM_PROMPT = (
    "You are Maya's personal assistant. Be concise. Respect every constraint in "
    "core memory, and use recalled memories when they answer the question."
)
_COLOURS = {"system": "magenta", "core": "yellow", "buffer": "cyan", "recall": "green"}
#: The longest a turn's opening words or a recalled record run on their line.
TURN_CHARS = 60
RECALLED_CHARS = 160


def token_bar(context: ContextWindow, width: int = 50) -> Text:
    """A bar of tokens per section, scaled to the input budget.

    Example:
        >>> from langchain_tiered_memory import TieredMemory
        >>> m = TieredMemory(context_window=1024, system_prompt="Hi.")
        >>> len(token_bar(m.build_context(), width=20).plain)
        22
    """
    bar = Text("[")
    used = 0
    for section, colour in _COLOURS.items():
        cells = round(width * context.usage.get(section, 0) / context.input_budget)
        cells = max(cells, 1) if context.usage.get(section, 0) else 0
        cells = min(cells, width - used)
        bar.append("█" * cells, style=colour)
        used += cells
    bar.append("·" * (width - used), style="dim")
    bar.append("]")
    return bar


def recall_label(source: str) -> str:
    """A recalled record's source as a reader says it: its kind and the turns it came from.

    Example:
        >>> recall_label("turn turn:1"), recall_label("turn turn:14, turn:40")
        ('turn 1', 'turns 14, 40')
        >>> recall_label("summary turn:12, turn:13, turn:14, ..."), recall_label("fact turn:25")
        ('summary of turns 12-14, ...', 'fact from turn 25')
        >>> recall_label("archive")
        'archive'
    """
    from langchain_tiered_memory.cli.inspect import turn_spans

    kind, _, rest = source.partition(" ")
    rest, paren, note = rest.partition(" (")
    parts = [p.strip() for p in rest.split(",") if p.strip()]
    turns = [int(p[5:]) for p in parts if p.startswith("turn:") and p[5:].isdigit()]
    if not turns or len(turns) + parts.count("...") != len(parts):
        return source
    spans = turn_spans(turns) + (", ..." if "..." in parts else "")
    label = spans if kind == "turn" else f"{kind} {'of' if kind == 'summary' else 'from'} {spans}"
    return label + (f" ({note}" if paren else "")


def locate_fact(context: ContextWindow, needle: str) -> str | None:
    """Which part of the assembled context holds ``needle`` (case-insensitive)."""
    needle = needle.lower()
    for index, message in enumerate(context.messages[1:], start=1):
        text = message_text(message)
        if index == context.turn_memory_index and context.turn_memory:
            recent_core, _, recalled = context.turn_memory.partition(RECALL_HEADER)
            if needle in recent_core.lower():
                return "core memory"
            if needle in recalled.lower():
                return "recall"
            text = text[len(context.turn_memory) :]  # the user's own words
        if needle not in text.lower():
            continue
        if isinstance(message, SystemMessage):
            if text.startswith(CORE_HEADER):
                return "core memory"
            if text.startswith(RECALL_HEADER):
                return "recall"
            if text.startswith(SUMMARY_HEADER.split("{", 1)[0]):
                return "running summary"
        return "recent turns"
    return None


@dataclass
class DemoResult:
    """What the demo found, for tests and scripts."""

    turns: int = 0
    max_prompt_tokens: int = 0
    input_budget: int = 0
    compressions: int = 0
    archived_turns: int = 0
    answers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_facts_in_context(self) -> bool:
        """True when every late question's facts reached its context."""
        return all(all(a["found"].values()) for a in self.answers)


def run_demo(
    *,
    console: Console | None = None,
    context_window: int = 1024,
    model: BaseChatModel | None = None,
    memory_factory: Callable[[], TieredMemory] | None = None,
    data_dir: str | Path | None = None,
    embeddings: Embeddings | str | None = None,
) -> DemoResult:
    """Replay the scripted conversation and report what the memory kept.

    Args:
        console: Where to print (default: a new rich console).
        context_window: Small by default, so compression shows up quickly.
        model: Answers the late questions when given; otherwise the demo
            shows the context a model would receive.
        memory_factory: Builds the memory (default: a durable memory in a
            fresh :class:`MemoryStore` under ``data_dir``).
        data_dir: Where the demo's store lives (default: a temporary folder).
        embeddings: Embeddings for the store (default: the offline default).
    """
    console = console or plain_console()
    with contextlib.ExitStack() as stack:
        if memory_factory is not None:
            memory = memory_factory()
        else:
            folder = data_dir or stack.enter_context(tempfile.TemporaryDirectory())
            store = stack.enter_context(MemoryStore(Path(folder), embeddings=embeddings))
            store.forget_user("maya")  # a fresh run every time
            memory = store.memory(
                "maya", "demo", context_window=context_window, system_prompt=SYSTEM_PROMPT
            )
        return _replay(memory, console, model)


def describe_event(event: CompressionEvent) -> str:
    """One line for a compression event: which turns were paged out, tokens before/after.

    Example:
        >>> from langchain_tiered_memory.tiers.buffer import CompressionEvent
        >>> print(describe_event(CompressionEvent(kind="compression", trigger="soft",
        ...     tokens_before=600, tokens_after=200, evicted_turns=(0, 1), summary_tokens=90)))
        ↳ compression (soft): turns [0, 1] paged out to the archive, buffer 600 → 200 tokens
    """
    turns = list(event.evicted_turns)
    sizes = f"buffer {event.tokens_before} → {event.tokens_after} tokens"
    if event.kind == "compression":
        return f"↳ compression ({event.trigger}): turns {turns} paged out to the archive, {sizes}"
    if event.kind == "page_out_unsummarized":
        return (
            f"↳ page-out ({event.trigger}): turns {turns} paged out to the archive, {sizes}; "
            f"the summariser failed, their summary is pending ({event.error})"
        )
    return f"↳ {event.kind} ({event.trigger}): nothing changed ({event.error})"


def _print_events(console: Console, events: list[CompressionEvent]) -> None:
    for event in events:
        style = "bold blue" if event.evicted_turns else "bold red"
        print_wrapped(console, describe_event(event), indent=4, style=style)


def _bar_width(console: Console) -> int:
    """The token bar's cells: 50, fewer on a narrow console (so a turn's line fits)."""
    return max(10, min(50, console.width - 46))


def _turn_line(console: Console, number: int, context: ContextWindow, said: str) -> Text:
    """One turn on one line that fits the console: number, bar, tokens, and the user's
    opening words (cut at a word boundary)."""
    line = Text(f"{number:>3} ")
    line.append_text(token_bar(context, width=_bar_width(console)))
    line.append(f" {context.total_tokens:>5}/{context.input_budget} ")
    room = min(TURN_CHARS, console.width - len(line.plain))
    line.append(clip(said, max(room, 8)), style="dim")
    return line


def _replay(memory: TieredMemory, console: Console, model: BaseChatModel | None) -> DemoResult:
    result = DemoResult(input_budget=memory.budget.input_budget)
    console.rule("langchain-tiered-memory demo")
    console.print(memory.budget.describe(), style="dim")
    if console.color_system is not None:  # the legend explains the bar's colours
        legend = Text("bar: ")
        for section, colour in _COLOURS.items():
            legend.append(f"{section} ", style=colour)
        console.print(legend)
    else:
        print_wrapped(
            console,
            "bar: tokens per section (system, core, buffer, recall) - their colours show in a "
            "terminal; here the bar is plain",
        )
    number = 0
    for title, turns in SESSIONS:
        console.rule(title, style="dim")
        for turn in turns:
            number += 1
            events = memory.add_messages([HumanMessage(turn.user)])
            context = memory.build_context()
            result.max_prompt_tokens = max(result.max_prompt_tokens, context.total_tokens)
            events += memory.add_messages([AIMessage(turn.reply)])
            console.print(_turn_line(console, number, context, turn.user), soft_wrap=True)
            _print_events(console, events)
    console.rule("Late questions", style="dim")
    for question, needles in LATE_QUESTIONS:
        number += 1
        events = memory.add_messages([HumanMessage(question)])
        context = memory.build_context()
        result.max_prompt_tokens = max(result.max_prompt_tokens, context.total_tokens)
        found = {needle: locate_fact(context, needle) for needle in needles}
        gate = context.gate
        if model is not None:
            reply = message_text(model.invoke(context.messages))
        else:
            reply = "(no model given: the context above is what a model would receive)"
        events += memory.add_messages([AIMessage(reply)])
        result.answers.append(
            {
                "question": question,
                "found": found,
                "reply": reply,
                "total_tokens": context.total_tokens,
                "gate": gate.to_dict() if gate else None,
                "recalled": [r.text for r in context.recalled],
            }
        )
        print_wrapped(console, f"Q: {question}", style="bold")
        console.print(token_bar(context, width=_bar_width(console)))
        if gate is not None:
            said = f"gate: {'recall' if gate.recall else 'no recall'} - {gate.reason}"
            print_wrapped(console, said, indent=3, style="magenta")
        for item in context.recalled:
            print_wrapped(
                console,
                f"recalled ({recall_label(item.source)}, score {item.score or 0:.2f}): "
                f"{clip(' / '.join(item.text.splitlines()), RECALLED_CHARS)}",
                indent=3,
                style="green",
            )
        for needle, where in found.items():
            style = "green" if where else "red"
            print_wrapped(
                console, f"fact {needle!r}: {where or 'NOT in context'}", indent=3, style=style
            )
        print_wrapped(console, f"A: {reply}", indent=3)
        _print_events(console, events)
    result.turns = number
    result.compressions = sum(1 for e in memory.events if e.kind == "compression")
    if memory.store is not None:
        result.archived_turns = len(
            memory.archive.records(RecordFilter(memory.user_id, kinds=["turn"]))
        )
    else:
        result.archived_turns = len(getattr(memory.archive, "turns", []))
    console.rule("Summary")
    print_wrapped(
        console,
        f"{result.turns} turns, largest prompt {result.max_prompt_tokens} tokens "
        f"(budget {result.input_budget}), {result.compressions} compressions, "
        f"{result.archived_turns} turns archived.",
    )
    verdict = (
        "all early facts reached the late prompts"
        if result.all_facts_in_context
        else ("some early facts did NOT reach the late prompts")
    )
    console.print(verdict, style="bold green" if result.all_facts_in_context else "bold red")
    return result
