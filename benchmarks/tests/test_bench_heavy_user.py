"""tiered_memory_bench.heavy_user_approximations: forcing the heavy-user paths on LoCoMo."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from langchain_tiered_memory.storage.faiss.index import FaissIndex
from langchain_tiered_memory.storage.sqlite.archive import BaseSQLiteArchive
from tiered_memory_bench import heavy_user_approximations
from tiered_memory_bench.datasets import load_locomo

STEMS = ("allerg", "peanut", "clara", "wedding", "marri", "dog", "run", "berlin", "whale")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return heavy_user_approximations


def test_each_setting_runs_and_the_defaults_come_back(bench, locomo_fixture, stem_axis) -> None:
    before = (
        BaseSQLiteArchive.keyword_exact_limit,
        FaissIndex.ann_min_vectors,
        BaseSQLiteArchive.dense_search,
    )
    conversations = load_locomo(locomo_fixture)
    rows = bench.run_settings(
        conversations, stem_axis(STEMS), ["exact", "bounded:1", "bounded:500", "ann:4"]
    )
    assert [r["setting"] for r in rows] == ["exact", "bounded:1", "bounded:500", "ann:4"]
    exact, tiny_cap, big_cap, ann = rows
    assert exact["recall@10"] > 0
    # a cap above every term's matches ranks as the exact pass does on this tiny fixture
    assert big_cap["recall@10"] == pytest.approx(exact["recall@10"])
    # scoring 4 vectors per question: the dense side sees a fraction of the turns
    assert 0 < ann["recall@10"] <= 1 and 0 < tiny_cap["recall@10"] <= 1
    after = (
        BaseSQLiteArchive.keyword_exact_limit,
        FaissIndex.ann_min_vectors,
        BaseSQLiteArchive.dense_search,
    )
    assert after == before


def test_cli_writes_json(bench, locomo_fixture, tmp_path, monkeypatch, stem_axis) -> None:
    import langchain_tiered_memory.embeddings as embeddings

    monkeypatch.setattr(embeddings, "default_embeddings", lambda *a, **k: stem_axis(STEMS))
    out = tmp_path / "heavy.json"
    assert (
        bench.main(["--data", str(locomo_fixture), "--settings", "exact", "--out", str(out)]) == 0
    )
    report = json.loads(out.read_text())
    assert [r["setting"] for r in report["rows"]] == ["exact"]
    with pytest.raises(ValueError, match="unknown setting"):
        bench.run_settings(load_locomo(locomo_fixture), stem_axis(STEMS), ["fuzzy"])
