"""The LongMemEval retrieval bench: metrics, peers, CLI.

The questions are invented (``synthetic_longmemeval`` in conftest, written to a
temp file in the LongMemEval format); the real data is read from ../shared/data
by the bench only.
"""

from __future__ import annotations

import json
import math

import pytest
from langchain_core.embeddings import Embeddings
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.datasets import load_longmemeval
from tiered_memory_bench.longmemeval import (
    SYSTEMS,
    haystack_records,
    run_longmemeval_bench,
    score_question,
)

STEMS = ("pupp", "beagle", "banana", "bake", "marathon", "run", "interest", "dragon")


@pytest.fixture
def stems(stem_axis) -> Embeddings:
    return stem_axis(STEMS)


class ConstantEmbeddings(Embeddings):
    """Every text gets the same vector: dense search carries no information."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def questions(longmemeval_fixture):
    return load_longmemeval(longmemeval_fixture)


def test_records_keep_session_date_role_and_gold(questions) -> None:
    records = haystack_records(questions[0])
    assert len(records) == sum(len(s) for s in questions[0].sessions) == 13
    gold = [r for r in records if r.metadata["has_answer"]]
    assert [r.text for r in gold] == ["We just adopted a new puppy, a beagle called Biscuit!"]
    assert gold[0].id == "q_user:s_gold:0" and gold[0].sources == ("s_gold:0",)
    assert gold[0].metadata["speaker"] == "user"
    assert gold[0].created_at.isoformat() == "2023-05-20T08:00:00+00:00"
    assert len({r.id for r in records}) == len(records)


def test_every_system_ranks_the_fixture(questions, stems) -> None:
    report = run_longmemeval_bench(questions, embeddings=stems, ks=(1, 2, 3))
    assert set(report["systems"]) == set(SYSTEMS)
    assert set(report["peers"]) == set(SYSTEMS) - {"tiered-memory"}
    assert report["questions"] == 3 and report["questions_with_gold_turns"] == 3
    ours = report["systems"]["tiered-memory"]
    # The stems separate every gold session from the filler.
    assert ours["recall@1"] == 1.0
    # "bake the banana bread" matches the user's request as well as the
    # assistant's answer, so the gold turn is first or second.
    assert ours["turn_recall_any@2"] == 1.0
    assert ours["recall_all@2"] == 1.0  # both marathon sessions come first
    assert ours["recall_all@1"] == pytest.approx(
        2 / 3, abs=1e-3
    )  # one of two sessions can't fit in 1
    for name, row in report["systems"].items():
        for key in ("recall", "recall_all", "turn_recall_any", "ndcg"):
            values = [row[f"{key}@{k}"] for k in (1, 2, 3)]
            assert all(0.0 <= v <= 1.0 for v in values), (name, key, values)
        assert row["recall@1"] <= row["recall@2"] <= row["recall@3"], name
        assert row["recall_all@3"] <= row["recall@3"], name
        assert set(row["by_type"]) == {
            "multi-session",
            "single-session-assistant",
            "single-session-user",
        }
    # The peers get the same easy questions right too.
    assert report["peers"]["bm25"]["recall@1"] == 1.0
    assert report["peers"]["faiss"]["recall@1"] == 1.0


def test_keyword_signal_rescues_a_useless_embedder(questions) -> None:
    """With dense search blind, ours still finds the puppy (FTS5) and a dense-only peer can't."""
    report = run_longmemeval_bench(
        questions[:1],
        embeddings=ConstantEmbeddings(),
        systems=("tiered-memory", "inmemorystore"),
        ks=(1,),
        per_question=True,
    )
    row = report["per_question"][0]
    assert row["tiered-memory"]["sessions"][0] == "s_gold"
    assert report["recall@1"] == 1.0
    # A dense-only ranking with identical vectors has no reason to put s_gold first.
    assert report["peers"]["inmemorystore"]["questions"] == 1


def test_score_question_by_hand() -> None:
    turn_session = {"a": "S1", "b": "S2", "c": "S3", "d": "S2"}
    s = score_question(["c", "b", "a", "d"], turn_session, ["S1", "S2"], ["d"], ks=(1, 2, 3, 4))
    assert s.session["recall@1"] == 0.0 and s.session["recall@2"] == 1.0
    assert s.session["recall_all@2"] == 0.0 and s.session["recall_all@3"] == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert s.session["ndcg@3"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert s.turn is not None
    assert s.turn["turn_recall_any@3"] == 0.0 and s.turn["turn_recall_any@4"] == 1.0
    no_turns = score_question(["a"], turn_session, ["S1"], [], ks=(1,))
    assert no_turns.turn is None and no_turns.session["recall@1"] == 1.0


def test_cli_longmemeval_writes_json(tmp_path, monkeypatch, stems, longmemeval_fixture) -> None:
    import langchain_tiered_memory.embeddings as embeddings

    asked: list[tuple[str | None, dict]] = []

    def fake(name: str | None = None, **kwargs: object) -> Embeddings:
        asked.append((name, kwargs))
        return stems

    monkeypatch.setattr(embeddings, "default_embeddings", fake)
    out = tmp_path / "lme.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "retrieval",
            "--dataset",
            "longmemeval",
            "--data",
            str(longmemeval_fixture),
            "--limit",
            "2",
            "--systems",
            "bm25,tiered-memory",
            "--embedder",
            "minilm",
            "--max-length",
            "128",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert asked == [("minilm", {"cache_path": None, "max_length": 128})]
    report = json.loads(out.read_text())
    assert report["dataset"] == "longmemeval" and report["questions"] == 2
    assert list(report["systems"]) == ["tiered-memory", "bm25"]  # ours first
    for k in (1, 3, 5, 10):
        for metric in ("recall", "recall_all", "turn_recall_any", "ndcg"):
            assert f"{metric}@{k}" in report
    assert set(report["by_type"]) == {"single-session-user", "single-session-assistant"}
    assert "turn_recall_any@5" in result.output


def test_cli_rejects_unknown_system(monkeypatch, stems, longmemeval_fixture) -> None:
    import langchain_tiered_memory.embeddings as embeddings

    monkeypatch.setattr(embeddings, "default_embeddings", lambda *a, **k: stems)
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "retrieval",
            "--dataset",
            "longmemeval",
            "--data",
            str(longmemeval_fixture),
            "--systems",
            "mem0",
        ],
    )
    assert result.exit_code != 0
    assert "--systems" in result.output


def test_empty_question_list_is_an_error(stems) -> None:
    with pytest.raises(ValueError, match="--limit"):
        run_longmemeval_bench([], embeddings=stems)
