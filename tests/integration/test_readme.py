"""The README's Python example runs as written (offline, in a scratch directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README lost its Python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    context = namespace["context"]
    assert context.gate.recall
    assert "('suggest')" in context.gate.reason
    assert context.total_tokens <= namespace["memory"].budget.input_budget
    assert any("allergic to peanuts" in str(m.content) for m in context.messages)
    namespace["store"].close()
    assert os.path.isdir(tmp_path / "memory")


def test_readme_commands_match_ci() -> None:
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_command = re.search(r"\*\*Run the tests:\*\*\n\n```bash\n(.*?)\n```", text, re.S)
    assert test_command is not None
    assert test_command.group(1).strip() in ci
