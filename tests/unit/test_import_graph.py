"""No import circle inside the package, read from the source (``ast``), not from what a run
happened to import.

An edge ``a -> b`` is an ``import``/``from ... import`` in ``a`` that names module
``b`` of the package (``from pkg.x import name`` names ``pkg.x``, or ``pkg.x.name``
when that is a module). Every import counts, wherever it stands: at module level,
inside a function (a lazy import), or under ``if TYPE_CHECKING:``. What Python also
runs on the way - the ``__init__`` of each parent package - is not an edge: every
module would otherwise sit on a circle through the top-level package, which
re-exports the facades (and the subpackages' ``__init__`` files are docstrings).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import langchain_tiered_memory

PACKAGE = "langchain_tiered_memory"
ROOT = Path(langchain_tiered_memory.__file__).parent

#: Circles tolerated for now, each with why; a circle that goes must leave this set (the
#: test fails until it does), so no entry can outlive its circle. None left: the last,
#: memory <-> store, went when TieredMemory came to depend on the Store protocol.
KNOWN_CIRCLES: set[frozenset[str]] = set()


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    where: str  # "module", "function" or "typing"


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (packages by their ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _where(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    kind = "module"
    parent = parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "function"
        if isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.unparse(parent.test):
            return "typing"
        parent = parents.get(parent)
    return kind


def imports(known: dict[str, Path]) -> Iterator[Import]:
    """Every intra-package import of every module in ``known``."""
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package upwards
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in known:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] == PACKAGE:
                    yield Import(name, target, node.lineno, _where(node, parents))


def circles(edges: list[Import]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def edges() -> list[Import]:
    return list(imports(modules()))


def describe(circle: frozenset[str], edges: list[Import]) -> str:
    inside = [e for e in edges if e.source in circle and e.target in circle]
    return "\n".join(
        f"  {e.source} -> {e.target} (line {e.line}, {e.where})"
        for e in sorted(inside, key=lambda e: (e.source, e.target))
    )


def test_the_walk_sees_every_kind_of_import(edges) -> None:
    seen = {(e.source, e.target, e.where) for e in edges}
    assert {e.where for e in edges} == {"module", "function", "typing"}
    for source, target, where in [
        ("cli", "cli.app", "module"),  # a package's __init__
        ("store", "memory", "module"),  # a store opens views; a view knows only the protocol
        ("integrations.history", "store", "function"),  # a lazy import
        ("budget.repeats", "values", "typing"),
        ("recall.gate", "values", "module"),  # from pkg.values import GateDecision
    ]:
        assert (f"{PACKAGE}.{source}", f"{PACKAGE}.{target}", where) in seen


def test_no_import_circle_in_the_package(edges) -> None:
    found = set(circles(edges))
    new = found - KNOWN_CIRCLES
    assert not new, "import circles:\n" + "\n\n".join(describe(c, edges) for c in new)
    gone = KNOWN_CIRCLES - found
    assert not gone, f"remove from KNOWN_CIRCLES, the circle is gone: {sorted(map(sorted, gone))}"


def test_circles_are_found() -> None:
    # the walk on a package that has one (the check cannot pass vacuously)
    made = [Import("p.a", "p.b", 1, "module"), Import("p.b", "p.c", 1, "function")]
    assert circles(made) == []
    assert circles([*made, Import("p.c", "p.a", 1, "typing")]) == [frozenset({"p.a", "p.b", "p.c"})]


#: The package's folders (and top-level modules) from the bottom up: each imports only
#: what stands before it. The version and the extras' install commands, then value types
#: and protocols (turns, facts and their upsert rule), then token counting and the
#: prompt's markup, records, storage, the embedders, model resolution, recall, the tiers,
#: what is written, the facade, the store, the integrations and the command line;
#: ``testing`` (fakes and the conformance suite) sits on top, for tests.
LAYERS: tuple[str, ...] = (
    "version",
    "extras",
    "expiry",
    "ids",
    "text",
    "values",
    "budget",
    "records",
    "storage",
    "embeddings",
    "models",
    "recall",
    "tiers",
    "write",
    "memory",
    "store",
    "integrations",
    "cli",
    "testing",
    "__init__",
)

#: Imports against the order tolerated for now, each with why; one that goes must leave
#: this set (the test fails until it does).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def layer_of(module: str) -> str:
    """The folder (or top-level module) a module belongs to (``__init__`` for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward(edges: list[Import]) -> dict[tuple[str, str], list[Import]]:
    """The imports from a layer to one above it (or to one not in :data:`LAYERS`)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found: dict[tuple[str, str], list[Import]] = {}
    for e in edges:
        low, high = layer_of(e.source), layer_of(e.target)
        if low != high and rank.get(high, len(rank)) >= rank.get(low, -1):
            found.setdefault((low, high), []).append(e)
    return found


def test_the_folders_import_only_folders_below_them(edges) -> None:
    assert {layer_of(m) for m in modules()} <= set(LAYERS), "a new folder: give it its place"
    found = upward(edges)
    new = {pair: found[pair] for pair in set(found) - KNOWN_UPWARD}
    assert not new, "imports against the layer order:\n" + "\n".join(
        f"  {e.source} -> {e.target} (line {e.line}, {e.where})"
        for pair in sorted(new)
        for e in new[pair]
    )
    gone = KNOWN_UPWARD - set(found)
    assert not gone, f"remove from KNOWN_UPWARD, the import is gone: {sorted(gone)}"


def test_testing_is_imported_only_by_tests(edges) -> None:
    # fakes and the conformance suite are for tests; the library never reads them
    readers = {e.source for e in edges if layer_of(e.target) == "testing"}
    assert {r for r in readers if layer_of(r) != "testing"} == set()


def test_an_upward_import_is_found() -> None:
    # the check on made-up edges (it cannot pass vacuously)
    down = Import(f"{PACKAGE}.tiers.core", f"{PACKAGE}.values.facts", 1, "module")
    up = Import(f"{PACKAGE}.storage.base", f"{PACKAGE}.tiers.core", 1, "typing")
    assert upward([down]) == {}
    assert upward([down, up]) == {("storage", "tiers"): [up]}


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        # the values the layers exchange, the prompt's markup, the shared text helpers
        ("values", set()),
        ("budget.markup", set()),
        ("text", set()),
        # models only resolves models: the echo model (lazily, for "echo"), the model
        # table it warns against and how to install the local model's extra are all it reads
        ("models", {"models.echo", "budget.sections", "extras"}),
    ],
)
def test_leaf_modules_import_only_what_they_say(edges, module, allowed) -> None:
    name = f"{PACKAGE}.{module}"
    reads = {e.target.removeprefix(f"{PACKAGE}.") for e in edges if e.source == name}
    assert reads <= allowed, f"{name} imports {sorted(reads - allowed)}"


def test_the_library_never_imports_the_benches() -> None:
    for path in modules().values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "tiered_memory_bench" for n in names), path


def test_the_benches_import_only_public_names_of_the_library() -> None:
    # the benches are another distribution: what they use of the library is its public API
    bench = ROOT.parent / "benchmarks" / "tiered_memory_bench"
    if not bench.is_dir():  # the library installed without its repository
        pytest.skip("no benchmarks/ beside the package")
    private = []
    for path in sorted(bench.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                private += [
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") or "._" in f".{node.module}"
                ]
    assert not private, private


def private_names(tree: ast.AST) -> set[str]:
    """The private names (``_x``, not dunders) a module defines or binds: its functions,
    classes, variables and arguments, the attributes it assigns (``self._db = ...``)
    and the names it imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_reaches(tree: ast.AST, theirs: set[str]) -> list[str]:
    """Where a module reaches a private name another module of the package defines
    (``theirs``): ``from pkg.x import _helper``, or ``archive._db``, ``mod._helper``,
    ``tr._headline`` on anything but ``self``/``cls`` - unless the module defines that
    name itself (an object of its own class, as in ``other._key`` in ``__eq__``)."""
    mine = private_names(tree) - {
        (a.asname or a.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE)
        for a in node.names
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            found += [
                f"line {node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in theirs - mine
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.fixture(scope="module")
def trees() -> dict[str, ast.AST]:
    return {
        name: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, path in modules().items()
    }


def test_no_private_name_crosses_a_module_boundary(trees) -> None:
    # a module's ``_x`` is its own: another module (or the benches) that reads it, by
    # import or as an attribute, breaks when it changes; make it public or move the code
    defined = {name: private_names(tree) for name, tree in trees.items()}
    found = []
    for name, tree in trees.items():
        theirs = set().union(*(names for other, names in defined.items() if other != name))
        found += [f"{name}: {where}" for where in private_reaches(tree, theirs)]
    bench = ROOT.parent / "benchmarks" / "tiered_memory_bench"
    benches = {
        path.name: ast.parse(path.read_text(encoding="utf-8"))
        for path in (sorted(bench.rglob("*.py")) if bench.is_dir() else [])
    }
    in_benches = {name: private_names(tree) for name, tree in benches.items()}
    for name, tree in benches.items():  # the library's private names and the other benches'
        theirs = set().union(
            *defined.values(), *(names for other, names in in_benches.items() if other != name)
        )
        found += [f"benchmarks/{name}: {where}" for where in private_reaches(tree, theirs)]
    assert not found, "private names reached across modules:\n" + "\n".join(found)


def test_a_private_reach_is_found() -> None:
    # the check on made-up modules (it cannot pass vacuously)
    theirs = {"_db", "_headline", "_helper"}
    source = (
        f"from {PACKAGE}.storage.sqlite.archive import _helper\n"
        "def rows(archive, tr):\n"
        "    return archive._db, tr._headline, _helper\n"
    )
    assert private_reaches(ast.parse(source), theirs) == [
        f"line 1: from {PACKAGE}.storage.sqlite.archive import _helper",
        "line 3: archive._db",
        "line 3: tr._headline",
    ]
    own = (  # a class reads its own private attribute of another instance: allowed
        "class Key:\n"
        "    def __init__(self):\n"
        "        self._db = 1\n"
        "    def __eq__(self, other):\n"
        "        return self._db == other._db\n"
    )
    assert private_reaches(ast.parse(own), theirs) == []


#: The longest a module of the package may be, in lines.
MAX_LINES = 900

#: Modules over :data:`MAX_LINES` tolerated for now (none left: the two record stores
#: and the SQL backend went under it when their shared contract was written once, issue
#: 32). One that shrinks under the limit must leave this set (the test fails until it does).
KNOWN_LONG: set[str] = set()


def long_modules(root: Path = ROOT, limit: int = MAX_LINES) -> dict[str, int]:
    """The modules below ``root`` over ``limit`` lines, by path relative to ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_module_is_over_900_lines() -> None:
    # one module, one job: a module that grows past the limit holds several; split it
    found = long_modules()
    new = {name: n for name, n in found.items() if name not in KNOWN_LONG}
    assert not new, f"modules over {MAX_LINES} lines: {new}"
    gone = KNOWN_LONG - set(found)
    assert not gone, f"remove from KNOWN_LONG, the module is short enough now: {sorted(gone)}"


def test_a_long_module_is_found(tmp_path: Path) -> None:
    # the check on a made-up package (it cannot pass vacuously)
    (tmp_path / "short.py").write_text("x = 1\n" * 900, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * 901, encoding="utf-8")
    assert long_modules(tmp_path) == {"sub/long.py": 901}
