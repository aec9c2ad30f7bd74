from __future__ import annotations

import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.runnables import RunnableLambda

from langchain_tiered_memory.recall.gate import (
    GateDecision,
    LLMGate,
    TermIndex,
    _GateAnswer,
    candidate_entities,
    decide_recall,
    should_recall,
)

ARCHIVE = TermIndex(
    [
        "Caroline went to the LGBTQ support group in May.",
        "Melanie painted a sunrise with her kids.",
        "我上周去了北京出差",
    ]
)


@pytest.mark.parametrize(
    ("message", "signal"),
    [
        ("What did I tell you last time about the venue?", "back_reference"),
        ("Remember the restaurant we picked?", "back_reference"),
        ("When is my sister's birthday?", "about_user"),
        ("What's my sister's name?", "about_user"),
        ("Can you suggest a snack for my flight?", "personal_request"),
        ("Where do I live now?", "about_user"),
        ("Any dinner ideas for me tonight?", "personal_request"),
        ("How is Caroline doing these days?", "known_entity"),
        ("What did Melanie's kids paint?", "known_entity"),
        ("上次我们聊了什么？", "back_reference"),
        ("北京出差怎么样", "known_entity"),
    ],
)
def test_gate_fires_with_its_reason(message: str, signal: str) -> None:
    decision = decide_recall(message, entities=ARCHIVE)
    assert decision.recall, decision
    assert decision.signal == signal
    assert decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "What is 17*23?",
        "Translate 'good night' into French.",
        "Write a haiku about rain.",
        "How do I reverse a linked list?",
        "What's the capital of Peru?",
        "",
        "把'早上好'翻译成英文。",
    ],
)
def test_gate_stays_quiet_on_self_contained_requests(message: str) -> None:
    decision = decide_recall(message, entities=ARCHIVE)
    assert not decision.recall
    assert decision.signal in {"none", "empty"}


def test_names_count_only_if_the_archive_mentions_them() -> None:
    assert decide_recall("Tell me about Zanzibar.", entities=ARCHIVE).recall is False
    assert decide_recall("Tell me about Caroline.", entities=ARCHIVE).recall is True
    assert candidate_entities("What does the SQL GROUP BY clause do?") == []


def test_similarity_signal_is_optional() -> None:
    assert not decide_recall("The sunrise painting", similarity=lambda q: 0.5).recall
    decision = decide_recall("The sunrise painting", similarity=lambda q: 0.93)
    assert decision.recall and decision.signal == "similarity"


def test_router_and_state_forms() -> None:
    decision = decide_recall("When is my trip?")
    assert should_recall({"gate": decision}) == "recall"
    assert should_recall({"gate": decision.to_dict()}) == "recall"
    assert should_recall({"gate": decide_recall("2+2?")}) == "answer"
    assert should_recall({}) == "answer"
    assert json.dumps(decision.to_dict())


def test_llm_gate_and_its_fallback() -> None:
    class Fake(GenericFakeChatModel):
        def with_structured_output(self, schema, **kwargs):  # type: ignore[no-untyped-def]
            return RunnableLambda(lambda _: _GateAnswer(recall=True, reason="asks about plans"))

    decision = LLMGate(Fake(messages=iter([]))).decide("what's up")
    assert decision == GateDecision(True, "asks about plans", "llm", {}, decision.elapsed_ms)

    class Broken(GenericFakeChatModel):
        def with_structured_output(self, schema, **kwargs):  # type: ignore[no-untyped-def]
            return RunnableLambda(lambda _: "not a structured answer")

    gate = LLMGate(Broken(messages=iter([])))
    fallback = gate.decide("What is my sister's name?")
    assert fallback.signal == "about_user" and gate.failures == 1


# --- imperative and indirect personal requests (issue 16) ------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "Recommend a restaurant for tonight.",
        "Suggest a curry recipe for tonight.",
        "Plan a weekend away for the two of us.",
        "Find a quiet cafe nearby.",
        "Write a short bio for the alumni page.",
        "Draft a cover letter for the job.",
        "Write a bedtime story featuring the kids.",
        "Make a packing list for the trip.",
        "Give me a few ideas for the anniversary.",
        "Which phones would you shortlist?",
        "What's on around town this weekend?",
        "Update my CV summary.",
        "帮我写一段自我介绍。",
        "这周末附近有什么好玩的？",
        "明天去机场几点出门合适？",
    ],
)
def test_imperative_and_indirect_personal_requests_fire(message: str) -> None:
    decision = decide_recall(message)
    assert decision.recall, decision
    assert decision.signal in {"personal_request", "about_user"}
    assert "a known fact could change" in decision.reason or "about the user" in decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "Translate 'see you tomorrow' into Italian.",
        "Summarize this: the team met on Tuesday and agreed to wait until next week.",
        "Make this sentence more polite: send me the file now.",
        "把这句话翻译成英文：明天见。",
        "What day of the week was 4 July 1976?",
        "How do I write a good cover letter?",
        "Write a limerick about a tortoise.",
        "Explain how tides work.",
        "给我讲个笑话。",
    ],
)
def test_self_contained_requests_with_personal_looking_words_do_not_fire(message: str) -> None:
    assert not decide_recall(message).recall, decide_recall(message)
