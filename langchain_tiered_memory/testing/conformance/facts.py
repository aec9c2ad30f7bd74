"""Conformance: core facts - many writers, no lost facts, conditional writes, history,
when a version holds (a superseded one until its replacement starts), ending a fact, and
an extraction batch committed with the watermark as one (compare-and-set)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.ids import fact_record_id
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import FactChange, RecordFilter, ThreadHead
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
    assert [r.user_id for r in store.archive.records(RecordFilter("ana", kinds="fact"))] == ["ana"]
    assert store.archive.records("bob") == []


def test_a_superseded_version_holds_until_its_replacement_starts(store: MemoryStore) -> None:
    said = datetime(2025, 3, 1, tzinfo=timezone.utc)
    moved = datetime(2025, 9, 1, tzinfo=timezone.utc)
    memory = store.memory("ana", "t1")
    memory.write_fact(CoreFact.new("home_city", "lives in Paris", created_at=said, valid_from=said))
    memory.write_fact(
        CoreFact.new(
            "home_city", "moved to Berlin", created_at=moved + timedelta(days=30), valid_from=moved
        )
    )
    old, new = store.core("ana").history("home_city")  # a fresh view: as stored
    assert (old.status, old.valid_from, old.valid_until) == ("superseded", said, moved)
    assert (new.status, new.valid_from, new.valid_until) == ("active", moved, None)
    memory.write_fact(CoreFact.new("home_city", "moved to Munich"))  # no stated time
    berlin = store.core("ana").history("home_city")[1]
    assert berlin.valid_until is not None and berlin.valid_until > moved  # when Munich was said


def test_ending_a_fact_keeps_it_in_history_and_out_of_core(store: MemoryStore) -> None:
    quit_at = datetime(2026, 1, 5, tzinfo=timezone.utc)
    memory = store.memory("ana", "t1")
    smokes = memory.write_fact(CoreFact.new("smoking", "smokes")).fact
    ended = store.core("ana").end("smoking", at=quit_at, reason="quit smoking")
    assert ended is not None and ended.id == smokes.id
    assert (ended.status, ended.valid_until, ended.reason) == ("ended", quit_at, "quit smoking")
    other = store.memory("ana", "t2")
    assert other.core.get("smoking") is None
    assert "smokes" not in other.core.render()
    assert [(f.status, f.valid_until) for f in other.core.history("smoking")] == [
        ("ended", quit_at)
    ]
    record = store.archive.get([fact_record_id("ana", smokes.id)])[0]
    assert record.metadata["ended"] is True and record.metadata["superseded"] is True
    assert other.end_fact("smoking") is None  # nothing current: nothing changes
    assert len(store.core("ana").history("smoking")) == 1
    started = memory.write_fact(CoreFact.new("smoking", "smokes again"))
    assert started.superseded is None  # an ended fact is not replaced, it is over
    assert [f.status for f in store.core("ana").history("smoking")] == ["ended", "active"]


# -- an extraction batch: its facts and the watermark in one transaction -----------------


def _batch_head(store: MemoryStore) -> ThreadHead:
    memory = store.memory("ana", "t1", context_window=2048, extractor="rules")
    memory.add_messages([HumanMessage("hello"), AIMessage("hi")])
    memory.add_messages([HumanMessage("more"), AIMessage("ok")])
    memory.write_fact(CoreFact.new("home_city", "lives in Lisbon"))
    memory.write_fact(CoreFact.new("smoking", "smokes"))
    return store.backend.read_thread("ana", "t1", None).head


def test_an_extraction_batch_commits_its_facts_with_the_watermark(store: MemoryStore) -> None:
    head = _batch_head(store)
    backend = store.backend
    through = head.extracted_through + 1
    possibly = MemoryRecord.new(
        user_id="ana", kind="fact", text="mood: maybe tired", metadata={"possibly": True}
    )
    done = backend.commit_extraction(
        head,
        through,
        [
            FactChange(
                fact=CoreFact.new("home_city", "moved to Porto"),
                reason="moved",
                audit={"action": "update", "reason": "the user moved"},
            ),
            FactChange(fact=CoreFact.new("diet", "vegan"), audit={"action": "add"}),
            FactChange(end=("smoking", "human"), reason="quit", audit={"action": "end"}),
            FactChange(end=("nothing_here", "human"), reason="x"),  # nothing to end: skipped
        ],
        records=[possibly],
    )
    assert done is not None
    assert done.head == backend.read_thread("ana", "t1", None).head  # as stored
    assert done.head.extracted_through == through
    assert [u.fact.content for u in done.updates] == ["moved to Porto", "vegan"]
    assert [f.subject for f in done.ended] == ["smoking"]
    core = store.core("ana")
    assert {f.subject: f.content for f in core.active()} == {
        "home_city": "moved to Porto",
        "diet": "vegan",
    }
    assert [f.status for f in core.history("smoking")] == ["ended"]
    assert store.archive.get([possibly.id])  # archived with the batch
    events = [
        e.payload for e in store.audit.events("ana", kinds=["write"]) if "action" in e.payload
    ]
    assert [e["action"] for e in events] == ["update", "add", "end"]
    assert events[0]["replaces"] == done.updates[0].superseded.id  # type: ignore[union-attr]
    # the same batch again (a retry, another view, another process): nothing is written
    assert (
        backend.commit_extraction(head, through, [FactChange(fact=CoreFact.new("x", "y"))]) is None
    )
    assert core.get("x") is None and len(core.history("home_city")) == 2


def test_an_extraction_batch_ends_at_its_time_and_retires_by_id(store: MemoryStore) -> None:
    head = _batch_head(store)
    core = store.core("ana")
    lisbon = core.get("home_city")
    assert lisbon is not None
    quit_at = datetime(2026, 3, 1, tzinfo=timezone.utc)
    done = store.backend.commit_extraction(
        head,
        head.extracted_through + 1,
        [
            FactChange(end=("smoking", "human"), at=quit_at, reason="quit"),
            FactChange(retire=lisbon.id, reason="possibly replaced", audit={"action": "retire"}),
            FactChange(retire="no-such-fact", reason="x"),  # nothing to retire: skipped
        ],
    )
    assert done is not None
    assert [f.subject for f in done.retired] == ["home_city"]
    (smoking,) = core.history("smoking")
    assert smoking.status == "ended" and smoking.valid_until == quit_at
    assert [f.status for f in core.history("home_city")] == ["archived"]
    events = [
        e.payload for e in store.audit.events("ana", kinds=["write"]) if "action" in e.payload
    ]
    assert [(e["action"], e["fact_id"]) for e in events] == [("retire", lisbon.id)]


def test_an_extraction_batch_after_a_forget_writes_nothing(store: MemoryStore) -> None:
    head = _batch_head(store)
    store.forget_user("ana")
    change = FactChange(fact=CoreFact.new("diet", "vegan"))
    assert store.backend.commit_extraction(head, head.extracted_through + 1, [change]) is None
    assert store.core("ana").history() == []


def test_a_failed_extraction_batch_writes_nothing(store: MemoryStore) -> None:
    head = _batch_head(store)
    changes = [
        FactChange(fact=CoreFact.new("pet", "a dog")),
        FactChange(fact=CoreFact.new("diet", "vegan"), audit={"bad": object()}),  # fails last
    ]
    with pytest.raises(TypeError):
        store.backend.commit_extraction(head, head.extracted_through + 1, changes)
    assert store.core("ana").get("pet") is None
    after = store.backend.read_thread("ana", "t1", None).head
    assert after.extracted_through == head.extracted_through


def test_the_history_answers_what_held_when(store: MemoryStore) -> None:
    def day(text: str) -> datetime:
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)

    core = store.core("ana")
    core.upsert(CoreFact.new("home_city", "lives in Paris", created_at=day("2021-01-01")))
    core.upsert(CoreFact.new("home_city", "moved to Berlin", valid_from=day("2024-03-01")))
    core.upsert(CoreFact.new("smoking", "smokes", created_at=day("2020-01-01")))
    core.end("smoking", at=day("2022-05-01"))
    store.core("bob").upsert(
        CoreFact.new("home_city", "lives in Oslo", created_at=day("2020-01-01"))
    )

    def held(at: str, until: str | None = None, subject: str | None = None) -> list[str]:
        found = store.fact_history("ana", subject, at=day(at), until=day(until) if until else None)
        return [f.content for f in found]

    assert held("2021-06-01") == ["smokes", "lives in Paris"]
    assert held("2023-06-01") == ["lives in Paris"]  # superseded now, current then
    assert held("2024-01-01", "2025-01-01") == ["lives in Paris", "moved to Berlin"]
    assert held("2025-06-01", subject="home_city") == ["moved to Berlin"]
    assert held("2019-01-01") == []
    assert [f.status for f in store.fact_history("ana", "home_city")] == ["superseded", "active"]
    with pytest.raises(ValueError, match="until= only with at="):
        store.fact_history("ana", until=day("2025-01-01"))
