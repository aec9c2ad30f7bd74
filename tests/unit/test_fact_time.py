"""Facts with time: when a fact holds (``valid_from`` / ``valid_until``), beside when it
was said (``created_at``); supersession and ending set when a version stopped holding."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.codec import fact_from_json, fact_to_json
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory, plan_end, plan_upsert
from langchain_tiered_memory.tiers.turns import Turn
from langchain_tiered_memory.write.extraction import ExtractedFact
from langchain_tiered_memory.write.writer import MemoryWriter

MAR = datetime(2025, 3, 1, tzinfo=timezone.utc)
JUN = datetime(2025, 6, 1, tzinfo=timezone.utc)
SEP = datetime(2025, 9, 1, tzinfo=timezone.utc)

#: A fact row as stored before facts had valid times (and no expiry).
OLD_ROW = (
    '{"id": "f1", "subject": "home_city", "content": "lives in Paris", "block": "human", '
    '"category": "fact", "confidence": 1.0, "stated": true, "source_turn": 2, '
    '"source": "user", "importance": 5.0, "created_at": "2025-03-01T00:00:00+00:00", '
    '"status": "active", "superseded_by": null, "reason": null, "source_thread": "t1"}'
)


def test_an_old_row_loads_and_is_written_back_byte_for_byte() -> None:
    fact = fact_from_json(OLD_ROW)
    assert (fact.valid_from, fact.valid_until) == (None, None)
    assert fact_to_json(fact) == OLD_ROW


def test_valid_times_round_trip() -> None:
    fact = CoreFact.new("school", "Mia starts school", valid_from=SEP, valid_until=None)
    data = fact.to_dict()
    assert data["valid_from"] == "2025-09-01T00:00:00+00:00" and "valid_until" not in data
    assert CoreFact.from_dict(json.loads(json.dumps(data))) == fact


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"valid_from": "2025-09-01"}, TypeError, "valid_from must be a datetime"),
        ({"valid_until": 3}, TypeError, "valid_until must be a datetime"),
        ({"valid_from": SEP, "valid_until": JUN}, ValueError, "before it starts"),
    ],
)
def test_bad_valid_times_are_refused_and_change_nothing(
    fields: dict[str, object], error: type[Exception], match: str
) -> None:
    core = CoreMemory()
    with pytest.raises(error, match=match):
        core.upsert(CoreFact.new("home_city", "lives in Paris", **fields))  # type: ignore[arg-type]
    assert core.history() == []


def test_a_superseded_version_holds_until_the_new_one_starts() -> None:
    paris = CoreFact.new("home_city", "lives in Paris", created_at=MAR)
    berlin = CoreFact.new("home_city", "moved to Berlin", created_at=SEP, valid_from=JUN)
    assert plan_upsert(paris, berlin, reason="moved").superseded.valid_until == JUN  # type: ignore[union-attr]
    unstated = CoreFact.new("home_city", "moved to Berlin", created_at=SEP)
    assert plan_upsert(paris, unstated, reason="moved").superseded.valid_until == SEP  # type: ignore[union-attr]


def test_an_end_stated_earlier_is_kept_and_no_version_ends_before_it_starts() -> None:
    trip = CoreFact.new("plan:trip", "in Rome until June", valid_until=JUN)
    later = CoreFact.new("plan:trip", "in Oslo", created_at=SEP)
    assert plan_upsert(trip, later, reason="new trip").superseded.valid_until == JUN  # type: ignore[union-attr]
    ahead = CoreFact.new("home_city", "moving to Porto in September", valid_from=SEP)
    cancelled = plan_end(ahead, at=JUN, reason="not moving after all")
    assert cancelled is not None and cancelled.valid_until == SEP  # never before it starts
    assert plan_end(None, at=JUN, reason="x") is None


def test_ending_in_a_bare_core_memory() -> None:
    core = CoreMemory()
    core.upsert(CoreFact.new("smoking", "smokes", created_at=MAR))
    ended = core.end("Smoking", at=JUN, reason="quit")
    assert ended is not None and (ended.status, ended.valid_until) == ("ended", JUN)
    assert core.active() == [] and core.render() == ""
    assert core.end("smoking") is None
    with pytest.raises(ValueError, match="block"):
        core.end("smoking", "secret")
    with pytest.raises(TypeError, match="at must be a datetime"):
        core.end("smoking", at="2025-06-01")  # type: ignore[arg-type]


def test_tiered_memory_ends_a_fact_in_its_store() -> None:
    memory = TieredMemory(context_window=4096)
    memory.write_fact(CoreFact.new("smoking", "smokes"))
    assert memory.end_fact("smoking", at=JUN) is not None
    assert [f.status for f in memory.core.history("smoking")] == ["ended"]


class TimedExtractor:
    """An extractor that states when its fact holds (as the model extractor will)."""

    calls = 0

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        return [
            ExtractedFact(
                "school", "Mia starts school", source_turn=t.index, valid_from=SEP, confidence=1
            )
            for t in turns
        ]

    async def aextract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        return self.extract(turns)


def test_the_writer_carries_valid_times_into_core_memory() -> None:
    writer = MemoryWriter(CoreMemory(), extractor=TimedExtractor(), batch_turns=1)
    said = Turn(
        0, (HumanMessage("Mia starts school in September"), AIMessage("ok")), created_at=MAR
    )
    result = writer.extract([said], flush=True)
    (update,) = result.promoted
    assert (update.fact.created_at, update.fact.valid_from) == (MAR, SEP)
    assert writer.core.get("school").valid_from == SEP  # type: ignore[union-attr]
