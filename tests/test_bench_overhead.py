from __future__ import annotations

import json

from typer.testing import CliRunner

from langchain_tiered_memory.bench.overhead import HashEmbeddings, run_overhead_bench
from langchain_tiered_memory.cli import app


def test_overhead_bench_reports_latency_and_size(tmp_path) -> None:
    result = run_overhead_bench(
        [300, 1200], workdir=tmp_path, records_per_user=300, queries=10, adds=10
    )
    for size in ("300", "1200"):
        row = result["sizes"][size]
        assert row["recall_p95_ms"] >= row["recall_p50_ms"] > 0
        assert row["add_p95_ms"] >= row["add_p50_ms"] > 0
        assert row["bytes_per_record"] > 100
    assert result["sizes"]["1200"]["users"] == 4


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
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert {"recall_p95_ms", "add_p95_ms", "bytes_per_record"} <= set(report["sizes"]["500"])
    assert report["query_embedding_p95_ms"] > 0


def test_hash_embeddings_are_unit_and_deterministic() -> None:
    emb = HashEmbeddings(dim=8)
    a, b = emb.embed_documents(["x", "x"])
    assert a == b and abs(sum(v * v for v in a) - 1) < 1e-5
