from __future__ import annotations

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.extraction import (
    LLMExtractor,
    RuleBasedExtractor,
    _FactList,
    detect_forget,
)
from langchain_tiered_memory.write.importance import rate_importance
from langchain_tiered_memory.write.writer import MemoryWriter


def user_turn(index: int, text: str) -> Turn:
    return Turn(index, (HumanMessage(text), AIMessage("ok")))


# --- offline extractor on real sentences ---------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "subject", "content"),
    [
        (
            "Important: I'm allergic to peanuts, so never suggest satay.",
            "allergy:peanuts",
            "allergic to peanuts",
        ),
        ("By the way, my name is Maya Chen.", "name", "Maya Chen"),
        ("Hi! I'm Maya.", "name", "Maya"),
        ("I live in Paris.", "home_city", "lives in Paris"),
        (
            "Last spring I moved from Lisbon to Berlin.",
            "home_city",
            "moved to Berlin",
        ),
        (
            "I prefer window seats on long flights.",
            "likes:window seats",
            "prefers window seats on long flights",
        ),
        ("I work as a nurse at St Mary's.", "work", "works as a nurse at St Mary's"),
        ("I'm vegetarian, for the record.", "diet", "vegetarian"),
        (
            "My flight to Kyoto is on 14 April at 9:40.",
            "plan:flight",
            "My flight to Kyoto is on 14 April at 9:40",
        ),
        ("我对花生过敏。", "allergy:花生", "对花生过敏"),
        ("我叫李雷。", "name", "李雷"),
        ("我搬到了柏林。", "home_city", "搬到了柏林"),
        ("我住在上海，离公司很近。", "home_city", "住在上海"),
        ("我喜欢爵士乐。", "likes:爵士乐", "喜欢爵士乐"),
    ],
)
def test_rule_based_extractor_on_real_sentences(sentence: str, subject: str, content: str) -> None:
    facts = RuleBasedExtractor().extract_text(sentence, source_turn=7)
    assert [(f.subject, f.content) for f in facts] == [(subject, content)]
    assert facts[0].stated and facts[0].source_turn == 7 and facts[0].confidence >= 0.75


@pytest.mark.parametrize(
    "sentence",
    [
        "Am I allergic to peanuts?",
        "My sister is allergic to cats.",
        "Nice weather today.",
        "I'm thinking of learning the ukulele.",
        "你喜欢爵士乐吗？",
    ],
)
def test_rule_based_extractor_ignores_non_facts(sentence: str) -> None:
    assert RuleBasedExtractor().extract_text(sentence) == []


def test_hedged_statements_are_inferred_and_uncertain() -> None:
    (fact,) = RuleBasedExtractor().extract_text("I think I'm allergic to cats.")
    assert not fact.stated and fact.confidence < 0.75


def test_only_user_messages_are_read() -> None:
    turn = Turn(
        0,
        (
            HumanMessage("Look up the menu."),
            AIMessage("", tool_calls=[{"name": "menu", "args": {}, "id": "c"}]),
            ToolMessage("I'm allergic to nothing. My name is Mallory.", tool_call_id="c"),
            AIMessage("I live in the cloud."),
        ),
    )
    assert RuleBasedExtractor().extract([turn]) == []


# --- promotion, updates, history ------------------------------------------------------


def test_promotion_only_for_stated_confident_facts() -> None:
    writer = MemoryWriter(CoreMemory())
    result = writer.extract(
        [user_turn(0, "I'm allergic to peanuts. I think I'm allergic to cats.")]
    )
    assert [u.fact.content for u in result.promoted] == ["allergic to peanuts"]
    assert [f.content for f in result.possible] == ["allergic to cats"]
    assert [f.content for f in writer.core.active()] == ["allergic to peanuts"]


def test_paris_then_berlin_keeps_history() -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([user_turn(2, "I live in Paris.")])
    result = writer.extract([user_turn(40, "I moved to Berlin.")])
    (update,) = result.promoted
    assert update.superseded is not None and update.superseded.content == "lives in Paris"
    assert writer.core.get("home_city").content == "moved to Berlin"
    history = writer.core.history("home_city")
    assert [(f.content, f.status) for f in history] == [
        ("lives in Paris", "superseded"),
        ("moved to Berlin", "active"),
    ]
    assert history[0].superseded_by == history[1].id
    assert history[0].reason == "superseded by turn 40"
    assert "Berlin" in writer.core.render() and "Paris" not in writer.core.render()


