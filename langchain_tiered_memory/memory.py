"""The facade: :class:`TieredMemory`, one conversation thread's memory.

It keeps the pinned system prompt and the summary buffer, writes facts to
core memory, hands evicted turns to the archive, decides with the recall gate
whether to search the archive, and assembles a prompt that always fits the
budget. Without a :class:`~langchain_tiered_memory.store.MemoryStore` it lives
in memory (no recall); with one, everything is durable and recall is on.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> memory = TieredMemory(model="gpt-4o-mini", context_window=4096,
    ...                       system_prompt="You are a helpful assistant.")
    >>> _ = memory.add_messages([HumanMessage("I'm allergic to peanuts."),
    ...                          AIMessage("Noted - no peanuts.")])
    >>> ctx = memory.build_context()
    >>> ctx.messages[0].content
    'You are a helpful assistant.'
    >>> "allergic to peanuts" in ctx.messages[1].content  # core memory
    True
    >>> ctx.total_tokens <= memory.budget.input_budget
    True
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_tiered_memory.archive import InMemoryTurnArchive
from langchain_tiered_memory.budget import TokenBudget
from langchain_tiered_memory.buffer import (
    ArchiveHook,
    BufferState,
    CompressionEvent,
    CompressionResult,
    CompressionTriggers,
    append_messages,
    compress,
)
from langchain_tiered_memory.consolidation import Reflector
from langchain_tiered_memory.context import (
    ContextWindow,
    RecalledMemory,
    assemble_context,
    split_core,
)
from langchain_tiered_memory.core import CoreFact, CoreMemory, FactUpdate
from langchain_tiered_memory.extraction import LLMExtractor
from langchain_tiered_memory.gate import GateConfig, GateDecision, LLMGate, decide_recall
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from langchain_tiered_memory.tokens import TokenCounterLike, resolve_token_counter
from langchain_tiered_memory.turns import clean_message, clean_text, message_text
from langchain_tiered_memory.writer import Extractor, MemoryWriter, WriteResult

if TYPE_CHECKING:
    from langchain_tiered_memory.store import MemoryStore

logger = logging.getLogger(__name__)

__all__ = ["GateMode", "TieredMemory"]

#: ``"auto"`` (the gate decides), ``"always"``, ``"never"``, or an :class:`LLMGate`.
GateMode = Literal["auto", "always", "never"] | LLMGate


_SEEN_IDS = 5000

#: Content of the tool result written for a tool call still unanswered when the
#: next user message arrives (see :meth:`TieredMemory.add_messages`).
ABANDONED_TOOL_RESULT = "No result: the tool call was abandoned when the next user message arrived."


def _answer_dangling_calls(
    open_turn: Sequence[BaseMessage], messages: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """``messages`` with an error result inserted for every tool call still waiting
    when a user message arrives.

    A turn stays open while a tool call waits for its result; a call whose result
    never comes would otherwise keep it open for the rest of the thread: one turn
    that can never be paged out, and a prompt providers reject.
    """
    pending: dict[str, str] = {}
    out: list[BaseMessage] = []
    for i, message in enumerate([*open_turn, *messages]):
        if isinstance(message, HumanMessage) and pending:
            logger.warning(
                "tool call(s) %s got no result before the next user message; closing them",
                sorted(pending),
            )
            out.extend(
                ToolMessage(ABANDONED_TOOL_RESULT, tool_call_id=call_id, name=name, status="error")
                for call_id, name in pending.items()
            )
            pending = {}
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") is not None:
                    pending[str(call["id"])] = call["name"]
        elif isinstance(message, ToolMessage):
            pending.pop(message.tool_call_id, None)
        if i >= len(open_turn):
            out.append(message)
    return out


def fact_record_id(user_id: str, fact_id: str) -> str:
    """Archive id of a core fact version."""
    return f"{user_id}:fact:{fact_id}"


class TieredMemory:
    """Tiered memory for one conversation thread.

    Args:
        model: Model name; gives the default context window and exact counter.
        context_window: The model's window in tokens (overrides the lookup).
        budget: A ready :class:`TokenBudget` (overrides ``context_window``).
        ratios: Section ratios, when building the budget here.
        token_counter: Counter override: model name, chat model, callable or
            :class:`~langchain_tiered_memory.tokens.TokenCounter`.
        system_prompt: The pinned system prompt.
        tools_tokens: Tokens of tool schemas sent with every prompt.
        summarizer: A :class:`Summarizer`, a chat model, or ``None`` (extractive).
        triggers: Compression triggers.
        archive: Hook receiving evicted turns when there is no ``store``
            (default: an in-memory list, ``memory.archive``).
        on_event: Called with every compression event.
        store: Durable tiers (archive, recall, state); enables recall.
        user_id: Whose memory (every read and write is filtered by it).
        thread_id: Which conversation.
        extractor: Fact extractor: rule-based (default), a chat model
            (batched :class:`LLMExtractor`) or any :class:`Extractor`.
        extract_every: Turns per LLM extraction call.
        gate: When to recall: ``"auto"``, ``"always"``, ``"never"`` or an
            :class:`LLMGate`.
        gate_config: Signals of the heuristic gate.
        recall_k: Records recalled per turn.
        reflector: Optional consolidation (Generative Agents' reflection):
            cited observations are archived once written facts pass its
            importance threshold. Off by default.
        single_system_message: Merge the prompt's leading system messages into
            one, for providers that take a single leading system message.

    Raises:
        ValueError: for a bad budget or a system prompt larger than its section.
    """

    def __init__(
        self,
        *,
        model: str | None = "gpt-4o-mini",
        context_window: int | None = None,
        budget: TokenBudget | None = None,
        ratios: dict[str, float] | None = None,
        token_counter: TokenCounterLike | None = None,
        system_prompt: str = "",
        tools_tokens: int = 0,
        summarizer: Summarizer | BaseChatModel | None = None,
        triggers: CompressionTriggers | None = None,
        archive: ArchiveHook | None = None,
        on_event: Callable[[CompressionEvent], None] | None = None,
        store: MemoryStore | None = None,
        user_id: str = "default",
        thread_id: str = "default",
        extractor: Extractor | BaseChatModel | None = None,
        extract_every: int = 8,
        gate: GateMode = "auto",
        gate_config: GateConfig | None = None,
        recall_k: int = 5,
        reflector: Reflector | None = None,
        single_system_message: bool = False,
    ) -> None:
        if budget is None:
            if context_window is None and model is None:
                raise ValueError("Give model=..., context_window=... or budget=...")
            if context_window is not None:
                budget = TokenBudget(context_window=context_window, ratios=dict(ratios or {}))
            else:
                assert model is not None
                budget = TokenBudget.for_model(model, ratios=ratios)
        if not isinstance(user_id, str) or not user_id:
            raise ValueError("user_id must be a non-empty string")
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError("thread_id must be a non-empty string")
        if isinstance(gate, str) and gate not in ("auto", "always", "never"):
            raise ValueError("gate must be 'auto', 'always', 'never' or an LLMGate")
        self.budget = budget
        self.counter = resolve_token_counter(token_counter, model=model)
        if summarizer is None:
            summarizer = ExtractiveSummarizer(self.counter)
        elif isinstance(summarizer, BaseChatModel):
            summarizer = LLMSummarizer(summarizer, counter=self.counter)
        self.summarizer: Summarizer = summarizer
        self.triggers = triggers or CompressionTriggers()
        self.on_event = on_event
        self.tools_tokens = tools_tokens
        self.store = store
        self.user_id = user_id
        self.thread_id = thread_id
        self.gate = gate
        self.gate_config = gate_config or GateConfig()
        self.recall_k = recall_k
        self.reflector = reflector
        self.single_system_message = single_system_message
        self.events: list[CompressionEvent] = []
        self.last_gate: GateDecision | None = None
        self._lock = threading.RLock()
        self._system_prompt = ""
        if store is not None:
            self.archive: ArchiveHook = store.archive.hook(user_id, thread_id)
            self._state = store.state.load_thread(user_id, thread_id) or BufferState()
            extra = store.state.load_extra(user_id, thread_id)
            core = store.core(user_id)
        else:
            self.archive = archive if archive is not None else InMemoryTurnArchive()
            self._state = BufferState()
            extra = {}
            core = CoreMemory()
        if isinstance(extractor, BaseChatModel):
            extractor = LLMExtractor(extractor)
        self.writer = MemoryWriter(core, extractor=extractor, batch_turns=extract_every)
        self.writer._observed_through = int(extra.get("observed_through", -1))
        self._seen_ids: list[str] = list(extra.get("seen_ids", []))
        self.system_prompt = system_prompt or str(extra.get("system_prompt", ""))

    # -- state ---------------------------------------------------------------

    @property
    def core(self) -> CoreMemory:
        """The user's core memory."""
        return self.writer.core

    @property
    def system_prompt(self) -> str:
        """The pinned system prompt (first message of every prompt, verbatim)."""
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("system_prompt must be a string")
        value = clean_text(value)
        assemble_context(  # raises ValueError naming the fix if it cannot fit
            budget=self.budget,
            counter=self.counter,
            system_prompt=value,
            tools_tokens=self.tools_tokens,
        )
        self._system_prompt = value

    @property
    def state(self) -> BufferState:
        """The buffer's current (immutable) state."""
        return self._state

    @property
    def buffer_cap(self) -> int:
        """Tokens the buffer section may hold."""
        return self.budget.caps["buffer"]

    @property
    def messages(self) -> list[BaseMessage]:
        """Every buffered message, oldest first (the summary not included)."""
        return [m for turn in self._state.turns for m in turn.messages]

    def _save(self, state: BufferState | None = None) -> None:
        if self.store is None:
            return
        extra = {
            "observed_through": self.writer._observed_through,
            "system_prompt": self._system_prompt,
            "seen_ids": self._seen_ids[-_SEEN_IDS:],
        }
        self.store.state.save_thread(
            self.user_id, self.thread_id, self._state if state is None else state, extra
        )

    def _audit(self, kind: Any, **payload: Any) -> None:
        if self.store is not None:
            self.store.archive.audit.record(
                kind, user_id=self.user_id, thread_id=self.thread_id, **payload
            )

    # -- writing -------------------------------------------------------------

    def _split_system(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        rest: list[BaseMessage] = []
        for message in messages:
            if not isinstance(message, BaseMessage):
                raise TypeError(
                    f"add_messages takes LangChain messages, got {type(message).__name__}"
                )
            message = clean_message(message)  # content shape checked, lone surrogates replaced
            if isinstance(message, SystemMessage):
                self.system_prompt = message_text(message)
            else:
                rest.append(message)
        return rest

    def _record(self, result: CompressionResult) -> list[CompressionEvent]:
        self._state = result.state
        if result.event is None:
            return []
        event = result.event
        self.events.append(event)
        if event.kind == "compression" and self.store is not None and result.state.summary:
            self._archive_summary(event, result.state)
        self._audit(
            "compression" if event.kind == "compression" else "error",
            result=event.kind,
            trigger=event.trigger,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            turns=list(event.evicted_turns),
            error=event.error,
        )
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                logger.exception("on_event callback failed")
        return [event]

    def _archive_summary(self, event: CompressionEvent, state: BufferState) -> None:
        """Keep each running summary in the archive, linked to the turns it covers."""
        assert self.store is not None
        record = MemoryRecord.new(
            id=f"{self.user_id}:{self.thread_id}:summary:{state.summarized_through}",
            user_id=self.user_id,
            thread_id=self.thread_id,
            kind="summary",
            text=state.summary,
            sources=tuple(f"turn:{i}" for i in event.evicted_turns),
            importance=4.0,
        )
        try:
            self.store.archive.add([record])
        except Exception:
            logger.exception("archiving the running summary failed")

    def _fact_record(self, fact: CoreFact) -> MemoryRecord:
        return MemoryRecord.new(
            id=fact_record_id(self.user_id, fact.id),
            user_id=self.user_id,
            thread_id=None,
            kind="fact",
            text=f"{fact.subject}: {fact.content}",
            importance=fact.importance,
            created_at=fact.created_at,
            sources=(f"turn:{fact.source_turn}",) if fact.source_turn is not None else (),
            metadata={
                "stated": fact.stated,
                "confidence": fact.confidence,
                "subject": fact.subject,
                "source": fact.source,
                "thread_id": self.thread_id,
            },
        )

    def _archive_fact_update(self, update: FactUpdate) -> None:
        """Archive a new fact version and mark the version it replaced (store only)."""
        if self.store is None or update.unchanged:
            return
        self.store.archive.add([self._fact_record(update.fact)])
        if update.superseded is not None:
            self._mark_superseded(update.superseded)

    def write_fact(self, fact: CoreFact, *, reason: str = "updated") -> FactUpdate:
        """Write a fact to core memory (superseding the subject's old version),
        archive it, and save - the replacement is always written first.

        Example:
            >>> m = TieredMemory(context_window=4096)
            >>> _ = m.write_fact(CoreFact.new("home_city", "lives in Paris"))
            >>> m.write_fact(CoreFact.new("home_city", "moved to Berlin")).superseded.content
            'lives in Paris'
        """
        with self._lock:
            update = self.core.upsert(fact, reason=reason)
            self._archive_fact_update(update)
            if self.store is not None and not update.unchanged:
                self.store.save_core(self.user_id)
            return update

    def forget_fact(self, subject: str) -> list[CoreFact]:
        """Delete every version of a core fact, from core memory and the archive."""
        with self._lock:
            removed = self.core.forget(subject=subject)
            if removed and self.store is not None:
                self.store.archive.delete(
                    [fact_record_id(self.user_id, f.id) for f in removed], user_id=self.user_id
                )
                self.store.save_core(self.user_id)
            return removed

    def _apply_writes(self, result: WriteResult) -> None:
        if result.forget_everything:
            self.forget_user()
            return
        for update in result.promoted:
            self._archive_fact_update(update)
        if self.store is None:
            return
        possible = [
            MemoryRecord.new(
                user_id=self.user_id,
                thread_id=None,
                kind="fact",
                text=f"{f.subject}: {f.content}",
                importance=f.importance,
                sources=(f"turn:{f.source_turn}",) if f.source_turn is not None else (),
                metadata={
                    "stated": f.stated,
                    "confidence": f.confidence,
                    "possibly": True,
                    "subject": f.subject,
                    "thread_id": self.thread_id,
                },
            )
            for f in result.possible
        ]
        if possible:
            self.store.archive.add(possible)
        if self.reflector is not None:
            written = [self._fact_record(u.fact) for u in result.promoted] + possible
            observations = self.reflector.observe(written)
            if observations:
                self.store.archive.add(observations)
        if result.forgotten:
            self.store.archive.delete(
                [fact_record_id(self.user_id, f.id) for f in result.forgotten],
                user_id=self.user_id,
            )
        if result.promoted or result.forgotten:
            self.store.save_core(self.user_id)

    def _mark_superseded(self, old: CoreFact) -> None:
        assert self.store is not None
        found = self.store.archive.get([fact_record_id(self.user_id, old.id)])
        if found:
            record = found[0]
            metadata = {**record.metadata, "superseded": True, "superseded_by": old.superseded_by}
            self.store.archive.update_record(replace(record, metadata=metadata))

    def clear_thread(self) -> None:
        """Empty this thread's buffer and summary (core memory and archive stay)."""
        with self._lock:
            self._state = BufferState(next_index=self._state.next_index)
            self._save()

    def add_messages(
        self, messages: Sequence[BaseMessage], *, at: datetime | None = None
    ) -> list[CompressionEvent]:
        """Add messages (whole or partial turns): save, extract facts, compress.

        A ``SystemMessage`` replaces the pinned system prompt. With a store,
        the buffer is saved before this returns (an acknowledged turn survives
        a crash). ``at`` dates the turns these messages open (default: now):
        pass the original time when importing an old conversation, so recall's
        recency and the dates shown with recalled memories are right.

        Returns:
            The compression events this call caused (often none).

        Raises:
            ValueError: for a tool result without its call, or a system prompt
                too large for its section. Nothing is stored in that case.
            TypeError: for something that is not a LangChain message, content
                that is not a string or a list of content blocks, or a message
                that cannot be saved as JSON. Nothing is stored in that case.

        Note:
            Lone UTF-16 surrogates (which UTF-8 cannot encode) are replaced by
            U+FFFD in the text that is stored. A tool call still without its
            result when the next user message arrives gets an error result
            (:data:`ABANDONED_TOOL_RESULT`), so its turn can close.
        """
        with self._lock:
            rest = self._split_system(messages)
            if rest:
                open_turn = self._state.turns[-1].messages if self._state.turns else ()
                rest = _answer_dangling_calls(open_turn, rest)
            state = append_messages(self._state, rest, self.counter, at=at)
            self._save(state)  # saved before it counts: a save error leaves nothing behind
            self._state = state
            if rest:
                self._apply_writes(self.writer.observe(self._state.turns[-3:]))
            events = self._record(
                compress(
                    self._state,
                    cap=self.buffer_cap,
                    triggers=self.triggers,
                    summarizer=self.summarizer,
                    archive=self.archive,
                    counter=self.counter,
                )
            )
            if events and events[0].kind == "compression" and self.writer.pending:
                self._apply_writes(self.writer.observe([], flush=True))
            self._save()
            return events

    def sync(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Add the messages this memory has not seen yet (matched by message id).

        For graphs and agents whose state repeats the conversation on every
        call: only new messages are stored, in order. Messages without an id
        are always treated as new.

        Returns:
            The messages that were added.

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> m = TieredMemory(context_window=1024)
            >>> first = HumanMessage("hi", id="m1")
            >>> len(m.sync([first])), len(m.sync([first, HumanMessage("again", id="m2")]))
            (1, 1)
        """
        with self._lock:
            seen = set(self._seen_ids)
            new = [m for m in messages if m.id is None or m.id not in seen]
            if new:
                self._seen_ids.extend(m.id for m in new if m.id is not None)
                del self._seen_ids[:-_SEEN_IDS]
                self.add_messages(new)
            return new

    def buffered_ids(self) -> set[str]:
        """Ids of the messages still in the buffer."""
        return {m.id for m in self.messages if m.id is not None}

    async def aadd_messages(
        self, messages: Sequence[BaseMessage], *, at: datetime | None = None
    ) -> list[CompressionEvent]:
        """Async twin of :meth:`add_messages` (runs in a worker thread)."""
        return await asyncio.to_thread(self.add_messages, messages, at=at)

    def compress(self, *, force: bool = True) -> list[CompressionEvent]:
        """Compress now (by default even if no trigger fires)."""
        with self._lock:
            events = self._record(
                compress(
                    self._state,
                    cap=self.buffer_cap,
                    triggers=self.triggers,
                    summarizer=self.summarizer,
                    archive=self.archive,
                    counter=self.counter,
                    force=force,
                )
            )
            self._save()
            return events

    # -- recall --------------------------------------------------------------

    def latest_user_message(self) -> str:
        """Text of the newest human message in the buffer (``""`` if none)."""
        for turn in reversed(self._state.turns):
            for message in reversed(turn.messages):
                if isinstance(message, HumanMessage):
                    return message_text(message)
        return ""

    def decide(self, query: str) -> GateDecision:
        """Run the recall gate on ``query`` (no search)."""
        query = clean_text(query)
        if self.gate == "always":
            return GateDecision(True, "recall is always on", "always")
        if self.gate == "never" or self.store is None:
            reason = "recall is off" if self.gate == "never" else "no archive to recall from"
            return GateDecision(False, reason, "off")
        entities = self._known_entities
        if isinstance(self.gate, LLMGate):
            return self.gate.decide(query, entities=entities, config=self.gate_config)
        return decide_recall(query, entities=entities, config=self.gate_config)

    def _known_entities(self, names: Sequence[str]) -> set[str]:
        assert self.store is not None
        known: set[str] = set()
        buffered = {f"turn:{t.index}" for t in self._state.turns}
        for name in names[:8]:
            hits = self.store.archive.keyword_search(name, user_id=self.user_id, n=3)
            # what the buffer still holds (e.g. this very message) is not "known from before"
            if any(not set(r.sources) & buffered for r, _ in hits):
                known.add(name)
        return known

    def recall(self, query: str, *, k: int | None = None) -> list[RecalledMemory]:
        """Search the archive for ``query`` (no gate); best first.

        Records whose turns are still in the buffer are skipped (they are in
        the prompt verbatim already).
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        query = clean_text(query)
        if self.store is None or not query.strip():
            return []
        from langchain_tiered_memory.recall import Recaller, to_recalled_memories

        recaller = Recaller(self.store.archive, self.store.embeddings, k=k or self.recall_k)
        buffered = {f"turn:{t.index}" for t in self._state.turns}
        hits = [
            hit
            for hit in recaller.recall(query, user_id=self.user_id, k=(k or self.recall_k) + 4)
            if not (hit.record.thread_id == self.thread_id and set(hit.record.sources) & buffered)
            and not hit.record.metadata.get("superseded")
        ][: k or self.recall_k]
        self._audit(
            "recall",
            query=query,
            gate=self.last_gate.to_dict() if self.last_gate else None,
            results=[
                {
                    "id": h.record.id,
                    "score": round(h.score, 4),
                    "parts": {p: round(v, 4) for p, v in h.parts.items()},
                }
                for h in hits
            ],
        )
        return to_recalled_memories(hits)

    # -- reading -------------------------------------------------------------

    def build_context(
        self,
        *,
        query: str | None = None,
        recall: bool | None = None,
        recalled: Sequence[RecalledMemory] | None = None,
    ) -> ContextWindow:
        """Assemble the budgeted prompt for the next model call.

        Args:
            query: What to recall for (default: the latest user message).
            recall: Force recall on or off (default: the gate decides).
            recalled: Use these records instead of searching.
        """
        with self._lock:
            state = self._state
            if query is not None and not isinstance(query, str):
                raise TypeError(f"query must be a string or None, got {type(query).__name__}")
            query = self.latest_user_message() if query is None else clean_text(query)
            gate: GateDecision | None = None
            if recalled is None:
                if recall is None:
                    gate = self.decide(query) if query else None
                    do_recall = bool(gate and gate.recall)
                else:
                    gate = GateDecision(recall, "forced by the caller", "forced")
                    do_recall = recall
                self.last_gate = gate
                recalled = self.recall(query) if do_recall else []
            core_cap = self.budget.caps["core"]
            moved = self.core.shrink_to(core_cap, self.counter) if self.core.active() else []
            if moved and self.store is not None:
                self.store.save_core(self.user_id)
            core, core_recent = split_core(self.core.active(), state.turns)
            context = assemble_context(
                budget=self.budget,
                counter=self.counter,
                system_prompt=self._system_prompt,
                core=core,
                core_recent=core_recent,
                summary=state.summary,
                summarized_through=state.summarized_through,
                turns=state.turns,
                recalled=recalled,
                tools_tokens=self.tools_tokens,
                single_system=self.single_system_message,
            )
            context = replace(context, gate=gate)
            if self.store is not None:
                self._audit(
                    "page_in",
                    records=[r.record_id for r in context.recalled],
                    usage=context.usage,
                    total_tokens=context.total_tokens,
                    input_budget=context.input_budget,
                )
            return context

    async def abuild_context(
        self,
        *,
        query: str | None = None,
        recall: bool | None = None,
        recalled: Sequence[RecalledMemory] | None = None,
    ) -> ContextWindow:
        """Async twin of :meth:`build_context` (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.build_context, query=query, recall=recall, recalled=recalled
        )

    # -- forgetting ------------------------------------------------------------

    def forget_user(self) -> None:
        """Delete everything this user has, in every tier and file."""
        with self._lock:
            self.core.clear()
            self._state = BufferState(next_index=self._state.next_index)
            if self.store is not None:
                self.store.forget_user(self.user_id)

    def __repr__(self) -> str:
        s = self._state
        return (
            f"TieredMemory(user={self.user_id!r}, thread={self.thread_id!r}, "
            f"window={self.budget.context_window}, turns={len(s.turns)}, "
            f"buffer_tokens={s.tokens}/{self.buffer_cap}, counter={self.counter.name})"
        )
