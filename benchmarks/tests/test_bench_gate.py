"""The gate bench: its shipped set of self-contained requests and its command on fixtures."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.gate import load_self_contained


def test_shipped_self_contained_set() -> None:
    requests = load_self_contained()
    assert len(requests) >= 200 and len(set(requests)) == len(requests)


def test_gate_bench_cli_on_fixtures(locomo_fixture, tmp_path) -> None:
    out = tmp_path / "gate.json"
    result = CliRunner().invoke(
        app, ["bench", "gate", "--memory-questions", str(locomo_fixture), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["memory_questions"] == 5
    assert report["memory_questions_fire_rate"] >= 0.8
    assert report["self_contained"] >= 200
    assert report["self_contained_fire_rate"] <= 0.2
    assert report["mean_decision_ms"] < 5
