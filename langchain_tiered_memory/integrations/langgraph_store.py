"""A LangGraph ``BaseStore`` over our memory: :class:`TieredMemoryStore`.

LangGraph users keep long-term memory in a ``BaseStore`` (``create_agent(store=...)``,
``InjectedStore`` tools, langmem's ``create_manage_memory_tool`` /
``create_search_memory_tool``, the platform's store API). Handing them a
``TieredMemoryStore`` puts those memories in our archive: each item is a record
of its user (found in the namespace), searched with the archive's dense and
keyword indexes, isolated per namespace, deleted by ``forget_user`` with
everything else of the user - and recalled by the memory's own recall too.

* ``put(namespace, key, value, ttl=...)`` stores (or replaces, in one write: a racing
  delete never fails it) one record;
  its text is the value's index fields (the put's ``index=[...]``, else the
  store's ``index={"fields": [...]}``; one vector per text found, the best
  one scoring), else its ``"content"`` if that is a string, else the value
  as JSON. ``index=False`` keeps it out of ranking
  by query (it comes after the ranked items, with score ``None``).
* ``get`` / ``delete`` by namespace and key. ``search(prefix, query=...,
  filter=...)`` finds the items under a namespace prefix of any depth: with a
  query they are ranked by an absolute score (the cosine similarity of the
  query and the item, or for a keyword match a BM25-based score in 0-1 when
  that is higher), so a lone hit scores what it matches, never 0 by
  construction; without one, newest first. ``filter=`` matches value fields
  (equality, nested dicts, dotted paths, or ``$eq``, ``$ne``, ``$gt``,
  ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``).
* ``list_namespaces(prefix=, suffix=, max_depth=)``, ``*`` wildcards included.
* **TTL** as LangGraph defines it (``supports_ttl`` is True): ``ttl=`` minutes
  per put, or ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
  ``sweep_interval_minutes``). An item's expiry is its record's
  ``expires_at``: no read returns an expired item (``omit_expired`` always
  holds), reads refresh the expiry of what they return unless
  ``refresh_ttl=False``, and :meth:`TieredMemoryStore.sweep_ttl` (or the
  sweeper thread of :meth:`~TieredMemoryStore.start_ttl_sweeper`) deletes
  what expired as a forget would (see
  :meth:`~langchain_tiered_memory.store.MemoryStore.sweep_expired`).
* **Whose memory**: the user is ``namespace[user_index]`` (default ``1``:
  langmem's ``("memories", "{langgraph_user_id}")`` and
  ``("org", "{user_id}", "memories")``; ``0`` for ``(user_id, "memories")``).
  The identity rule names users by id alone, so an item belongs to the
  memory of the user its namespace names: the graph's recall for that user
  sees it and forgetting the user deletes it, in every namespace. A namespace
  too short to name a user is an error. A search or listing whose prefix
  stops before the user position looks through every user's items (its cost
  grows with the number of users); so does every search with a negative
  ``user_index``, since a prefix cannot say which element is last.
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
    >>> store.put(("org1", "ana", "notes"), "n1", {"content": "Ana's flight is on May 3"})
    >>> [i.key for i in store.search(("org1",), query="flight")]
    ['n1']
    >>> _ = memory.forget_user("ana"); store.get(("memories", "ana"), "m1") is None
    True
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import logging
import math
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path

from langchain_tiered_memory.ids import check_id, check_text
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.values.turns import clean_text

__all__ = ["TieredMemoryStore", "item_record_id", "matches_filter"]

logger = logging.getLogger(__name__)

_META = "langgraph_item"


def item_record_id(namespace: Sequence[str], key: str) -> str:
    """The archive id of a store item (unique for every namespace and key).

    Example:
        >>> item_record_id(("memories", "ana"), "m1")
        'lg:["memories","ana","m1"]'
    """
    return "lg:" + json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))


def _texts(value: Mapping[str, Any], fields: Sequence[str] | None) -> list[str]:
    """The texts an item is indexed by: one per value found at each field path
    (LangGraph's paths: ``"a.b"``, ``"a[*].b"``, ``"$"`` for the whole value), or
    without fields its ``"content"`` if that is a string, else the value as JSON."""
    if fields is not None:
        return [text for field in fields for text in get_text_at_path(value, field) if text]
    content = value.get("content")
    if isinstance(content, str):
        return [content]
    return [json.dumps(dict(value), ensure_ascii=False, default=str)]


def _encode_vectors(vectors: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).decode("ascii")


def _decode_vectors(text: str, dim: int) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").reshape(-1, dim)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms), dtype=np.float32)


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_index(index: Any) -> list[str] | bool | None:
    """A put's ``index``: ``None`` (the store's fields), ``False``, or field paths."""
    if index is None or index is False:
        return index
    if isinstance(index, (list, tuple)) and all(isinstance(f, str) and f for f in index):
        return list(index)
    raise TypeError(f"index is False, None or a list of field paths (strings), got {index!r}")


# -- filters --------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _ordered(got: Any, want: Any, test: Any) -> bool:
    a, b = _number(got), _number(want)
    if a is not None and b is not None:
        return bool(test(a, b))
    if isinstance(got, str) and isinstance(want, str):
        return bool(test(got, want))
    return False  # missing, or values that have no order between them


_OPS: dict[str, Any] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: _ordered(a, b, lambda x, y: x > y),
    "$gte": lambda a, b: _ordered(a, b, lambda x, y: x >= y),
    "$lt": lambda a, b: _ordered(a, b, lambda x, y: x < y),
    "$lte": lambda a, b: _ordered(a, b, lambda x, y: x <= y),
    "$in": lambda a, b: isinstance(b, (list, tuple)) and a in b,
    "$nin": lambda a, b: isinstance(b, (list, tuple)) and a not in b,
}


def _lookup(value: Any, field: str) -> tuple[bool, Any]:
    """``(found, value)`` of a field: the literal key, else a dotted path into dicts."""
    if isinstance(value, Mapping) and field in value:
        return True, value[field]
    current = value
    for part in field.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if want and all(isinstance(k, str) and k.startswith("$") for k in want):
            unknown = [k for k in want if k not in _OPS]
            if unknown:
                raise ValueError(
                    f"unknown filter operator(s) {unknown}; use some of {sorted(_OPS)}"
                )
            return all(_OPS[op](got, arg) for op, arg in want.items())
        return isinstance(got, Mapping) and all(_same(got.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(want)
            and all(_same(g, w) for g, w in zip(got, want, strict=True))
        )
    if isinstance(want, float) and math.isnan(want):
        return False
    return bool(got == want)


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph store filter.

    Each filter field (a key, or a dotted path into nested dicts) must equal
    the given value (dicts and lists compared element by element) or pass
    every ``{"$op": x}`` given; ``$gt``/``$gte``/``$lt``/``$lte`` compare
    numbers with numbers and strings with strings, and a missing field
    passes only ``$ne`` and ``$nin``.

    Raises:
        ValueError: for an unknown ``$`` operator.

    Example:
        >>> item = {"kind": "pet", "rank": 5, "owner": {"name": "ana"}}
        >>> matches_filter(item, {"kind": "pet", "rank": {"$gte": 3, "$lt": 9}})
        True
        >>> matches_filter(item, {"owner.name": "ana"})
        True
        >>> matches_filter(item, {"rank": {"$in": [1, 2]}})
        False
    """
    for field, want in (flt or {}).items():
        found, got = _lookup(value, field)
        if not found and not (isinstance(want, Mapping) and set(want) <= {"$ne", "$nin"} and want):
            return False
        if not _same(got, want):
            return False
    return True


