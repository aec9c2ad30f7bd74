"""LangGraph checkpoint upkeep for a store: its own checkpointer, the attached ones, and the
threads a forget deletes from them.

A store's memory threads are LangGraph's checkpoint threads (the graph, the
middleware and the pre-model hook use one id for both), so a forget of a user
or thread deletes its checkpoints too - from every checkpointer the store knows
of, whichever process wrote them - and a forget a crash interrupted is finished
on the checkpointers attached later. :class:`~langchain_tiered_memory.store.MemoryStore`
owns one :class:`Checkpoints` and exposes it through its methods
(``checkpointer()``, ``attach_checkpointer()``, ``purge_checkpoints()``,
``prune_checkpoints()``...).

Example:
    >>> from langchain_tiered_memory.storage import open_backend
    >>> keeper = Checkpoints(open_backend(None, embeddings=None), path=None)
    >>> keeper.default().__class__.__name__
    'InMemorySaver'
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_tiered_memory.ids import check_id
from langchain_tiered_memory.storage.base import BackendCheckpoints, MemoryBackend
from langchain_tiered_memory.storage.sqlite.db import storage_error

logger = logging.getLogger(__name__)

__all__ = ["CHECKPOINTS_FILE", "Checkpoints", "DeletesThreads"]

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


class Checkpoints:
    """The LangGraph checkpointers of one store, and their upkeep.

    Args:
        backend: The store's backend (its forgets, and Postgres's own savers).
        path: The store's data directory (``None``: in memory or Postgres).
    """

    def __init__(self, backend: MemoryBackend, path: Path | None) -> None:
        self.backend = backend
        self.path = path
        self.where = backend.where
        self._checkpointers: list[Any] = []
        self._default_checkpointer: Any = None
        self._lock = threading.Lock()

    def default(self) -> Any:
        """The default checkpointer (see :meth:`MemoryStore.checkpointer`)."""
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

    async def adefault(self) -> Any:
        """The async checkpointer, Postgres only (see :meth:`MemoryStore.acheckpointer`).

        Raises:
            TypeError: for a SQLite or in-memory store (use
                :meth:`checkpointer` with ``invoke``, or attach an async saver
                of your own with :meth:`attach_checkpointer`).
        """
        if not isinstance(self.backend, BackendCheckpoints):
            raise TypeError(
                f"the store {self.where} has no async checkpointer (Postgres stores have "
                "one); attach your own async saver with store.attach_checkpointer(saver)"
            )
        self.default()  # the tables, and the saver forgets go through
        return await self.backend.acheckpointer()

    def attach(self, checkpointer: Any) -> Any:
        """Add a checkpointer forgets reach (see :meth:`MemoryStore.attach_checkpointer`)."""
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
            default = self.default()  # Postgres: another worker's checkpoints
        if default is not None and all(s is not default for s in savers):
            savers.append(default)
        try:
            yield savers
        finally:
            if own_file is not None:
                own_file.conn.close()

    def purge_ids(self, threads: Sequence[str]) -> None:
        """Delete these threads from every checkpointer this store knows of (what a forget
        does for the threads it took turns from).
        """
        self.purge([check_id(t, "thread_id") for t in threads])

    def purge(self, threads: Sequence[str]) -> None:
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

    def purge_after_run(
        self, thread_id: str, config: Mapping[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Delete a thread once its run's checkpoints are saved (see
        :meth:`MemoryStore.purge_checkpoints_after_run`)."""
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
        self.purge([thread_id])

    def prune(
        self, known: Callable[[], set[str]], checkpointer: Any = None, *, dry_run: bool = False
    ) -> list[str]:
        """Delete threads no memory has (see :meth:`MemoryStore.prune_checkpoints`); ``known``
        gives the threads the memory has."""
        if checkpointer is not None:
            savers = [checkpointer]
        else:
            self.default()
            with self._lock:
                savers = [self._default_checkpointer, *self._checkpointers]
            savers = list({id(s): s for s in savers if s is not None}.values())
        kept = known()
        pruned: list[str] = []
        for saver in savers:
            gone = sorted(_checkpoint_threads(saver) - kept)
            if not dry_run:
                for thread in gone:
                    saver.delete_thread(thread)
                if gone:
                    _truncate_wal(saver)
            pruned += [t for t in gone if t not in pruned]
        if pruned:
            logger.info(
                "%s: pruned the checkpoints of %d threads without memory", self.where, len(pruned)
            )
        return pruned

    def close(self) -> None:
        """Close the default checkpointer's file, if this keeper opened one."""
        with self._lock:
            default, self._default_checkpointer = self._default_checkpointer, None
        conn = _sqlite_connection(default)
        if conn is not None:
            conn.close()


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
            with saver.lock:  # the connection is the saver's (see _truncate_wal)
                rows = conn.execute("PRAGMA database_list").fetchall()
            for _seq, name, file in rows:
                if name == "main" and file:
                    return str(file)
        except sqlite3.Error:
            pass
    return type(saver).__name__


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
    """After deleting threads from a ``SqliteSaver``: overwrite its write-ahead log too.

    Under the saver's lock, and read to the end: the saver's connection is
    shared with the run that saves checkpoints (in LangGraph's background
    thread), and a statement still in progress on it makes that run's commit
    fail ("cannot commit transaction - SQL statements in progress").
    """
    conn = _sqlite_connection(saver)
    if conn is not None:
        with saver.lock:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


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
