"""tiered_memory_bench.recall_levers: every lever runs and is validated the way the ranker is."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from tiered_memory_bench import recall_levers

STEMS = ("allerg", "peanut", "clara", "wedding", "marri", "dog", "run", "berlin", "whale")


@pytest.fixture(scope="module")
def levers() -> ModuleType:
    return recall_levers


def test_a_digest_quotes_the_sessions_telling_sentences(levers) -> None:
    text, turns = levers.extract_digest(
        [
            "Mel: Hey Ana!",
            "Mel: We went camping at the beach. The kids loved camping there!",
            "Ana: Camping sounds fun. I am painting a sunset for the art show.",
        ],
        max_words=20,
    )
    assert "Hey Ana" not in text  # too few content words to be worth a place
    assert text.startswith("Mel: We went camping at the beach.") and turns[0] == 1
    assert set(turns) <= {1, 2}


def test_every_lever_runs_on_the_fixtures(
    levers, locomo_fixture, longmemeval_fixture, tmp_path, monkeypatch, stem_axis
) -> None:
    monkeypatch.setattr(levers, "default_embeddings", lambda **_: stem_axis(STEMS))
    monkeypatch.setitem(levers.SETTINGS, "iterations", 30)
    out = tmp_path / "levers.json"
    data = ["--locomo", str(locomo_fixture), "--longmemeval", str(longmemeval_fixture)]
    assert levers.main([*data, "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["levers"]) == {*levers.LEVERS, "session-packing-0.3"}
    for figures in report["levers"].values():
        for kind in ("cross_validated", "in_sample"):
            assert 0.0 <= figures[kind]["locomo"]["recall@5"] <= 1.0
            assert figures[kind]["longmemeval"]["questions"] == 3
    with pytest.raises(SystemExit):
        levers.main([*data, "--levers", "nonsense"])
