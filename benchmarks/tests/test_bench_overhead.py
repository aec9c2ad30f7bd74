from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from tiered_memory_bench.overhead import (
    HashEmbeddings,
    TimedEmbeddings,
    run_overhead_bench,
)


def test_overhead_bench_reports_latency_and_size(tmp_path) -> None:
    result = run_overhead_bench(
        [300, 1200], workdir=tmp_path, records_per_user=300, queries=10, adds=10
    )
    for layout in ("sizes", "single_user"):
        for size in ("300", "1200"):
            row = result[layout][size]
            for metric in ("recall", "search", "add"):
                assert row[f"{metric}_max_ms"] >= row[f"{metric}_p95_ms"]
                assert row[f"{metric}_p95_ms"] >= row[f"{metric}_p50_ms"] > 0
            assert row["bytes_per_record"] > 100
    assert result["sizes"]["1200"]["users"] == 4
    assert result["single_user"]["1200"]["users"] == 1


def test_overhead_bench_times_recall_at_each_k(tmp_path) -> None:
    result = run_overhead_bench(
        [400], workdir=tmp_path, layouts=["typical"], queries=4, adds=2, ks=(5, 50, 200)
    )
    row = result["sizes"]["400"]
    assert result["ks"] == [5, 50, 200]
    assert set(row["recall_by_k"]) == {"5", "50", "200"}
    assert row["recall_by_k"]["5"]["recall_p95_ms"] == row["recall_p95_ms"]
    for cut in ("50", "200"):
        timing = row["recall_by_k"][cut]
        assert timing["recall_max_ms"] >= timing["recall_p95_ms"] >= timing["recall_p50_ms"] > 0
    with pytest.raises(ValueError, match="every k"):
        run_overhead_bench([10], workdir=tmp_path, ks=(0,))


def test_overhead_bench_spreads_users_and_reuses_archives(tmp_path) -> None:
    run_overhead_bench(
        [600], workdir=tmp_path, records_per_user=200, layouts=["typical"], queries=3, adds=2
    )
    with SQLiteArchive(
        tmp_path / "archive-typical-600" / "archive.sqlite", embeddings=HashEmbeddings()
    ) as archive:
        # interleaved over time, as users of one deployment write: r0 user0, r1 user1, ...
        assert [r.user_id for r in archive.get(["r0", "r1", "r2", "r3"])] == [
            "user0",
            "user1",
            "user2",
            "user0",
        ]
        assert {archive.count(f"user{u}") for u in range(3)} >= {200}
    again = run_overhead_bench(
        [600], workdir=tmp_path, records_per_user=200, layouts=["typical"], queries=3, adds=2
    )
    assert again["sizes"]["600"]["fill_seconds"] < 1.0  # reused, not refilled
    assert again["single_user"] == {}


def test_recall_time_excludes_the_query_embedding(tmp_path) -> None:
    class SlowQueries(HashEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            time.sleep(0.05)
            return super().embed_query(text)

    timed = TimedEmbeddings(SlowQueries(dim=8))
    started = time.perf_counter()
    timed.embed_query("x")
    assert timed.query_seconds >= 0.05 and time.perf_counter() - started >= 0.05
    assert timed.embed_documents(["a", "b"]) == SlowQueries(dim=8).embed_documents(["a", "b"])


def test_unknown_layout_is_rejected(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown layout"):
        run_overhead_bench([10], workdir=tmp_path, layouts=["many"])  # type: ignore[list-item]


def test_overhead_cli_writes_json(tmp_path) -> None:
    out = tmp_path / "overhead.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "overhead",
            "--records",
            "500",
            "--workdir",
            str(tmp_path / "w"),
            "--queries",
            "5",
            "--concurrency",
            "1,2",
            "--concurrency-seconds",
            "0.2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "worst case" in result.output and "throughput" in result.output
    assert "by k" in result.output and "k = 200" in result.output
    report = json.loads(out.read_text())
    for layout in ("sizes", "single_user"):
        assert {"recall_p95_ms", "add_p95_ms", "bytes_per_record", "recall_by_k"} <= set(
            report[layout]["500"]
        )
        for workers in ("1", "2"):
            assert report[layout]["500"]["throughput"][workers]["recall_per_s"] > 0
    assert report["query_embedding_p95_ms"] > 0


def test_hash_embeddings_are_unit_and_deterministic() -> None:
    emb = HashEmbeddings(dim=8)
    a, b = emb.embed_documents(["x", "x"])
    assert a == b and abs(sum(v * v for v in a) - 1) < 1e-5
