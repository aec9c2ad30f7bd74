"""chat and inspect, driven as a user would: separate processes on one data directory."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run_cli(*args: str, stdin: str = "") -> str:
    result = subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli.app", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return result.stdout


@pytest.mark.slow
@pytest.mark.subprocess
def test_chat_then_inspect_then_forget(tmp_path) -> None:
    data = str(tmp_path / "memory")
    lines = "\n".join(
        [
            "Hi! I'm allergic to peanuts and I live in Lisbon.",
            "What's 17*23?",
            "/core",
            "/budget",
            "/recalls",
            "/quit",
        ]
    )
    out = run_cli(
        "chat",
        "--data-dir",
        data,
        "--user",
        "ana",
        "--model",
        "none",
        "--context-window",
        "2048",
        stdin=lines,
    )
    assert "allergic to peanuts" in out and "lives in Lisbon" in out  # /core
    assert "input budget" in out and "buffer" in out  # /budget
    assert "no recall" in out and "self-contained" in out  # /recalls after the maths question

    # a second session (new process) remembers, and recall fires on a personal question
    out = run_cli(
        "chat",
        "--data-dir",
        data,
        "--user",
        "ana",
        "--model",
        "none",
        "--context-window",
        "2048",
        stdin="Can you suggest a snack for my flight?\n/recalls\n/quit\n",
    )
    assert "gate: recall" in out

    report = json.loads(run_cli("inspect", "--data-dir", data, "--user", "ana", "--json"))
    assert sorted(f["content"] for f in report["core_memory"]["active"]) == [
        "allergic to peanuts",
        "lives in Lisbon",
    ]
    kinds = {e["kind"] for e in report["audit"]}
    assert {"write", "page_in", "recall"} <= kinds
    recall = [e for e in report["audit"] if e["kind"] == "recall"][-1]
    assert recall["payload"]["gate"]["reason"]
    assert "buffered_turns" in report["threads"]["chat"]
    table = run_cli("inspect", "--data-dir", data, "--user", "ana")
    assert "core memory" in table and "audit log" in table

    run_cli(
        "chat", "--data-dir", data, "--user", "ana", "--model", "none", stdin="/forget all\n/quit\n"
    )
    report = json.loads(run_cli("inspect", "--data-dir", data, "--user", "ana", "--json"))
    assert report["core_memory"]["active"] == [] and report["records"] == []
    raw = b"".join(
        p.read_bytes()
        for p in (tmp_path / "memory").iterdir()
        if p.is_file() and not p.name.startswith("embeddings")
    )
    assert b"peanuts" not in raw


@pytest.mark.subprocess
def test_inspect_needs_an_existing_directory(tmp_path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_tiered_memory.cli.app",
            "inspect",
            "--data-dir",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "no data directory" in result.stderr + result.stdout
