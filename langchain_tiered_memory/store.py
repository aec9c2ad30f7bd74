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
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

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
    BackendCheckpoints,
    Closes,
    Flushes,
    MemoryBackend,
    RecordStore,
)
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.storage.postgres.db import is_postgres_url, redact_url
from langchain_tiered_memory.storage.sqlite.db import storage_error
from langchain_tiered_memory.tiers.buffer import CompressionEvent, CompressionTriggers
from langchain_tiered_memory.tiers.core import CoreMemory
from langchain_tiered_memory.tiers.summarize import Summarizer
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.consolidation import Reflector
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

#: The default LangGraph checkpointer's file, inside a data directory.
CHECKPOINTS_FILE = "checkpoints.sqlite"

#: Where LangGraph puts the run's checkpointer in a node's config (``None``: the run has
#: none). Read only to know which checkpointer saves the run; without it, every one is.
_RUN_CHECKPOINTER = "__pregel_checkpointer"


@runtime_checkable
class DeletesThreads(Protocol):
    """A LangGraph checkpointer a store can forget threads from (every saver of LangGraph)."""

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint of the thread."""
        ...


#: ``embeddings=`` value for a store that searches by keywords only (no vectors).
NO_EMBEDDINGS = "none"


class MemoryStore:
    """Every user's durable memory, in one backend (thread- and process-safe).

    Args:
        path: The data directory (created if missing; its parent must exist),
            a ``postgresql://user:password@host/db`` URL (Postgres with
            pgvector: ``pip install 'langchain-tiered-memory[postgres]'``), or
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
        self._checkpointers: list[Any] = []
        self._default_checkpointer: Any = None
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
        extractor: Extractor | BaseChatModel | str | None = None,
        extract_every: int = 8,
        gate: GateMode = "auto",
        gate_config: GateConfig | None = None,
        recall_k: int = 5,
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
            extractor: Fact extractor: rule-based (default), a chat model or
                model string (batched ``LLMExtractor``) or any ``Extractor``.
            extract_every: Turns per LLM extraction call.
            gate: When to recall: ``"auto"``, ``"always"``, ``"never"`` or an
                ``LLMGate``.
            gate_config: Signals of the heuristic gate.
            recall_k: Records recalled per turn.
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
            reflector=reflector,
            single_system_message=single_system_message,
            attributes=attributes,
        )

    def core(self, user_id: str, thread_id: str | None = None) -> CoreMemory:
        """A view of the user's core memory (every view of the user sees the same facts)."""
        return CoreMemory(
            store=self.backend, user_id=check_id(user_id, "user_id"), thread_id=thread_id
        )

    def users(self) -> list[str]:
        """Users with a thread, a core fact or an archive record."""
        return self.backend.users()

    def threads(self, user_id: str) -> list[str]:
        """A user's thread ids."""
        return self.backend.threads(check_id(user_id, "user_id"))

    # -- LangGraph checkpoints ------------------------------------------------------

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
        with self._lock:
            if self._default_checkpointer is None:
                if isinstance(self.backend, BackendCheckpoints):  # Postgres: the same database
                    self._default_checkpointer = self.backend.checkpointer()
                elif self.path is None:
                    from langgraph.checkpoint.memory import InMemorySaver

                    self._default_checkpointer = InMemorySaver()
                else:
                    self._default_checkpointer = _sqlite_saver(self.path / CHECKPOINTS_FILE)
            return self._default_checkpointer

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
        if not isinstance(self.backend, BackendCheckpoints):
            raise TypeError(
                f"{self!r} has no async checkpointer (Postgres stores have one); attach "
                "your own async saver with store.attach_checkpointer(saver)"
            )
        self.checkpointer()  # the tables, and the saver forgets go through
        return await self.backend.acheckpointer()

    def attach_checkpointer(self, checkpointer: Any) -> Any:
        """Have forgets of this store delete threads from ``checkpointer`` too; returns it.

        ``build_memory_graph`` attaches the checkpointer it is given; attach
        the one of your own ``create_agent(checkpointer=...)`` (LangGraph
        checkpoint threads are the memory's threads). Any saver with
        ``delete_thread(thread_id)`` works.
        """
        if not isinstance(checkpointer, DeletesThreads):
            raise TypeError(
                f"{type(checkpointer).__name__} has no delete_thread(thread_id): "
                "not a LangGraph checkpointer"
            )
        with self._lock:
            new = all(c is not checkpointer for c in self._checkpointers)
            if new:
                self._checkpointers.append(checkpointer)
        if new:
            self._purge_recovered(checkpointer)
        return checkpointer

    def _purge_recovered(self, saver: Any) -> None:
        """Purge a newly attached checkpointer of the threads of forgets a crash interrupted.

        The crashed process may have had this checkpointer attached: a thread
        of such a forget holding a checkpoint from before the forget still
        holds the forgotten chat, and is deleted. (A thread whose checkpoints
        all came after the forget is a new conversation, and stays.)
        """
        for intent in self.backend.recovered_forgets():
            for thread in intent.threads:
                try:
                    if _checkpointed_before(saver, thread, intent.at):
                        saver.delete_thread(thread)
                        logger.warning(
                            "deleted thread %s of a forget interrupted at %s from %s",
                            thread,
                            intent.at.isoformat(),
                            type(saver).__name__,
                        )
                except Exception:  # an unusable saver must not stop the others
                    logger.exception("purging thread %s from %r failed", thread, saver)

    @contextmanager
    def _savers(self) -> Iterator[list[Any]]:
        """Every checkpointer this store knows of: the attached ones and its own (a file
        or tables another process made included)."""
        with self._lock:
            savers = list(self._checkpointers)
            default = self._default_checkpointer
        own_file = None
        if default is None and self.path is not None and (self.path / CHECKPOINTS_FILE).exists():
            default = own_file = _sqlite_saver(self.path / CHECKPOINTS_FILE)  # another process's
        if (
            default is None
            and isinstance(self.backend, BackendCheckpoints)
            and self.backend.has_checkpoints()
        ):
            default = self.checkpointer()  # Postgres: another worker's checkpoints
        if default is not None and all(s is not default for s in savers):
            savers.append(default)
        try:
            yield savers
        finally:
            if own_file is not None:
                own_file.conn.close()

    def purge_checkpoints(self, threads: Sequence[str]) -> None:
        """Delete these threads from every checkpointer this store knows of (what a forget
        does for the threads it took turns from).

        Example:
            >>> MemoryStore().purge_checkpoints(["t1"])  # no checkpointer: nothing to do
        """
        self._purge_checkpoints([check_id(t, "thread_id") for t in threads])

    def _purge_checkpoints(self, threads: Sequence[str]) -> None:
        """Delete these threads from every checkpointer this store knows of."""
        if not threads:
            return
        with self._savers() as savers:
            for saver in savers:
                try:
                    for thread in threads:
                        saver.delete_thread(thread)
                    _truncate_wal(saver)
                except sqlite3.Error as exc:
                    where = _saver_file(saver)
                    raise storage_error(exc, where, "deleting checkpoints from") from exc

    def purge_checkpoints_after_run(
        self, thread_id: str, config: Mapping[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Delete a thread from every checkpointer once its run's checkpoints so far are saved.

        For the last step of a run during which its user was forgotten (the
        graph's ``update_memory``, the middleware's ``after_agent``): the
        forget deleted the thread's checkpoints, but the run goes on saving
        its state - the old messages with it. LangGraph saves each step's
        checkpoint in the background, in order, so this waits (at most
        ``timeout`` seconds) until the checkpoint the current step started
        from - ``config["configurable"]["checkpoint_map"]``, the step's own
        config - is saved, then deletes the thread. What the step returns is
        then the run's only checkpoint: return a state without the forgotten
        messages.

        Example:
            >>> store = MemoryStore()
            >>> store.purge_checkpoints_after_run("t1")  # no checkpointer: nothing to do
        """
        thread_id = check_id(thread_id, "thread_id")
        configurable = (config or {}).get("configurable") or {}
        wanted = dict(configurable.get("checkpoint_map") or {})
        with self._savers() as savers:
            if not savers:
                return
            waiting = savers
            if _RUN_CHECKPOINTER in configurable:  # the run's own: only it saves the run
                waiting = [s for s in savers if s is configurable[_RUN_CHECKPOINTER]]
            deadline = time.monotonic() + timeout
            while wanted and waiting and time.monotonic() < deadline:
                wanted = {
                    ns: checkpoint_id
                    for ns, checkpoint_id in wanted.items()
                    if not any(_saved(s, thread_id, ns, checkpoint_id) for s in waiting)
                }
                if wanted:
                    time.sleep(0.01)
            if wanted and waiting:
                logger.warning(
                    "checkpoints %s of thread %s were not saved within %.0f s; deleting the "
                    "thread now (durability='exit' saves none before the run ends)",
                    sorted(wanted.values()),
                    thread_id,
                    timeout,
                )
        self._purge_checkpoints([thread_id])

    def prune_checkpoints(self, checkpointer: Any = None, *, dry_run: bool = False) -> list[str]:
        """Delete the checkpoint threads whose memory thread is gone (forgotten or expired).

        A forget deletes its threads from every checkpointer this store knows
        of at the time; a checkpointer attached later, or one another process
        wrote to, may still hold them - and LangGraph keeps every checkpoint of
        a thread until the thread is deleted (LangGraph issue #8531). This
        deletes, from ``checkpointer`` (default: every checkpointer of the
        store, the default one included), each thread that no user of the
        memory has. Use it on checkpointers whose threads are this memory's
        threads (as the graph, the middleware and the store's own
        :meth:`checkpointer` keep them); a run that is starting a new thread
        right now has no memory thread yet, so prune when none is.

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
        if checkpointer is not None:
            savers = [checkpointer]
        else:
            self.checkpointer()
            with self._lock:
                savers = [self._default_checkpointer, *self._checkpointers]
            savers = list({id(s): s for s in savers if s is not None}.values())
        known = {thread for user in self.users() for thread in self.threads(user)}
        pruned: list[str] = []
        for saver in savers:
            gone = sorted(_checkpoint_threads(saver) - known)
            if not dry_run:
                for thread in gone:
                    saver.delete_thread(thread)
                if gone:
                    _truncate_wal(saver)
            pruned += [t for t in gone if t not in pruned]
        if pruned:
            logger.info("%s checkpoints of %d threads without memory", self, len(pruned))
        return pruned

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
        with self._lock:
            default, self._default_checkpointer = self._default_checkpointer, None
        conn = _sqlite_connection(default)
        if conn is not None:
            conn.close()
        if self._owns_embeddings and isinstance(self.embeddings, Closes):
            self.embeddings.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.backend.where!r})"


def _saved(saver: Any, thread_id: str, ns: str, checkpoint_id: str) -> bool:
    """Whether ``saver`` holds this checkpoint of ``thread_id``."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    config["configurable"]["checkpoint_id"] = checkpoint_id
    try:
        return saver.get_tuple(config) is not None
    except Exception:  # noqa: BLE001 - a saver that cannot tell has not saved it
        return False


def _checkpointed_before(saver: Any, thread_id: str, at: datetime) -> bool:
    """Whether ``saver`` holds a checkpoint of ``thread_id`` written before ``at``."""
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        ts = (item.checkpoint or {}).get("ts")
        try:
            written = datetime.fromisoformat(str(ts))
        except ValueError:
            return True  # unknown age: it may be from before the forget
        if written.tzinfo is None:
            written = written.replace(tzinfo=timezone.utc)
        if written < at:
            return True
    return False


def _saver_file(saver: Any) -> str:
    """The file a SQLite checkpointer writes (for messages), else its class name."""
    conn = _sqlite_connection(saver)
    if conn is not None:
        try:
            for _seq, name, file in conn.execute("PRAGMA database_list").fetchall():
                if name == "main" and file:
                    return str(file)
        except sqlite3.Error:
            pass
    return type(saver).__name__


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


def _checkpoint_threads(saver: Any) -> set[str]:
    """Every thread id a LangGraph checkpointer holds."""
    from langgraph.checkpoint.memory import InMemorySaver

    conn = _sqlite_connection(saver)
    if conn is not None:  # SqliteSaver: one query, not every checkpoint
        with saver.lock:
            rows = conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        return {str(r[0]) for r in rows}
    if isinstance(saver, InMemorySaver):
        return {str(t) for t in saver.storage}
    return {
        str(c.config["configurable"]["thread_id"])
        for c in saver.list(None)
        if c.config.get("configurable", {}).get("thread_id") is not None
    }


def _sqlite_connection(saver: Any) -> sqlite3.Connection | None:
    """The connection of LangGraph's ``SqliteSaver`` (``None`` for any other checkpointer)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    return saver.conn if isinstance(saver, SqliteSaver) else None


def _truncate_wal(saver: Any) -> None:
    """After deleting threads from a ``SqliteSaver``: overwrite its write-ahead log too."""
    conn = _sqlite_connection(saver)
    if conn is not None:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _sqlite_saver(path: Path) -> Any:
    """A LangGraph ``SqliteSaver`` on ``path`` whose deletes overwrite the freed bytes."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise storage_error(exc, path, "opening") from exc
    return SqliteSaver(conn)
