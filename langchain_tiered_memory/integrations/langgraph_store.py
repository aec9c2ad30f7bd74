"""A LangGraph ``BaseStore`` over our memory: :class:`TieredMemoryStore`.

LangGraph users keep long-term memory in a ``BaseStore`` (``create_agent(store=...)``,
``InjectedStore`` tools, langmem's ``create_manage_memory_tool`` /
``create_search_memory_tool``, the platform's store API). Handing them a
``TieredMemoryStore`` puts those memories in our archive: each item is a record
of its user (found in the namespace), searched with hybrid recall (dense +
keyword, with recency and importance), isolated per user, deleted by
``forget_user`` with everything else of the user - and recalled by the
memory's own recall too.

* ``put(namespace, key, value)`` stores (or replaces) one record; its text is
  the value's ``index`` fields, else its ``"content"`` if that is a string,
  else the value as JSON. ``index=False`` keeps it out of search by query.
* ``get`` / ``delete`` by namespace and key; ``search(prefix, query=...)``
  ranks with the memory's recall, ``filter=`` matches value fields (equality
  or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``); without a query
  items come newest first.
* The user is ``namespace[user_index]`` (default ``-1``: langmem's
  ``("memories", "{langgraph_user_id}")``; use ``0`` for
  ``(user_id, "memories")``). A namespace without one is an error.
* TTLs are not supported (``supports_ttl`` is False).
* A namespace, key or value holding a lone UTF-16 surrogate or a NUL is a
  ``ValueError`` before anything is read or written
  (:func:`~langchain_tiered_memory.ids.check_text`).

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> memory = MemoryStore(embeddings=DeterministicFakeEmbedding(size=16))
    >>> store = TieredMemoryStore(memory)
    >>> store.put(("memories", "ana"), "m1", {"content": "Ana likes jazz"})
    >>> store.get(("memories", "ana"), "m1").value
    {'content': 'Ana likes jazz'}
    >>> [i.key for i in store.search(("memories", "ana"), query="jazz")]
    ['m1']
    >>> store.search(("memories", "bob"), query="jazz")
    []
    >>> _ = memory.forget_user("ana"); store.get(("memories", "ana"), "m1") is None
    True
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langchain_tiered_memory.ids import check_id, check_text
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.turns import clean_text

__all__ = ["TieredMemoryStore", "item_record_id"]

logger = logging.getLogger(__name__)

_META = "langgraph_item"


def item_record_id(namespace: Sequence[str], key: str) -> str:
    """The archive id of a store item (unique for every namespace and key).

    Example:
        >>> item_record_id(("memories", "ana"), "m1")
        'lg:["memories","ana","m1"]'
    """
    return "lg:" + json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))


def _text(value: Mapping[str, Any], index: Sequence[str] | bool | None) -> str:
    if index is False:
        return ""
    if index is not None and not isinstance(index, bool):
        parts = [value.get(field) for field in index]
        return "\n".join(p if isinstance(p, str) else json.dumps(p) for p in parts if p is not None)
    content = value.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(dict(value), ensure_ascii=False, default=str)


_OPS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes a store filter (equality or ``{"$op": x}`` per field)."""
    for field, want in (flt or {}).items():
        got = value.get(field)
        if isinstance(want, Mapping) and want and all(k in _OPS for k in want):
            if not all(_OPS[op](got, arg) for op, arg in want.items()):
                return False
        elif got != want:
            return False
    return True


class TieredMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items live in a :class:`MemoryStore`'s archive.

    Args:
        memory: The store the items go to (and are forgotten with).
        user_index: Which element of a namespace is the user id (default: the
            last one).
    """

    supports_ttl = False

    def __init__(self, memory: MemoryStore, *, user_index: int = -1) -> None:
        self.memory = memory
        self.user_index = user_index

    # -- the mapping --------------------------------------------------------------

    def _user(self, namespace: Sequence[str]) -> str:
        try:
            raw = namespace[self.user_index]
        except IndexError:
            raise ValueError(
                f"namespace {tuple(namespace)!r} has no user id at index {self.user_index}; "
                "every item belongs to one user (see TieredMemoryStore(user_index=...))"
            ) from None
        return check_id(raw, "the namespace's user id")

    @staticmethod
    def _check_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
        if not isinstance(namespace, tuple) or not all(isinstance(p, str) and p for p in namespace):
            raise ValueError(f"a namespace is a tuple of non-empty strings, got {namespace!r}")
        return namespace

    @staticmethod
    def _check_key(namespace: tuple[str, ...], key: str) -> None:
        """Refuse a namespace or key no backend can store (before anything is read)."""
        for part in namespace:
            check_text(part, f"namespace {namespace!r}")
        check_text(key, "the item's key")

    def _records(self, user: str) -> list[MemoryRecord]:
        return [
            r
            for r in self.memory.archive.records(user, kinds="observation")
            if isinstance(r.metadata.get(_META), Mapping)
        ]

    @staticmethod
    def _namespace_of(record: MemoryRecord) -> tuple[str, ...]:
        return tuple(record.metadata[_META]["namespace"])

    @staticmethod
    def _item(record: MemoryRecord, score: float | None = None, *, search: bool = False) -> Any:
        meta = record.metadata[_META]
        updated = datetime.fromisoformat(meta.get("updated_at") or record.created_at.isoformat())
        fields = {
            "namespace": tuple(meta["namespace"]),
            "key": meta["key"],
            "value": dict(meta["value"]),
            "created_at": record.created_at,
            "updated_at": updated,
        }
        return SearchItem(**fields, score=score) if search else Item(**fields)

    # -- the operations -----------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        namespace = self._check_namespace(op.namespace)
        user = self._user(namespace)
        self._check_key(namespace, op.key)
        found = self.memory.archive.get([item_record_id(namespace, op.key)], user_id=user)
        return self._item(found[0]) if found else None

    def _put(self, op: PutOp) -> None:
        namespace = self._check_namespace(op.namespace)
        user = self._user(namespace)
        self._check_key(namespace, op.key)
        if op.value is not None:  # checked before the old version is read or replaced
            check_text(_text(op.value, op.index), "the item's text")
            check_text(json.dumps(op.value, ensure_ascii=False, default=str), "the item's value")
        record_id = item_record_id(namespace, op.key)
        if op.value is None:
            self.memory.archive.delete([record_id], user_id=user)
            return
        if op.ttl is not None:
            raise NotImplementedError("TieredMemoryStore does not support TTLs")
        value = dict(op.value)
        now = datetime.now(timezone.utc)
        current = self.memory.archive.get([record_id], user_id=user)
        meta = {
            _META: {
                "namespace": list(namespace),
                "key": op.key,
                "value": value,
                "updated_at": now.isoformat(),
            },
            "source": "langgraph_store",
            "stated": False,
        }
        text = _text(value, op.index)
        if current:
            old = current[0]
            self.memory.archive.update_record(
                MemoryRecord(
                    id=record_id,
                    user_id=user,
                    thread_id=None,
                    kind="observation",
                    text=text,
                    created_at=old.created_at,
                    importance=old.importance,
                    metadata=meta,
                )
            )
            return
        self.memory.archive.add(
            [
                MemoryRecord.new(
                    id=record_id,
                    user_id=user,
                    kind="observation",
                    text=text,
                    created_at=now,
                    metadata=meta,
                )
            ]
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = self._check_namespace(op.namespace_prefix)
        user = self._user(prefix)
        wanted = op.offset + op.limit

        def inside(record: MemoryRecord) -> bool:
            meta = record.metadata.get(_META)
            return (
                isinstance(meta, Mapping)
                and tuple(meta["namespace"][: len(prefix)]) == prefix
                and _matches(meta["value"], op.filter)
            )

        if op.query:
            from langchain_tiered_memory.recall.hybrid import Recaller

            recaller = Recaller(self.memory.archive, self.memory.embeddings, k=max(1, wanted))
            hits = recaller.recall(
                clean_text(op.query), user_id=user, kinds=["observation"], k=max(4 * wanted, 20)
            )
            found: list[tuple[MemoryRecord, float | None]] = [
                (h.record, h.score) for h in hits if inside(h.record) and h.record.text
            ]
        else:
            records = sorted(
                (r for r in self._records(user) if inside(r)),
                key=lambda r: r.metadata[_META].get("updated_at", ""),
                reverse=True,
            )
            found = [(r, None) for r in records]
        return [self._item(r, score, search=True) for r, score in found[op.offset : wanted]]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for user in self.memory.users():
            for record in self._records(user):
                namespace = self._namespace_of(record)
                if all(_fits(namespace, c) for c in op.match_conditions or ()):
                    seen.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(seen)[op.offset : op.offset + op.limit]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run store operations in order (LangGraph's ``BaseStore`` interface)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))


def _fits(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
