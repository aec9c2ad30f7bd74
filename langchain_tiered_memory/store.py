"""The one source of truth: :class:`MemoryStore`, the memory of every user of an application.

A store owns a backend (:class:`~langchain_tiered_memory.storage.base.MemoryBackend`):
SQLite + FAISS in a data directory by default, in memory, or one Postgres
database (``MemoryStore("postgresql://…")``) shared by any number of workers. Everything that
lasts lives there - records, the turn log, thread heads, core facts, the
audit log - and nowhere else: ``store.memory(user_id, thread_id)`` opens a
:class:`~langchain_tiered_memory.memory.TieredMemory`, which is a *view*.
Any number of views of one user (threads, objects, processes on the same
directory) may be open at once; each reads what the others wrote, none can
overwrite another's work, and a forget is honoured by all of them.

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.messages import HumanMessage
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> a = store.memory("ana", "trip-planning", context_window=4096)
    >>> b = store.memory("ana", "trip-planning", context_window=4096)  # a second view
    >>> _ = a.add_messages([HumanMessage("I'm allergic to peanuts.")])
    >>> b.core.get("allergy:peanuts").content, len(b.messages)
    ('allergic to peanuts', 1)
    >>> store.forget_user("ana")  # the allergy's fact record
    1
    >>> a.core.render(), a.messages
    ('', [])
    >>> store.close()
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import TokenCounterLike
from langchain_tiered_memory.expiry import utc
from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.memory import GateMode, TieredMemory
from langchain_tiered_memory.recall.gate import GateConfig
from langchain_tiered_memory.storage import open_backend, stored_embeddings
from langchain_tiered_memory.storage.base import (
    AuditTrail,
    Closes,
    Flushes,
    MemoryBackend,
    RecordStore,
)
from langchain_tiered_memory.storage.checkpoints import (
    CHECKPOINTS_FILE,
    Checkpoints,
    DeletesThreads,
)
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.storage.postgres.db import is_postgres_url, redact_url
from langchain_tiered_memory.tiers.buffer import CompressionEvent, CompressionTriggers
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.tiers.summarize import Summarizer
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.consolidation import Reflector
from langchain_tiered_memory.write.model_extractor import ModelExtractor
from langchain_tiered_memory.write.writer import Extractor

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINTS_FILE",
    "EMBEDDINGS_CACHE_FILE",
    "DeletesThreads",
    "MemoryStore",
    "SweepReport",
    "flush_open_stores",
]

#: The embedding cache of the local embedders, inside a data directory.
EMBEDDINGS_CACHE_FILE = "embeddings.sqlite"

#: ``embeddings=`` value for a store that searches by keywords only (no vectors).
NO_EMBEDDINGS = "none"


class MemoryStore:
    """Every user's durable memory, in one backend (thread- and process-safe).

    Args:
        path: The data directory (created if missing; its parent must exist),
            a ``postgresql://user:password@host/db`` URL (Postgres with
            pgvector: the ``postgres`` extra, ``pip install -e '.[postgres]'``), or
            ``None`` for a store in this process's memory only.
        embeddings: Any LangChain ``Embeddings``; an embedder name
            (``"minilm"``, ``"e5"`` for Chinese and other languages,
            ``"wordllama"``); ``"none"`` for keyword search only; or ``None``:
            the local embedder the directory was built with, else the offline
            default (:data:`~langchain_tiered_memory.embeddings.DEFAULT_EMBEDDER`).
        vector_store: Keep the vectors in this LangChain ``VectorStore``
            (Chroma, PGVector, ...) instead of FAISS; it embeds the texts
            itself, so ``embeddings`` is not used.
        index_save_every: Rewrite the FAISS file every this many writes, or
            every ``ntotal // 64`` once the index is big (and on close); a
            file a crash left behind is caught up from SQLite on open.
        backend: A ready backend instead of ``path``: any object with the
            :class:`~langchain_tiered_memory.storage.base.MemoryBackend`
            protocol - one of this package's, or your own, checked by
            :mod:`langchain_tiered_memory.testing.conformance`. The store owns it
            (closes it with itself). ``embeddings`` is then the embedder it
            embeds with, for recall's query vectors (``None``: recall passes the
            query text and the backend embeds it).
        **backend_options: Options of a Postgres backend (``pool_size``,
            ``pool_timeout``, ``ann_min_records``, ``retries``,
            ``vacuum_after_forget``: see
            :class:`~langchain_tiered_memory.storage.postgres.backend.PostgresBackend`).

    Raises:
        ValueError: if the parent directory does not exist or ``path`` is a file,
            or for ``backend`` with a ``path``, ``vector_store``, backend options or
            an embedder name.
        TypeError: for a ``backend`` without the ``MemoryBackend`` protocol
            (the message names what it lacks).
        StorageDamagedError: if the database file is damaged (the message
            names it and says how to recover).
        StorageUnavailableError: if a Postgres server cannot be reached.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | str | None = None,
        vector_store: Any = None,
        index_save_every: int = 64,
        backend: MemoryBackend | None = None,
        **backend_options: Any,
    ) -> None:
        self.path: Path | None = None
        #: The Postgres URL, for a Postgres store.
        self.url: str | None = None
        if backend is not None:
            _check_backend(backend, path, embeddings, vector_store, backend_options)
        elif is_postgres_url(path):
            self.url = str(path)
        elif path is not None:
            self.path = Path(path).expanduser()
            if not self.path.parent.exists():
                raise ValueError(
                    f"Cannot create the data directory {self.path}: its parent does not exist."
                )
            if self.path.exists() and not self.path.is_dir():
                raise ValueError(
                    f"Cannot use {self.path} as the data directory: {self.path} is a file, "
                    "not a directory."
                )
            self.path.mkdir(exist_ok=True)
        if backend is not None:
            self.embeddings: Embeddings | None = cast(Embeddings | None, embeddings)
            self.backend: MemoryBackend = backend
        else:
            self.embeddings = None if vector_store is not None else self._embeddings(embeddings)
            self.backend = open_backend(
                self.url or self.path,
                embeddings=self.embeddings,
                vector_store=vector_store,
                index_save_every=index_save_every,
                **backend_options,
            )
        self._owns_embeddings = not isinstance(embeddings, Embeddings)
        self._checkpoints = Checkpoints(self.backend, self.path)
        self._lock = threading.Lock()
        self._closed = False
        _OPEN.add(self)  # flushed and closed at exit if the application never closes it
        try:  # forgets a crash left half done, in this directory or database
            self.backend.finish_forgets(self._purge_checkpoints)
        except StorageError:
            logger.exception(
                "finishing an interrupted forget in %s failed; it is retried at the next open "
                "or forget of that user",
                self.backend.where,
            )

    def _embeddings(self, embeddings: Embeddings | str | None) -> Embeddings | None:
        from langchain_tiered_memory.embeddings import (
            DEFAULT_EMBEDDER,
            default_embeddings,
            embedder_name,
        )

        if isinstance(embeddings, Embeddings):
            return embeddings
        if isinstance(embeddings, str) and embeddings.strip().lower() == NO_EMBEDDINGS:
            return None
        if embeddings is None and (self.path is not None or self.url is not None):
            # an existing directory or database keeps the local embedder it was built with
            built_with = embedder_name(stored_embeddings(self.url or self.path))
            if built_with is not None and built_with != DEFAULT_EMBEDDER:
                where = redact_url(self.url) if self.url else self.path
                logger.info("%s was built with the %r embedder; using it", where, built_with)
            embeddings = built_with
        cache = self.path / EMBEDDINGS_CACHE_FILE if self.path is not None else None
        return default_embeddings(embeddings, cache_path=cache)

    # -- views -------------------------------------------------------------------

    @property
    def archive(self) -> RecordStore:
        """The archive (the backend's record store: ``add``, ``get``, ``records``,
        ``keyword_search``, ``dense_search``, ``delete``, ...)."""
        return self.backend.records

    @property
    def audit(self) -> AuditTrail:
        """The audit log (``events(user_id)``)."""
        return self.backend.audit

    def memory(
        self,
        user_id: str,
        thread_id: str = "default",
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
        extractor: Extractor | ModelExtractor | BaseChatModel | str | None = None,
        extract_every: int = 8,
        gate: GateMode = "auto",
        gate_config: GateConfig | None = None,
        recall_k: int = 5,
        recall_min_score: float | Literal["default"] | None = "default",
        reflector: Reflector | None = None,
        single_system_message: bool = False,
        attributes: AttributeSchema | None = None,
    ) -> TieredMemory:
        """Open a view of one thread's memory over this store.

        The view is a :class:`~langchain_tiered_memory.memory.TieredMemory`, and
        the options are its constructor's (see it for the details):

        Args:
            user_id: Whose memory (every read and write is filtered by it).
            thread_id: Which conversation.
            model: Model name or chat model: the default context window and
                the exact token counter.
            context_window: The model's window in tokens (overrides the lookup).
            budget: A ready ``TokenBudget`` (overrides ``context_window``).
            ratios: Section ratios, when the budget is built here.
            token_counter: Counter override: model name, chat model, callable
                or ``TokenCounter``.
            system_prompt: The pinned system prompt (stored with the thread;
                an empty one keeps the stored prompt).
            tools_tokens: Tokens of tool schemas sent with every prompt.
            summarizer: A ``Summarizer``, a chat model or model string, or
                ``None`` (extractive).
            triggers: Compression triggers.
            on_event: Called with every compression event.
            extractor: Fact extractor, as :class:`TieredMemory` takes it: by
                default the chat model given as ``model=`` (a ``ModelExtractor``,
                batched off the add) when it gives structured output, else
                ``"rules+links"``; ``"rules"`` or ``"learned"``; a chat model, model string or
                ``ModelExtractor``; or any ``Extractor``.
            extract_every: Turns per LLM extraction call.
            gate: When to recall: ``"auto"`` (the learned gate when this store's
                embedder is MiniLM, else the rules), ``"rules"``, ``"learned"``,
                ``"always"``, ``"never"``, a ``LearnedGate`` or an ``LLMGate`` (see
                ``TieredMemory``).
            gate_config: Signals of the heuristic gate.
            recall_k: Records recalled per turn.
            recall_min_score: The relevance floor of recall (see ``TieredMemory``).
            reflector: Optional consolidation (reflection); off by default.
            single_system_message: Merge the prompt's leading system messages
                into one.
            attributes: Which facts hold one value at a time (an
                ``AttributeSchema``; default: the declared home, employer, role...).

        Raises:
            TypeError: for a user or thread id that is not a string (``0``, ``None``).
            ValueError: for an empty, blank, over-long or unstorable id, or a bad budget.

        Example:
            >>> view = MemoryStore().memory("ana", "t1", context_window=4096, recall_k=3)
            >>> view.user_id, view.budget.context_window, view.recall_k
            ('ana', 4096, 3)
        """
        return TieredMemory(
            store=self,
            user_id=user_id,
            thread_id=thread_id,
            model=model,
            context_window=context_window,
            budget=budget,
            ratios=ratios,
            token_counter=token_counter,
            system_prompt=system_prompt,
            tools_tokens=tools_tokens,
            summarizer=summarizer,
            triggers=triggers,
            on_event=on_event,
            extractor=extractor,
            extract_every=extract_every,
            gate=gate,
            gate_config=gate_config,
            recall_k=recall_k,
            recall_min_score=recall_min_score,
            reflector=reflector,
            single_system_message=single_system_message,
            attributes=attributes,
        )

    def core(self, user_id: str, thread_id: str | None = None) -> CoreMemory:
        """A view of the user's core memory (every view of the user sees the same facts)."""
        return CoreMemory(
            store=self.backend, user_id=check_id(user_id, "user_id"), thread_id=thread_id
        )

    def fact_history(
        self,
        user_id: str,
        subject: str | None = None,
        *,
        at: datetime | None = None,
        until: datetime | None = None,
    ) -> list[CoreFact]:
        """A user's fact versions with when each held (``valid_from`` / ``valid_until``).

        Without ``at``: every version (of ``subject``, if given), oldest first.
        With ``at``: the versions that held then (with ``until``: at any time in
        ``[at, until)``), superseded and ended ones included - "where did I live
        in 2023?" (see :meth:`CoreMemory.at <langchain_tiered_memory.tiers.core.CoreMemory.at>`).

        Example:
            >>> import tempfile
            >>> from datetime import datetime
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> fake = DeterministicFakeEmbedding(size=8)
            >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=fake)
            >>> core = store.core("ana")
            >>> _ = core.upsert(CoreFact.new("home_city", "lives in Paris",
            ...                              created_at=datetime(2021, 1, 1)))
            >>> _ = core.upsert(CoreFact.new("home_city", "moved to Berlin",
            ...                              valid_from=datetime(2024, 3, 1)))
            >>> [f.content for f in store.fact_history("ana", at=datetime(2023, 6, 1))]
            ['lives in Paris']
            >>> [f.status for f in store.fact_history("ana", "home_city")]
            ['superseded', 'active']
            >>> store.close()
        """
        core = self.core(user_id)
        if at is None:
            if until is not None:
                raise ValueError("fact_history takes until= only with at=")
            return core.history(subject)
        found = core.at(at, until)
        if subject is not None:
            found = [f for f in found if f.subject == subject.strip().lower()]
        return found

    async def afact_history(
        self,
        user_id: str,
        subject: str | None = None,
        *,
        at: datetime | None = None,
        until: datetime | None = None,
    ) -> list[CoreFact]:
        """Async twin of :meth:`fact_history` (runs in a worker thread)."""
        return await asyncio.to_thread(self.fact_history, user_id, subject, at=at, until=until)

    def users(self) -> list[str]:
        """Users with a thread, a core fact or an archive record."""
        return self.backend.users()

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        return self.backend.threads(check_id(user_id, "user_id"))

    # -- LangGraph checkpoints (kept by storage.checkpoints) -----------------------------

    def checkpointer(self) -> Any:
        """The default LangGraph checkpointer for graphs over this store (one per store).

        For a data directory, a ``SqliteSaver`` on ``<path>/checkpoints.sqlite``
        (``secure_delete`` on); for Postgres, LangGraph's ``PostgresSaver`` on
        the same database; in memory, an ``InMemorySaver``. Forgetting a user
        deletes their threads from it - from any process, since the
        checkpoints live with the memory.

        Example:
            >>> MemoryStore().checkpointer().__class__.__name__
            'InMemorySaver'
        """
        return self._checkpoints.default()

    async def acheckpointer(self) -> Any:
        """An async checkpointer on this store's database, for ``ainvoke``/``astream``.

        Postgres only: LangGraph's ``AsyncPostgresSaver``, bound to the running
        event loop (close its pool there: ``await saver.conn.close()``);
        forgets delete its threads (the tables of :meth:`checkpointer`).

        Raises:
            TypeError: for a SQLite or in-memory store (use
                :meth:`checkpointer` with ``invoke``, or attach an async saver
                of your own with :meth:`attach_checkpointer`).
        """
        return await self._checkpoints.adefault()

    def attach_checkpointer(self, checkpointer: Any) -> Any:
        """Have forgets of this store delete threads from ``checkpointer`` too; returns it.

        ``build_memory_graph`` attaches the checkpointer it is given; attach
        the one of your own ``create_agent(checkpointer=...)`` (LangGraph
        checkpoint threads are the memory's threads). Any saver with
        ``delete_thread(thread_id)`` works.

        Raises:
            TypeError: for an object without ``delete_thread``.
        """
        return self._checkpoints.attach(checkpointer)

    def purge_checkpoints(self, threads: Sequence[str]) -> None:
        """Delete these threads from every checkpointer this store knows of (what a forget
        does for the threads it took turns from).

        Example:
            >>> MemoryStore().purge_checkpoints(["t1"])  # no checkpointer: nothing to do
        """
        self._purge_checkpoints([check_id(t, "thread_id") for t in threads])

    def _purge_checkpoints(self, threads: Sequence[str]) -> None:
        # the one path every forget of this store deletes checkpoints by
        self._checkpoints.purge(threads)

    def purge_checkpoints_after_run(
        self, thread_id: str, config: Mapping[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Delete a thread from every checkpointer once its run's checkpoints so far are saved.

        For the last step of a run during which its user was forgotten (the
        graph's ``update_memory``, the middleware's ``after_agent``): the
        forget deleted the thread's checkpoints, but the run goes on saving
        its state - the old messages with it. This waits (at most ``timeout``
        seconds) until the checkpoint the current step started from is saved,
        then deletes the thread (:meth:`Checkpoints.purge_after_run`).

        Example:
            >>> store = MemoryStore()
            >>> store.purge_checkpoints_after_run("t1")  # no checkpointer: nothing to do
        """
        self._checkpoints.purge_after_run(thread_id, config, timeout=timeout)

    def prune_checkpoints(self, checkpointer: Any = None, *, dry_run: bool = False) -> list[str]:
        """Delete the checkpoint threads whose memory thread is gone (forgotten or expired).

        A forget deletes its threads from every checkpointer this store knows
        of at the time; a checkpointer attached later, or one another process
        wrote to, may still hold them - and LangGraph keeps every checkpoint of
        a thread until the thread is deleted (LangGraph issue #8531). This
        deletes, from ``checkpointer`` (default: every checkpointer of the
        store, the default one included), each thread that no user of the
        memory has. Use it on checkpointers whose threads are this memory's
        threads; a run that is starting a new thread right now has no memory
        thread yet, so prune when none is.

        Returns the thread ids deleted (with ``dry_run``: that would be).

        Example:
            >>> from langchain_core.messages import HumanMessage
            >>> store = MemoryStore()
            >>> saver = store.checkpointer()
            >>> _ = store.memory("ana", "t1").add_messages([HumanMessage("hi")])
            >>> for thread in ("t1", "gone"):
            ...     _ = saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            ...                   {"v": 1, "id": thread, "ts": "", "channel_values": {},
            ...                    "channel_versions": {}, "versions_seen": {}}, {}, {})
            >>> store.prune_checkpoints()
            ['gone']
        """
        return self._checkpoints.prune(
            lambda: {thread for user in self.users() for thread in self.threads(user)},
            checkpointer,
            dry_run=dry_run,
        )

    # -- expiry ------------------------------------------------------------------------

    def sweep_expired(
        self, *, now: datetime | None = None, idle_threads: timedelta | None = None
    ) -> SweepReport:
        """Delete what has expired, as completely as a forget.

        Every record and core-fact version whose ``expires_at`` has passed
        goes from every tier, index and file (an expired fact takes the turns
        that stated it, as :meth:`TieredMemory.forget_fact` does); reads leave
        them out from the moment they expire, so the sweep only frees what no
        read returns any more. With ``idle_threads``, threads not written to
        for that long are forgotten too (:meth:`forget_thread`: log,
        summary, records and checkpoints). Safe to run from any number of
        processes at once.

        Example:
            >>> from datetime import timedelta
            >>> from langchain_tiered_memory.records import MemoryRecord, utcnow
            >>> store = MemoryStore(embeddings="none")
            >>> soon = utcnow() + timedelta(hours=1)
            >>> store.archive.add([MemoryRecord.new(user_id="ana", kind="observation",
            ...                                     text="door code 4711", expires_at=soon)])
            >>> store.archive.count("ana"), len(store.archive.records("ana"))
            (1, 1)
            >>> store.sweep_expired(now=utcnow() + timedelta(hours=2)).records
            1
            >>> store.archive.count("ana")
            0
        """
        now = utc(now) if now is not None else datetime.now(timezone.utc)
        records = facts = 0
        users = self.backend.expired_users(now)
        for user in users:
            removed, deleted = self.backend.forget_expired(user, now)
            facts += len(removed)
            records += deleted
        threads: list[tuple[str, str]] = []
        if idle_threads is not None:
            if idle_threads <= timedelta(0):
                raise ValueError(f"idle_threads must be positive, got {idle_threads}")
            threads = self.backend.idle_threads(now - idle_threads)
            for user, thread in threads:
                records += self.forget_thread(user, thread)
        report = SweepReport(
            records=records,
            facts=facts,
            threads=tuple(f"{u}/{t}" for u, t in threads),
            users=tuple(sorted(set(users) | {u for u, _ in threads})),
        )
        if report.records or report.facts:
            logger.info("%r swept %s", self, report)
        return report

    async def asweep_expired(
        self, *, now: datetime | None = None, idle_threads: timedelta | None = None
    ) -> SweepReport:
        """Async twin of :meth:`sweep_expired` (runs in a worker thread)."""
        return await asyncio.to_thread(self.sweep_expired, now=now, idle_threads=idle_threads)

    # -- forgetting and export ------------------------------------------------------

    def forget_user(self, user_id: str) -> int:
        """Delete a user from every tier and file; other users are untouched.

        Every open view of the user (any object, any process) drops its copy
        at its next read or write; what the user says afterwards is kept.
        The user's threads are deleted from the LangGraph checkpointers too
        (see :meth:`checkpointer` and :meth:`attach_checkpointer`). Returns
        the number of archive records deleted. See
        :mod:`langchain_tiered_memory.storage.sql.backend` for exactly what
        is removed.

        Crash-safe: the forget is written down (with the threads to purge) in
        the transaction that deletes the rows, and closed once the indexes,
        caches, write-ahead log and checkpoints are purged. A process killed
        before that is finished by the next open of the store, by a retry of
        this call, and - for checkpointers the killed process had attached -
        by :meth:`attach_checkpointer` (see
        :mod:`langchain_tiered_memory.storage.sql.forgets`).
        """
        user_id = check_id(user_id, "user_id")
        deleted = self.backend.forget_user(user_id, purge=self._purge_checkpoints)
        self.backend.finish_forgets(self._purge_checkpoints, user_id=user_id)  # a crash's
        return deleted

    def forget_thread(self, user_id: str, thread_id: str) -> int:
        """Delete one thread: its turns (log and archive), summary, head and checkpoints.

        Returns the number of archive records deleted.
        """
        user_id, thread_id = check_id(user_id, "user_id"), check_id(thread_id, "thread_id")
        deleted = self.backend.forget_thread(user_id, thread_id, purge=self._purge_checkpoints)
        self.backend.finish_forgets(self._purge_checkpoints, user_id=user_id)
        return deleted

    async def aforget_user(self, user_id: str) -> int:
        """Async twin of :meth:`forget_user` (runs in a worker thread)."""
        return await asyncio.to_thread(self.forget_user, user_id)

    async def aforget_thread(self, user_id: str, thread_id: str) -> int:
        """Async twin of :meth:`forget_thread` (runs in a worker thread)."""
        return await asyncio.to_thread(self.forget_thread, user_id, thread_id)

    def export_user(self, user_id: str) -> dict[str, Any]:
        """A user's whole memory as JSON-ready data (records, audit events, threads, core facts)."""
        return dict(self.backend.export_user(check_id(user_id, "user_id")))

    async def aexport_user(self, user_id: str) -> dict[str, Any]:
        """Async twin of :meth:`export_user` (runs in a worker thread)."""
        return await asyncio.to_thread(self.export_user, user_id)

    def flush(self) -> None:
        """Write what is kept in memory - access times, the vector index file - now,
        leaving the store open (see :func:`flush_open_stores`)."""
        with self._lock:
            if self._closed:
                return
        if isinstance(self.backend, Flushes):
            self.backend.flush()

    def close(self) -> None:
        """Flush and close everything (the embedder's cache and the default
        checkpointer too, if the store opened them); idempotent.

        A store still open when the interpreter exits normally - ``langgraph
        dev`` or any server stopped with SIGTERM, a script that ends - is
        closed then, so the vector index file is written and the next open
        need not rebuild it.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _OPEN.discard(self)
        self.backend.close()
        self._checkpoints.close()
        if self._owns_embeddings and isinstance(self.embeddings, Closes):
            self.embeddings.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.backend.where!r})"


#: Stores not closed yet (see :meth:`MemoryStore.close`).
_OPEN: weakref.WeakSet[MemoryStore] = weakref.WeakSet()


def flush_open_stores() -> None:
    """Flush every store of this process that is still open (:meth:`MemoryStore.flush`).

    For a server's shutdown hook: ``langgraph dev`` (uvicorn) ends with the
    signal it was stopped by, so exit handlers never run; the shipped
    ``graphs/webapp.py`` calls this from the server's lifespan instead.

    Example:
        >>> flush_open_stores()  # nothing open, nothing to do
    """
    for store in list(_OPEN):
        try:
            store.flush()
        except Exception:  # one failing store must not keep the others unflushed
            logger.exception("flushing %r failed", store)


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        try:
            store.close()
        except Exception:  # at exit: log and go on with the others
            logger.exception("closing %r at exit failed", store)


def _protocol_members(protocol: type) -> set[str]:
    """The methods and attributes a protocol class asks for (its bases' too)."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if getattr(cls, "_is_protocol", False) and cls is not Protocol:
            names |= {n for n in vars(cls) if not n.startswith("_")}
            names |= {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}
    return names


def _check_backend(
    backend: object,
    path: object,
    embeddings: object,
    vector_store: object,
    options: dict[str, Any],
) -> None:
    """Refuse a ``backend=`` that is not a backend, or arguments that would build another."""
    given = [
        name
        for name, value in (("a path", path), ("vector_store", vector_store))
        if value is not None
    ] + sorted(options)
    if given:
        raise ValueError(
            f"backend= is the whole backend; {', '.join(given)} would build another (pass "
            "them to the backend you built)"
        )
    if embeddings is not None and not isinstance(embeddings, Embeddings):
        raise ValueError(
            "with backend=, embeddings= is the Embeddings object the backend embeds with (or "
            f"None), not {embeddings!r}"
        )
    missing = sorted(n for n in _protocol_members(MemoryBackend) if not hasattr(backend, n))
    if missing:
        raise TypeError(
            f"{type(backend).__name__} is not a MemoryBackend: it has no {', '.join(missing)}"
        )


def _private_store() -> MemoryStore:
    """The store of a TieredMemory made without one: in this process, keywords only."""
    return MemoryStore(embeddings=NO_EMBEDDINGS)


TieredMemory.private_store = _private_store


@dataclass(frozen=True)
class SweepReport:
    """What :meth:`MemoryStore.sweep_expired` deleted.

    Attributes:
        records: Archive records deleted (expired ones, and those of expired facts,
            stating turns, summaries and idle threads).
        facts: Core-fact versions deleted.
        threads: Idle threads forgotten, as ``"user/thread"``.
        users: The users something was deleted of.
    """

    records: int = 0
    facts: int = 0
    threads: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
