"""Commands from other distributions (``tiered-memory bench``): found by entry point,
imported only when they run, and a clear sentence when they are missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint

import pytest
from typer.testing import CliRunner

from langchain_tiered_memory.cli import plugins
from langchain_tiered_memory.cli.app import USER_ERROR_EXIT, app


@pytest.mark.subprocess
def test_other_commands_never_import_the_benches() -> None:
    # a fresh interpreter: what `tiered-memory --help`, `inspect --help`... import
    script = textwrap.dedent(
        """
        import sys
        from typer.testing import CliRunner
        from langchain_tiered_memory.cli.app import app
        for args in (["--help"], ["demo", "--help"], ["chat", "--help"],
                     ["inspect", "--help"], ["migrate", "--help"]):
            assert CliRunner().invoke(app, args).exit_code == 0, args
        print(sorted(m for m in sys.modules if m.startswith("tiered_memory_bench")))
        CliRunner().invoke(app, ["bench", "--help"])
        print("tiered_memory_bench.cli" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "True"]


def test_help_lists_the_bench_and_its_commands() -> None:
    listing = CliRunner().invoke(app, ["--help"])
    assert listing.exit_code == 0 and "bench" in listing.output
    bench = CliRunner().invoke(app, ["bench", "--help"])
    assert bench.exit_code == 0
    for command in ("tokens", "overhead", "gate", "facts", "retrieval", "qa"):
        assert command in bench.output


def test_without_the_bench_distribution_bench_says_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    listing = CliRunner().invoke(app, ["--help"])
    assert listing.exit_code == 0 and "Not installed" in listing.output
    for args in (["bench"], ["bench", "gate", "--out", "x.json"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == USER_ERROR_EXIT, args
        assert result.output.startswith("error: the benches are not installed")
        assert "pip install -e ./benchmarks" in result.output
    assert CliRunner().invoke(app, ["inspect", "--help"]).exit_code == 0


def test_any_distribution_can_add_a_command(tmp_path, monkeypatch) -> None:
    (tmp_path / "hello_plugin.py").write_text(
        textwrap.dedent(
            """
            import typer
            app = typer.Typer()
            @app.command()
            def greet(name: str) -> None:
                print(f"hello {name}")
            @app.command()
            def fail() -> None:
                raise ValueError("bad  input")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = EntryPoint("hello", "hello_plugin:app", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [entry])
    assert "hello" in CliRunner().invoke(app, ["--help"]).output
    assert CliRunner().invoke(app, ["hello", "greet", "ana"]).output == "hello ana\n"
    failed = CliRunner().invoke(app, ["hello", "fail"])  # the command line's one-line errors
    assert failed.exit_code == USER_ERROR_EXIT and failed.output.startswith("error: bad input")


def test_an_entry_point_that_is_no_typer_app_is_a_type_error(monkeypatch) -> None:
    entry = EntryPoint("odd", "json:dumps", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [entry])
    with pytest.raises(TypeError, match=r"'odd' \(json:dumps\) is no typer\.Typer"):
        plugins.load_plugin("odd")