def _fits(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


# -- the store --------------------------------------------------------------------------


class TieredMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items live in a :class:`MemoryStore`'s archive.

    Args:
        memory: The store the items go to (and are forgotten with).
        user_index: Which element of a namespace is the user id (default 1).
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for puts that
            give none, ``refresh_on_read`` (default True), ``sweep_interval_minutes``
            for :meth:`start_ttl_sweeper`.
        index: LangGraph's ``IndexConfig``, of which ``fields`` is read: the
            field paths every item is indexed by (a put's ``index=[...]``
            overrides them), one vector per text found, an item scoring its
            best field's similarity. The items are embedded with the memory's
            embeddings, so ``embed`` and ``dims`` are not taken.

    Raises:
        ValueError: for a non-positive ``default_ttl`` or ``sweep_interval_minutes``,
            or an ``index`` with ``embed``/``dims`` or with fields that are not a
            list of strings.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: MemoryStore,
        *,
        user_index: int = 1,
        ttl: TTLConfig | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        self.memory = memory
        self.user_index = user_index
        self.ttl_config: TTLConfig | None = dict(ttl) if ttl else None  # type: ignore[assignment]
        self.index_config: IndexConfig | None = dict(index) if index else None  # type: ignore[assignment]
        given = dict(index or {})
        taken = [k for k in ("embed", "dims") if given.get(k) is not None]
        if taken:
            raise ValueError(
                f"index {taken} cannot be set here: items are embedded with the memory's "
                "embeddings (MemoryStore(embeddings=...)); give only index={'fields': [...]}"
            )
        fields = given.get("fields")
        if fields is not None and not (
            isinstance(fields, (list, tuple)) and all(isinstance(f, str) and f for f in fields)
        ):
            raise ValueError(f"index['fields'] is a list of field paths, got {fields!r}")
        self.index_fields: list[str] | None = list(fields) if fields is not None else None
        for name in ("default_ttl", "sweep_interval_minutes"):
            value: Any = (ttl or {}).get(name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"ttl[{name!r}] must be a positive number of minutes, got {value}")
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()
        self._async_locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._locks_guard = threading.Lock()

    # -- the mapping --------------------------------------------------------------

    def _user(self, namespace: tuple[str, ...]) -> str:
        try:
            raw = namespace[self.user_index]
        except IndexError:
            raise ValueError(
                f"namespace {namespace!r} has no user id at index {self.user_index}; "
                "every item belongs to one user (see TieredMemoryStore(user_index=...))"
            ) from None
        return check_id(raw, "the namespace's user id")

    def _users_under(self, prefix: tuple[str, ...]) -> list[str]:
        """The users whose items a search under ``prefix`` may find."""
        if self.user_index >= 0 and len(prefix) > self.user_index:
            user = prefix[self.user_index]
            if user != "*":  # a wildcard at the user position: every user
                return [check_id(user, "the namespace's user id")]
        return self.memory.users()

    @staticmethod
    def _check_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
        if not isinstance(namespace, (tuple, list)) or not all(
            isinstance(p, str) and p for p in namespace
        ):
            raise ValueError(f"a namespace is a tuple of non-empty strings, got {namespace!r}")
        return tuple(namespace)

    @staticmethod
    def _check_key(namespace: tuple[str, ...], key: str) -> None:
        """Refuse a namespace or key no backend can store (before anything is read)."""
        if not isinstance(key, str):
            raise TypeError(f"an item's key is a string, got {type(key).__name__}")
        for part in namespace:
            check_text(part, f"namespace {namespace!r}")
        check_text(key, "the item's key")

    def _records(self, user: str) -> list[MemoryRecord]:
        return [
            r
            for r in self.memory.archive.records(RecordFilter(user, kinds="observation"))
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

    def _refresh(self, records: Sequence[MemoryRecord], wanted: bool) -> None:
        """Push the expiry of items read with ``refresh_ttl`` back to now + their TTL."""
        if not wanted:
            return
        now = datetime.now(timezone.utc)
        for record in records:
            minutes = record.metadata[_META].get("ttl")
            if minutes is None or record.expires_at is None:
                continue
            try:
                self.memory.archive.update_record(
                    replace(record, expires_at=now + timedelta(minutes=float(minutes)))
                )
            except KeyError:  # deleted or expired meanwhile: nothing to refresh
                continue

    # -- the operations -----------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        namespace = self._check_namespace(op.namespace)
        user = self._user(namespace)
        self._check_key(namespace, op.key)
        found = self.memory.archive.get([item_record_id(namespace, op.key)], user_id=user)
        if not found:
            return None
        self._refresh(found, op.refresh_ttl)
        return self._item(found[0])

    def _fields(self, index: list[str] | bool | None) -> list[str] | None:
        """The field paths a put indexes (``None``: the default text, see :func:`_texts`)."""
        return index if isinstance(index, list) else self.index_fields

    def _put(self, op: PutOp) -> None:
        namespace = self._check_namespace(op.namespace)
        user = self._user(namespace)
        self._check_key(namespace, op.key)
        record_id = item_record_id(namespace, op.key)
        if op.value is None:
            self.memory.archive.delete([record_id], user_id=user)
            return
        if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
            raise TypeError(
                "an item's value is a dict with string keys, got "
                f"{type(op.value).__name__}; wrap it, e.g. {{'content': ...}}"
            )
        index = _check_index(op.index)
        if op.ttl is not None and not (isinstance(op.ttl, (int, float)) and op.ttl > 0):
            raise ValueError(f"ttl is a positive number of minutes or None, got {op.ttl!r}")
        value = dict(op.value)
        texts = [] if index is False else _texts(value, self._fields(index))
        text = "\n".join(texts)
        check_text(text, "the item's text")  # before anything is read or replaced
        check_text(json.dumps(value, ensure_ascii=False, default=str), "the item's value")
        now = datetime.now(timezone.utc)
        item: dict[str, Any] = {
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "updated_at": now.isoformat(),
            "ttl": op.ttl,
        }
        embeddings = self.memory.embeddings
        if len(texts) > 1 and embeddings is not None:  # one vector per field text
            vectors = _unit(np.asarray(embeddings.embed_documents(texts), dtype=np.float32))
            item["vectors"] = _encode_vectors(vectors)
            item["dim"] = int(vectors.shape[1])
        meta = {_META: item, "source": "langgraph_store", "stated": False}
        current = self.memory.archive.get([record_id], user_id=user)
        self.memory.archive.put_record(  # insert or replace: a racing delete never fails it
            MemoryRecord.new(
                id=record_id,
                user_id=user,
                kind="observation",
                text=text,
                created_at=current[0].created_at if current else now,
                metadata=meta,
                expires_at=now + timedelta(minutes=float(op.ttl)) if op.ttl is not None else None,
            )
        )

    def _candidates(self, prefix: tuple[str, ...], flt: Mapping[str, Any] | None) -> list[Any]:
        found: list[MemoryRecord] = []
        for user in self._users_under(prefix):
            for record in self._records(user):
                meta = record.metadata[_META]
                if tuple(meta["namespace"][: len(prefix)]) == prefix and matches_filter(
                    meta["value"], flt
                ):
                    found.append(record)
        return found

    def _scores(self, query: str, records: Sequence[MemoryRecord]) -> dict[str, float]:
        """Absolute scores of ``records`` for ``query``: cosine similarity (of the best
        field, for an item indexed by several), or a keyword match's
        ``bm25 / (1 + bm25)`` when that is higher."""
        scores: dict[str, float] = {}
        by_user: dict[str, int] = {}
        for record in records:
            by_user[record.user_id] = by_user.get(record.user_id, 0) + 1
        archive = self.memory.archive
        embeddings = self.memory.embeddings
        for user in by_user:
            n = max(1, archive.count(user))
            if embeddings is not None:
                for record, cosine in archive.dense_search(
                    query, RecordFilter(user, kinds="observation"), n=n
                ):
                    scores[record.id] = float(cosine)
            for record, bm25 in archive.keyword_search(
                query, RecordFilter(user, kinds="observation"), n=n
            ):
                keyword = float(bm25) / (1.0 + float(bm25)) if bm25 > 0 else 0.0
                scores[record.id] = max(scores.get(record.id, keyword), keyword)
        fielded = [r for r in records if "vectors" in r.metadata[_META]]
        if fielded and embeddings is not None:
            asked = _unit(np.asarray(embeddings.embed_query(query), dtype=np.float32))
            for record in fielded:
                meta = record.metadata[_META]
                vectors = _decode_vectors(meta["vectors"], int(meta["dim"]))
                if vectors.shape[1] != asked.shape[0]:
                    continue  # embedded by other embeddings: the record's own vector scores
                best = float(np.max(vectors @ asked))
                scores[record.id] = max(best, scores.get(record.id, best))
        return scores

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = self._check_namespace(op.namespace_prefix)
        if op.query is not None and not isinstance(op.query, str):
            raise TypeError(f"query is a string or None, got {type(op.query).__name__}")
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise TypeError(f"filter is a dict or None, got {type(op.filter).__name__}")
        _check_int("limit", op.limit, minimum=0)
        _check_int("offset", op.offset, minimum=0)
        records = self._candidates(prefix, op.filter)
        if op.query:
            scores = self._scores(clean_text(op.query), [r for r in records if r.text])
            ranked = sorted(
                records,
                key=lambda r: (
                    r.id not in scores or not r.text,
                    -scores.get(r.id, 0.0),
                    r.metadata[_META]["updated_at"],
                ),
            )
            found = [(r, scores.get(r.id, 0.0) if r.text else None) for r in ranked]
        else:
            newest = sorted(records, key=lambda r: r.metadata[_META]["updated_at"], reverse=True)
            found = [(r, None) for r in newest]
        page = found[op.offset : op.offset + op.limit]
        self._refresh([r for r, _ in page], op.refresh_ttl)
        return [self._item(r, score, search=True) for r, score in page]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            path = condition.path
            if not isinstance(path, (tuple, list)) or not all(isinstance(p, str) for p in path):
                raise TypeError(f"a {condition.match_type} is a tuple of strings, got {path!r}")
            if condition.match_type == "prefix":
                prefix = tuple(path)
        if op.max_depth is not None:
            _check_int("max_depth", op.max_depth, minimum=1)
        _check_int("limit", op.limit, minimum=0)
        _check_int("offset", op.offset, minimum=0)
        seen: set[tuple[str, ...]] = set()
        for user in self._users_under(prefix):
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

    def _async_lock(self) -> asyncio.Lock:
        """The lock that orders this store's async calls on the running event loop."""
        loop = asyncio.get_running_loop()
        with self._locks_guard:
            lock = self._async_locks.get(loop)
            if lock is None:
                lock = self._async_locks[loop] = asyncio.Lock()
        return lock

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (runs in a worker thread).

        Calls on one event loop run one at a time in the order they were made,
        as in LangGraph's async stores: of writes to one key gathered together,
        the last made wins.
        """
        ops = list(ops)
        async with self._async_lock():
            return await asyncio.to_thread(self.batch, ops)

    # -- TTL ----------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired record and fact of the memory now (as a forget would);
        returns the number of records deleted."""
        return self.memory.sweep_expired().records

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's, else 5)
        in a daemon thread until :meth:`stop_ttl_sweeper`; a second call returns the
        running sweeper's future."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        seconds = 60.0 * float(interval or 5)
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            future.set_result(None)
            return future
        self._stop.clear()

        def run() -> None:
            while not self._stop.wait(seconds):
                try:
                    swept = self.sweep_ttl()
                    if swept:
                        logger.info("TTL sweeper deleted %d expired records", swept)
                except Exception:  # the sweeper keeps running
                    logger.exception("TTL sweep failed; will retry")
            future.set_result(None)

        self._sweeper = threading.Thread(target=run, name="tiered-memory-ttl", daemon=True)
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped (or none was running)."""
        self._stop.set()
        thread, self._sweeper = self._sweeper, None
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()
