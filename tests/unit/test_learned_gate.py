"""The learned recall gate (issue 31): the rules first, then a logistic model over the
prompt's embedding for requests a stored fact could change."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.embeddings import MiniLMEmbeddings
from langchain_tiered_memory.embeddings.logistic import Logistic
from langchain_tiered_memory.recall.gate import (
    LearnedGate,
    decide_recall,
    gate_decision,
    gate_from,
)
from langchain_tiered_memory.recall.learned_gate import (
    GateExamples,
    fit_gate_model,
    fits_weights,
    gate_examples,
    model_applies,
)

ROOT = Path(__file__).resolve().parents[2]


class Counting(Embeddings):
    """A fake embedder that counts the texts it embeds."""

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=8)
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.texts.append(text)
        return self.inner.embed_query(text)


def constant(p_logit: float) -> Logistic:
    """A model that gives sigmoid(p_logit) for every text."""
    return Logistic(np.zeros(8), p_logit, np.zeros(8), np.ones(8))


# -- the decision, with a fake embedder and a fixed model --------------------------


def test_the_model_fires_where_the_rules_do_not() -> None:
    message = "Draft a message reminding everyone about Thursday."
    assert not decide_recall(message).recall  # the miss this gate is for
    decision = LearnedGate(Counting(), model=constant(3.0)).decide(message)
    assert decision.recall and decision.signal == "learned"
    assert decision.details["p"] == pytest.approx(1 / (1 + np.exp(-3.0)), abs=1e-4)
    assert "p=0.95" in decision.reason


def test_below_the_threshold_the_rules_answer_stands() -> None:
    message = "Draft a message reminding everyone about Thursday."
    decision = LearnedGate(Counting(), model=constant(0.0), threshold=0.7).decide(message)
    assert not decision.recall
    assert decision.signal == decide_recall(message).signal
    assert decision.details["p"] == pytest.approx(0.5)
    assert LearnedGate(Counting(), model=constant(0.0), threshold=0.5).decide(message).recall


def test_rules_that_fire_answer_without_an_embedding() -> None:
    embedder = Counting()
    decision = LearnedGate(embedder, model=constant(-5.0)).decide("What did I say last time?")
    assert decision.recall and decision.signal == "back_reference"
    assert embedder.texts == []


@pytest.mark.parametrize(
    "message",
    [
        "Translate 'see you on Thursday' into French.",
        "Proofread this: the parents is coming at six.",
        "帮我看看这周末干什么好",  # Chinese: MiniLM is English, the rules decide
        "",
    ],
)
def test_transformations_and_chinese_never_reach_the_model(message: str) -> None:
    embedder = Counting()
    decision = LearnedGate(embedder, model=constant(5.0)).decide(message)
    assert decision == decide_recall(message) or decision.recall == decide_recall(message).recall
    assert decision.signal != "learned"
    assert embedder.texts == []


def test_model_applies() -> None:
    assert model_applies("Write a welcome note for the new neighbours.")
    assert not model_applies("Summarise this: the bridge is closed.")
    assert not model_applies("车该多久保养一次？")


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5])
def test_a_bad_threshold_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        LearnedGate(Counting(), model=constant(0.0), threshold=threshold)


# -- modes ----------------------------------------------------------------------------


def test_gate_from_learned_shares_only_the_embedder_it_was_fitted_on() -> None:
    fake = DeterministicFakeEmbedding(size=384)
    gate = gate_from("learned", embeddings=fake)
    assert isinstance(gate, LearnedGate)
    assert gate._embeddings is None  # not the fake: the model was fitted on MiniLM
    assert not fits_weights(fake)
    own = LearnedGate(Counting(), model=constant(0.0))
    assert gate_from(own) is own


def test_gate_decision_dispatches_to_a_learned_gate() -> None:
    gate = LearnedGate(Counting(), model=constant(4.0))
    assert gate_decision(gate, "Make a revision timetable.").signal == "learned"
    assert gate_decision("auto", "Make a revision timetable.").signal != "learned"


def test_the_memory_takes_the_learned_gate() -> None:
    memory = TieredMemory(context_window=4096, gate="learned")
    assert isinstance(memory.gate, LearnedGate)
    assert memory.gate.threshold == 0.7
    with pytest.raises(TypeError, match="learned"):
        TieredMemory(context_window=4096, gate=3)  # type: ignore[arg-type]


# -- data and fitting -----------------------------------------------------------------


def test_examples_split_in_halves() -> None:
    every = gate_examples()
    even, odd = gate_examples(part="even"), gate_examples(part="odd")
    assert len(even.texts) + len(odd.texts) == len(every.texts)
    assert not set(even.texts) & set(odd.texts)
    assert set(every.labels) == {0, 1}
    assert len(gate_examples(languages=("en", "zh")).texts) > len(every.texts)
    with pytest.raises(ValueError, match="part"):
        gate_examples(part="first")


def test_fit_needs_both_labels() -> None:
    with pytest.raises(ValueError, match="both"):
        fit_gate_model(DeterministicFakeEmbedding(size=8), GateExamples(["plan my week"], [1]))


def _benchmark_questions() -> set[str]:
    """Every question of the dev facts files shipped in the repo, and the self-contained
    requests (the blind r5 file is deliberately not read)."""
    data = ROOT / "benchmarks" / "tiered_memory_bench" / "data"
    found = set(json.loads((data / "self_contained.json").read_text(encoding="utf-8")))
    files = [data / f"facts_blind_r{n}.json" for n in (1, 2, 3, 4)]
    files.append(ROOT / "tests" / "fixtures" / "facts_heldout.json")
    for path in files:
        if path.exists():
            items = json.loads(path.read_text(encoding="utf-8"))["items"]
            found.update(item["question"] for item in items)
    return {q.strip().lower() for q in found}


def test_training_requests_are_not_benchmark_questions() -> None:
    ex = gate_examples(languages=("en", "zh"))
    assert len(set(ex.texts)) == len(ex.texts), "a request is labelled twice"
    overlap = {t for t in ex.texts if t.strip().lower() in _benchmark_questions()}
    assert not overlap, f"benchmark questions in the training data: {sorted(overlap)}"


# -- the shipped model on the real embedder -------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> LearnedGate:
    return LearnedGate(MiniLMEmbeddings(max_length=64))


@pytest.mark.parametrize(
    "message",
    [
        "Write a note for the swim squad about the gala.",
        "What is the PIN for the storage unit?",
        "Write a reminder for the choir about the concert.",
        "When is the next service due for the van?",
    ],
)
def test_shipped_model_fires_on_requests_the_rules_miss(shipped: LearnedGate, message: str) -> None:
    assert not decide_recall(message).recall
    decision = shipped.decide(message)
    assert decision.recall and decision.signal == "learned", decision


@pytest.mark.parametrize(
    "message",
    [
        "What is 56 times 12?",
        "Who discovered gravity?",
        "Write a haiku about snow.",
        "Explain what an API is.",
    ],
)
def test_shipped_model_stays_off_self_contained_requests(
    shipped: LearnedGate, message: str
) -> None:
    assert not shipped.decide(message).recall
