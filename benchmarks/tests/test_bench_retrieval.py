from __future__ import annotations

import json
import math

import pytest
from langchain_core.embeddings import Embeddings
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.datasets import load_locomo
from tiered_memory_bench.retrieval import (
    conversation_records,
    parse_session_date,
    run_retrieval_bench,
    score_ranking,
)

REQUIRED = {
    "embedder",
    "questions",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "ndcg@10",
    "recall@614tok",
    "recall@1228tok",
    "by_category",
    "seconds",
    "ingest_turns_per_second",
}
EASY = {
    "What is Ana allergic to?": "D1:1",
    "When is Clara's wedding?": "D1:3",
    "What is the name of Ana's dog and when do they run?": "D1:5",
}


STEMS = ("allerg", "peanut", "clara", "wedding", "marri", "dog", "run", "berlin", "whale")


@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch, stem_axis) -> list[str | None]:
    import langchain_tiered_memory.embeddings as embeddings

    asked: list[str | None] = []

    def fake(name: str | None = None, **kwargs: object) -> Embeddings:
        asked.append(name)
        return stem_axis(STEMS)

    monkeypatch.setattr(embeddings, "default_embeddings", fake)
    return asked


def test_cli_writes_json_and_finds_the_easy_evidence(
    locomo_fixture, tmp_path, fake_embedder
) -> None:
    out = tmp_path / "retrieval.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "retrieval",
            "--dataset",
            "locomo",
            "--data",
            str(locomo_fixture),
            "--k",
            "1,3,5,10",
            "--embedder",
            "minilm",
            "--per-question",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "recall@10" in result.output
    assert fake_embedder == ["minilm"]
    report = json.loads(out.read_text())
    assert set(report) >= REQUIRED
    assert report["embedder"] == "minilm"
    assert report["turns"] == 86
    assert report["questions"] == 4  # category 1-4 questions with evidence
    assert set(report["by_category"]) == {
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
    }
    assert sum(c["questions"] for c in report["by_category"].values()) == 4
    for metric in ("recall@1", "recall@5", "recall@10", "ndcg@10", "recall@614tok"):
        assert 0.0 <= report[metric] <= 1.0
    # recall@k is not monotone in k: a merged record costs every turn it covers, so a
    # big one of filler ("A bit flat, but tasty." said three times) that fits in 10 and
    # not in 5 can push a gold turn out of the top 10 (score_ranking's doctest).
    assert report["recall@614tok"] <= report["recall@1228tok"]
    found = {q["question"]: q for q in report["per_question"]}
    for question, gold in EASY.items():
        assert found[question]["gold"] == [gold]
        assert gold in found[question]["top10"][:5], found[question]
        assert found[question]["recall@5"] == 1.0
    assert report["recall@5"] >= 0.75
    # the nothing-found rates: the shipped unrelated questions asked of the conversation
    nothing = report["nothing_found"]
    assert nothing["answerable"] == {"questions": 4, "rate": 0.0}
    assert nothing["unrelated"]["questions"] == 60
    assert "nothing found" in result.output


def test_without_a_floor_recall_always_finds_something(locomo_fixture, stem_axis) -> None:
    report = run_retrieval_bench(
        load_locomo(locomo_fixture),
        embeddings=stem_axis(STEMS),
        min_score=None,
        unanswerable=["What's the weather on Mars?"],
    )
    assert report["nothing_found"]["unrelated"] == {"questions": 1, "rate": 0.0}
    floored = run_retrieval_bench(
        load_locomo(locomo_fixture),
        embeddings=stem_axis(STEMS),
        min_score=1.0,  # no calibrated score reaches 1: every question gets nothing
        unanswerable=["What's the weather on Mars?"],
    )
    assert floored["nothing_found"]["unrelated"] == {"questions": 1, "rate": 1.0}
    assert floored["nothing_found"]["answerable"]["rate"] == 1.0 and floored["recall@10"] == 0.0


def test_cli_rejects_bad_k_and_dataset(locomo_fixture, fake_embedder) -> None:
    runner = CliRunner()
    bad_k = runner.invoke(app, ["bench", "retrieval", "--data", str(locomo_fixture), "--k", "x"])
    assert bad_k.exit_code != 0
    bad_ds = runner.invoke(
        app, ["bench", "retrieval", "--data", str(locomo_fixture), "--dataset", "lme"]
    )
    assert bad_ds.exit_code != 0


def test_missing_data_says_where_to_point(tmp_path, fake_embedder) -> None:
    result = CliRunner().invoke(app, ["bench", "retrieval", "--data", str(tmp_path / "nope.json")])
    assert result.exit_code != 0
    assert "--data" in result.output and "Traceback" not in result.output


def test_run_without_the_cli_and_custom_ks(locomo_fixture, stem_axis) -> None:
    report = run_retrieval_bench(
        load_locomo(locomo_fixture), embeddings=stem_axis(STEMS), ks=(2, 10)
    )
    assert "recall@2" in report and "recall@5" not in report
    assert report["embedder"] == "StemAxisEmbeddings"
    assert report["per_conversation"][0]["questions"] == 4
    assert "per_question" not in report


def test_records_keep_dia_ids_speaker_and_session(locomo_fixture) -> None:
    conv = load_locomo(locomo_fixture)[0]
    records = conversation_records(conv)
    assert len(records) == 86
    first = records[0]
    assert first.sources == ("D1:1",)
    assert first.text.startswith("Ana: I'm allergic to peanuts")
    assert first.metadata == {"speaker": "Ana", "session": 1, "turn_index": 0}
    assert records[5].metadata["turn_index"] == 5
    assert first.created_at == parse_session_date("1:56 pm on 8 May, 2023")
    assert records[1].created_at > first.created_at
    assert conversation_records(conv, record_text="plain")[0].text.startswith("I'm allergic")
    assert conversation_records(conv, record_text="dated")[0].text.startswith(
        "[1:56 pm on 8 May, 2023] Ana:"
    )


def test_multi_turn_records_cost_their_turns() -> None:
    covers = [["D1:1", "D1:2", "D1:3"], ["D2:1"], ["D2:2"]]
    score = score_ranking(covers, ["D1:2", "D2:2"], ks=(1, 2, 3, 5), tokens=[90, 5, 5])
    assert score.recall == {1: 0.0, 2: 0.5, 3: 0.5, 5: 1.0}
    assert score.recall_tokens == {614: 1.0, 1228: 1.0}
    tight = score_ranking(covers, ["D1:2"], ks=(1,), tokens=[700, 5, 5])
    assert tight.recall_tokens[614] == 0.0 and tight.recall_tokens[1228] == 1.0
    assert score_ranking([["D1:1"]], ["D1:1"]).ndcg10 == 1.0
    second = score_ranking([["D1:9"], ["D1:1"]], ["D1:1"]).ndcg10
    assert second == pytest.approx(1 / math.log2(3))
