"""The offline extractor on facts said in passing, in English and Chinese.

The sentences are written for these tests (none comes from a benchmark file).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.extraction import RuleBasedExtractor
from langchain_tiered_memory.write.fact_rules import find_facts, normalise_message, strip_quoted
from langchain_tiered_memory.write.writer import MemoryWriter, resolve_subject


def facts_of(text: str, previous: str = "") -> dict[str, str]:
    return {f.subject: f.content for f in find_facts(text, previous=previous) if not f.hedged}


def user_turn(index: int, text: str) -> Turn:
    return Turn(index, (HumanMessage(text), AIMessage("ok")))


# --- what is caught -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subject", "value"),
    [
        # health and diet
        ("Heads up, I can't eat gluten. Anyway, what's a roux?", "avoids:gluten", "gluten"),
        ("Prawns make me really ill, so no seafood paella.", "avoids:prawns", "prawns"),
        ("No dairy for me please, it upsets my stomach.", "avoids:dairy", "dairy"),
        ("i'm vegan now btw, how do I make oat milk?", "diet", "vegan"),
        ("I've gone fully vegetarian since the new year.", "diet", "vegetarian"),
        ("allergic to latex, found out at the dentist.", "allergy:latex", "latex"),
        ("I have a nut allergy, so please check labels.", "allergy:nut", "nut"),
        ("I'm 30 weeks pregnant and tired all the time.", "health:pregnancy", "30 weeks"),
        ("I have epilepsy, so strobe lights are out.", "health:epilepsy", "epilepsy"),
        ("I take metformin twice a day with food.", "medication:metformin", "metformin"),
        # people and pets
        ("My husband's name is Idris and he hates surprises.", "family:husband", "Idris"),
        ("Our cat is called Miso and she sheds everywhere.", "pet:cat", "Miso"),
        ("Remember that my brother is called Tiago.", "family:brother", "Tiago"),
        ("We adopted a puppy and named her Olive.", "pet:dog", "Olive"),
        ("my son Arlo starts school in September", "family:son", "Arlo"),
        # identity, home, work
        ("I'm 47 and new to cycling.", "age", "47"),
        ("I just turned 29, feeling old.", "age", "29"),
        ("I live in Ghent, right by the canal.", "home_city", "Ghent"),
        ("We relocated to Porto over the summer.", "home_city", "Porto"),
        ("I work as a radiographer at the county hospital.", "work", "radiographer"),
        ("I'm a secondary school maths teacher.", "work", "maths teacher"),
        ("As a junior architect I draw a lot of stairs.", "work", "architect"),
        # how to answer
        ("Please always answer in German from now on.", "answer_language", "German"),
        ("Could you reply in Japanese? I'm practising.", "answer_language", "Japanese"),
        ("Bullet points please, always - easier on my phone.", "answer_format", "bullet"),
        ("Keep your answers short please.", "answer_length", "short"),
        ("Use metric units with me please.", "units", "metric"),
        ("I'm on Central European time, fyi.", "timezone", "Central"),
        ("I speak Greek and a little Arabic.", "speaks:arabic", "Arabic"),
        # plans and numbers
        ("I'm moving to Oslo next month for work.", "plan:move", "Oslo"),
        ("My flight to Rome is on 9 May at 7:15.", "plan:flight", "7:15"),
        ("The dentist appointment is on Friday at 3pm.", "plan:dentist", "Friday"),
        ("Our budget for the new fridge is 700 euros.", "budget:fridge", "700"),
        ("I drive a 2012 Ford Focus estate.", "car", "Ford Focus"),
        ("My email is kim.ortega@example.org if you need it.", "email", "kim.ortega@example.org"),
        # likes and hobbies
        ("Honestly I hate olives, they taste of feet.", "likes:olives", "dislikes olives"),
        ("I go bouldering twice a week.", "hobby:bouldering", "bouldering"),
    ],
)
def test_english_facts_said_in_passing(text: str, subject: str, value: str) -> None:
    found = facts_of(text)
    assert subject in found, found
    assert value.lower() in found[subject].lower()


@pytest.mark.parametrize(
    ("text", "subject", "value"),
    [
        ("我对虾过敏，一吃就起疹子。", "allergy:虾", "虾"),
        ("我吃素，已经五年了。", "diet", "吃素"),
        ("我女儿叫小雨，今年六岁。", "family:女儿", "小雨"),
        ("我们家的狗叫旺财。", "pet:狗", "旺财"),
        ("我今年45岁，最近开始跑步。", "age", "45"),
        ("我住在成都，夏天特别热。", "home_city", "成都"),
        ("我们上个月搬到了厦门。", "home_city", "厦门"),
        ("我在一家医院当护士。", "work", "护士"),
        ("请一直用英文回复我。", "answer_language", "英文"),
        ("我的航班是下周二早上9点。", "plan:航班", "9点"),
        ("我的手机号是13912345678。", "phone", "13912345678"),
    ],
)
def test_chinese_facts_said_in_passing(text: str, subject: str, value: str) -> None:
    found = facts_of(text)
    assert subject in found, found
    assert value in found[subject]


def test_a_name_given_in_the_next_message_finds_its_animal() -> None:
    previous = "We brought a rescue greyhound home on Sunday."
    assert facts_of("forgot to say, the kids named her Pixie.", previous) == {
        "pet:dog": "greyhound is called Pixie"
    }
    assert facts_of("The rabbit (his name's Boris) chews cables.") == {
        "pet:rabbit": "rabbit is called Boris"
    }


# --- what stays out ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Should I move to Madrid next year?",
        "Am I allergic to penicillin if my mum is?",
        "If I were vegan, what would I eat for protein?",
        "Imagine I'm a pilot - how would jet lag feel?",
        "Let's role-play: you're a barista and I'm Marco, a customer who hates milk.",
        "Oh sure, I'm a millionaire, that's why I'm asking about cheap pasta.",
        "My colleague is allergic to dogs, so no office pets.",
        "My sister lives in Bergen and works as a nurse.",
        "I thought about going keto but nah, too much cheese.",
        "We considered moving to Dublin but decided to stay put.",
        "Proofread this: 'I live in Leeds and I'm a vet with two cats.'",
        "Does anyone who speaks Italian find Spanish easy?",
        "假如我住在伦敦，房租大概多少？",
        "我朋友对猫过敏，所以我们不养猫。",
        "本来想去大理开客栈，后来想想还是算了。",
        "你喜欢爵士乐吗？",
    ],
)
def test_non_facts_stay_out(text: str) -> None:
    assert facts_of(text) == {}


def test_hedged_clauses_are_not_stated() -> None:
    (fact,) = find_facts("I think I'm allergic to kiwi.")
    assert fact.hedged and fact.subject == "allergy:kiwi"


def test_escaped_and_quoted_text_is_read_plainly() -> None:
    assert normalise_message("I love &quot;spicy&quot; food &amp; more") == (
        'I love "spicy" food & more'
    )
    (fact,) = find_facts("I love &quot;spicy&quot; food.")
    assert fact.content == "loves spicy food" and "&" not in fact.content
    assert strip_quoted("Translate: 'I am allergic to cats.'") == "Translate:"


# --- updates supersede cleanly -------------------------------------------------------


def test_dislike_supersedes_the_like() -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([user_turn(0, "I love coffee, two cups a day.")])
    writer.extract([user_turn(1, "I don't like coffee anymore.")])
    active = {f.subject: f.content for f in writer.core.active()}
    assert active == {"likes:coffee": "no longer likes coffee"}
    assert [f.status for f in writer.core.history("likes:coffee")] == ["superseded", "active"]


def test_no_longer_live_there_then_the_new_city() -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([user_turn(0, "I live in Berlin.")])
    writer.extract([user_turn(1, "I no longer live in Berlin; I live in Munich.")])
    assert [f.content for f in writer.core.active()] == ["lives in Munich"]
    assert "Berlin" not in writer.core.render()


@pytest.mark.parametrize(
    ("first", "second", "subject", "now", "old"),
    [
        ("I'm vegetarian.", "Actually I'm vegan now.", "diet", "vegan", "vegetarian"),
        (
            "I work as a barista.",
            "I started as a paralegal at Kerr & Co.",
            "work",
            "paralegal",
            "barista",
        ),
        (
            "We named the kitten Toast.",
            "The kids renamed the kitten Bean.",
            "pet:cat",
            "Bean",
            "Toast",
        ),
        (
            "Please answer in French.",
            "Answers in English again from now on please.",
            "answer_language",
            "English",
            "French",
        ),
        (
            "My laptop budget is 500 pounds.",
            "I can go up to 750 now.",
            "budget:laptop",
            "750",
            "500",
        ),
        (
            "My check-up is on Monday at 9am.",
            "They moved my check-up to Thursday at 2pm.",
            "plan:check-up",
            "Thursday",
            "Monday",
        ),
        ("我住在杭州。", "我们搬到了南京。", "home_city", "南京", "杭州"),
    ],
)
def test_updates_supersede(first: str, second: str, subject: str, now: str, old: str) -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([user_turn(0, first)])
    writer.extract([user_turn(1, second)])
    current = writer.core.get(subject)
    assert current is not None and now in current.content
    assert old not in writer.core.render()
    assert [f.status for f in writer.core.history(subject)][-1] == "active"


def test_resolve_subject_points_back() -> None:
    core = CoreMemory(
        [
            CoreFact.new("plan:dentist", "dentist check-up on Friday"),
            CoreFact.new("usual", "go-to gym: Fitzone"),
        ]
    )
    assert resolve_subject("plan:check-up", core) == "plan:dentist"
    assert resolve_subject("plan:flight", core) == "plan:flight"  # nothing to point at
    assert resolve_subject("~fitzone", core) == "usual"
    assert resolve_subject("budget:*", core) == "budget"


def test_the_extractor_keeps_the_previous_message_as_context() -> None:
    extractor = RuleBasedExtractor()
    extractor.extract([user_turn(0, "We got a tortoise last week.")])
    (fact,) = extractor.extract([user_turn(1, "My daughter named him Sheldon.")])
    assert (fact.subject, fact.content) == ("pet:tortoise", "tortoise is called Sheldon")
