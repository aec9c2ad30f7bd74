"""The facade: :class:`TieredMemory`, a view of one conversation thread's memory.

It reads the thread's buffer and the user's core memory from the store,
appends new messages to the store's turn log, writes facts to core memory,
pages evicted turns out to the archive, decides with the recall gate whether
to search the archive, and assembles a prompt that always fits the budget.

Nothing lasting lives in the object: the store is the one source of truth. A
view keeps a copy of the buffer window and catches up with the store at
every read and write (one small query when nothing changed), so any number
of views of one thread - threads, objects, processes - see each other's
turns and facts, and a forget is honoured by every view. Without a ``store``
a view gets a private in-memory one (recall by keywords only).

A view needs of its store only the small :class:`~langchain_tiered_memory.storage.base.Store`
protocol - the backend, the embedder, the store-wide forget - and reaches
storage through the backend alone; this module never imports
:mod:`langchain_tiered_memory.store`.

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
from typing import Any, ClassVar, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages

from langchain_tiered_memory.budget.context import (
    ContextWindow,
    RecalledMemory,
    assemble_context,
    split_core,
)
from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import TokenCounterLike, resolve_token_counter
from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.recall.gate import (
    GateConfig,
    GateDecision,
    GateMode,
    gate_decision,
    gate_from,
)
from langchain_tiered_memory.recall.learned_gate import fits_weights
from langchain_tiered_memory.recall.prompt import recall_for_prompt
from langchain_tiered_memory.storage.base import (
    AuditKind,
    AuditTrail,
    RecordStore,
    Store,
    ThreadHead,
)
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.tiers.buffer import (
    BufferState,
    CompressionEvent,
    CompressionTriggers,
    turn_tokens,
)
from langchain_tiered_memory.tiers.compression import compress_and_commit
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.tiers.summarize import Summarizer, summarizer_from
from langchain_tiered_memory.tiers.window import ThreadWindow
from langchain_tiered_memory.values.facts import FactUpdate
from langchain_tiered_memory.values.turns import (
    ABANDONED_TOOL_RESULT,
    Turn,
    clean_message,
    clean_text,
    message_text,
)
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.consolidation import Reflector
from langchain_tiered_memory.write.forget import (
    ForgetReport,
    ForgetRequest,
    carry_out,
    forget_requests,
    forget_words,
)
from langchain_tiered_memory.write.learned.earlier import earlier_view
from langchain_tiered_memory.write.model_extractor import ModelExtractor, model_extractor_for
from langchain_tiered_memory.write.policy import undo_supersession
from langchain_tiered_memory.write.scheduler import ExtractionScheduler
from langchain_tiered_memory.write.writer import (
    Extractor,
    MemoryWriter,
    extractor_from,
)

logger = logging.getLogger(__name__)

__all__ = ["ABANDONED_TOOL_RESULT", "FORGOTTEN_REQUEST", "GateMode", "TieredMemory"]

#: How the notice that replaces a carried-out "forget ..." request in the thread begins:
#: the request itself names what is forgotten, so it cannot stay; the notice tells the
#: model what was deleted, or that nothing matched
#: (:meth:`~langchain_tiered_memory.write.forget.ForgetReport.notice`).
FORGOTTEN_REQUEST = "[The user asked to forget something."


def _latest_user_text(state: BufferState) -> str:
    """Text of the newest human message of ``state``'s buffer (``""`` if none)."""
    for turn in reversed(state.turns):
        for message in reversed(turn.messages):
            if isinstance(message, HumanMessage):
                return message_text(message)
    return ""


