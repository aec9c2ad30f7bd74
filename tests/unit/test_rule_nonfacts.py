"""The rules keep other people's words, stories and denials out of the user's facts
(issue 31, round 5): by where the words sit, not by one phrasing at a time."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.extraction import RuleBasedExtractor
from langchain_tiered_memory.write.rules import find_facts
from langchain_tiered_memory.write.rules.filters import other_subject, reported_from
from langchain_tiered_memory.write.writer import MemoryWriter


def _facts(text: str) -> list[tuple[str, str]]:
    return [(f.subject, f.content) for f in find_facts(text) if f.op == "add"]


@pytest.mark.parametrize(
    "text",
    [
        # someone else's words, reported
        "My dad keeps saying we should move to Portugal",
        "my brother reckons I'm allergic to penicillin",
        "Her boss said she works at Deloitte",
        "everyone in my class thinks I'm from Norway",
        "我妈觉得我们应该搬到杭州",
        "我同事说我对花生过敏",
        # a clause about someone else
        "My flatmate just got a job at Google",
        "my cousin has just moved to Leeds",
        "My neighbour recently got a parrot called Mango",
        "She works at the bank on Main Street",
        # a story, a pitch, a text given to edit or translate
        "Novel premise: a baker in Oslo adopts a dog named Pepper.",
        "Game pitch: our hero is allergic to moonlight and lives in Leeds.",
        "Proofread this for me: I am a nurse and I live in Lyon.",
        "Translate into Spanish: I'm allergic to peanuts.",
        "小说设定：主角住在成都，对花生过敏。",
        "帮我润色一下：我在上海当老师。",
    ],
)
def test_words_that_are_not_the_users_give_no_facts(text: str) -> None:
    assert _facts(text) == []


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("My partner and I moved to Leeds", "Leeds"),
        ("my doctor says I have asthma", "asthma"),
        ("My daughter Mia starts school in September", "Mia"),
        ("I love Leeds but my mum says we should move to York. I'm vegan.", "vegan"),
        ("我对花生过敏，我朋友说我应该去看医生", "花生"),
    ],
)
def test_the_users_own_facts_beside_them_stay(text: str, kept: str) -> None:
    assert any(kept in content for _, content in _facts(text))


def test_a_doctors_word_told_as_a_joke_is_not_a_fact() -> None:
    assert reported_from("my GP says I'm allergic to Mondays \U0001f602") == 0
    assert reported_from("my GP says I'm allergic to latex") is None
    assert reported_from("my GP says I'm allergic to Mondays", "my GP says I'm... lol") == 0
    assert _facts("my GP says I'm allergic to Mondays \U0001f923") == []


def test_a_name_given_by_someone_else_to_the_users_pet_stays() -> None:
    extractor = RuleBasedExtractor()
    extractor.extract([Turn(0, (HumanMessage("We got a kitten last week."),))])
    facts = extractor.extract([Turn(1, (HumanMessage("My son named her Pickle."),))])
    assert any("Pickle" in f.content for f in facts)
    assert other_subject("My son named her Pickle") == "son"


def test_a_denial_ends_the_fact_it_denies_and_never_adds_one() -> None:
    # nothing known: nothing written (the allergy's name is not a fact about the user)
    core = CoreMemory()
    MemoryWriter(core).extract([Turn(0, (HumanMessage("I'm not allergic to latex."),))])
    assert not any("latex" in f.content for f in core.active())
    # known: the denial ends it
    core = CoreMemory([CoreFact.new("allergy:latex", "allergic to latex", source_turn=0)])
    MemoryWriter(core).extract(
        [Turn(1, (HumanMessage("turns out I'm not allergic to latex after all"),))]
    )
    assert not any("latex" in f.content for f in core.active())
