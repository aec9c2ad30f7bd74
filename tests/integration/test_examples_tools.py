"""The tool example runs end to end, offline."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "react_agent_tool.py"


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_tiered_memory.recall.hybrid") is None,
    reason="TieredMemory.recall needs langchain_tiered_memory/recall.py (not landed yet)",
)
def test_react_agent_tool_example_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], check=True, timeout=120, capture_output=True, text=True
    )
    out = done.stdout
    tool_result = out.split("--- tool result (retrieve_memory) ---")[1].split("--- final")[0]
    assert "Recalled memories" in tool_result and "peanuts" in tool_result
    assert "shellfish" not in tool_result and "Alps" not in tool_result  # bob's memories
    assert "--- final answer ---" in out
    assert "1 recall event(s)" in out
