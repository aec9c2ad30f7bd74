"""Find the caller's memory from a run's config or runtime context.

LangGraph passes ``thread_id`` in ``config["configurable"]``; applications add
``user_id`` there or in the runtime ``context`` (``create_agent(...,
context_schema=...)``). :class:`MemoryResolver` turns those - by the one rule
of :mod:`langchain_tiered_memory.integrations.identity` - into one cached
:class:`~langchain_tiered_memory.memory.TieredMemory` per (user, thread), so
one graph, middleware or tool serves many users without mixing them up.

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> resolve = MemoryResolver(store, context_window=4096)
    >>> a = resolve.for_config({"configurable": {"user_id": "ana", "thread_id": "t1"}})
    >>> b = resolve.for_config({"configurable": {"user_id": "bob", "thread_id": "t1"}})
    >>> (a.user_id, b.user_id), a is resolve.get("ana", "t1")
    (('ana', 'bob'), True)
    >>> resolve.for_config({"configurable": {"thread_id": "t1"}})
    Traceback (most recent call last):
    ...
    langchain_tiered_memory.integrations.identity.IdentityError: No user id for this run: ...
    >>> store.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_tiered_memory.integrations.identity import (
    DEFAULT_THREAD,
    Identity,
    check_default_user,
    given_id,
    resolve_identity,
)

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.store import MemoryStore

__all__ = ["DEFAULT_THREAD", "MemoryResolver"]

_NOT_GIVEN: Any = object()


class MemoryResolver:
    """One :class:`TieredMemory` per (user, thread), opened on demand (thread-safe).

    Args:
        source: A :class:`~langchain_tiered_memory.store.MemoryStore`, or a
            callable ``(user_id, thread_id) -> TieredMemory``.
        default_user_id: The user of runs that name none. Without it (the
            default) such a run is an error: two apps, or two users, never
            share a ``"default"`` memory by accident.
        **memory_kwargs: Passed to ``store.memory(...)`` (budget, model, ...).

    Raises:
        TypeError: for a ``default_user_id`` that is not a string, memory
            options with a callable source, or the removed ``require_user=``
            argument.
    """

    def __init__(
        self,
        source: MemoryStore | Callable[[str, str], TieredMemory],
        *,
        default_user_id: str | None = None,
        **memory_kwargs: Any,
    ) -> None:
        if "require_user" in memory_kwargs:
            raise TypeError(
                "require_user= was removed: a run without a user id is now always an error. "
                "Pass default_user_id='<user id>' to let such runs share one user's memory."
            )
        if memory_kwargs and not hasattr(source, "memory"):
            raise TypeError(
                f"Memory options {sorted(memory_kwargs)} apply to a MemoryStore source; a "
                "callable source builds each memory itself, so configure it there."
            )
        self.source = source
        self.default_user_id = check_default_user(default_user_id)
        self.memory_kwargs = memory_kwargs
        self._cache: dict[tuple[str, str], TieredMemory] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str, thread_id: str = DEFAULT_THREAD) -> TieredMemory:
        """The memory of ``user_id``'s thread ``thread_id``.

        Raises:
            TypeError: for ids that are not strings.
            ValueError: for empty ids.
        """
        for name, value in (("user_id", user_id), ("thread_id", thread_id)):
            if given_id(value, name) is None:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        key = (user_id, thread_id)
        with self._lock:
            memory = self._cache.get(key)
            if memory is None:
                if callable(self.source) and not hasattr(self.source, "memory"):
                    memory = self.source(user_id, thread_id)
                else:
                    memory = self.source.memory(user_id, thread_id, **self.memory_kwargs)
                self._cache[key] = memory
            return memory

    def identity(
        self, config: Mapping[str, Any] | None = None, context: Any = _NOT_GIVEN
    ) -> Identity:
        """The run's (user, thread) by the one identity rule
        (:func:`~langchain_tiered_memory.integrations.identity.resolve_identity`).

        ``context`` omitted: the current LangGraph runtime's context.
        """
        if context is _NOT_GIVEN:
            return resolve_identity(config, default_user_id=self.default_user_id)
        return resolve_identity(config, context, default_user_id=self.default_user_id)

    def for_config(
        self, config: Mapping[str, Any] | None = None, context: Any = _NOT_GIVEN
    ) -> TieredMemory:
        """The memory named by a run's config / runtime context.

        Raises:
            IdentityError: when the run names no user (and there is no
                ``default_user_id``) or names two different ones.
            TypeError: for ids that are not strings.
        """
        who = self.identity(config, context)
        return self.get(who.user_id, who.thread_id)

    def forget(self, user_id: str) -> None:
        """Drop cached memories of ``user_id`` (after the user was forgotten)."""
        with self._lock:
            for key in [k for k in self._cache if k[0] == user_id]:
                del self._cache[key]
