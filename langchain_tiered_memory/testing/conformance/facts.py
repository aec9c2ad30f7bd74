"""Conformance: core facts - many writers, no lost facts, conditional writes, history."""

from __future__ import annotations

import threading

import pytest

from langchain_tiered_memory.ids import fact_record_id
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact, FactConflict


def test_parallel_writers_lose_no_fact(store: MemoryStore) -> None:
    views = [store.memory("ana", f"t{w % 2}", context_window=2048) for w in range(6)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(views))

    def write(w: int) -> None:
        try:
            start.wait(timeout=30)
            for n in range(20):
                views[w].write_fact(CoreFact.new(f"w{w}-fact{n}", f"value {w}.{n}"))
                views[w].write_fact(CoreFact.new("shared", f"last said by {w} at {n}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=write, args=(w,)) for w in range(len(views))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors, errors[:3]
    core = store.core("ana")
    subjects = {f.subject for f in core.active()}
    assert {f"w{w}-fact{n}" for w in range(6) for n in range(20)} <= subjects
    shared = core.history("shared")
    assert len(shared) == 6 * 20  # every version kept
    assert [f.status for f in shared].count("active") == 1  # exactly one current truth
    for view in views:  # every view sees every fact
        assert len(view.core.active()) == 6 * 20 + 1


def test_a_new_version_supersedes_and_keeps_history(store: MemoryStore) -> None:
    memory = store.memory("ana", "t1")
    first = memory.write_fact(CoreFact.new("home_city", "lives in Paris"))
    second = memory.write_fact(CoreFact.new("home_city", "moved to Berlin"))
    assert second.superseded is not None and second.superseded.id == first.fact.id
    other = store.memory("ana", "t2")
    assert other.core.get("home_city").content == "moved to Berlin"  # type: ignore[union-attr]
    assert [f.status for f in other.core.history("home_city")] == ["superseded", "active"]
    old_record = store.archive.get([fact_record_id("ana", first.fact.id)])[0]
    assert old_record.metadata["superseded"] is True
    assert old_record.metadata["superseded_by"] == second.fact.id
    assert memory.write_fact(CoreFact.new("home_city", "Moved to Berlin")).unchanged


def test_conditional_writes_change_nothing_when_they_fail(store: MemoryStore) -> None:
    core = store.core("ana")
    core.upsert(CoreFact.new("diet", "vegetarian"), expect="absent")
    with pytest.raises(FactConflict, match="already holds"):
        core.upsert(CoreFact.new("diet", "vegan"), expect="absent")
    with pytest.raises(FactConflict, match="no fact about"):
        core.upsert(CoreFact.new("pet", "a cat"), expect="present")
    assert [(f.subject, f.content) for f in core.history()] == [("diet", "vegetarian")]
    assert core.upsert(CoreFact.new("diet", "vegetarian"), expect="absent").unchanged
    core.upsert(CoreFact.new("diet", "vegan"), expect="present")
    assert store.core("ana").get("diet").content == "vegan"  # type: ignore[union-attr]


def test_facts_are_per_user(store: MemoryStore) -> None:
    store.core("ana").upsert(CoreFact.new("allergy", "allergic to peanuts"))
    assert store.core("bob").active() == []
    assert [r.user_id for r in store.archive.records("ana", kinds="fact")] == ["ana"]
    assert store.archive.records("bob") == []