def test_restating_is_not_a_new_version() -> None:
    writer = MemoryWriter(CoreMemory())
    writer.extract([user_turn(0, "I live in Paris.")])
    result = writer.extract([user_turn(1, "I live in Paris.")])
    assert result.promoted == [] and len(writer.core.history("home_city")) == 1


def test_each_turn_is_extracted_once_whichever_view_adds_the_next() -> None:
    # the watermark lives in the store: a second view of the thread does not extract
    # the first view's turn again
    first = TieredMemory(context_window=4096)
    first.add_messages([HumanMessage("I live in Paris."), AIMessage("ok")])
    second = TieredMemory(context_window=4096, store=first.store)
    second.add_messages([HumanMessage("I moved to Berlin."), AIMessage("ok")])
    first.add_messages([HumanMessage("And now?"), AIMessage("?")])  # Paris is not read again
    history = first.core.history("home_city")
    assert [(f.content, f.status) for f in history] == [
        ("lives in Paris", "superseded"),
        ("moved to Berlin", "active"),
    ]
    assert first.head.extracted_through == 2


# --- forgetting -------------------------------------------------------------------------


def _said(memory: TieredMemory, *texts: str) -> None:
    for text in texts:
        memory.add_messages([HumanMessage(text), AIMessage("ok")])


def test_forget_that_deletes_the_latest_fact_and_its_history() -> None:
    memory = TieredMemory(context_window=4096)
    _said(memory, "I'm allergic to peanuts.", "I live in Paris.", "I moved to Berlin.")
    _said(memory, "Please forget that.")
    assert memory.core.history("home_city") == []
    assert memory.core.get("allergy:peanuts") is not None


def test_forget_about_a_topic_and_everything() -> None:
    memory = TieredMemory(context_window=4096)
    _said(memory, "I'm allergic to peanuts. My flight is on 3 May.")
    _said(memory, "Forget what I said about my flight.")
    assert memory.core.get("plan:flight") is None
    assert memory.core.get("allergy:peanuts") is not None
    _said(memory, "Delete everything you know about me.")
    assert memory.core.active() == []


def test_forget_requests_are_not_re_extracted() -> None:
    memory = TieredMemory(context_window=4096)
    _said(memory, "I live in Paris.", "Please forget that I live in Paris.")
    assert memory.core.active() == []


def test_detect_forget() -> None:
    assert detect_forget("please forget that").target is None
    assert detect_forget("忘掉我的地址").target == "我的地址"
    assert detect_forget("I forgot my umbrella") is None


# --- the LLM path with a fake structured-output model ------------------------------------


class FakeStructured(GenericFakeChatModel):
    """A fake chat model whose structured output returns queued fact lists."""

    outputs: list = []  # noqa: RUF012 - a pydantic field, copied per instance
    seen_prompts: list = []  # noqa: RUF012

    def with_structured_output(self, schema, **kwargs):  # type: ignore[no-untyped-def]
        def respond(messages):  # type: ignore[no-untyped-def]
            self.seen_prompts.append(messages[0].content)
            item = self.outputs.pop(0)
            if isinstance(item, Exception):
                raise item
            return schema.model_validate(item)

        return RunnableLambda(respond)


