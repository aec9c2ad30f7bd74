"""The rough edges a new user hit (issue 22's numbered list), each pinned by a test."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import USER_ERROR_EXIT, app
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact

UNREACHABLE = "postgresql://app:secret@127.0.0.1:1/memory"  # nothing listens on port 1


def run(*args: str, input: str | None = None) -> object:
    return CliRunner().invoke(app, list(args), input=input, env={"COLUMNS": "250"})


def lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


# 1. a Postgres URL that cannot connect: one line, exit 2, a hint that fits


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "--store", UNREACHABLE),
        ("chat", "--model", "none", "--store", UNREACHABLE),
        ("migrate", "{data}", UNREACHABLE),
    ],
)
def test_an_unreachable_postgres_is_one_line_and_exit_2(tmp_path: Path, args: tuple) -> None:
    data = tmp_path / "data"
    MemoryStore(data, embeddings="none").close()
    result = run(*(a.format(data=data) for a in args), input="")
    assert result.exit_code == USER_ERROR_EXIT, result.output  # type: ignore[attr-defined]
    out = result.output  # type: ignore[attr-defined]
    assert len(lines(out)) == 1 and out.strip().startswith("error: ") and "Traceback" not in out
    assert "secret" not in out and "127.0.0.1:1" in out
    assert "adds are idempotent" not in out  # no hint about retrying adds here


def test_migrating_into_a_missing_database_says_to_create_it(
    tmp_path: Path, postgres_server: str
) -> None:
    data = tmp_path / "data"
    MemoryStore(data, embeddings="none").close()
    missing = urlsplit(postgres_server)._replace(path="/no_such_database").geturl()
    result = run("migrate", str(data), missing)
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == USER_ERROR_EXIT, out  # type: ignore[attr-defined]
    assert len(lines(out)) == 1 and "does not exist" in out and "create the database" in out
    assert "adds are idempotent" not in out


# 2. what a user supplied is printed literally (no emoji codes, no markup)

TRICKY = "peanuts :peanuts: [bold]bold[/bold] [red]x"


def test_user_text_is_printed_literally(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with MemoryStore(data, embeddings="none") as store:
        store.core("ana").upsert(CoreFact.new("allergy:peanuts:", TRICKY))
        store.memory("ana", "chat").add_messages([("human", f"note {TRICKY}")])
    shown = run("inspect", "--user", "ana", "--data-dir", str(data), "--embeddings", "none")
    assert shown.exit_code == 0, shown.output  # type: ignore[attr-defined]
    out = shown.output  # type: ignore[attr-defined]
    assert "allergy:peanuts:" in out and ":peanuts: [bold]bold[/bold]" in out
    assert "🥜" not in out
    chat = run(
        "chat", "--user", "ana", "--model", "echo", "--data-dir", str(data),
        "--embeddings", "none", input=f"I say {TRICKY}\n/core\n/quit\n",
    )  # fmt: skip
    out = chat.output  # type: ignore[attr-defined]
    assert chat.exit_code == 0, out  # type: ignore[attr-defined]
    assert "🥜" not in out
    assert f"I say {TRICKY}" in out  # the echo reply
    assert f"allergy:peanuts:: {TRICKY}" in out  # /core


# 3. chat --model none keeps its placeholder out of the conversation


def test_no_model_placeholder_is_not_stored_as_a_turn(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run(
        "chat", "--user", "ana", "--model", "none", "--data-dir", str(data),
        "--embeddings", "none", input="I live in Porto.\nI like jazz.\n/quit\n",
    )  # fmt: skip
    assert result.exit_code == 0 and "(no model" in result.output  # type: ignore[attr-defined]
    with MemoryStore(data, embeddings="none") as store:
        messages = store.memory("ana", "chat").messages
    assert [m.type for m in messages] == ["human", "human"]
    assert not any("no model" in str(m.content) for m in messages)


# 5. a blank user is refused; an unknown user is named as unknown


@pytest.mark.parametrize("command", ["chat", "inspect"])
def test_a_blank_user_is_refused(tmp_path: Path, command: str) -> None:
    data = tmp_path / "data"
    MemoryStore(data, embeddings="none").close()
    result = run(command, "--user", "   ", "--data-dir", str(data), input="")
    assert result.exit_code == USER_ERROR_EXIT  # type: ignore[attr-defined]
    assert "blank" in result.output  # type: ignore[attr-defined]


def test_inspecting_an_unknown_user_says_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with MemoryStore(data, embeddings="none") as store:
        store.memory("ana", "chat").add_messages([("human", "hi")])
    result = run("inspect", "--user", "anna", "--data-dir", str(data))
    out = " ".join(result.output.split())  # type: ignore[attr-defined]
    assert result.exit_code == USER_ERROR_EXIT, out  # type: ignore[attr-defined]
    assert "no memory of user 'anna'" in out and "users there: ana" in out


# 4. a directory opened with another embedder is refused at open, before anything is written


def test_another_embedder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with MemoryStore(data, embeddings="minilm") as store:
        store.memory("ana", "chat").add_messages([("human", "I live in Porto.")])
    result = run(
        "chat", "--user", "ana", "--data-dir", str(data), "--embeddings", "wordllama",
        "--model", "none", input="What did I say about Porto?\n/quit\n",
    )  # fmt: skip
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == USER_ERROR_EXIT, out  # type: ignore[attr-defined]
    assert len(lines(out)) == 1 and "was built with the embeddings" in out
    with MemoryStore(data) as store:  # the one it was built with
        assert [m.content for m in store.memory("ana", "chat").messages] == ["I live in Porto."]


def test_postgres_refuses_another_embedder_too(postgres_url: str) -> None:
    from langchain_tiered_memory.records import MemoryRecord

    with MemoryStore(postgres_url, embeddings=DeterministicFakeEmbedding(size=16)) as store:
        store.archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="likes tea")])
    with pytest.raises(ValueError, match="was built with the embeddings"):
        MemoryStore(postgres_url, embeddings=DeterministicFakeEmbedding(size=8))
    with MemoryStore(postgres_url, embeddings=DeterministicFakeEmbedding(size=16)) as store:
        assert store.archive.dense_search("likes tea", "ana")


# 8. the extractive running summary keeps the user's statements, not assistant filler


def test_the_running_summary_keeps_what_the_user_said() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.memory import TieredMemory

    said = [
        "I'm allergic to shellfish and my sister Ines lives in Porto.",
        "My daughter Maya starts school on 4 September.",
        "We are flying to Lisbon on Friday with TAP.",
        "I work night shifts at the hospital until March.",
        "My landlord raised the rent to 1450 euros.",
        "Our dog Biscuit needs his pills twice a day.",
    ]
    memory = TieredMemory(context_window=1024)
    for statement in said:
        memory.add_messages(
            [HumanMessage(statement), AIMessage("Noted! Anything I can help with today?")]
        )
        for i in range(3):
            memory.add_messages(
                [
                    HumanMessage(f"ok {i}"),
                    AIMessage("Of course, I am always happy to help you with anything at all."),
                ]
            )
    summary = memory.state.summary
    assert summary, "the buffer compressed"
    assert "assistant:" not in summary, summary  # no filler line kept
    kept = [s for s in said if s in summary]
    assert len(kept) >= 3, summary  # the summary's room goes to what the user said
    assert kept[0] == said[0]  # the compound sentence whole: Ines and Porto


# 6. Ctrl-C during a long bench writes the sizes that finished


@pytest.mark.slow
@pytest.mark.subprocess
def test_ctrl_c_during_a_bench_writes_what_finished(tmp_path: Path) -> None:
    import json
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "writes.json"
    cli = str(Path(sys.executable).with_name("tiered-memory"))
    proc = subprocess.Popen(
        [
            cli,
            "-v",
            "bench",
            "writes",
            "--turns",
            "0,2,200000",
            "--samples",
            "2",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a suite started in the background (``cmd &``) inherits SIGINT ignored, and so
        # would the bench: give it the default handler a terminal's Ctrl-C meets
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 180
    assert proc.stderr is not None
    for line in proc.stderr:  # progress is logged as each size finishes
        if line.rstrip().endswith("ms") and "2 turns:" in line:
            break
        assert time.monotonic() < deadline and proc.poll() is None, line
    time.sleep(0.5)  # well into the 200,000-turn size
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout
    assert "interrupted: finished sizes 0, sizes 2" in " ".join(stdout.split())
    result = json.loads(out.read_text())
    assert result["interrupted"] is True and sorted(result["sizes"]) == ["0", "2"]
    assert result["sizes"]["2"]["add_p50_ms"] > 0


# 9. the docs say what the code does

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_says_the_token_count_it_prints(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import re

    text = (ROOT / "README.md").read_text()
    said = re.search(r"Run as written \(no turns in between\), the prompt is (\d+) tokens", text)
    assert said is not None
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(
        compile(re.findall(r"```python\n(.*?)```", text, flags=re.S)[0], "README", "exec"),
        namespace,
    )
    assert namespace["context"].total_tokens == int(said.group(1))
    namespace["store"].close()


def test_the_migration_guide_names_the_modules_its_code_imports() -> None:
    import re

    text = (ROOT / "docs" / "howto" / "migration.md").read_text()
    code = "".join(re.findall(r"```python\n(.*?)```", text, flags=re.S))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    modules = set(re.findall(r"from (langchain_tiered_memory\.integrations\.\w+) import", code))
    assert modules and all(f"`{m}`" in prose for m in modules), modules


def test_the_readme_says_what_langgraph_dev_needs() -> None:
    text = (ROOT / "README.md").read_text()
    assert "langgraph dev" in text and "langgraph-cli[inmem]" in text


def test_the_sdk_snippet_does_not_hard_code_the_port() -> None:
    import re

    for doc in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for url in re.findall(r"get_sync_client\(url=([^)]*)\)", doc.read_text()):
            assert not re.fullmatch(r"\"http://[^\"]+:2024\"", url.strip()), (doc, url)


@pytest.mark.subprocess
def test_every_example_ends_with_example_ok() -> None:
    import subprocess
    import sys

    readme = (ROOT / "examples" / "README.md").read_text()
    assert "ends\nwith `<name> example OK`" in readme or "<name> example OK" in readme
    for example in sorted((ROOT / "examples").glob("*.py")):
        source = example.read_text()
        assert f'print("{example.stem} example OK")' in source, example.name
    # and the one that did not, run: its last line says so
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "react_agent_tool.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "react_agent_tool example OK"


def test_bench_facts_without_data_says_where_the_format_is(tmp_path: Path) -> None:
    result = run("bench", "facts", "--data", str(tmp_path / "missing.json"))
    out = " ".join(result.output.split())  # type: ignore[attr-defined]
    assert result.exit_code == USER_ERROR_EXIT and "benchmarks/README.md" in out  # type: ignore[attr-defined]
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert "../shared/data/README.md" not in readme
    assert "`expect`" in readme and "facts_heldout.json" in readme


def test_bench_retrieval_help_is_plain_text() -> None:
    result = run("bench", "retrieval", "--help")
    assert result.exit_code == 0 and "--dataset longmemeval" in result.output  # type: ignore[attr-defined]
    assert "``" not in result.output  # type: ignore[attr-defined]
