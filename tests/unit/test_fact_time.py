"""Facts with time: when a fact holds (``valid_from`` / ``valid_until``), beside when it
was said (``created_at``); supersession and ending set when a version stopped holding."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage, ToolCall

from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.codec import fact_from_json, fact_to_json
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.facts import held_note, plan_end, plan_upsert
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.extraction import ExtractedFact
from langchain_tiered_memory.write.fact_time import clause_time, fact_time
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


# --- reading the time a fact's words state (write/fact_time.py) -----------------------

FRIDAY = datetime(2026, 12, 4, 15, 0, tzinfo=timezone.utc)
JULY = datetime(2026, 7, 10, 9, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "said", "valid_from", "valid_until"),
    [
        ("I moved to Lisbon last month", FRIDAY, "2026-11-01", None),
        ("Mia starts school in September", JULY, "2026-09-01", None),
        ("Mia starts school in September", FRIDAY, "2027-09-01", None),
        ("I'm in Rome until June", JULY, None, "2027-06-01"),
        ("I lived in Paris until 2024", FRIDAY, None, "2024-01-01"),
        ("the lease runs through June", JULY, None, "2027-07-01"),
        ("my flight is on Saturday", FRIDAY, "2026-12-05", "2026-12-06"),
        ("Dentist appointment tomorrow at 9", FRIDAY, "2026-12-05", "2026-12-06"),
        ("we're moving next month", FRIDAY, "2027-01-01", None),
        ("I'll be in Berlin next week", FRIDAY, "2026-12-07", "2026-12-14"),
        ("I'm off work this week", FRIDAY, "2026-11-30", "2026-12-07"),
        ("I've lived here since 2023", FRIDAY, "2023-01-01", None),
        ("I started a new job last week", FRIDAY, "2026-11-23", None),
        ("I quit smoking two weeks ago", FRIDAY, "2026-11-20", None),
        ("I moved here in March", JULY, "2026-03-01", None),
        ("we got married in 2019", FRIDAY, "2019-01-01", None),
        ("In 2 weeks I start at Google", FRIDAY, "2026-12-18", None),
        ("I'm away from December 20 until January 3", FRIDAY, "2026-12-20", "2027-01-04"),
        ("我上个月搬到了里斯本", FRIDAY, "2026-11-01", None),
        ("下周六我要去看牙医", FRIDAY, "2026-12-12", "2026-12-13"),
        ("我到六月都在北京", FRIDAY, None, "2027-06-01"),
        ("我从2023年起住在上海", FRIDAY, "2023-01-01", None),
        ("2023年以来我一直住在上海", FRIDAY, "2023-01-01", None),
        ("我三天前开始跑步", FRIDAY, "2026-12-01", None),
        ("我明年毕业", FRIDAY, "2027-01-01", None),
        ("九月开学", JULY, "2026-09-01", None),
    ],
)
def test_the_time_a_clause_states(
    text: str, said: datetime, valid_from: str | None, valid_until: str | None
) -> None:
    found = fact_time(text, said)
    assert found is not None
    day = lambda at: at.date().isoformat() if at else None  # noqa: E731
    assert (day(found.valid_from), day(found.valid_until)) == (valid_from, valid_until)


@pytest.mark.parametrize(
    "text",
    [
        "I live in Paris",
        "我住在上海",
        "My birthday is on 3 June",  # recurring, not when a fact holds
        "I go swimming every Saturday",
        "I may move to Porto",  # "may" the verb
        "My favourite month is May",  # a month, but nothing starts or ends
        "I'm from Paris",
        "I work at Google in Paris",
    ],
)
def test_no_time_where_none_is_stated(text: str) -> None:
    assert fact_time(text, FRIDAY) is None


def test_bad_input_to_fact_time_is_refused() -> None:
    with pytest.raises(TypeError, match="reads text"):
        fact_time(None, FRIDAY)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="said_at"):
        fact_time("last week", "2026-12-04")  # type: ignore[arg-type]


def test_a_naive_said_at_is_utc() -> None:
    found = fact_time("tomorrow", datetime(2026, 12, 4, 23, 0))
    assert found is not None and found.valid_from == datetime(2026, 12, 5, tzinfo=timezone.utc)


def test_each_fact_of_a_message_gets_the_time_of_its_own_clause() -> None:
    message = "I moved to Lisbon last month and I'm allergic to peanuts."
    assert clause_time(message, "moved to Lisbon", FRIDAY).valid_from.month == 11  # type: ignore[union-attr]
    assert clause_time(message, "allergic to peanuts", FRIDAY) is None
    lent = clause_time("Since 2023, I live in Lisbon.", "lives in Lisbon", FRIDAY)
    assert lent is not None and lent.valid_from.year == 2023  # type: ignore[union-attr]
    assert clause_time("I live in Lisbon.", "", FRIDAY) is None


def test_the_rule_extractor_dates_facts_by_when_they_were_said() -> None:
    memory = TieredMemory(context_window=4096)
    memory.add_messages(
        [HumanMessage("I moved to Lisbon last month."), AIMessage("Nice!")], at=FRIDAY
    )
    home = memory.core.get("home_city")
    assert home is not None and "Lisbon" in home.content
    assert home.valid_from == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert home.created_at == FRIDAY
    memory.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    allergy = [f for f in memory.core.active() if f.subject.startswith("allergy")]
    assert allergy and allergy[0].valid_from is None


# --- core memory shows when facts hold ------------------------------------------------


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("fields", "now", "note"),
    [
        ({}, "2026-12-04", ""),
        ({"valid_from": _at("2026-11-01")}, "2026-12-04", "since Nov 2026"),
        ({"valid_from": _at("2023-01-01")}, "2026-12-04", "since 2023"),
        ({"valid_from": _at("2027-09-01")}, "2026-12-04", "from Sep 2027"),
        ({"valid_until": _at("2027-06-01")}, "2026-12-04", "until Jun 2027"),
        ({"valid_until": _at("2026-06-01")}, "2026-12-04", "past, until Jun 2026"),
        (
            {"valid_from": _at("2026-12-20"), "valid_until": _at("2027-01-04")},
            "2026-12-04",
            "from 2026-12-20, until 2027-01-04",
        ),
        (
            {"valid_from": _at("2026-12-05"), "valid_until": _at("2026-12-06")},
            "2026-12-04",
            "on 2026-12-05",
        ),
        (
            {"valid_from": _at("2026-12-05"), "valid_until": _at("2026-12-06")},
            "2026-12-06",
            "past, 2026-12-05",
        ),
        ({"valid_from": _at("2027-01-01"), "category": "plan"}, "2026-12-04", "from 2027"),
        ({"valid_from": _at("2027-01-01"), "category": "plan"}, "2027-02-01", "past, 2027"),
    ],
)
def test_a_fact_line_says_when_it_holds(fields: dict[str, object], now: str, note: str) -> None:
    fact = CoreFact.new("x", "something", source_turn=1, **fields)  # type: ignore[arg-type]
    line = fact.render(now=_at(now))
    assert held_note(fact, _at(now)) == note
    assert line.endswith(
        f"({note}; stated, turn 1, {fact.created_at.date()})"
        if note
        else f"(stated, turn 1, {fact.created_at.date()})"
    )


def test_a_plan_whose_date_passes_is_shown_as_past() -> None:
    now = datetime.now(timezone.utc)
    memory = TieredMemory(context_window=4096)
    memory.add_messages(
        [HumanMessage("My flight to Kyoto is tomorrow at 9:40."), AIMessage("Have a good trip!")],
        at=now - timedelta(days=10),
    )
    memory.add_messages(
        [HumanMessage("My dentist appointment is tomorrow."), AIMessage("Good luck.")], at=now
    )
    flight, dentist = memory.core.get("plan:flight"), memory.core.get("plan:dentist")
    assert flight is not None and dentist is not None
    flown = (now - timedelta(days=9)).date().isoformat()
    ahead = (now + timedelta(days=1)).date().isoformat()
    shown = memory.core.render()
    assert f"(past, {flown}; stated" in shown and f"(on {ahead}; stated" in shown
    assert f"on {flown}" not in shown  # never shown as ahead
    prompt = "\n".join(str(m.content) for m in memory.build_context().messages)
    assert f"past, {flown}" in prompt
    # the day before its date, the same flight was shown as ahead
    assert f"(on {flown};" in flight.render(now=now - timedelta(days=9, hours=12))


def test_core_memory_renders_the_same_until_a_date_passes() -> None:
    core = CoreMemory()
    core.upsert(
        CoreFact.new(
            "plan:trip",
            "Rome trip",
            category="plan",
            valid_from=_at("2026-12-10"),
            valid_until=_at("2026-12-11"),
        )
    )
    core.upsert(CoreFact.new("home_city", "moved to Lisbon", valid_from=_at("2026-11-01")))
    before = [core.render(now=_at("2026-12-04") + timedelta(hours=h)) for h in range(0, 24 * 6, 7)]
    assert len(set(before)) == 1  # byte-stable while no date passes
    assert core.render(now=_at("2026-12-11")) != before[0]


def test_a_superseded_version_is_never_rendered_as_current() -> None:
    core = CoreMemory()
    core.upsert(CoreFact.new("home_city", "lives in Paris", valid_from=_at("2020-01-01")))
    core.upsert(CoreFact.new("home_city", "moved to Porto", valid_from=_at("2026-10-01")))
    shown = core.render(now=_at("2026-12-04"))
    assert "Paris" not in shown and "moved to Porto (since Oct 2026;" in shown


# --- the history is queryable -----------------------------------------------------------


def test_where_did_i_live_in_2023_through_the_retrieve_memory_tool(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", embeddings=DeterministicFakeEmbedding(size=16))
    try:
        memory = store.memory("ana", "t1")
        memory.write_fact(CoreFact.new("home_city", "lives in Paris", created_at=_at("2021-01-01")))
        memory.write_fact(
            CoreFact.new("home_city", "moved to Berlin", valid_from=_at("2024-03-01"))
        )
        memory.write_fact(CoreFact.new("diet", "vegetarian", created_at=_at("2020-01-01")))
        store.memory("bob", "t1").write_fact(
            CoreFact.new("home_city", "lives in Oslo", created_at=_at("2020-01-01"))
        )
        tool = create_retrieve_memory_tool(store)
        ana = {"configurable": {"user_id": "ana", "thread_id": "t1"}}
        call = ToolCall(
            name=tool.name, args={"query": "Where did I live in 2023?"}, id="c1", type="tool_call"
        )
        message = tool.invoke(call, config=ana)
        assert "home_city: lives in Paris (held 2021 to Mar 2024; superseded)" in message.content
        history = [a for a in message.artifact if a["source"] == "fact history"]
        assert [a["text"] for a in history] == [
            "home_city: lives in Paris (held 2021 to Mar 2024; superseded)"
        ]  # a fact that never changed is in core memory already; bob's never shows
        span = tool.invoke({**call, "args": {"query": "Where did I live during 2024?"}}, config=ana)
        assert "lives in Paris (held 2021 to Mar 2024; superseded)" in span.content
        assert "moved to Berlin (held Mar 2024 on; current)" in span.content
        plain = tool.invoke({**call, "args": {"query": "Where do I live?"}}, config=ana)
        assert not [a for a in plain.artifact if a["source"] == "fact history"]
    finally:
        store.close()


async def test_facts_at_and_its_async_twins(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", embeddings=DeterministicFakeEmbedding(size=16))
    try:
        memory = store.memory("ana", "t1")
        memory.write_fact(CoreFact.new("home_city", "lives in Paris", created_at=_at("2021-01-01")))
        memory.write_fact(
            CoreFact.new("home_city", "moved to Berlin", valid_from=_at("2024-03-01"))
        )
        then = [f.content for f in await memory.afacts_at(_at("2023-06-01"))]
        assert then == [f.content for f in memory.facts_at(_at("2023-06-01"))] == ["lives in Paris"]
        found = await store.afact_history("ana", "home_city", at=_at("2025-01-01"))
        assert [f.content for f in found] == ["moved to Berlin"]
        with pytest.raises(TypeError, match="when must be a datetime"):
            memory.facts_at("2023")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="before its start"):
            memory.facts_at(_at("2024-01-01"), _at("2023-01-01"))
    finally:
        store.close()


def test_the_how_to_runs_and_prints_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "howto" / "facts.md").read_text()
    blocks = re.findall(r"^```(\w+)\n(.*?)^```", page, flags=re.S | re.M)
    code = [body for lang, body in blocks if lang == "python"]
    shown = [body for lang, body in blocks if lang == "text"]
    assert len(code) == 1 and len(shown) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(code[0], "facts.md", "exec"), {})
    assert capsys.readouterr().out == shown[0]
