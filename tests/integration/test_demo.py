from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.cli.demo import run_demo


@pytest.mark.slow
def test_demo_command_runs_offline_and_recalls_the_early_facts(tmp_path) -> None:
    result = CliRunner().invoke(
        app, ["demo", "--model", "none", "--data-dir", str(tmp_path / "demo")]
    )
    assert result.exit_code == 0, result.output
    assert "Late questions" in result.output
    assert "compression" in result.output
    assert "all early facts reached the late prompts" in result.output


@pytest.mark.slow
def test_demo_facts_come_from_core_memory_and_recall(tmp_path) -> None:
    with open(Path(tmp_path) / "out.txt", "w") as sink:
        result = run_demo(console=Console(file=sink, width=120), data_dir=tmp_path / "d")
    assert result.turns >= 60
    assert result.max_prompt_tokens <= result.input_budget
    assert result.compressions > 0 and result.archived_turns > 0
    assert result.all_facts_in_context
    where = {n: w for a in result.answers for n, w in a["found"].items()}
    assert where["peanut"] == "core memory"
    assert set(where.values()) <= {"core memory", "recall", "running summary", "recent turns"}
    assert all(a["gate"]["recall"] for a in result.answers)  # every late question needs memory
    for answer in result.answers:  # no two recalled records open with the same line
        openings = [text.splitlines()[0] for text in answer["recalled"]]
        assert len(openings) == len(set(openings)), answer["recalled"]
