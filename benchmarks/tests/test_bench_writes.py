"""bench writes: the command runs, writes its JSON keys and refuses bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.writes import run_writes_bench


def test_writes_bench_reports_every_size() -> None:
    result = run_writes_bench([10, 40], samples=6, context_window=1024)
    assert set(result["sizes"]) == {"10", "40"}
    small, big = result["sizes"]["10"], result["sizes"]["40"]
    assert small["turns_before"] == 10 and small["samples"] == 6
    assert big["buffered_turns"] < 40  # the 1,024 window compressed while filling
    assert 0 < small["add_p50_ms"] <= small["add_p95_ms"] <= small["add_max_ms"]
    assert result["p50_ratio_last_to_first"] > 0
    assert small["assistant_add_p50_ms"] > 0 and small["user_add_p50_ms"] > 0
    assert result["user_p50_ratio_last_to_first"] > 0


def test_writes_cli_writes_json_and_checks_its_options(tmp_path: Path) -> None:
    out = tmp_path / "writes.json"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "bench",
            "writes",
            "--turns",
            "5,10",
            "--samples",
            "4",
            "--context-window",
            "2048",
            "--out",
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    assert set(json.loads(out.read_text())["sizes"]) == {"5", "10"}
    bad = runner.invoke(app, ["bench", "writes", "--turns", "a,b"])
    assert bad.exit_code == 2 and "--turns" in bad.output