class TieredMemory:
    """Tiered memory for one conversation thread: a view of what the store holds.

    Args:
        model: Model name or chat model; gives the default context window and
            exact counter
            (:func:`~langchain_tiered_memory.budget.sections.context_window_for_model`,
            :func:`~langchain_tiered_memory.budget.tokens.resolve_token_counter`).
        context_window: The model's window in tokens (overrides the lookup).
        budget: A ready :class:`TokenBudget` (overrides ``context_window``).
        ratios: Section ratios, when building the budget here.
        token_counter: Counter override: model name, chat model, callable or
            :class:`~langchain_tiered_memory.budget.tokens.TokenCounter`.
        system_prompt: The pinned system prompt (stored with the thread; an
            empty one keeps the stored prompt).
        tools_tokens: Tokens of tool schemas sent with every prompt.
        summarizer: A :class:`Summarizer`, a chat model, or ``None`` (extractive).
        triggers: Compression triggers.
        on_event: Called with every compression event.
        store: Where the memory lives: a
            :class:`~langchain_tiered_memory.store.MemoryStore`, or anything with
            the :class:`~langchain_tiered_memory.storage.base.Store` protocol
            (default: a private in-memory store with keyword recall, made by
            :attr:`private_store`).
        user_id: Whose memory (every read and write is filtered by it).
        thread_id: Which conversation.
        extractor: Fact extractor. Default: a ``ModelExtractor`` on ``model=`` (batched in
            the background) when it gives structured output, else the offline default,
            ``"rules+links"`` (:func:`.write.writer.default_extractor`). ``"rules"``: the
            plain rules (no embedder); ``"learned"``; a chat model or model spec: a
            ``ModelExtractor`` on it; or any :class:`Extractor`.
        extract_every: Turns per model extraction call (a compression or
            :meth:`flush_extraction` extracts what is pending at once).
        gate: When to recall: ``"auto"``, ``"rules"``, ``"learned"``, ``"always"``,
            ``"never"``, a ``LearnedGate`` or an ``LLMGate`` (see :mod:`.recall.gate`).
        gate_config: Signals of the heuristic gate.
        recall_k: Records recalled per turn.
        recall_min_score: The relevance floor: recall (in the prompt, and
            :meth:`recall` for the tools) returns nothing when no record's
            calibrated score reaches it, so a question memory cannot answer
            recalls nothing. ``"default"``:
            :data:`~langchain_tiered_memory.recall.calibration.DEFAULT_MIN_SCORE`
            with the offline default embedder it was measured for, no floor
            with any other; ``None``: no floor.
        reflector: Optional consolidation (Generative Agents' reflection):
            cited observations are archived once written facts pass its
            importance threshold. Off by default.
        single_system_message: Merge the prompt's leading system messages into
            one, for providers that take a single leading system message.
        attributes: Which facts hold one value at a time (a new home supersedes
            the old one, whichever extractor found it) and which accumulate
            (allergies, pets): an
            :class:`~langchain_tiered_memory.write.attributes.AttributeSchema`
            (default: :data:`~langchain_tiered_memory.write.attributes.DEFAULT_ATTRIBUTES`;
            extend it with ``AttributeSchema().with_attributes(Attribute(...))``).

    Raises:
        ValueError: for a bad budget, an invalid user or thread id, or a
            system prompt larger than its section.
    """

    #: Makes the store of a memory created without one. :mod:`langchain_tiered_memory.store`
    #: sets it, when imported, to a private in-memory ``MemoryStore`` with keyword recall
    #: (the package imports that module first); this module knows only the ``Store`` protocol.
    private_store: ClassVar[Callable[[], Store] | None] = None

    def __init__(
        self,
        *,
        model: str | BaseChatModel | None = "gpt-4o-mini",
        context_window: int | None = None,
        budget: TokenBudget | None = None,
        ratios: dict[str, float] | None = None,
        token_counter: TokenCounterLike | None = None,
        system_prompt: str = "",
        tools_tokens: int = 0,
        summarizer: Summarizer | BaseChatModel | str | None = None,
        triggers: CompressionTriggers | None = None,
        on_event: Callable[[CompressionEvent], None] | None = None,
        store: Store | None = None,
        user_id: str = "default",
        thread_id: str = "default",
        extractor: Extractor | ModelExtractor | BaseChatModel | str | None = None,
        extract_every: int = 8,
        gate: GateMode = "auto",
        gate_config: GateConfig | None = None,
        recall_k: int = 5,
        recall_min_score: float | Literal["default"] | None = "default",
        reflector: Reflector | None = None,
        single_system_message: bool = False,
        attributes: AttributeSchema | None = None,
    ) -> None:
        if budget is None:
            if context_window is None and model is None:
                raise ValueError("Give model=..., context_window=... or budget=...")
            if context_window is not None:
                budget = TokenBudget(context_window=context_window, ratios=dict(ratios or {}))
            else:
                assert model is not None
                budget = TokenBudget.for_model(model, ratios=ratios)
        self.user_id = check_id(user_id, "user_id")
        self.thread_id = check_id(thread_id, "thread_id")
        gate_spec, gate = gate, gate_from(gate)
        self.budget = budget
        self.counter = resolve_token_counter(token_counter, model=model)
        self.summarizer: Summarizer = summarizer_from(summarizer, self.counter)
        self.triggers = triggers or CompressionTriggers()
        self.on_event = on_event
        self.tools_tokens = tools_tokens
        if store is None:
            make = TieredMemory.private_store
            if make is None:  # pragma: no cover - the package imports store.py first
                raise RuntimeError("no private store: import langchain_tiered_memory first")
            store = make()
        self.store = store
        self.backend = store.backend
        if gate_spec == "learned" or (
            gate_spec == "auto" and store.embeddings is not None and fits_weights(store.embeddings)
        ):
            # "auto": only where the gate can share the store's MiniLM (and its vectors)
            gate = gate_from("learned", embeddings=store.embeddings)
        self.gate = gate
        self.gate_config = gate_config or GateConfig()
        self.recall_k = recall_k
        if recall_min_score not in (None, "default") and not (
            isinstance(recall_min_score, (int, float)) and 0.0 <= recall_min_score <= 1.0
        ):
            raise ValueError(
                f"recall_min_score must be in [0, 1], 'default' or None, got {recall_min_score!r}"
            )
        self.recall_min_score = recall_min_score
        self.reflector = reflector
        self.single_system_message = single_system_message
        self.events: list[CompressionEvent] = []
        self.last_gate: GateDecision | None = None
        #: What the last forget of this view deleted (a request in the conversation, or
        #: :meth:`forget_about`); ``None`` before any.
        self.last_forget: ForgetReport | None = None
        self._lock = threading.RLock()
        self._copy = ThreadWindow(self.counter)
        #: The model extractor, batched off the add's thread (``None``: ``writer.extractor``
        #: runs inside the add - the rules, or an :class:`Extractor` given).
        self.model_extractor: ModelExtractor | None = None
        by_model = model_extractor_for(extractor, model)
        core = CoreMemory(store=self.backend, user_id=self.user_id, thread_id=self.thread_id)
        self.writer = MemoryWriter(
            core,
            extractor=extractor_from(None if by_model else extractor),
            batch_turns=extract_every,
            attributes=attributes,
        )
        self.extract_every = extract_every
        self._extraction = ExtractionScheduler(
            self, lock=self._lock, refresh=self._refresh, moved=self._moved
        )
        if by_model is not None:
            self.use_model_extractor(by_model)
        self._refresh()
        if system_prompt:
            self.system_prompt = system_prompt

    # -- the view ------------------------------------------------------------

    def _refresh(self) -> BufferState:
        """Catch the copy up with the store (whole window if it changed under us)."""
        with self._lock:
            copy = self._copy
            read = self.backend.read_thread(self.user_id, self.thread_id, copy.cursor)
            head = read.head
            if read.full:
                if copy.head is not None and head.generation != copy.head.generation:
                    logger.info(
                        "user %s was forgotten; view of thread %s starts afresh",
                        self.user_id,
                        self.thread_id,
                    )
                    self.events.clear()
                copy.reset()
            copy.apply(read.messages)
            copy.trim(head.window_start)
            copy.head = head
            copy.cursor = head.cursor
            self._state = copy.state()
            return self._state

    def _moved(self, head: ThreadHead) -> None:
        """Take the head a write of this view committed (the backend returns it as written:
        no read). Messages others appended meanwhile come with the next read."""
        copy = self._copy
        copy.trim(head.window_start)
        copy.head = head
        copy.cursor = head.cursor
        self._state = copy.state()

    @property
    def head(self) -> ThreadHead:
        """The thread's head as last read from the store."""
        assert self._copy.head is not None
        return self._copy.head

    @property
    def generation(self) -> int:
        """The user's forget generation, as the store holds it now (every forget of the
        user bumps it): two reads that differ had a forget in between."""
        self._refresh()
        return self.head.generation

    @property
    def core(self) -> CoreMemory:
        """The user's core memory (a view: every thread of the user sees the same facts)."""
        return self.writer.core

    @property
    def archive(self) -> RecordStore:
        """The store's archive (records of every kind, searched per user)."""
        return self.backend.records

    @property
    def audit(self) -> AuditTrail:
        """The store's audit log."""
        return self.backend.audit

    @property
    def system_prompt(self) -> str:
        """The pinned system prompt (first message of every prompt, verbatim)."""
        return self.head.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str) -> None:
        value = self._checked_system_prompt(value)
        with self._lock:
            if value != self.head.system_prompt:
                self.backend.set_system_prompt(self.user_id, self.thread_id, value)
                self._refresh()

    def _checked_system_prompt(self, value: object) -> str:
        if not isinstance(value, str):
            raise TypeError("system_prompt must be a string")
        value = clean_text(value)
        assemble_context(  # raises ValueError naming the fix if it cannot fit
            budget=self.budget,
            counter=self.counter,
            system_prompt=value,
            tools_tokens=self.tools_tokens,
        )
        return value

    @property
    def state(self) -> BufferState:
        """The buffer as the store holds it now (an immutable copy)."""
        return self._refresh()

    @property
    def buffer_cap(self) -> int:
        """Tokens the buffer section may hold."""
        return self.budget.caps["buffer"]

    @property
    def messages(self) -> list[BaseMessage]:
        """Every buffered message, oldest first (the summary not included)."""
        return [m for turn in self._refresh().turns for m in turn.messages]

    def _audit(self, kind: AuditKind, **payload: Any) -> None:
        self._audit_all([(kind, payload)])

    def _audit_all(self, events: Sequence[tuple[AuditKind, dict[str, Any]]]) -> None:
        """Write audit events in one transaction; a failure is logged, never raised."""
        try:
            self.audit.record_all(events, user_id=self.user_id, thread_id=self.thread_id)
        except StorageError:
            logger.exception("could not write the %s audit events", [k for k, _ in events])

    # -- writing -------------------------------------------------------------

    def _prepare(self, messages: Sequence[Any]) -> tuple[list[BaseMessage], str | None]:
        """Messages checked and cleaned, and the system prompt they set (changes nothing)."""
        if isinstance(messages, (str, BaseMessage)):
            messages = [messages]
        try:
            converted = convert_to_messages(list(messages))
        except (NotImplementedError, ValueError, TypeError) as exc:
            raise TypeError(
                "add_messages takes LangChain messages or message-likes (('human', 'hi'), "
                f"{{'role': 'user', 'content': 'hi'}}, 'hi'): {exc}".splitlines()[0]
            ) from exc
        rest: list[BaseMessage] = []
        prompt: str | None = None
        for message in converted:
            message = clean_message(message)  # content shape checked, lone surrogates replaced
            if isinstance(message, SystemMessage):
                prompt = self._checked_system_prompt(message_text(message))
            else:
                turn_tokens([message], self.counter)  # countable, or rejected before storing
                rest.append(message)
        return rest, prompt

    def add_messages(
        self, messages: Sequence[Any], *, at: datetime | None = None
    ) -> list[CompressionEvent]:
        """Add messages (whole or partial turns): append, extract facts, compress.

        Messages go to the store's turn log in one transaction before this
        returns (an acknowledged turn survives a crash); a message whose id
        the thread already stored is skipped, so a retry stores nothing
        twice. Anything :func:`~langchain_core.messages.convert_to_messages`
        accepts is accepted. A ``SystemMessage`` replaces the pinned system
        prompt. ``at`` dates the turns these messages open (default: now):
        pass the original time when importing an old conversation, so
        recall's recency and the dates shown with recalled memories are right.

        Returns:
            The compression events this call caused (often none).

        Raises:
            ValueError: for a tool result without its call, or a system prompt
                too large for its section. Nothing is stored in that case.
            TypeError: for something that is not a message, content that is
                not a string or a list of content blocks, or a message that
                cannot be stored as JSON. Nothing is stored in that case.
            StorageError: when the store cannot write (a full disk, a read-only
                file); nothing is stored in that case.

        Note:
            Lone UTF-16 surrogates (which UTF-8 cannot encode) and NUL
            characters (which Postgres text cannot hold) are replaced by
            U+FFFD in the text that is stored, on every backend alike. A tool call still without its
            result when the next user message arrives gets an error result
            (:data:`ABANDONED_TOOL_RESULT`), so its turn can close.
        """
        if at is not None and at.tzinfo is None:
            raise ValueError("at must be timezone-aware, e.g. datetime(..., tzinfo=timezone.utc)")
        with self._lock:
            rest, prompt = self._prepare(messages)
            if not rest and prompt is None:
                return []
            result = self.backend.append_messages(
                self.user_id, self.thread_id, rest, at=at, system_prompt=prompt
            )
            # the messages are stored: what follows must not fail the call (a retry
            # would add the turn again), so a storage failure is logged, not raised
            try:
                state = self._refresh()
                added = {m.turn for m in result.stored}
                if any(isinstance(m.message, HumanMessage) for m in result.stored):
                    self._handle_forget_requests([t for t in state.turns if t.index in added])
                self._extraction.extract(self._state)
                pending = self._extraction.pending(self._state)
                events = self._compress(force=False)
                if events and events[0].kind == "compression":
                    self._extraction.extract(self._state, flush=True, held=pending)
                return events
            except StorageError:
                logger.exception(
                    "messages of %s/%s stored; upkeep after it failed and is retried at the "
                    "next add",
                    self.user_id,
                    self.thread_id,
                )
                return []

    async def aadd_messages(
        self, messages: Sequence[Any], *, at: datetime | None = None
    ) -> list[CompressionEvent]:
        """Async twin of :meth:`add_messages` (runs in a worker thread)."""
        return await asyncio.to_thread(self.add_messages, messages, at=at)

    def sync(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Add the messages the thread has not stored yet (matched by message id).

        For graphs and agents whose state repeats the conversation on every
        call: only new messages are stored, in order. Messages the thread
        stored - or forgot - are skipped; messages without an id are always
        new.

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
            known = self.known_ids([m.id for m in messages if m.id])
            new = [m for m in messages if not (m.id and m.id in known)]
            if new:
                self.add_messages(new)
            return new

    def known_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these message ids the thread has stored (or forgot)."""
        return self.backend.known_message_ids(self.user_id, self.thread_id, list(ids))

    def buffered_ids(self) -> set[str]:
        """Ids of the messages still in the buffer."""
        return {m.id for m in self.messages if m.id is not None}

    def clear_thread(self) -> None:
        """Empty this thread's buffer and summary (core memory and archive stay)."""
        with self._lock:
            self.backend.clear_thread(self.user_id, self.thread_id)
            self._refresh()

    # -- facts -----------------------------------------------------------------

    def write_fact(self, fact: CoreFact, *, reason: str = "updated") -> FactUpdate:
        """Write a fact to core memory (superseding the subject's old version) and
        archive it - one atomic write in the store; the replacement is always written first.

        Example:
            >>> m = TieredMemory(context_window=4096)
            >>> _ = m.write_fact(CoreFact.new("home_city", "lives in Paris"))
            >>> m.write_fact(CoreFact.new("home_city", "moved to Berlin")).superseded.content
            'lives in Paris'
        """
        return self.core.upsert(fact, reason=reason)

    def end_fact(
        self,
        subject: str,
        block: str = "human",
        *,
        at: datetime | None = None,
        reason: str = "ended",
    ) -> CoreFact | None:
        """End a core fact: it stopped holding at ``at`` (default now) with no
        replacement ("I don't smoke any more"); it stays in the history as ``ended``
        and its archive record is marked so. Returns the ended version, or ``None``
        when the subject has no current fact.

        Example:
            >>> m = TieredMemory(context_window=4096)
            >>> _ = m.write_fact(CoreFact.new("smoking", "smokes"))
            >>> m.end_fact("smoking", reason="quit").status, m.core.get("smoking")
            ('ended', None)
        """
        return self.core.end(subject, block, at=at, reason=reason)

    def undo_supersession(self, fact_id: str) -> FactUpdate:
        """Make the superseded (or ended) fact version ``fact_id`` current again: it is
        written as a new version, and the version that replaced it is superseded in turn.
        The history keeps every version (:func:`~.write.policy.undo_supersession`).

        Raises:
            KeyError: when the user has no fact version with that id.
            ValueError: when that version is still current (nothing to undo).

        Example:
            >>> m = TieredMemory(context_window=4096)
            >>> old = m.write_fact(CoreFact.new("home_city", "lives in Lisbon")).fact
            >>> _ = m.write_fact(CoreFact.new("home_city", "lives in Porto"))
            >>> m.undo_supersession(old.id).fact.content
            'lives in Lisbon'
        """
        with self._lock:
            return undo_supersession(self.core, fact_id)

    def facts_at(self, when: datetime, until: datetime | None = None) -> list[CoreFact]:
        """The user's facts that held at ``when`` (with ``until``: at any time in
        ``[when, until)``), superseded and ended versions included, oldest first
        (:meth:`CoreMemory.at <langchain_tiered_memory.tiers.core.CoreMemory.at>`).

        Example:
            >>> from datetime import datetime
            >>> m = TieredMemory(context_window=4096)
            >>> _ = m.write_fact(CoreFact.new("home_city", "lives in Paris",
            ...                               created_at=datetime(2021, 1, 1)))
            >>> _ = m.write_fact(CoreFact.new("home_city", "moved to Berlin",
            ...                               valid_from=datetime(2024, 3, 1)))
            >>> [f.content for f in m.facts_at(datetime(2023, 6, 1))]
            ['lives in Paris']
        """
        return self.core.at(when, until)

    async def afacts_at(self, when: datetime, until: datetime | None = None) -> list[CoreFact]:
        """Async twin of :meth:`facts_at` (runs in a worker thread)."""
        return await asyncio.to_thread(self.facts_at, when, until)

    def forget_fact(self, subject: str) -> list[CoreFact]:
        """Delete every version of a core fact, its records and the turns that stated it."""
        removed = self.core.forget(subject=subject)
        self._refresh()
        return removed

    def forget_about(self, words: str) -> ForgetReport:
        """Forget what the user said about ``words``, in every tier: the core fact
        versions whose subject or content holds all of them, the turns of every thread of
        the user that hold them (buffer, log and archive), the summaries and records that
        carry those, their embedding-cache entries and LangGraph checkpoints, and the
        strings of the audit log that hold them (see
        :func:`~langchain_tiered_memory.write.forget.text_matches`).

        Returns what was deleted (without the forgotten words).

        Raises:
            TypeError: if ``words`` is not a string.
            ValueError: if it holds no word to match (``"the"``); nothing is deleted.

        Example:
            >>> from langchain_core.messages import AIMessage, HumanMessage
            >>> m = TieredMemory(context_window=4096)
            >>> _ = m.add_messages([HumanMessage("We moved to Porto."), AIMessage("Nice!")])
            >>> m.forget_about("Porto")
            ForgetReport(facts=1, records=1, turns=1, everything=False)
            >>> m.messages, m.core.active()
            ([], [])
        """
        if not isinstance(words, str):
            raise TypeError(f"words must be a string, got {type(words).__name__}")
        if not forget_words(words):
            raise ValueError(f"nothing to match in {words!r}: name what to forget")
        with self._lock:
            return self._carry_out([ForgetRequest(words)], [])

    async def aforget_about(self, words: str) -> ForgetReport:
        """Async twin of :meth:`forget_about` (runs in a worker thread)."""
        return await asyncio.to_thread(self.forget_about, words)

    def _handle_forget_requests(self, turns: Sequence[Turn]) -> None:
        """Carry out "forget ..." requests in turns this view just added.

        The request itself names what is forgotten, so it is replaced by a notice
        that says what was deleted, or that nothing matched
        (:meth:`~langchain_tiered_memory.write.forget.ForgetReport.notice`), for the
        model to pass on; :attr:`last_forget` keeps the report.
        """
        asked = forget_requests(turns)
        if asked:
            self._carry_out([r for _, r in asked], [t.index for t, _ in asked])

    def _carry_out(self, asked: Sequence[ForgetRequest], turns: Sequence[int]) -> ForgetReport:
        """Carry out forget requests (``turns``: the request turns, replaced by the notice)."""
        report = carry_out(
            self.store, self.core, asked, turns, user_id=self.user_id, thread_id=self.thread_id
        )
        self.last_forget = report
        self._refresh()
        return report

    def use_model_extractor(self, extractor: ModelExtractor | None) -> bool:
        """Let ``extractor`` write this view's facts from now on, in batches off the add's
        thread (``None``: the writer's extractor - the offline one - in each add).

        For an integration that learns the application's chat model after the memory
        was opened (the ``create_agent`` middleware). Turns already extracted stay as
        they are; pending ones go to the new extractor. An extractor whose
        instructions alone do not fit the memory's input budget is not taken (the
        offline extractor keeps running, with a log line).

        Returns:
            Whether ``extractor`` now extracts (always True for ``None``).
        """
        if extractor is not None and extractor.overhead(self.counter) >= self.budget.input_budget:
            logger.info(
                "the extraction prompt of %s does not fit %d input tokens: no model extraction",
                type(extractor.model).__name__,
                self.budget.input_budget,
            )
            return False
        with self._lock:
            self.model_extractor = extractor
        return True

    def flush_extraction(self, timeout: float | None = None) -> bool:
        """Extract every pending turn now and wait for it (with a model extractor; the
        rules run inside each add and have nothing pending). For tests, shutdown and the
        CLI. Returns False if ``timeout`` seconds passed first.

        Example:
            >>> TieredMemory(context_window=1024).flush_extraction()
            True
        """
        return self._extraction.flush(timeout)

    async def aflush_extraction(self, timeout: float | None = None) -> bool:
        """Async twin of :meth:`flush_extraction`."""
        return await asyncio.to_thread(self.flush_extraction, timeout)

    # -- compression -------------------------------------------------------------

    def _compress(self, *, force: bool) -> list[CompressionEvent]:
        """Compress if due (or ``force``), committing the result as one write."""
        head = self.head
        done = compress_and_commit(
            self.backend,
            self._state,
            head,
            seen=self._copy.cursor.seq if self._copy.cursor else 0,
            cap=self.buffer_cap,
            triggers=self.triggers,
            summarizer=self.summarizer,
            counter=self.counter,
            force=force,
        )
        if done.head is None:  # the window moved under us, or a failed attempt was noted
            self._refresh()
        elif done.head is not head:
            self._moved(done.head)
        return [] if done.event is None else self._emit(done.event)

    def _emit(self, event: CompressionEvent) -> list[CompressionEvent]:
        self.events.append(event)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                logger.exception("on_event callback failed")
        return [event]

    def compress(self, *, force: bool = True) -> list[CompressionEvent]:
        """Compress now (by default even if no trigger fires)."""
        with self._lock:
            state = self._refresh()
            pending = self._extraction.pending(state)
            events = self._compress(force=force)
            if events and events[0].kind == "compression":
                self._extraction.extract(self._state, flush=True, held=pending)
            return events

    # -- recall --------------------------------------------------------------

    def latest_user_message(self) -> str:
        """Text of the newest human message in the buffer (``""`` if none)."""
        return _latest_user_text(self._refresh())

    def decide(self, query: str) -> GateDecision:
        """Run the recall gate on ``query`` (no search)."""
        return self._decide(clean_text(query))

    def _decide(self, query: str) -> GateDecision:
        """The gate's decision on an already cleaned ``query``."""
        return gate_decision(
            self.gate, query, entities=self._known_entities, config=self.gate_config
        )

    def _known_entities(self, names: Sequence[str]) -> set[str]:
        known: set[str] = set()
        buffered = {f"turn:{t.index}" for t in self._state.turns}
        for name in names[:8]:
            hits = self.archive.keyword_search(name, self.user_id, n=3)
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
        with self._lock:
            recalled, event = self._recall(clean_text(query), self._refresh(), k=k)
            if event is not None:
                self._audit("recall", **event)
            return recalled

    def _recall(
        self, query: str, state: BufferState, *, k: int | None = None
    ) -> tuple[list[RecalledMemory], dict[str, Any] | None]:
        """Recall for an already cleaned ``query`` over ``state``; the records and the
        payload of their ``recall`` audit event (``None``: nothing was searched)."""
        if not query.strip():
            return [], None
        return recall_for_prompt(
            self.archive,
            self.store.embeddings,
            query,
            user_id=self.user_id,
            thread_id=self.thread_id,
            buffered=[t.index for t in state.turns],
            k=k or self.recall_k,
            gate=self.last_gate,
            min_score=self.recall_min_score,
        )

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
            if query is not None and not isinstance(query, str):
                raise TypeError(f"query must be a string or None, got {type(query).__name__}")
            state = self._refresh()  # the one read of the thread
            query = _latest_user_text(state) if query is None else clean_text(query)
            gate: GateDecision | None = None
            events: list[tuple[AuditKind, dict[str, Any]]] = []
            if recalled is None:
                if recall is None:
                    gate = self._decide(query) if query else None
                    do_recall = bool(gate and gate.recall)
                else:
                    gate = GateDecision(recall, "forced by the caller", "forced")
                    do_recall = recall
                self.last_gate = gate
                recalled = []
                if do_recall:
                    recalled, event = self._recall(query, state)
                    if event is not None:
                        events.append(("recall", event))
            self.core.shrink_to(self.budget.caps["core"], self.counter)
            # facts an unsure link moved out are shown beside the newer ones, as earlier
            shown = self.core.active() + earlier_view(self.core.history())
            core, core_recent = split_core(shown, state.turns)
            context = assemble_context(
                budget=self.budget,
                counter=self.counter,
                system_prompt=self.head.system_prompt,
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
            page_in = {
                "records": [r.record_id for r in context.recalled],
                "usage": context.usage,
                "total_tokens": context.total_tokens,
                "input_budget": context.input_budget,
            }
            self._audit_all([*events, ("page_in", page_in)])  # one write
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
        """Delete everything this user has, in every tier and file (every view honours it)."""
        with self._lock:
            self.store.forget_user(self.user_id)
            self._refresh()

    def __repr__(self) -> str:
        s = self._state
        return (
            f"TieredMemory(user={self.user_id!r}, thread={self.thread_id!r}, "
            f"window={self.budget.context_window}, turns={len(s.turns)}, "
            f"buffer_tokens={s.tokens}/{self.buffer_cap}, counter={self.counter.name})"
        )
