"""Forget requests are commands (``write/forget.py``): spotted, matched by their words,
and reported truthfully."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.write import extraction, forget
from langchain_tiered_memory.write.forget import (
    ForgetReport,
    ForgetRequest,
    detect_forget,
    facts_to_forget,
    forget_words,
    text_matches,
)


def test_the_old_import_path_still_works() -> None:
    assert extraction.detect_forget is forget.detect_forget
    assert extraction.ForgetRequest is forget.ForgetRequest


def test_a_request_matches_the_words_of_subject_or_content() -> None:
    facts = [
        CoreFact.new("family:daughter", "has a daughter, Mia"),
        CoreFact.new("home_city", "moved to Lisbon"),
        CoreFact.new("allergy:peanuts", "allergic to peanuts"),
    ]
    assert [f.subject for f in facts_to_forget(ForgetRequest("daughter"), facts)] == [
        "family:daughter"
    ]
    assert [f.content for f in facts_to_forget(ForgetRequest("Lisbon"), facts)] == [
        "moved to Lisbon"
    ]
    assert facts_to_forget(ForgetRequest("Madrid"), facts) == []


def test_every_word_must_be_there() -> None:
    words = forget_words("what I said about the new job")
    assert words == ("new", "job")
    assert not text_matches(words, "a new phone")
    assert text_matches(words, "I got a new job at Acme")
    assert not text_matches(forget_words("art"), "I started a party")  # whole words only
    assert not text_matches(forget_words("work"), "my workshop on Friday")
    assert text_matches(forget_words("my plans"), "the plan for Friday")
    assert text_matches(forget_words("Porto"), "We moved to Porto.")


def test_the_notice_says_what_was_done() -> None:
    request = detect_forget("Forget what I said about Madrid")
    assert request == ForgetRequest("Madrid")
    nothing = ForgetReport().notice()
    assert "Nothing in memory matched" in nothing and "Madrid" not in nothing
    assert "deleted from memory" not in nothing.lower().replace("nothing was deleted", "")
    done = ForgetReport(facts=1, records=2, turns=1).notice()
    assert "1 fact, 2 archived records and 1 conversation turn" in done


def test_forget_in_core_removes_every_version_of_the_subject() -> None:
    core = CoreMemory()
    core.upsert(CoreFact.new("home_city", "lives in Paris"))
    core.upsert(CoreFact.new("home_city", "moved to Lisbon"))
    removed = forget.forget_in_core(core, ForgetRequest("Lisbon"))
    assert {f.content for f in removed} == {"lives in Paris", "moved to Lisbon"}


async def test_forget_about_has_an_async_twin_and_refuses_bad_input() -> None:
    memory = TieredMemory(context_window=4096)
    await memory.aadd_messages([HumanMessage("We moved to Porto."), AIMessage("Nice!")])
    await memory.aadd_messages([HumanMessage("I like jazz."), AIMessage("Me too.")])
    with pytest.raises(ValueError, match="nothing to match"):
        await memory.aforget_about("the")
    with pytest.raises(TypeError, match="string"):
        memory.forget_about(b"Porto")  # type: ignore[arg-type]
    assert len(memory.messages) == 4  # nothing deleted by either
    report = await memory.aforget_about("Porto")
    assert report.found and report.turns == 1 and memory.last_forget is report
    assert [m.content for m in memory.messages] == ["I like jazz.", "Me too."]
