"""Every install command the project shows can run: the package is on no index.

The commands in the README files, ``docs/``, ``examples/``, the graphs and the
strings of the package and the benches (hints in errors, docstrings) install
from a checkout (``pip install -e '.[extra]'``) or a built wheel, never
``pip install langchain-tiered-memory`` from an index, and name only extras
``pyproject.toml`` defines; an extra that needs the benches' distribution
(``tiered-memory-bench``, also on no index) installs ``./benchmarks`` (or its
wheel) beside it. Calls of :func:`~langchain_tiered_memory.extras.install_hint`
name defined extras, and each hint it gives passes the same check (issue 33
item 18).
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_tiered_memory.extras import EXTRAS, install_hint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
DEFINED = PYPROJECT["project"]["optional-dependencies"]
BENCHES = "tiered-memory-bench"
#: Extras whose requirements include the benches' distribution.
NEED_BENCHES = {e for e, reqs in DEFINED.items() if any(r.startswith(BENCHES) for r in reqs)}

#: "pip install" and its arguments, up to the end of the command (a line may wrap once)
#: or the next "pip install".
_ARG = r"(?:(?!pip install)[^`\n\"])"
COMMAND = re.compile(rf"pip install\s+({_ARG}+(?:\n{_ARG}*)?)")
OURS = re.compile(r"^(?:langchain[-_.]tiered[-_.]memory)(?:\[|$|[<>=~!])", re.I)
WITH_EXTRAS = re.compile(r"^(?P<base>.+?)\[(?P<extras>[^\]]*)\]$")


@functools.cache
def trees() -> dict[Path, ast.Module]:
    """Every Python file of the package, the benches, the examples and the graphs, parsed."""
    python: list[Path] = []
    for folder in (
        "langchain_tiered_memory",
        "examples",
        "graphs",
        "benchmarks/tiered_memory_bench",
    ):
        python += sorted((ROOT / folder).rglob("*.py"))
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in python}


def sources() -> Iterator[tuple[Path, str]]:
    """Each file's texts: a Markdown file whole, a Python file's string constants."""
    files = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    for folder in ("docs", "examples"):
        files += sorted((ROOT / folder).rglob("*.md"))
    for path in files:
        yield path, path.read_text(encoding="utf-8")
    for path, tree in trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield path, node.value
            elif isinstance(node, ast.JoinedStr):  # an f-string: its fixed parts
                yield (
                    path,
                    "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values),
                )


def commands(text: str) -> Iterator[list[str]]:
    """The arguments of each ``pip install`` in ``text`` (to the end of the command)."""
    for match in COMMAND.finditer(text):
        args = re.split(r"&&|;|\s#|\)|,\s", match.group(1))[0]
        args = args.rstrip(" .\n")
        try:
            yield shlex.split(args)
        except ValueError:  # an unbalanced quote: the command is cut mid-argument
            yield [args]


def problems(args: list[str]) -> list[str]:
    """What is wrong with one install command (nothing: it can run)."""
    found = []
    extras_named: set[str] = set()
    targets = [a.strip("'\"") for a in args if not a.startswith("-")]
    for target in targets:
        if OURS.match(target):
            found.append(f"{target}: {NAME} is on no index (install a checkout or a wheel)")
            continue
        parts = WITH_EXTRAS.match(target)
        if parts is None:
            continue
        base = parts.group("base")
        ours = base in (".", "./") or (base.endswith(".whl") and "langchain_tiered_memory" in base)
        if not ours:
            continue  # another distribution's extras (psycopg[binary], langgraph-cli[inmem])
        for extra in filter(None, (e.strip() for e in parts.group("extras").split(","))):
            if extra == "{}":
                continue  # an f-string's placeholder: its calls are checked below
            extras_named.add(extra)
            if extra not in DEFINED:
                found.append(f"{target}: pyproject.toml defines no extra {extra!r}")
    benches = any("benchmarks" in t or "tiered_memory_bench" in t for t in targets)
    for extra in sorted(extras_named & NEED_BENCHES):
        if not benches:
            found.append(f"[{extra}] needs {BENCHES}, on no index: install ./benchmarks beside it")
    return found


def test_the_checker_catches_what_cannot_run() -> None:
    assert problems(["langchain-tiered-memory"])
    assert problems(["'langchain-tiered-memory[postgres]'"])
    assert problems(["-U", "langchain_tiered_memory>=0.1"])
    assert problems(["-e", ".[pgsql]"])
    assert problems(["-e", ".[dev]"])  # without the benches
    assert problems(["dist/langchain_tiered_memory-0.1.0-py3-none-any.whl[nope]"])
    assert not problems(["-e", ".[postgres]"])
    assert not problems(["-e", ".[dev]", "-e", "./benchmarks"])
    assert not problems(["'dist/langchain_tiered_memory-0.1.0-py3-none-any.whl[mcp]'"])
    assert not problems(["'langgraph-cli[inmem]'", "langchain-classic"])
    assert list(commands("run `pip install\n'langchain-tiered-memory[postgres]'`: then")) == [
        ["langchain-tiered-memory[postgres]"]
    ]


def test_every_install_command_shown_can_run() -> None:
    seen = 0
    wrong = []
    for path, text in sources():
        for args in commands(text):
            seen += 1
            wrong += [
                f"{path.relative_to(ROOT)}: pip install {' '.join(args)}: {p}"
                for p in problems(args)
            ]
    assert seen >= 25, f"only {seen} install commands found: the scan lost its sources"
    assert wrong == []


def test_hints_name_defined_extras_and_can_run() -> None:
    assert set(EXTRAS) == set(DEFINED)
    calls = 0
    for path, tree in trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in {
                "install_hint",
                "require_module",
            }:
                extra = node.args[-1]
                if isinstance(extra, ast.Constant):
                    calls += 1
                    assert extra.value in DEFINED, f"{path.relative_to(ROOT)}:{node.lineno}"
    assert calls >= 4
    for extra in EXTRAS:
        hint = install_hint(extra)
        found = list(commands(hint))
        assert len(found) == 2, hint  # a checkout and a wheel
        assert all(problems(args) == [] for args in found), hint
    with pytest.raises(ValueError, match="no extra"):
        install_hint("pgsql")
