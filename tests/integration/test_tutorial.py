"""The tutorial runs as written: every snippet in order, each shown output printed as shown.

``python`` blocks run in one namespace (like a reader's session) in a scratch
directory; a ``text`` block right after one is what it must print (dates
aside: they are the day it runs). ``bash`` blocks: ``pip install`` must install a
checkout of this distribution (it is on no index), ``tiered-memory`` commands run
against what the snippets wrote.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def normalised(text: str) -> str:
    return re.sub(r"\d{4}-\d{2}-\d{2}", "<date>", text).strip()


def run_command(line: str, cwd: Path) -> str:
    args = shlex.split(line)
    assert args[0] == "tiered-memory", line
    done = subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli.app", *args[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = FENCE.findall(TUTORIAL.read_text(encoding="utf-8"))
    assert [lang for lang, _ in blocks].count("python") >= 5, "the tutorial lost its steps"
    project = re.search(r'^name = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert project is not None
    name = project.group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "tutorial"}
    checked = 0
    try:
        for i, (lang, code) in enumerate(blocks):
            shown = blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text" else None
            if lang == "python":
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(code, f"tutorial.md block {i}", "exec"), namespace)
                if shown is not None:
                    assert normalised(out.getvalue()) == normalised(shown), f"block {i}"
                    checked += 1
            elif lang == "bash":
                for line in filter(None, (raw.strip() for raw in code.splitlines())):
                    if line.startswith("pip install"):
                        flag, folder = shlex.split(line)[2:]
                        assert flag == "-e" and Path(folder).name == name, line
                    else:
                        out_text = run_command(line, tmp_path)
                        assert "allergic to peanuts" in out_text  # what inspect lists
                        checked += 1
    finally:
        store = namespace.get("store")
        if store is not None:
            store.close()
    assert checked >= 6
