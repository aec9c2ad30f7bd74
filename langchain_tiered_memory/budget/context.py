"""Assemble the prompt: every section within its budget, exactly counted.

:func:`assemble_context` is a pure function: the pinned system prompt, core
memory, recalled records, the running summary and the buffered turns go in; a
:class:`ContextWindow` comes out whose ``total_tokens`` (counted with the
memory's real counter over the final message list) never exceeds
``context_window - output``.

Layout of the messages - a stable prefix first, what changes every turn last,
so a provider's prompt cache can reuse the previous call's prefix::

    SystemMessage(system prompt)            pinned, first, unchanged
    SystemMessage(core memory)              facts from before the oldest buffered turn
    SystemMessage(running summary)          if any
    ...older buffered turns, oldest first   only grow between compressions
    HumanMessage(<memory_context>           the newest turn's user message, with the
      core memory from the recent turns,    turn's memory folded in front of its text
      recalled records
    </memory_context> + the user's text)
    ...the rest of the newest turn

The first three change only at a compression (or when one of the facts in
them is replaced or forgotten), so between compressions every prompt starts
with the previous prompt's messages. Core memory is split by age: a fact
stated in a turn still in the buffer is written into the per-turn block (the
prompt shows it at once without touching the prefix) and moves into the core
memory message when its turn leaves the buffer, at a compression, when the
prefix changes anyway. The per-turn block sits in the user's message, not in
a system message: providers that take system messages only at the start
(Anthropic, Gemini, many chat templates) accept it, and quoted records get no
system authority. With ``single_system=True`` the leading system messages
are merged into one, for providers that want a single leading system message.

Within the buffer section the newest turn has priority (clipped with a
marker if it alone is too large), then the summary, then older turns, newest
first. Turns that do not fit are left out of this prompt only - they stay in
the buffer and are reported in ``omitted_turns``. Recalled records that only
repeat core memory, the summary or a buffered turn are left out
(:func:`~langchain_tiered_memory.budget.repeats.drop_repeats`); the rest are packed
by :func:`fit_recalled`.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.sections import TokenBudget
    >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    >>> from langchain_tiered_memory.values.turns import Turn
    >>> counter = OpenAITokenCounter("gpt-4o-mini")
    >>> turn = Turn(0, (HumanMessage("Hi, I'm Ana."), AIMessage("Hello Ana!")), tokens=18)
    >>> ctx = assemble_context(budget=TokenBudget(context_window=1024), counter=counter,
    ...                        system_prompt="Be brief.", turns=[turn])
    >>> [m.type for m in ctx.messages], ctx.total_tokens <= ctx.input_budget
    (['system', 'human', 'ai'], True)
    >>> ctx = assemble_context(budget=TokenBudget(context_window=1024), counter=counter,
    ...                        system_prompt="Be brief.", turns=[turn],
    ...                        recalled=[RecalledMemory("Ana flies to Lisbon on 12 May.")])
    >>> print(ctx.messages[1].content.splitlines()[-1])
    Hi, I'm Ana.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tiered_memory.budget.clipping import clip_message, clip_text
from langchain_tiered_memory.budget.markup import (
    CORE_HEADER,
    CORE_RECENT_HEADER,
    RECALL_HEADER,
    TURN_MEMORY_CLOSE,
    TURN_MEMORY_OPEN,
    TURN_MEMORY_SEPARATOR,
    split_turn_memory,
    summary_message,
)
from langchain_tiered_memory.budget.repeats import drop_repeats
from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import TokenCounter, turn_tokens
from langchain_tiered_memory.values import GateDecision, RecalledMemory
from langchain_tiered_memory.values.facts import BLOCKS, CoreFact
from langchain_tiered_memory.values.turns import Turn, message_text

__all__ = [
    "ContextWindow",
    "RecalledMemory",
    "assemble_context",
    "fit_recalled",
    "quote_recalled",
    "render_core",
    "render_recalled",
    "split_core",
    "split_turn_memory",
    "water_fill",
]


@dataclass(frozen=True)
class ContextWindow:
    """The assembled prompt and its token report.

    Attributes:
        messages: What to send to the model.
        usage: Tokens per section (``system`` includes the prompt framing).
        total_tokens: Exact count of ``messages`` under the memory's counter.
        budget: The budget it was assembled under.
        omitted_turns: Buffered turns left out of this prompt for lack of room.
        clipped_turns: Turns with a message clipped to fit (marked in the text).
        recalled: The recalled records that made it into the prompt (a record
            clipped to its share carries the clipped text, with its marker).
        gate: The recall gate's decision for this prompt, if it ran.
        repeats: Recalled records left out because the prompt already says
            what they say (core memory, the summary, a buffered turn).
        stable_prefix: How many leading messages (system prompt, core memory,
            summary) stay byte-identical until the next compression; the older
            turns after them only grow. A prompt-cache breakpoint goes on
            ``messages[stable_prefix - 1]`` or later.
        turn_memory: The per-turn block (core memory from the recent turns and
            the recalled records, in ``<memory_context>`` tags), ``""`` if none.
        turn_memory_index: The message that carries ``turn_memory``: the
            newest turn's user message it is folded into (``turn_memory`` plus
            a blank line opens its text), or a user message of its own.
    """

    messages: list[BaseMessage]
    usage: dict[str, int]
    total_tokens: int
    budget: TokenBudget
    omitted_turns: tuple[int, ...] = ()
    clipped_turns: tuple[int, ...] = ()
    recalled: tuple[RecalledMemory, ...] = field(default_factory=tuple)
    gate: GateDecision | None = None
    repeats: tuple[RecalledMemory, ...] = field(default_factory=tuple)
    stable_prefix: int = 0
    turn_memory: str = ""
    turn_memory_index: int | None = None

    @property
    def input_budget(self) -> int:
        """The most tokens this prompt may use."""
        return self.budget.input_budget

    def memory_first(self) -> list[BaseMessage]:
        """The messages with the per-turn block moved to the head, as system
        messages after the leading ones - the recent core facts, then the
        recalled records (the layout before the cache-stable one).

        For prompts that put this history ahead of a new user message (legacy
        chains): there the block belongs with the history's head, not inside
        an earlier user message. Not cache-stable; may differ from
        ``total_tokens`` by a few tokens (one message's framing, the tags).

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
            >>> turn = Turn(0, (HumanMessage("Dinner ideas?"),), tokens=10)
            >>> ctx = assemble_context(budget=TokenBudget(context_window=1024),
            ...                        counter=OpenAITokenCounter("gpt-4o-mini"), turns=[turn],
            ...                        recalled=[RecalledMemory("Ana is vegan.")])
            >>> [(m.type, m.content[:18]) for m in ctx.memory_first()]
            [('system', 'Recalled memories '), ('human', 'Dinner ideas?')]
        """
        at = self.turn_memory_index
        if at is None or not self.turn_memory:
            return list(self.messages)
        messages = list(self.messages)
        carrier = messages[at]
        lead = self.turn_memory + TURN_MEMORY_SEPARATOR
        content = carrier.content
        if isinstance(content, str) and content.startswith(lead):
            messages[at] = carrier.model_copy(update={"content": content[len(lead) :]})
        elif isinstance(content, list) and content and content[0] == {"type": "text", "text": lead}:
            messages[at] = carrier.model_copy(update={"content": content[1:]})
        else:  # a user message of its own
            del messages[at]
        head = 0
        while head < len(messages) and isinstance(messages[head], SystemMessage):
            head += 1
        inner = self.turn_memory[len(TURN_MEMORY_OPEN) : -len(TURN_MEMORY_CLOSE)]
        core, found, recalled = inner.partition(RECALL_HEADER)
        parts = [core.rstrip("\n"), found + recalled]  # as before: core, then recall
        blocks = [SystemMessage(part) for part in parts if part]
        return [*messages[:head], *blocks, *messages[head:]]

    def report(self) -> dict[str, Any]:
        """A JSON-ready summary of the token usage."""
        return {
            "usage": dict(self.usage),
            "total_tokens": self.total_tokens,
            "input_budget": self.input_budget,
            "caps": self.budget.caps,
            "omitted_turns": list(self.omitted_turns),
            "clipped_turns": list(self.clipped_turns),
            "gate": self.gate.to_dict() if self.gate else None,
            "recalled": [r.record_id or r.source for r in self.recalled],
            "repeats": [r.record_id or r.source for r in self.repeats],
            "stable_prefix": self.stable_prefix,
        }


#: A record clipped to a smaller share than this is left out instead.
MIN_RECORD_TOKENS = 64


def render_recalled(item: RecalledMemory) -> str:
    """Quote one recalled record as labelled data (markup inside is escaped).

    Only ``&``, ``<`` and ``>`` are escaped in the text - enough that nothing
    inside can close the tag; attribute values also escape ``"``.

    Example:
        >>> print(render_recalled(RecalledMemory("I'm allergic to peanuts", "turn 3")))
        <memory source="turn 3">I'm allergic to peanuts</memory>
        >>> print(render_recalled(RecalledMemory('a "quote" & <tag>', 'x" y="1')))
        <memory source="x&quot; y=&quot;1">a "quote" &amp; &lt;tag&gt;</memory>
    """
    attrs = [f'source="{_attribute(item.source)}"']
    if item.created_at is not None:
        attrs.append(f'time="{item.created_at.isoformat(timespec="minutes")}"')
    if item.possibly:
        attrs.append('confidence="possibly"')
    return f"<memory {' '.join(attrs)}>{html.escape(item.text, quote=False)}</memory>"


def _attribute(value: str) -> str:
    return html.escape(value, quote=False).replace('"', "&quot;")


def water_fill(wants: Sequence[int], room: int) -> list[int]:
    """Share ``room`` tokens: small wants are met whole, the large split the rest evenly.

    Example:
        >>> water_fill([30, 55_000, 20, 25], 300)
        [30, 225, 20, 25]
        >>> water_fill([100, 100, 100], 120)
        [40, 40, 40]
    """
    shares = [0] * len(wants)
    left = max(0, room)
    order = sorted(range(len(wants)), key=wants.__getitem__)
    for position, i in enumerate(order):
        fair = left // (len(order) - position)
        shares[i] = min(max(0, wants[i]), fair)
        left -= shares[i]
    return shares


def _joined(items: Sequence[RecalledMemory]) -> str:
    return "\n".join(render_recalled(i) for i in items)


def _quoted_cost(items: Sequence[RecalledMemory], counter: TokenCounter) -> int:
    """What :func:`fit_recalled` needs to keep ``items`` whole (one newline each between)."""
    return sum(counter.count_text(render_recalled(i)) for i in items) + max(0, len(items) - 1)


def _clip_record(item: RecalledMemory, share: int, counter: TokenCounter) -> RecalledMemory | None:
    """``item`` with its text clipped so its quoted form costs at most ``share``."""
    room = share - counter.count_text(render_recalled(replace(item, text="")))
    note = "; the full record is in the archive"
    while room > 0:
        text = clip_text(item.text, room, counter, note=note)
        clipped = replace(item, text=text)
        over = counter.count_text(render_recalled(clipped)) - share
        if over <= 0:
            return clipped if text else None
        room -= over  # escaping made the quoted text a little longer
    return None


def fit_recalled(
    items: Sequence[RecalledMemory],
    max_tokens: int,
    counter: TokenCounter,
    *,
    min_tokens: int = MIN_RECORD_TOKENS,
) -> list[RecalledMemory]:
    """The records, best first, whose quoted lines fit in ``max_tokens`` together.

    The room is shared as the buffer shares a turn among its messages
    (:func:`water_fill`): records that fit their share stay whole, an
    oversized one is clipped to its share with a marker (head and tail kept).
    While some record's share falls under ``min_tokens`` (and under its
    size), the largest such record is left out - the lowest-ranked one among
    equals - and the room is shared again: one huge record never crowds out
    the small ones, and records of one size keep their rank order.

    Example:
        >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
        >>> counter = OpenAITokenCounter("gpt-4o-mini")
        >>> records = [RecalledMemory("row;" * 20_000, "tool result"),
        ...            RecalledMemory("I'm allergic to peanuts.", "turn 3"),
        ...            RecalledMemory("My flight is on 12 May.", "turn 9")]
        >>> kept = fit_recalled(records, 200, counter)
        >>> [r.source for r in kept], "tokens clipped" in kept[0].text
        (['tool result', 'turn 3', 'turn 9'], True)
        >>> [r.source for r in fit_recalled(records, 60, counter)]
        ['turn 3', 'turn 9']
    """
    items = list(items)
    if max_tokens <= 0 or not items:
        return []
    wants = [counter.count_text(render_recalled(i)) for i in items]
    while True:
        shares = water_fill(wants, max_tokens - (len(items) - 1))  # a newline between records
        short = [
            k for k, (s, w) in enumerate(zip(shares, wants, strict=True)) if s < min(w, min_tokens)
        ]
        if not short:
            break
        drop = max(
            reversed(short), key=wants.__getitem__
        )  # the largest; on a tie the lowest-ranked
        del items[drop], wants[drop]
    kept: list[RecalledMemory] = []
    for item, share, want in zip(items, shares, wants, strict=True):
        fitted = item if share >= want else _clip_record(item, share, counter)
        if fitted is not None:
            kept.append(fitted)
    while kept and counter.count_text(_joined(kept)) > max_tokens:
        kept.pop()  # only for counters whose counts do not add up
    return kept


def quote_recalled(
    items: Sequence[RecalledMemory], *, header: str, max_tokens: int, counter: TokenCounter
) -> tuple[str, list[RecalledMemory]]:
    """``header`` and the quoted records that fit, in at most ``max_tokens`` tokens.

    What the ``retrieve_memory`` tool returns. Returns ``("", [])`` for no
    records; when records were found but none fits, a one-line note says so.

    Example:
        >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
        >>> counter = OpenAITokenCounter("gpt-4o-mini")
        >>> text, kept = quote_recalled([RecalledMemory("x " * 50_000, "turn 1")],
        ...                             header="Memories:", max_tokens=300, counter=counter)
        >>> counter.count_text(text) <= 300, "tokens clipped" in text
        (True, True)
    """
    if not items:
        return "", []
    head = f"{header}\n"
    kept = fit_recalled(items, max_tokens - counter.count_text(head), counter)
    if kept:
        return head + _joined(kept), kept
    return f"{header}\n[{len(items)} records found; none fits in {max_tokens} tokens]", []


def render_core(facts: Sequence[CoreFact]) -> str:
    """Facts as core memory shows them: grouped by block, in the order given.

    Example:
        >>> render_core([CoreFact.new("name", "Ana", source_turn=0)]).splitlines()[1][:21]
        '- name: Ana (stated, '

    """
    parts: list[str] = []
    for block in BLOCKS:
        lines = [f.render() for f in facts if f.block == block]
        if lines:
            parts.append(f"[{block}]")
            parts.extend(lines)
    return "\n".join(parts)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def split_core(facts: Sequence[CoreFact], turns: Sequence[Turn]) -> tuple[str, str]:
    """Core memory rendered in two parts: ``(stable, recent)``.

    ``stable`` holds the facts written before the oldest buffered turn began;
    it changes only when the buffer is compressed (or one of its facts is
    replaced or forgotten), so it can sit in the cached prefix. ``recent``
    holds the facts from the turns still in the buffer (and any written since
    then, e.g. by a tool); it goes into the per-turn block. A fact moves from
    ``recent`` to ``stable`` when the turn that stated it leaves the buffer.

    Args:
        facts: The active facts, most important first (``CoreMemory.active()``).
        turns: The buffered turns, oldest first.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> old = CoreFact.new("name", "Ana")
        >>> turn = Turn(0, (HumanMessage("I'm vegan."),))
        >>> new = CoreFact.new("diet", "vegan", created_at=turn.created_at)
        >>> stable, recent = split_core([old, new], [turn])
        >>> "Ana" in stable and "vegan" in recent and "vegan" not in stable
        True
    """
    if not turns:
        return render_core(facts), ""
    since = _utc(turns[0].created_at)
    stable = [f for f in facts if _utc(f.created_at) < since]
    recent = [f for f in facts if _utc(f.created_at) >= since]
    return render_core(stable), render_core(recent)


def _marginal(messages: Sequence[BaseMessage], counter: TokenCounter) -> int:
    return turn_tokens(messages, counter) if messages else 0


def _core_message(core: str) -> SystemMessage:
    return SystemMessage(CORE_HEADER + core)


def _turn_memory(recent_part: str, records: Sequence[RecalledMemory]) -> str:
    """The per-turn block: core memory from the recent turns (with its header),
    then the recalled records."""
    parts = [recent_part] if recent_part else []
    if records:
        parts.append(RECALL_HEADER + _joined(records))
    return TURN_MEMORY_OPEN + "\n".join(parts) + TURN_MEMORY_CLOSE if parts else ""


def _with_turn_memory(block: str, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The newest turn with ``block`` folded in front of its first user message
    (or, if it has none, as a user message of its own before it)."""
    out = list(messages)
    for i, message in enumerate(out):
        if isinstance(message, HumanMessage):
            content = message.content
            lead = block + TURN_MEMORY_SEPARATOR
            if isinstance(content, str):
                folded: Any = lead + content
            else:
                folded = [{"type": "text", "text": lead}, *content]
            out[i] = message.model_copy(update={"content": folded})
            return out
    return [HumanMessage(block), *out]


