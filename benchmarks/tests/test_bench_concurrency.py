"""The concurrency bench at a tiny size: JSON shape and sane numbers (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.concurrency import run_concurrency_bench

FIELDS = {
    "users",
    "adds",
    "recalls",
    "seconds",
    "ops_per_s",
    "adds_per_s",
    "recalls_per_s",
    "add_p50_ms",
    "add_p95_ms",
    "recall_p50_ms",
    "recall_p95_ms",
    "compressions",
    "archive_records",
    "foreign_hits",
    "lost_turns",
}


def test_concurrency_bench_reports_each_level(tmp_path: Path) -> None:
    result = run_concurrency_bench(
        (1, 3), turns_per_user=12, seed_records=20, context_window=512, data_dir=tmp_path
    )
    assert result["bench"] == "concurrency" and result["embedder"] == "HashEmbeddings"
    assert set(result["levels"]) == {"1", "3"}
    for users, row in ((1, result["levels"]["1"]), (3, result["levels"]["3"])):
        assert set(row) == FIELDS
        assert row["users"] == users
        assert row["adds"] == row["recalls"] == 12 * users
        assert row["seconds"] > 0 and row["ops_per_s"] > 0
        assert row["adds_per_s"] > 0 and row["recalls_per_s"] > 0
        assert row["add_p95_ms"] >= row["add_p50_ms"] > 0
        assert row["recall_p95_ms"] >= row["recall_p50_ms"] > 0
        assert row["compressions"] > 0  # the small window made turns page out
        assert row["archive_records"] > 20 * users
        assert row["foreign_hits"] == 0 and row["lost_turns"] == 0
    assert (tmp_path / "users-3" / "archive.sqlite").exists()
    json.dumps(result)  # JSON-ready


def test_concurrency_bench_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive"):
        run_concurrency_bench((0,), data_dir=tmp_path)
    with pytest.raises(ValueError, match="turns_per_user"):
        run_concurrency_bench((1,), turns_per_user=0, data_dir=tmp_path)
    (tmp_path / "users-1").mkdir()
    (tmp_path / "users-1" / "x").write_text("not mine")
    with pytest.raises(ValueError, match="not empty"):
        run_concurrency_bench((1,), turns_per_user=1, data_dir=tmp_path)


def test_concurrency_cli_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "concurrency.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "concurrency",
            "--users",
            "1,2",
            "--turns",
            "4",
            "--seed-records",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["embedder"] == "fake" and set(report["levels"]) == {"1", "2"}
    assert report["levels"]["2"]["recall_p95_ms"] > 0
    bad = CliRunner().invoke(app, ["bench", "concurrency", "--users", "a,b"])
    assert bad.exit_code != 0 and "--users" in bad.output
