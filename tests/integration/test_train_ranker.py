"""tiered_memory_bench.train_ranker: the script that trains and validates the shipped ranker."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from langchain_tiered_memory.recall.ranker import FEATURES, LinearRanker
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