def _fit_turn(turn: Turn, limit: int, counter: TokenCounter) -> tuple[list[BaseMessage], bool]:
    """The turn's messages clipped to ``limit`` tokens in all (largest cut most).

    Each message keeps its framing (role, ids, tool-call arguments); the room
    left is shared out by water-filling, so small messages stay whole and the
    large ones are clipped with a marker.

    Raises:
        ValueError: if the framing alone (e.g. huge tool-call arguments) exceeds
            ``limit``.
    """
    messages = list(turn.messages)
    cost = turn_tokens(messages, counter)
    if cost <= limit:
        return messages, False
    sizes = [turn_tokens([m], counter) for m in messages]
    bases = [turn_tokens([m.model_copy(update={"content": ""})], counter) for m in messages]
    room = limit - sum(bases)
    if room < 0:
        raise ValueError(
            f"Turn {turn.index} cannot fit in the {limit} tokens left for it even when "
            f"clipped: its framing and tool-call arguments alone take {sum(bases)}. "
            "Raise the context window or the buffer ratio."
        )
    wants = [size - base for size, base in zip(sizes, bases, strict=False)]
    shares = water_fill(wants, room)
    note = f"; the full text is archived with turn {turn.index}"
    for i, message in enumerate(messages):
        if shares[i] < wants[i]:
            messages[i] = clip_message(message, bases[i] + shares[i], counter, note=note)
    while turn_tokens(messages, counter) > limit:  # only for non-additive counters
        i = max(range(len(messages)), key=lambda k: turn_tokens([messages[k]], counter))
        current = turn_tokens([messages[i]], counter)
        if current <= bases[i]:
            raise ValueError(f"Turn {turn.index} cannot be clipped to {limit} tokens.")
        messages[i] = clip_message(messages[i], max(bases[i], current - 8), counter, note=note)
    return messages, True


