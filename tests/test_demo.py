from __future__ import annotations

from typer.testing import CliRunner

from langchain_tiered_memory.cli import app
from langchain_tiered_memory.demo import run_demo


def test_demo_command_runs_offline_and_exits_zero() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Late questions" in result.output
    assert "compression" in result.output


def test_demo_stays_within_budget_and_compresses() -> None:
    from rich.console import Console

    result = run_demo(console=Console(file=open("/dev/null", "w")))  # noqa: SIM115
    assert result.turns >= 60
    assert result.max_prompt_tokens <= result.input_budget
    assert result.compressions > 0 and result.archived_turns > 0
