"""Find the caller's memory from a run's config or runtime context.

LangGraph passes ``thread_id`` in ``config["configurable"]``; applications add
``user_id`` there or in the runtime ``context`` (``create_agent(...,
context_schema=...)``). :class:`MemoryResolver` turns those into one cached
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
    >>> store.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.store import MemoryStore

__all__ = ["DEFAULT_THREAD", "DEFAULT_USER", "MemoryResolver", "ids_from"]

DEFAULT_USER = "default"
DEFAULT_THREAD = "default"


def _lookup(source: Any, key: str) -> str | None:
    if source is None:
        return None
    value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
    return str(value) if value not in (None, "") else None


def ids_from(
    config: Mapping[str, Any] | None = None, context: Any = None
) -> tuple[str | None, str | None]:
    """``(user_id, thread_id)`` from a run's runtime context and config (``None`` if absent).

    The runtime context wins over ``config["configurable"]``.

    Example:
        >>> ids_from({"configurable": {"thread_id": "t9"}}, {"user_id": "ana"})
        ('ana', 't9')
    """
    configurable = (config or {}).get("configurable") or {}
    user = _lookup(context, "user_id") or _lookup(configurable, "user_id")
    thread = _lookup(context, "thread_id") or _lookup(configurable, "thread_id")
    return user, thread


class MemoryResolver:
    """One :class:`TieredMemory` per (user, thread), opened on demand (thread-safe).

    Args:
        source: A :class:`~langchain_tiered_memory.store.MemoryStore`, or a
            callable ``(user_id, thread_id) -> TieredMemory``.
        require_user: Raise when a run names no user (instead of using
            ``"default"``); recommended for multi-user apps.
        **memory_kwargs: Passed to ``store.memory(...)`` (budget, model, ...).
    """

    def __init__(
        self,
        source: MemoryStore | Callable[[str, str], TieredMemory],
        *,
        require_user: bool = False,
        **memory_kwargs: Any,
    ) -> None:
        self.source = source
        self.require_user = require_user
        self.memory_kwargs = memory_kwargs
        self._cache: dict[tuple[str, str], TieredMemory] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str, thread_id: str) -> TieredMemory:
        """The memory of ``user_id``'s thread ``thread_id``."""
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

    def for_config(
        self, config: Mapping[str, Any] | None = None, context: Any = None
    ) -> TieredMemory:
        """The memory named by a run's config / runtime context.

        Raises:
            ValueError: when ``require_user`` is set and no ``user_id`` is given.
        """
        user, thread = ids_from(config, context)
        if user is None:
            if self.require_user:
                raise ValueError(
                    "No user_id for this run: pass config={'configurable': {'user_id': ..., "
                    "'thread_id': ...}} or a runtime context with user_id."
                )
            user = DEFAULT_USER
        return self.get(user, thread or DEFAULT_THREAD)

    def forget(self, user_id: str) -> None:
        """Drop cached memories of ``user_id`` (after the user was forgotten)."""
        with self._lock:
            for key in [k for k in self._cache if k[0] == user_id]:
                del self._cache[key]
