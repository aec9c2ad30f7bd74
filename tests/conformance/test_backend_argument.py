"""``MemoryStore(backend=...)``: a backend written in this test file - no subclass of the
package's, every method of the protocol spelt out - runs the shipped conformance suite.

``ExplicitBackend`` is what a team writes to put its own layer under the memory (metrics,
a cache, another database): each method of
:class:`~langchain_tiered_memory.storage.base.MemoryBackend` and of the record store and
audit log it hands out is written here and counted, and there is no ``__getattr__``. So
the suite passing shows two things: ``MemoryStore`` takes the object as it is, and the
store, its views and the suite need nothing beyond the protocols (a call to anything else
would be an ``AttributeError``). It stores through an inner ``SQLiteBackend``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import (
    AuditEvent,
    AuditTrail,
    MemoryBackend,
    RecordStore,
    ThreadHead,
    ThreadRead,
)
from langchain_tiered_memory.storage.sqlite.backend import SQLiteBackend
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance import (
    Backend,
    BackendConformanceTests,
    Capability,
    files_under,
    stem_embeddings,
)


class ExplicitRecords:
    """The record store, method by method (:class:`RecordStore`)."""

    def __init__(self, inner: RecordStore, calls: Counter[str]) -> None:
        self._inner = inner
        self._calls = calls

    def add(self, records: Any) -> None:
        self._calls["records.add"] += 1
        self._inner.add(records)

    def get(self, ids: Any, *, user_id: str | None = None) -> list[MemoryRecord]:
        self._calls["records.get"] += 1
        return self._inner.get(ids, user_id=user_id)

    def records(self, where: Any) -> list[MemoryRecord]:
        self._calls["records.records"] += 1
        return self._inner.records(where)

    def count(self, user_id: str | None = None) -> int:
        self._calls["records.count"] += 1
        return self._inner.count(user_id)

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        self._calls["records.update_record"] += 1
        return self._inner.update_record(record)

    def delete(self, ids: Any, *, user_id: str) -> int:
        self._calls["records.delete"] += 1
        return self._inner.delete(ids, user_id=user_id)

    def put_record(self, record: MemoryRecord) -> MemoryRecord:
        self._calls["records.put_record"] += 1
        return self._inner.put_record(record)

    def keyword_search(
        self, query: str, where: Any, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        self._calls["records.keyword_search"] += 1
        return self._inner.keyword_search(query, where, n=n)

    def dense_search(
        self, query: Any, where: Any, *, n: int = 50
    ) -> list[tuple[MemoryRecord, float]]:
        self._calls["records.dense_search"] += 1
        return self._inner.dense_search(query, where, n=n)

    def note_access(self, ids: Any, at: Any = None, *, user_id: str) -> None:
        self._calls["records.note_access"] += 1
        self._inner.note_access(ids, at, user_id=user_id)


class ExplicitAudit:
    """The audit log, method by method (:class:`AuditTrail`)."""

    def __init__(self, inner: AuditTrail, calls: Counter[str]) -> None:
        self._inner = inner
        self._calls = calls

    def record(self, kind: Any, **fields: Any) -> AuditEvent:
        self._calls["audit.record"] += 1
        return self._inner.record(kind, **fields)

    def record_all(self, events: Any, **fields: Any) -> list[AuditEvent]:
        self._calls["audit.record_all"] += 1
        return self._inner.record_all(events, **fields)

    def events(self, user_id: str, **filters: Any) -> list[AuditEvent]:
        self._calls["audit.events"] += 1
        return self._inner.events(user_id, **filters)


class ExplicitBackend:
    """A :class:`MemoryBackend` written out in full, storing through ``inner``."""

    def __init__(self, inner: MemoryBackend) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.where = f"explicit:{inner.where}"
        self._records = ExplicitRecords(inner.records, self.calls)
        self._audit = ExplicitAudit(inner.audit, self.calls)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        return getattr(self._inner, name)(*args, **kwargs)

    @property
    def records(self) -> ExplicitRecords:
        return self._records

    @property
    def audit(self) -> ExplicitAudit:
        return self._audit

    # the turn log
    def read_thread(self, *args: Any, **kwargs: Any) -> ThreadRead:
        return self._call("read_thread", *args, **kwargs)

    def append_messages(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("append_messages", *args, **kwargs)

    def known_message_ids(self, *args: Any, **kwargs: Any) -> set[str]:
        return self._call("known_message_ids", *args, **kwargs)

    def set_system_prompt(self, *args: Any, **kwargs: Any) -> None:
        self._call("set_system_prompt", *args, **kwargs)

    def commit_compression(self, *args: Any, **kwargs: Any) -> ThreadHead | None:
        return self._call("commit_compression", *args, **kwargs)

    def note_compression_attempt(self, *args: Any, **kwargs: Any) -> None:
        self._call("note_compression_attempt", *args, **kwargs)

    def advance_extraction(self, *args: Any, **kwargs: Any) -> ThreadHead | None:
        return self._call("advance_extraction", *args, **kwargs)

    def commit_extraction(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("commit_extraction", *args, **kwargs)

    def clear_thread(self, *args: Any, **kwargs: Any) -> None:
        self._call("clear_thread", *args, **kwargs)

    def forget_turns(self, *args: Any, **kwargs: Any) -> int:
        return self._call("forget_turns", *args, **kwargs)

    def forget_matching(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("forget_matching", *args, **kwargs)

    def threads(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._call("threads", *args, **kwargs)

    # core facts
    def facts_version(self, *args: Any, **kwargs: Any) -> int:
        return self._call("facts_version", *args, **kwargs)

    def load_facts(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("load_facts", *args, **kwargs)

    def write_fact(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("write_fact", *args, **kwargs)

    def end_fact(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("end_fact", *args, **kwargs)

    def forget_facts(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("forget_facts", *args, **kwargs)

    def retire_facts(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("retire_facts", *args, **kwargs)

    def clear_facts(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("clear_facts", *args, **kwargs)

    # users, forgetting, export, expiry
    def users(self) -> list[str]:
        return self._call("users")

    def forget_user(self, *args: Any, **kwargs: Any) -> int:
        return self._call("forget_user", *args, **kwargs)

    def forget_thread(self, *args: Any, **kwargs: Any) -> int:
        return self._call("forget_thread", *args, **kwargs)

    def finish_forgets(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("finish_forgets", *args, **kwargs)

    def recovered_forgets(self) -> Any:
        return self._call("recovered_forgets")

    def export_user(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("export_user", *args, **kwargs)

    def expired_users(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._call("expired_users", *args, **kwargs)

    def forget_expired(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("forget_expired", *args, **kwargs)

    def idle_threads(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        return self._call("idle_threads", *args, **kwargs)

    def close(self) -> None:
        self._call("close")


def explicit_store(data: Path, embeddings: Embeddings) -> MemoryStore:
    data.mkdir(exist_ok=True)
    backend: MemoryBackend = ExplicitBackend(SQLiteBackend(data, embeddings=embeddings))
    return MemoryStore(backend=backend, embeddings=embeddings)


class TestExplicitBackend(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        tmp: Path = request.getfixturevalue("tmp_path")
        embeddings = stem_embeddings()
        return Backend(
            "explicit",
            lambda: explicit_store(tmp / "data", embeddings),
            capabilities={Capability.DURABLE, Capability.FILES},
            files=files_under(tmp),
        )


def test_the_store_takes_the_backend_as_given_and_owns_it(tmp_path: Path) -> None:
    store = explicit_store(tmp_path / "data", stem_embeddings())
    backend = store.backend
    assert isinstance(backend, ExplicitBackend) and repr(store) == f"MemoryStore({backend.where!r})"
    memory = store.memory("ana", "t1", context_window=1024)
    memory.add_messages([HumanMessage("I'm allergic to peanuts")])
    assert memory.build_context(query="peanuts", recall=True).total_tokens > 0
    assert backend.calls["append_messages"] == 1 and backend.calls["audit.record_all"] == 1
    store.close()
    assert backend.calls["close"] == 1


def test_a_backend_argument_that_would_build_another_is_refused(tmp_path: Path) -> None:
    inner = SQLiteBackend(None, embeddings=None)
    with pytest.raises(ValueError, match="a path"):
        MemoryStore(tmp_path, backend=inner)
    with pytest.raises(ValueError, match="vector_store"):
        MemoryStore(backend=inner, vector_store=object())
    with pytest.raises(ValueError, match="pool_size"):
        MemoryStore(backend=inner, pool_size=2)
    with pytest.raises(ValueError, match="the Embeddings object"):
        MemoryStore(backend=inner, embeddings="e5")
    inner.close()


def test_an_object_that_is_not_a_backend_is_refused_with_what_it_lacks() -> None:
    class Half:
        where = "half"

        def read_thread(self) -> None: ...

    with pytest.raises(
        TypeError, match=r"Half is not a MemoryBackend: it has no .*append_messages"
    ):
        MemoryStore(backend=Half())  # type: ignore[arg-type]
