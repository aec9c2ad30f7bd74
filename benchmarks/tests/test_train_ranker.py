"""tiered_memory_bench.train_ranker: the script that trains and validates the shipped ranker."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from types import ModuleType

import numpy as np
import pytest

from langchain_tiered_memory.recall.ranker import FEATURES, LinearRanker
from langchain_tiered_memory.recall.signals import Candidate
from langchain_tiered_memory.records import MemoryRecord
from tiered_memory_bench import train_ranker

STEMS = ("allerg", "peanut", "clara", "wedding", "marri", "dog", "run", "berlin", "whale")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return train_ranker


def test_training_is_deterministic_and_cross_validates(
    script, locomo_fixture, longmemeval_fixture, stem_axis
) -> None:
    embeddings = stem_axis(STEMS)
    first, report = script.train(locomo_fixture, longmemeval_fixture, embeddings, iterations=60)
    second, _ = script.train(locomo_fixture, longmemeval_fixture, embeddings, iterations=60)
    assert first.weights == second.weights and first.features == FEATURES
    assert set(report) == {"cross_validated", "in_sample", "hand_weights"}
    for figures in report.values():
        assert figures["locomo"]["questions"] > 0
        assert 0.0 <= figures["locomo"]["recall@5"] <= 1.0
        assert figures["longmemeval"]["questions"] == 3
    assert first.info["trained"]["data"]["locomo"]["file"] == locomo_fixture.name
    assert LinearRanker.from_dict(first.to_dict()) == first


def test_training_script_writes_a_loadable_file(
    script, locomo_fixture, longmemeval_fixture, tmp_path, monkeypatch, stem_axis, capsys
) -> None:
    monkeypatch.setattr(script, "default_embeddings", lambda **_: stem_axis(STEMS))
    out, report = tmp_path / "ranker.json", tmp_path / "report.json"
    # one conversation: nothing to hold out
    assert script.main(["--locomo", str(locomo_fixture), "--no-write"]) == 2
    assert "two folds" in capsys.readouterr().err
    data = ["--locomo", str(locomo_fixture), "--longmemeval", str(longmemeval_fixture)]
    code = script.main([*data, "--out", str(out), "--report", str(report), "--iterations", "30"])
    assert code == 0
    assert LinearRanker.load(out).features == FEATURES
    assert "cross_validated" in json.loads(report.read_text())


def test_a_question_with_gold_sessions_teaches_which_session_to_find(script) -> None:
    # No candidate is a gold turn, but one is from the gold session: the session-level
    # loss learns from it (the turn-level loss alone has nothing to learn).
    def record(n: int, session: str) -> MemoryRecord:
        return MemoryRecord.new(
            user_id="u", kind="turn", text=f"turn {n}", id=f"t{n}", metadata={"session": session}
        )

    records = [record(0, "gold"), record(1, "other"), record(2, "other"), record(3, "gold")]
    question = script.Query(
        "longmemeval",
        "q1",
        "multi-session",
        "what?",
        datetime(2024, 1, 1, tzinfo=timezone.utc),
        [Candidate(r, 0.5, None) for r in records],
        np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]),
        np.zeros(4),
        [],
        ["gold"],
    )
    settings = {"lme_weight": 1.0, "l2": 1e-3, "iterations": 100, "rate": 0.05}
    ranker = script.fit([question], session_share=0.5, features=("a", "b"), **settings)
    assert ranker.weights[0] > 0 > ranker.weights[1]
    with pytest.raises(ValueError, match="no question has a relevant candidate"):
        script.fit([question], session_share=0.0, features=("a", "b"), **settings)
    with pytest.raises(ValueError, match="session_share"):
        script.fit([question], session_share=1.5, features=("a", "b"), **settings)
