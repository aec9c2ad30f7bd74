"""The QA bench, driven by fake answer and judge models on the fixture conversation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.values.turns import message_text
from tiered_memory_bench.datasets import load_locomo
from tiered_memory_bench.qa import parse_judge_label, run_qa_bench

EMBED = DeterministicFakeEmbedding(size=32)


def _reply(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


class FromPromptModel(BaseChatModel):
    """Answers with the gold answer only if every part of it is in the memory context.

    The context is everything but the last message (which holds the question),
    so an answer is right only when the memory put the fact in the prompt.
    """

    gold: dict[str, str]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "from-prompt"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(messages)
        first_line = message_text(messages[-1]).splitlines()[0]
        question = first_line.split(": ", 1)[1]
        context = "\n".join(message_text(m) for m in messages[:-1]).lower()
        gold = self.gold[question]
        parts = [p.strip().lower() for p in gold.split(",")]
        return _reply(gold if all(p in context for p in parts) else "I don't know")


class FakeJudge(BaseChatModel):
    """CORRECT when the gold answer is in the generated one; canned replies by question."""

    replies: dict[str, str] = Field(default_factory=dict)
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "fake-judge"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        text = message_text(messages[-1])
        self.prompts.append(text)
        # the prompt's worked example has its own "Gold answer:"; take the last ones
        question = re.findall(r"^Question: (.*)$", text, re.M)[-1]
        gold = re.findall(r"^Gold answer: (.*)$", text, re.M)[-1]
        generated = re.findall(r"^Generated answer: (.*)$", text, re.M)[-1]
        if question in self.replies:
            return _reply(self.replies[question])
        label = "CORRECT" if gold.lower() in generated.lower() else "WRONG"
        return _reply(f"The answers agree or not.\n```json\n{json.dumps({'label': label})}\n```")


@pytest.fixture(scope="module")
def conversations(locomo_fixture):
    return load_locomo(locomo_fixture)


def _gold(conversations) -> dict[str, str]:
    return {q.question: q.answer for c in conversations for q in c.questions}


def test_answers_come_from_the_memory_context_and_accuracy_adds_up(conversations) -> None:
    model = FromPromptModel(gold=_gold(conversations), prompts=[])
    report = run_qa_bench(
        conversations, model=model, judge=FakeJudge(), context_window=2048, embeddings=EMBED
    )
    rows = {r["question"]: r for r in report["per_question"]}
    assert report["questions"] == len(model.prompts) == 5
    # the allergy (turn 1) is long out of the buffer at a 2,048 window: it reached the
    # answer model through the memory (core memory, summary or recall)
    allergy = next(p for p in model.prompts if "allergic to?" in message_text(p[-1]))
    context = "\n".join(message_text(m) for m in allergy[:-1])
    assert "peanuts" in context
    assert "allergic to peanuts" not in message_text(allergy[-1])
    assert rows["What is Ana allergic to?"]["label"] == "CORRECT"
    assert rows["Where does Ana live now?"]["label"] == "CORRECT"
    correct = sum(r["label"] == "CORRECT" for r in report["per_question"])
    assert 0 < correct < 5  # "Max, Tuesdays" is not verbatim in any memory
    assert report["correct"] == correct
    assert report["accuracy"] == round(correct / 5, 4)
    assert {k: v["questions"] for k, v in report["by_category"].items()} == {
        "1 multi-hop": 1,
        "2 temporal": 1,
        "3 open-domain": 1,
        "4 single-hop": 2,
    }
    single = [r for r in report["per_question"] if r["category"] == 4]
    assert report["by_category"]["4 single-hop"]["accuracy"] == round(
        sum(r["label"] == "CORRECT" for r in single) / 2, 4
    )
    assert report["judge_failures"] == 0
    # the prompt, question included, stays within window - output, counted exactly
    assert report["budget_violations"] == 0
    assert all(r["prompt_tokens"] <= report["input_budget_tokens"] for r in rows.values())
    assert report["prompt_tokens_p50"] <= report["prompt_tokens_p95"] <= report["prompt_tokens_max"]
    assert report["model"] == "FromPromptModel" and report["judge"] == "FakeJudge"


def test_without_the_fact_in_the_conversation_the_answer_is_wrong(conversations) -> None:
    # control: the same run on a conversation where nobody mentions the allergy
    from dataclasses import replace

    conv = conversations[0]
    sessions = list(conv.sessions)
    first = sessions[0]
    turns = tuple(
        replace(t, text="I had a quiet week.") if "peanut" in t.text else t for t in first.turns
    )
    sessions[0] = replace(first, turns=turns)
    blank = replace(conv, sessions=tuple(sessions))
    model = FromPromptModel(gold=_gold(conversations), prompts=[])
    report = run_qa_bench(
        [blank], model=model, judge=FakeJudge(), context_window=2048, embeddings=EMBED, limit=1
    )
    assert report["per_question"][0]["answer"] == "I don't know"
    assert report["accuracy"] == 0.0


def test_the_question_is_reserved_in_the_budget() -> None:
    # long turns fill every section; the question must still fit in window - output
    from tiered_memory_bench.datasets import (
        DialogTurn,
        LocomoConversation,
        LocomoQuestion,
        Session,
    )

    text = "Ana grows 12 basil plants on her balcony in Porto every summer since 2019. " * 4
    turns = tuple(
        DialogTurn("Ana" if i % 2 == 0 else "Ben", f"D1:{i + 1}", f"{text}({i})") for i in range(80)
    )
    question = LocomoQuestion(
        "What does Ana grow on her balcony in Porto every summer since 2019, and how many?",
        "basil",
        ("D1:1",),
        4,
    )
    conv = LocomoConversation("c", "Ana", "Ben", (Session(1, "8 May 2023", turns),), (question,))
    report = run_qa_bench(
        [conv],
        model=FromPromptModel(gold={question.question: "basil"}, prompts=[]),
        judge=FakeJudge(prompts=[]),
        context_window=2048,
        embeddings=EMBED,
    )
    tokens = report["per_question"][0]["prompt_tokens"]
    assert report["input_budget_tokens"] - 250 < tokens <= report["input_budget_tokens"]
    assert report["budget_violations"] == 0


def test_unparseable_verdicts_count_as_wrong_and_are_counted(conversations) -> None:
    judge = FakeJudge(
        replies={
            "What is Ana allergic to?": "I think the answer is fine.",
            "Where does Ana live now?": '{"label": "CORRECT"}',
            "What did Ana bake?": "Both CORRECT and WRONG apply.",
        },
        prompts=[],
    )
    report = run_qa_bench(
        conversations,
        model=FromPromptModel(gold=_gold(conversations), prompts=[]),
        judge=judge,
        context_window=4096,
        embeddings=EMBED,
    )
    rows = {r["question"]: r for r in report["per_question"]}
    assert report["judge_failures"] == 2
    assert rows["What is Ana allergic to?"]["label"] == "WRONG"
    assert rows["What is Ana allergic to?"]["judge_failure"] is True
    assert rows["What did Ana bake?"]["label"] == "WRONG"
    assert rows["Where does Ana live now?"]["label"] == "CORRECT"
    assert report["correct"] == sum(r["label"] == "CORRECT" for r in rows.values())
    # the judge saw Mem0's prompt with this question's gold and generated answers
    prompt = next(p for p in judge.prompts if "Question: Where does Ana live now?" in p)
    assert "Gold answer: Berlin" in prompt and "Generated answer: Berlin" in prompt
    assert '"label"' in prompt


def test_category_5_is_left_out_and_limit_caps_questions(locomo_fixture, tmp_path) -> None:
    raw = json.loads(locomo_fixture.read_text())
    raw[0]["qa"].insert(
        0, {"question": "What is Ben allergic to?", "adversarial_answer": "cats", "category": 5}
    )
    path = tmp_path / "with_adversarial.json"
    path.write_text(json.dumps(raw))
    convs = load_locomo(path)
    model = FromPromptModel(gold=_gold(convs), prompts=[])
    report = run_qa_bench(convs, model=model, judge=FakeJudge(), embeddings=EMBED, limit=2)
    assert [r["question"] for r in report["per_question"]] == [
        "What is Ana allergic to?",
        "When is Clara's wedding?",
    ]
    assert "5 adversarial" not in report["by_category"]


def test_a_failing_answer_model_is_a_wrong_answer_counted_apart(conversations) -> None:
    class Broken(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "broken"

        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise RuntimeError("rate limited")

    judge = FakeJudge(prompts=[])
    report = run_qa_bench(conversations, model=Broken(), judge=judge, embeddings=EMBED, limit=2)
    assert report["answer_failures"] == 2 and report["accuracy"] == 0.0
    assert report["judge_failures"] == 0 and judge.prompts == []
    assert "rate limited" in report["per_question"][0]["error"]


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "CORRECT"}', "CORRECT"),
        ('Reasoning: same city.\n```json\n{"label": "WRONG"}\n```', "WRONG"),
        ('{"Label": " correct "}', "CORRECT"),
        ("Same date in another format. CORRECT", "CORRECT"),
        ("", None),
        ('{"label": "PARTIAL"}', None),
        ("CORRECT or WRONG", None),
        ("{not json} and no label", None),
    ],
)
def test_parse_judge_label(reply: str, label: str | None) -> None:
    assert parse_judge_label(reply) == label


def test_cli_runs_with_named_models(locomo_fixture, tmp_path, monkeypatch) -> None:
    import langchain_tiered_memory.embeddings as embeddings
    import tiered_memory_bench.qa as qa

    convs = load_locomo(locomo_fixture)
    made: dict[str, BaseChatModel] = {
        "fake:answer": FromPromptModel(gold=_gold(convs), prompts=[]),
        "fake:judge": FakeJudge(prompts=[]),
    }
    monkeypatch.setattr(qa, "resolve_model", lambda spec: made[spec])
    monkeypatch.setattr(embeddings, "default_embeddings", lambda *a, **k: EMBED)
    out = tmp_path / "qa.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "qa",
            "--dataset",
            "locomo",
            "--data",
            str(locomo_fixture),
            "--model",
            "fake:answer",
            "--judge",
            "fake:judge",
            "--limit",
            "3",
            "--context-window",
            "2048",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["model"] == "fake:answer" and report["judge"] == "fake:judge"
    assert report["questions"] == 3
    assert {"accuracy", "by_category", "prompt_tokens_p95", "answer_ms_p95", "seconds"} <= set(
        report
    )
    assert "accuracy by category" in result.output
