"""The chain examples run offline and print what they promise."""

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
        ("classic_chain.py", "peanut allergy still in the prompt: True"),
        ("lcel_message_history.py", "ana's allergy is in core memory: True"),
    ],
)
def test_chain_example_runs(name: str, expected: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert expected in result.stdout
    assert result.stdout.rstrip().endswith("example OK")