def test_llm_extractor_batches_and_promotes() -> None:
    fake = FakeStructured(
        messages=iter([]),
        outputs=[
            {
                "facts": [
                    {
                        "subject": "allergy",
                        "content": "allergic to peanuts",
                        "category": "fact",
                        "confidence": 0.95,
                        "stated": True,
                        "source_turn": 1,
                    },
                    {
                        "subject": "mood",
                        "content": "seems stressed about moving",
                        "category": "fact",
                        "confidence": 0.4,
                        "stated": False,
                        "source_turn": 2,
                    },
                ]
            }
        ],
        seen_prompts=[],
    )
    writer = MemoryWriter(CoreMemory(), extractor=LLMExtractor(fake), batch_turns=4)
    turns = [user_turn(i, f"turn {i}: I'm allergic to peanuts") for i in range(3)]
    for i in range(3):  # the caller passes every turn not extracted yet
        result = writer.extract(turns[: i + 1])
        assert not result.extracted and result.promoted == []
    assert writer.calls == 0  # still batching
    result = writer.extract([*turns, user_turn(3, "moving is tiring")])
    assert writer.calls == 1 and result.extracted
    assert [u.fact.content for u in result.promoted] == ["allergic to peanuts"]
    # the model's bare "allergy" is a many-valued attribute: the value keys it
    assert [u.fact.subject for u in result.promoted] == ["allergy:peanuts"]
    assert [f.content for f in result.possible] == ["seems stressed about moving"]
    assert "[t3] user: moving is tiring" in fake.seen_prompts[0]


def test_llm_extraction_failure_keeps_turns_pending_and_retries() -> None:
    fake = FakeStructured(
        messages=iter([]),
        outputs=[
            TimeoutError("model timed out"),
            {
                "facts": [
                    {
                        "subject": "home_city",
                        "content": "lives in Oslo",
                        "category": "fact",
                        "confidence": 0.9,
                        "stated": True,
                        "source_turn": 0,
                    }
                ]
            },
        ],
        seen_prompts=[],
    )
    writer = MemoryWriter(CoreMemory(), extractor=LLMExtractor(fake), batch_turns=2)
    turns = [user_turn(0, "I live in Oslo"), user_turn(1, "hello")]
    failed = writer.extract(turns)
    assert failed.extraction_failed and not failed.extracted  # the caller keeps both turns
    assert writer.core.active() == []
    writer.extract([*turns, user_turn(2, "more")], flush=True)
    assert writer.core.get("home_city").content == "lives in Oslo"
    assert "[t0] user: I live in Oslo" in fake.seen_prompts[1]


def test_llm_extractor_rejects_malformed_output() -> None:
    with pytest.raises(ValueError, match="malformed"):
        LLMExtractor._convert({"facts": []}, [])
    assert LLMExtractor._convert(_FactList(facts=[]), []) == []


# --- importance and core capacity ---------------------------------------------------------


def test_importance_heuristic_orders_memories() -> None:
    assert rate_importance("I'm allergic to penicillin") >= 9
    assert rate_importance("ok cool") <= 2
    assert rate_importance("haha", category="plan") >= 6


def test_core_over_its_cap_moves_least_important_out(counter) -> None:
    core = CoreMemory(
        [
            CoreFact.new("allergy", "allergic to peanuts", importance=9),
            CoreFact.new("likes:jazz", "likes jazz", importance=4),
            CoreFact.new("name", "Maya", importance=7.5),
        ]
    )
    cap = counter.count_text(core.render()) - 5
    moved = core.shrink_to(cap, counter)
    assert [f.subject for f in moved] == ["likes:jazz"]
    assert moved[0].status == "archived"
    assert {f.subject for f in core.active()} == {"allergy", "name"}
    assert len(core.history()) == 3  # moved, not vanished


def test_core_round_trips_and_validates() -> None:
    core = CoreMemory()
    core.upsert(CoreFact.new("home_city", "lives in Paris"))
    core.upsert(CoreFact.new("home_city", "moved to Berlin"))
    again = CoreMemory.from_dicts(core.to_dicts())
    assert [f.content for f in again.history("home_city")] == ["lives in Paris", "moved to Berlin"]
    with pytest.raises(ValueError, match="block"):
        CoreFact.new("x", "y", block="secret")
    with pytest.raises(ValueError, match="non-empty"):
        CoreFact.new(" ", "y")


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("My name is Ana.", [("name", "Ana")]),
        ("Hi, I'm Ana.", [("name", "Ana")]),
        ("Please remember that.", []),
        ("remember it", []),
    ],
)
def test_extractor_edge_cases(sentence: str, expected: list) -> None:
    assert [(f.subject, f.content) for f in RuleBasedExtractor().extract_text(sentence)] == expected
