"""Where the tests are and what the fast run collects: the library's docstring examples
run as doctests, and the benchmarks' tests sit beside the benchmarks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_runs_collect_the_doctests_and_the_benches_tests(
    pytestconfig: pytest.Config,
) -> None:
    # pyproject's addopts and testpaths: a bare `pytest` (and `-m "not slow"`, the fast
    # run) collects the package's doctests and benchmarks/tests
    assert pytestconfig.getoption("doctestmodules")
    paths = set(pytestconfig.getini("testpaths"))
    assert {"tests", "langchain_tiered_memory", "benchmarks/tests"} <= paths, paths


def test_the_readme_runs_the_library_with_its_doctests() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    command = next(line for line in readme if "# the library alone" in line)
    words = command.partition("#")[0].split()
    assert "tests/unit" in words and "langchain_tiered_memory" in words, command


#: Library tests that use a bench's code, each with why (one that stops must leave the set).
USES_A_BENCH = {
    # the library's bound on one huge message, with the bench's maker of such messages
    "unit/test_big_messages.py",
}


def bench_importers(tests: Path) -> set[str]:
    """The test modules below ``tests`` that import ``tiered_memory_bench``."""
    found = set()
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if any(name.split(".")[0] == "tiered_memory_bench" for name in names):
                found.add(path.relative_to(tests).as_posix())
    return found


def test_the_benches_tests_sit_beside_the_benches() -> None:
    # a test of a bench belongs in benchmarks/tests, not among the library's tests
    found = bench_importers(REPO / "tests")
    assert found <= USES_A_BENCH, f"bench tests among the library's: {sorted(found - USES_A_BENCH)}"
    assert not USES_A_BENCH - found, f"remove from USES_A_BENCH: {sorted(USES_A_BENCH - found)}"


def test_a_bench_import_is_found(tmp_path: Path) -> None:
    # the check on made-up tests (it cannot pass vacuously)
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "test_a.py").write_text("import json\n", encoding="utf-8")
    (tmp_path / "unit" / "test_b.py").write_text(
        "def test():\n    from tiered_memory_bench.gate import load_self_contained\n",
        encoding="utf-8",
    )
    assert bench_importers(tmp_path) == {"unit/test_b.py"}
