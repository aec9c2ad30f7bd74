"""The LangGraph and agent examples run end to end, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "langgraph_nodes.py",
            "gate: no recall - self-contained: no reference to the past, the user or known names",
        ),
        ("prebuilt_graph.py", "last gate reason: a personal request a known fact could change"),
        ("create_agent_middleware.py", "You are badly allergic to peanuts, so skip the satay."),
    ],
)
def test_graph_example_runs(name: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        check=True,
        timeout=180,
        capture_output=True,
        text=True,
    )
    assert expected in done.stdout
    assert done.stdout.rstrip().endswith(f"{name.removesuffix('.py')} example OK")