def assemble_context(
    *,
    budget: TokenBudget,
    counter: TokenCounter,
    system_prompt: str = "",
    core: str = "",
    core_recent: str = "",
    summary: str = "",
    summarized_through: int = -1,
    turns: Sequence[Turn] = (),
    recalled: Sequence[RecalledMemory] = (),
    tools_tokens: int = 0,
    single_system: bool = False,
) -> ContextWindow:
    """Build the prompt for this turn within ``budget`` (pure).

    Args:
        budget: Section caps.
        counter: Exact token counter.
        system_prompt: Pinned system prompt; first message, never changed.
        core: Rendered core memory for the stable prefix (see :func:`split_core`).
        core_recent: Rendered core memory from the recent turns, shown in the
            per-turn block; both parts count against the ``core`` section.
        summary: The running summary.
        summarized_through: Newest turn index in the summary (for its header).
        turns: Buffered turns, oldest first; ``tokens`` must be filled in.
        recalled: Recalled records in rank order (best first).
        tools_tokens: Tokens of the tool schemas sent with the prompt; they
            count against the ``system`` section.
        single_system: Merge the leading system messages (system prompt, core
            memory, summary) into one, for providers that take a single
            leading system message.

    Raises:
        ValueError: if the system prompt and tool schemas exceed the system
            section, naming the fix.
    """
    caps = budget.caps
    framing = counter.count_messages([])
    system_msgs = [SystemMessage(system_prompt)] if system_prompt else []
    system_tokens = _marginal(system_msgs, counter) + tools_tokens + framing
    if system_tokens > caps["system"]:
        raise ValueError(
            f"The system prompt ({system_tokens - framing - tools_tokens} tokens) and "
            f"tool schemas ({tools_tokens} tokens) need {system_tokens} tokens but "
            f"the system section holds {caps['system']} "
            f"({budget.ratios['system']:.0%} of {budget.context_window}). Shorten "
            "the system prompt, raise ratios['system'], or use a larger context_window."
        )
    core_msgs = [_core_message(core)] if core else []
    summary_msgs = [summary_message(summary, summarized_through)] if summary else []
    stable_cost = _marginal(core_msgs, counter)
    summary_cost = _marginal(summary_msgs, counter)
    fresh, repeats = drop_repeats(
        recalled, [core, core_recent, summary, *(t.transcript() for t in turns)]
    )
    # the per-turn block's own cost: its tags, and a message's framing if it stands alone
    folds = bool(turns) and any(isinstance(m, HumanMessage) for m in turns[-1].messages)
    wrapper = counter.count_text(
        TURN_MEMORY_OPEN + TURN_MEMORY_CLOSE + (TURN_MEMORY_SEPARATOR if folds else "")
    ) + (0 if folds else _marginal([HumanMessage("")], counter))
    recent_part = CORE_RECENT_HEADER + core_recent if core_recent else ""
    recent_cost = counter.count_text(recent_part) + 1 if recent_part else 0
    recall_head = counter.count_text(RECALL_HEADER)
    turn_costs = [t.tokens for t in turns]
    needs = {
        "system": system_tokens,
        "core": stable_cost + recent_cost + (wrapper if recent_part and not fresh else 0),
        "recall": recall_head + _quoted_cost(fresh, counter) + wrapper if fresh else 0,
        "buffer": summary_cost + sum(turn_costs),
    }
    allowed = budget.allocate(needs)

    # core: the stable part first; clip the tail (facts come most important first)
    if core and stable_cost > allowed["core"]:
        room = allowed["core"] - _marginal([_core_message("")], counter)
        clipped_core = clip_text(core, max(0, room), counter, note="; more in the archive")
        core_msgs = [_core_message(clipped_core)] if room > 0 and clipped_core else []
        stable_cost = _marginal(core_msgs, counter)
        recent_part = ""
    elif recent_part and needs["core"] > allowed["core"]:
        room = allowed["core"] - stable_cost - (needs["core"] - stable_cost - recent_cost) - 1
        room -= counter.count_text(CORE_RECENT_HEADER)
        text = (
            clip_text(core_recent, room, counter, note="; more in the archive") if room > 0 else ""
        )
        recent_part = CORE_RECENT_HEADER + text if text else ""

    # recall: what fits, each record whole or clipped to its share
    room = allowed["recall"] - recall_head - wrapper
    kept_recall = fit_recalled(fresh, room, counter) if fresh else []

    # buffer: newest turn first, then the summary, then older turns
    room = allowed["buffer"]
    chosen: list[tuple[int, list[BaseMessage], int]] = []  # (turn index, messages, cost)
    clipped: list[int] = []
    if turns:
        newest = turns[-1]
        fitted, was_clipped = _fit_turn(newest, room, counter)
        cost = turn_tokens(fitted, counter) if was_clipped else newest.tokens
        chosen.append((newest.index, fitted, cost))
        room -= cost
        if was_clipped:
            clipped.append(newest.index)
    if summary_msgs:
        cost = summary_cost
        if cost > room:
            head = _marginal([summary_message("", summarized_through)], counter)
            share = max(0, room - head)
            while True:  # quoting (escaping) can make the clipped text cost a little more
                text = clip_text(summary, share, counter, note="; summary clipped")
                summary_msgs = (
                    [summary_message(text, summarized_through)] if text and room > head else []
                )
                cost = _marginal(summary_msgs, counter)
                if cost <= room or share == 0:
                    break
                share = max(0, share - (cost - room))
            summary_cost = cost
        room -= cost
    older = list(turns[:-1])
    while older and older[-1].tokens <= room:
        turn = older.pop()
        chosen.append((turn.index, list(turn.messages), turn.tokens))
        room -= turn.tokens
    omitted = [t.index for t in older]
    chosen.reverse()

    def prefix() -> list[BaseMessage]:
        head: list[BaseMessage] = [*system_msgs, *core_msgs, *summary_msgs]
        if single_system and len(head) > 1:
            return [SystemMessage("\n\n".join(message_text(m) for m in head))]
        return head

    def build() -> list[BaseMessage]:
        out = prefix()
        for _, group, _ in chosen[:-1]:
            out.extend(group)
        newest = chosen[-1][1] if chosen else []
        block = _turn_memory(recent_part, kept_recall)
        out.extend(_with_turn_memory(block, newest) if block else newest)
        return out

    def block_index() -> int | None:
        if not (recent_part or kept_recall):
            return None
        start = len(prefix()) + sum(len(group) for _, group, _ in chosen[:-1])
        newest = chosen[-1][1] if chosen else []
        firsts = [i for i, m in enumerate(newest) if isinstance(m, HumanMessage)]
        return start + firsts[0] if firsts else start

    messages = build()
    total = counter.count_messages(messages) + tools_tokens
    # a non-additive counter may disagree with the per-part sums: shed until it fits
    while total > budget.input_budget:
        if len(chosen) > 1:
            omitted.append(chosen.pop(0)[0])
        elif kept_recall:
            kept_recall.pop()
        elif recent_part:
            recent_part = ""
        else:
            raise ValueError(
                f"The prompt needs {total} tokens but only {budget.input_budget} are "
                "available; the token counter is not consistent. Use a counter whose "
                "message counts add up, or raise the context window."
            )
        messages = build()
        total = counter.count_messages(messages) + tools_tokens
    block = _turn_memory(recent_part, kept_recall)
    last = chosen[-1][1] if chosen else []
    memory_tokens = (
        turn_tokens(_with_turn_memory(block, last), counter) - _marginal(last, counter)
        if block
        else 0
    )
    recent_tokens = min(memory_tokens, counter.count_text(recent_part)) if kept_recall else 0
    if recent_part and not kept_recall:
        recent_tokens = memory_tokens
    usage = {
        "core": stable_cost + recent_tokens,
        "buffer": summary_cost + sum(c for _, _, c in chosen),
        "recall": memory_tokens - recent_tokens,
    }
    usage = {"system": total - sum(usage.values()), **usage}
    return ContextWindow(
        messages=messages,
        usage=usage,
        total_tokens=total,
        budget=budget,
        omitted_turns=tuple(sorted(omitted)),
        clipped_turns=tuple(clipped),
        recalled=tuple(kept_recall),
        repeats=tuple(repeats),
        stable_prefix=len(prefix()),
        turn_memory=block,
        turn_memory_index=block_index(),
    )
