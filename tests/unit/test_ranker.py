"""The learned ranker: its features, its file, and recall that uses it."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from langchain_tiered_memory.recall import ranker as ranker_module
from langchain_tiered_memory.recall.hybrid import Recaller, score_candidates
from langchain_tiered_memory.recall.ranker import (
    FEATURES,
    LinearRanker,
    RankerFileError,
    candidate_features,
    default_ranker,
)
from langchain_tiered_memory.recall.signals import Candidate
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive

NOW = datetime(2023, 8, 20, 12, tzinfo=timezone.utc)
PACKAGED = Path(ranker_module.__file__).parents[1] / "_data" / "ranker.json"
STEMS = ("allerg", "peanut", "clara", "wedding", "marri", "dog", "run", "berlin", "whale")


def turn(text: str, index: int, *, speaker: str = "Ana", session: int = 1, days: int = 0):
    return MemoryRecord.new(
        user_id="u",
        thread_id="t",
        kind="turn",
        text=f"{speaker}: {text}",
        id=f"t{index}",
        created_at=NOW - timedelta(days=days),
        metadata={"speaker": speaker, "session": session, "turn_index": index},
    )


def column(matrix: np.ndarray, name: str) -> list[float]:
    return matrix[:, FEATURES.index(name)].round(4).tolist()


def test_features_describe_each_candidate() -> None:
    question = turn("Where did you go last week?", 0, speaker="Ben", days=10)
    answer = turn("We went to Lisbon with Clara.", 1, days=10)
    other = turn("I like tea", 7, session=2, days=40)
    cands = [Candidate(question, 0.3, None), Candidate(answer, 0.5, 2.0), Candidate(other, 0.1)]
    x = candidate_features(cands, query="Where did Ana go last week?", now=NOW)
    assert x.shape == (3, len(FEATURES))
    assert column(x, "dense") == [0.5, 1.0, 0.0]
    assert column(x, "keyword_missing") == [1.0, 0.0, 1.0]
    assert column(x, "speaker") == [0.0, 1.0, 1.0]  # the query names Ana
    assert column(x, "dense_previous") == [0.0, 0.5, 0.0]  # the answer follows the question
    assert column(x, "dense_next") == [1.0, 0.0, 0.0]
    assert column(x, "asks") == [0.5, 0.0, 0.0]  # a question, worth what it matches
    assert column(x, "where_proper_noun") == [0.0, 1.0, 0.0]  # "Lisbon", not "We"
    assert column(x, "session_size") == [1.0, 1.0, 0.5]
    assert column(x, "time") == [0.5, 1.0, 0.0]  # said last week, times the match
    assert candidate_features([], query="x", now=NOW).shape == (0, len(FEATURES))


def test_a_trait_of_the_text_lifts_no_record_that_does_not_match() -> None:
    # A question mark, a time word, a number, a date: each counts only as much as
    # the text matches the query (a learned weight on a trait alone lifted every
    # record of a "two months ago" window above the gold sessions).
    asked = turn("How many dogs did you see in July?", 0, days=7)
    unrelated = turn("How many books did you read last week? Was it in July?", 5, days=7)
    match = turn("We saw three dogs in July.", 9, session=2, days=7)
    cands = [Candidate(asked, 0.9, 3.0), Candidate(unrelated, 0.1, None), Candidate(match, 0.6)]
    x = candidate_features(cands, query="How many dogs did Ana see last week?", now=NOW)
    for name in ("asks", "how_many_number", "time"):
        values = column(x, name)
        assert values[1] == 0.0 and max(values) > 0.0, name
    assert column(x, "how_many_number")[2] == column(x, "dense")[2] > 0.0


def test_ranker_scores_standardised_features() -> None:
    r = LinearRanker(("a", "b"), (1.0, 0.0), (2.0, 1.0), (2.0, -1.0))
    assert r.score(np.array([[3.0, 1.0], [1.0, 0.0]])).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="2 feature columns"):
        r.score(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="one entry per feature"):
        LinearRanker(("a", "b"), (0.0,), (1.0, 1.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="finite"):
        LinearRanker(("a",), (0.0,), (1.0,), (float("nan"),))


def test_ranker_file_round_trips_and_bad_files_are_refused(tmp_path) -> None:
    n = len(FEATURES)
    ranker = LinearRanker(FEATURES, (0.0,) * n, (1.0,) * n, (0.5,) * n, {"note": "x"})
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(ranker.to_dict()))
    again = LinearRanker.load(path)
    assert again == ranker and again.info == {"note": "x"}
    cases = {
        "not json": "{",
        "a list": "[]",
        "another format": json.dumps({**ranker.to_dict(), "format": "other"}),
        "other features": json.dumps({**ranker.to_dict(), "features": ["dense"]}),
        "short weights": json.dumps({**ranker.to_dict(), "weights": [1.0]}),
    }
    for name, text in cases.items():
        path.write_text(text)
        with pytest.raises(RankerFileError):
            LinearRanker.load(path)
        assert name
    with pytest.raises(RankerFileError, match="cannot read"):
        LinearRanker.load(tmp_path / "missing.json")


def test_the_packaged_ranker_is_current_and_records_its_validation() -> None:
    ranker = default_ranker()
    assert ranker is not None and ranker.features == FEATURES
    data = json.loads(PACKAGED.read_text())
    for figures in ("cross_validated", "in_sample", "hand_weights"):
        assert {"locomo", "longmemeval"} <= set(data[figures])
    assert data["trained"]["script"] == "python -m tiered_memory_bench.train_ranker"
    assert data["trained"]["questions"]["locomo"] > 800


def test_an_unusable_packaged_file_falls_back_to_the_hand_weights(
    monkeypatch, tmp_path, caplog
) -> None:
    broken = tmp_path / "langchain_tiered_memory" / "_data"
    broken.mkdir(parents=True)
    (broken / "ranker.json").write_text('{"format": "something else"}')
    monkeypatch.setattr(ranker_module.importlib.resources, "files", lambda _: tmp_path / broken)
    ranker_module._packaged.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            assert default_ranker() is None
        assert "RecallWeights" in caplog.text
    finally:
        monkeypatch.undo()
        ranker_module._packaged.cache_clear()
    assert default_ranker() is not None


def test_learned_scores_add_recency_and_importance_by_their_weights() -> None:
    from langchain_tiered_memory.recall.hybrid import RecallWeights

    a = turn("I am allergic to peanuts", 1, days=300)
    b = turn("I am allergic to peanuts too", 5, session=2)
    cands = [Candidate(a, 0.8, 1.0), Candidate(b, 0.8, 1.0)]
    ranker = default_ranker()
    assert ranker is not None
    plain = score_candidates(cands, now=NOW, query="allergy?", ranker=ranker, dedupe=False)
    assert {"learned", "relevance", "keyword", "recency"} <= set(plain[0].parts)
    fresh = RecallWeights(recency=5.0)
    boosted = score_candidates(
        cands, now=NOW, query="allergy?", ranker=ranker, weights=fresh, dedupe=False
    )
    assert boosted[0].record.id == "t5"
    by_id = {h.record.id: h for h in boosted}
    assert by_id["t5"].score == pytest.approx(by_id["t5"].parts["learned"] + 5.0)
    assert by_id["t1"].score == pytest.approx(by_id["t1"].parts["learned"])


def test_recaller_uses_the_learned_ranker_unless_told_otherwise(tmp_path, stem_axis) -> None:
    embeddings = stem_axis(STEMS)
    records = [
        turn("My dog Rex loves to run on the beach", 0),
        turn("Clara's wedding is in Berlin in June", 1, speaker="Ben"),
        turn("I am allergic to peanuts", 2),
    ]
    with SQLiteArchive(tmp_path / "a.sqlite", embeddings=embeddings) as archive:
        archive.add(records)
        learned = Recaller(archive, embeddings, touch=False).recall(
            "Where is Clara's wedding?", user_id="u", now=NOW
        )
        hand = Recaller(archive, embeddings, ranker=None, touch=False).recall(
            "Where is Clara's wedding?", user_id="u", now=NOW
        )
    assert learned[0].record.id == hand[0].record.id == "t1"
    assert "learned" in learned[0].parts and "learned" not in hand[0].parts
    with pytest.raises(ValueError, match="ranker must be"):
        Recaller(archive, embeddings, ranker="mine")  # type: ignore[arg-type]
