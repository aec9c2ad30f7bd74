"""Declared single-valued attributes, the write policy's supersede / end / undo (issue 30)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryStore
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.attributes import Attribute, AttributeSchema
from langchain_tiered_memory.write.candidate import Candidate
from langchain_tiered_memory.write.extraction import ExtractedFact
from langchain_tiered_memory.write.policy import apply_decision, decide
from langchain_tiered_memory.write.rules import FoundFact
from langchain_tiered_memory.write.writer import MemoryWriter


def said(memory: TieredMemory, *texts: str) -> None:
    for text in texts:
        memory.add_messages([HumanMessage(text), AIMessage("Noted.")])


# --- the observed bugs, in a real TieredMemory -----------------------------------


def test_lisbon_then_porto_twice_leaves_porto_current_and_lisbon_in_history() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I moved to Lisbon last month.")
    said(memory, "Actually we moved again, to Porto.")
    said(memory, "Update: our new home is Porto.")
    current = memory.core.get("home_city")
    assert current is not None and "Porto" in current.content
    history = memory.core.history("home_city")
    assert [f.status for f in history][-1] == "active"
    assert any("Lisbon" in f.content and f.status == "superseded" for f in history)
    assert "Lisbon" not in memory.core.render()


def test_a_named_daughter_and_her_plan_are_both_kept() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "my daughter Mia starts school in September")
    rendered = memory.core.render()
    assert "Mia" in rendered and "school in September" in rendered


# --- single-valued, whichever extractor; many-valued accumulate ------------------------


def test_a_model_subject_supersedes_the_rules_value_of_the_same_attribute() -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([Turn(0, (HumanMessage("I live in Paris."),))])
    # a model extractor names the same attribute differently
    (decision,) = [decide(Candidate("location", "lives in Rome"), writer.core.history())]
    apply_decision(decision, writer.core)
    assert writer.core.get("home_city").content == "lives in Rome"
    assert writer.core.get("location") is None
    assert [f.status for f in writer.core.history("home_city")] == ["superseded", "active"]


def test_a_legacy_alias_fact_is_ended_when_the_attribute_gets_a_new_value() -> None:
    core = CoreMemory([CoreFact.new("employer", "works at Acme")])
    applied = apply_decision(decide(Candidate("company", "works at Initech"), core.history()), core)
    assert core.get("employer").content == "works at Initech"
    assert applied.ended == [] and len(core.history("employer")) == 2
    core2 = CoreMemory([CoreFact.new("works_at", "Acme")])  # stored before the schema
    applied = apply_decision(decide(Candidate("employer", "Initech"), core2.history()), core2)
    assert [f.status for f in core2.history("works_at")] == ["ended"]
    assert [f.subject for f in applied.ended] == ["works_at"]


def test_many_valued_attributes_accumulate() -> None:
    core = CoreMemory()
    for content in ("allergic to peanuts", "allergic to cats"):
        apply_decision(decide(Candidate("allergy", content), core.history()), core)
    assert sorted(f.subject for f in core.active()) == ["allergy:cats", "allergy:peanuts"]


def test_no_longer_ends_the_single_value_and_keeps_it_in_history() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I work at Google as an engineer.", "I no longer work at Google.")
    assert memory.core.get("work") is None
    assert [f.status for f in memory.core.history("work")] == ["ended"]
    assert "Google" not in memory.core.render()


def test_not_any_more_ends_the_fact_it_names() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I'm 20 weeks pregnant.", "I'm not pregnant any more.")
    assert memory.core.get("health:pregnancy") is None
    assert [f.status for f in memory.core.history("health:pregnancy")] == ["ended"]


def test_an_ending_with_nothing_current_changes_nothing() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I'm allergic to peanuts.", "I'm not pregnant any more.")
    assert [f.subject for f in memory.core.active()] == ["allergy:peanuts"]


def test_a_birth_ends_the_pregnancy() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I'm 30 weeks pregnant.", "Our baby was born on Tuesday!")
    assert memory.core.get("birth") is not None
    assert memory.core.get("health:pregnancy") is None
    assert [f.status for f in memory.core.history("health:pregnancy")] == ["ended"]


# --- undo ------------------------------------------------------------------------------------


def test_a_supersession_can_be_undone_from_the_history() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I live in Lisbon.", "I moved to Porto.")
    lisbon = memory.core.history("home_city")[0]
    update = memory.undo_supersession(lisbon.id)
    assert memory.core.get("home_city").content == "lives in Lisbon"
    assert update.superseded is not None and update.superseded.content == "moved to Porto"
    # nothing is lost: three versions, the restored one current
    assert [(f.content, f.status) for f in memory.core.history("home_city")] == [
        ("lives in Lisbon", "superseded"),
        ("moved to Porto", "superseded"),
        ("lives in Lisbon", "active"),
    ]


def test_an_ended_fact_can_be_undone_too() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I work at Google as an engineer.", "I no longer work at Google.")
    (ended,) = memory.core.history("work")
    memory.undo_supersession(ended.id)
    assert "Google" in memory.core.get("work").content


def test_undo_refuses_a_current_or_unknown_version() -> None:
    memory = TieredMemory(context_window=4096)
    said(memory, "I live in Lisbon.")
    current = memory.core.get("home_city")
    with pytest.raises(ValueError, match="nothing to undo"):
        memory.undo_supersession(current.id)
    with pytest.raises(KeyError):
        memory.undo_supersession("no-such-id")
    assert len(memory.core.history("home_city")) == 1


# --- the schema is an option -------------------------------------------------------------


def test_a_user_declared_attribute_through_the_store() -> None:
    schema = AttributeSchema().with_attributes(Attribute("gym", ("gym", "gym_membership")))
    memory = MemoryStore().memory("ana", attributes=schema)
    apply_decision(decide(Candidate("gym", "PureGym"), [], schema=schema), memory.core)
    decision = decide(Candidate("gym_membership", "FitZone"), memory.core.history(), schema=schema)
    apply_decision(decision, memory.core)
    assert memory.core.get("gym").content == "FitZone"
    assert memory.writer.attributes is schema


def test_a_schema_refuses_one_subject_in_two_attributes() -> None:
    with pytest.raises(ValueError, match="belongs to both"):
        AttributeSchema([Attribute("a", ("home",)), Attribute("b", ("home",))])
    with pytest.raises(TypeError, match="AttributeSchema"):
        TieredMemory(context_window=4096, attributes={"home": True})  # type: ignore[arg-type]


def test_the_former_candidate_names_are_the_one_type() -> None:
    assert ExtractedFact is Candidate and FoundFact is Candidate
