"""The rules path commits a batch's facts with the extraction watermark, as one (issue 30).

Two :class:`MemoryStore` objects on one SQLite directory, or on one Postgres
database, stand for two processes. A crash injected after the batch's first fact
is written leaves neither the facts nor the watermark; the next run writes the
batch once. Two writers racing on one batch write it once. The audit log holds
one event per change of each committed batch, and none of a batch not committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sql.facts import FactLog
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.write.candidate import Candidate

#: One turn, one batch of the rules: two facts for core memory and a "possibly" one.
BATCH = "I live in Lyon and I work at Acme. I guess I like jazz."
FACTS = ["lives in Lyon", "works at Acme"]


class Crash(BaseException):
    """The process dying (nothing catches it, as nothing catches a kill)."""


Opener = Callable[[], MemoryStore]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens another store object on one place (a new one per call: another process)."""
    place = str(tmp_path) if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened: list[MemoryStore] = []

    def opener() -> MemoryStore:
        opened.append(MemoryStore(place))
        return opened[-1]

    yield opener
    for store in opened:
        store.close()


def view(store: MemoryStore) -> TieredMemory:
    return store.memory("ana", "t1", context_window=4096, extractor="rules")


def exchange(text: str) -> list[Any]:
    return [HumanMessage(text), AIMessage("Noted.")]


def facts_of(store: MemoryStore) -> list[str]:
    return sorted(f.content for f in view(store).core.history())


def possibly_of(store: MemoryStore) -> list[str]:
    records = store.archive.records(RecordFilter("ana", kinds="fact"))
    return [r.text for r in records if r.metadata.get("possibly")]


def batch_events(store: MemoryStore) -> list[dict[str, Any]]:
    """The ``write`` events of the rules' committed changes (one per change)."""
    events = store.audit.events("ana", kinds=["write"])
    return [dict(e.payload) for e in events if e.payload.get("extraction") == "rules"]


def watermark(store: MemoryStore) -> int:
    return store.backend.read_thread("ana", "t1", None).head.extracted_through


def crash_after_the_first_fact(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every fact write after the first dies (after writing): the first one is in."""
    calls: list[int] = []
    write = FactLog.write

    def dying(self: FactLog, *args: Any, **kwargs: Any) -> Any:
        update = write(self, *args, **kwargs)
        calls.append(1)
        if len(calls) > 1:
            raise Crash("killed between the batch's facts and its watermark")
        return update

    monkeypatch.setattr(FactLog, "write", dying)
    return calls


def test_a_crash_inside_a_rules_batch_writes_nothing_and_the_next_run_writes_it_once(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_store()
    memory = view(first)
    calls = crash_after_the_first_fact(monkeypatch)
    with pytest.raises(Crash):
        memory.add_messages(exchange(BATCH))
    assert len(calls) == 2  # the first fact was written when the process died
    monkeypatch.undo()
    # the next process: the turn is stored, nothing of its batch is
    second = open_store()
    assert len(second.backend.read_thread("ana", "t1", None).messages) == 2
    assert facts_of(second) == [] and possibly_of(second) == []
    assert watermark(second) == -1 and batch_events(second) == []
    # its next add extracts the batch (and the new turn), once
    view(second).add_messages(exchange("Thanks!"))
    assert facts_of(second) == FACTS
    assert possibly_of(second) == ["likes:jazz: likes jazz"]
    assert watermark(second) == 1
    events = batch_events(second)
    assert sorted((e["action"], e["turn"]) for e in events) == [("add", 0), ("add", 0)]
    assert {e["fact_id"] for e in events} == {f.id for f in view(second).core.history()}


def test_two_writers_racing_on_one_rules_batch_write_it_once(open_store: Opener) -> None:
    a_store, b_store = open_store(), open_store()
    a, b = view(a_store), view(b_store)
    extract = b.writer.extractor.extract
    raced: list[int] = []

    def extract_then_lose_the_race(*args: Any, **kwargs: Any) -> list[Candidate]:
        found = extract(*args, **kwargs)  # b has the batch's facts ...
        if not raced:
            raced.append(1)  # ... when the other process extracts it and commits first
            a.add_messages(exchange("Thanks!"))
        return found

    b.writer.extractor.extract = extract_then_lose_the_race  # type: ignore[method-assign]
    b.add_messages(exchange(BATCH))
    assert raced == [1]
    assert watermark(b_store) == 1 and b.head.extracted_through == 1  # b read where it is
    for store in (a_store, b_store):
        assert facts_of(store) == FACTS
        assert [f.status for f in view(store).core.history()] == ["active", "active"]
        assert possibly_of(store) == ["likes:jazz: likes jazz"]
        assert len(batch_events(store)) == 2  # one per fact, of the one committed batch
    b.add_messages(exchange("Bye."))  # nothing of the batch is extracted again
    assert facts_of(b_store) == FACTS and len(batch_events(b_store)) == 2
    assert len(possibly_of(b_store)) == 1


def test_a_batch_committed_by_another_writer_is_dropped_not_applied_over_it(
    open_store: Opener,
) -> None:
    """The losing writer's facts are not written even where they would change something:
    the other writer's batch (which saw the move first) stands alone."""
    a_store, b_store = open_store(), open_store()
    a, b = view(a_store), view(b_store)
    a.add_messages(exchange("I live in Paris."))
    b.add_messages(exchange("Hello."))  # b's copy is up to date: watermark 1
    extract = b.writer.extractor.extract
    raced: list[int] = []

    def extract_then_lose_the_race(*args: Any, **kwargs: Any) -> list[Candidate]:
        found = extract(*args, **kwargs)
        if not raced:
            raced.append(1)
            a.add_messages(exchange("Actually I moved to Berlin."))
        return found

    b.writer.extractor.extract = extract_then_lose_the_race  # type: ignore[method-assign]
    b.add_messages(exchange("We moved to Rome last week."))
    # a committed turn 3 with turn 2 (Rome); b's staged Rome (from the older head) was
    # dropped, then b found nothing pending
    history = [(f.content, f.status) for f in view(b_store).core.history("home_city")]
    assert [c for c, _ in history].count("moved to Rome") == 1
    current = view(b_store).core.get("home_city")
    assert current is not None and current.content == "moved to Berlin"
    assert watermark(b_store) == 3
    writes = [e for e in batch_events(b_store) if e["turn"] == 2]
    assert len(writes) == 1
