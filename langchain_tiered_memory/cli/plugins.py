"""Commands that other distributions add to ``tiered-memory``, imported only when they run.

A distribution adds a command through an entry point in its ``pyproject.toml``
(this is how ``tiered-memory-bench``, in the repository's ``benchmarks/``
folder, adds ``tiered-memory bench ...``)::

    [project.entry-points."langchain_tiered_memory.cli"]
    bench = "tiered_memory_bench.cli:app"

The entry point names a :class:`typer.Typer`. Its module is imported only
when its command runs: never for another command, nor for
``tiered-memory --help``, which lists it with its distribution's summary.

Example:
    >>> "bench" in plugin_names()  # listed even when not installed, with how to get it
    True
    >>> listing_entry("bench").name
    'bench'
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

import typer
from typer.core import TyperCommand

__all__ = ["ENTRY_POINT_GROUP", "KNOWN_PLUGINS", "listing_entry", "load_plugin", "plugin_names"]

#: The entry-point group whose entries become ``tiered-memory`` commands.
ENTRY_POINT_GROUP = "langchain_tiered_memory.cli"

#: This project's own plugins: ``name -> (one line of help, how to install it)``.
#: They are listed even when missing, and running one says how to install it.
KNOWN_PLUGINS: dict[str, tuple[str, str]] = {
    "bench": (
        "Benchmarks: each prints a table and writes JSON (the tiered-memory-bench distribution).",
        "the benches are not installed: they are the tiered-memory-bench distribution in the "
        "benchmarks/ folder of the langchain-tiered-memory repository (on no package index). "
        "In a checkout, run pip install -e ./benchmarks; or build its wheel there "
        "(pip wheel --no-deps -w benchmarks/dist ./benchmarks) and install it: "
        "pip install benchmarks/dist/tiered_memory_bench-*.whl",
    ),
}


def _installed() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def plugin_names() -> list[str]:
    """The commands plugins add (installed ones and this project's own), sorted."""
    return sorted(set(_installed()) | set(KNOWN_PLUGINS))


def listing_entry(name: str) -> TyperCommand | None:
    """What ``--help`` lists for plugin ``name``: its name and one line, nothing imported.

    ``None`` when ``name`` is no plugin.
    """
    entry = _installed().get(name)
    if entry is None and name not in KNOWN_PLUGINS:
        return None
    if name in KNOWN_PLUGINS:
        summary = KNOWN_PLUGINS[name][0]
        if entry is None:
            summary += " Not installed."
    else:
        summary = (entry.dist.metadata["Summary"] if entry and entry.dist else None) or ""
    return TyperCommand(name, help=summary, short_help=summary)


def load_plugin(name: str) -> Any:
    """Import plugin ``name`` and return its command (a click command of typer's).

    Raises:
        ModuleNotFoundError: when the plugin is not installed (the message says how
            to install this project's own ones); the command line prints it in one line.
        ImportError: when it is installed but cannot be imported.
        TypeError: when its entry point names something else than a :class:`typer.Typer`.
    """
    entry = _installed().get(name)
    if entry is None:
        hint = KNOWN_PLUGINS.get(name, ("", f"no command {name!r} is installed"))[1]
        raise ModuleNotFoundError(hint)
    target = entry.load()
    if not isinstance(target, typer.Typer):
        raise TypeError(
            f"the {ENTRY_POINT_GROUP} entry point {name!r} ({entry.value}) is no typer.Typer"
        )
    return typer.main.get_command(target)
