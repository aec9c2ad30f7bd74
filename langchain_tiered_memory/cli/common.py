"""What every ``tiered-memory`` command shares: this package's and those plugins add.

A plugin (a distribution with a ``langchain_tiered_memory.cli`` entry point,
such as ``tiered-memory-bench``) builds its commands from these, so its errors,
progress bars and JSON files look like the library's own.

Example:
    >>> import typer
    >>> require_module("json", "--out", "bench")  # present: nothing happens
    >>> try:
    ...     require_module("no_such_module_xyz", "--plot", "bench")
    ... except typer.BadParameter as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    needs no_such_module_xyz: pip install -e '.[bench]' -e ./benchmarks in a checkout (or ...)
    >>> memory_location(Path("./memory"), None)
    PosixPath('memory')
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from langchain_tiered_memory.cli.output import plain_console
from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.storage.errors import StorageError

__all__ = [
    "EXTRACTOR_CHOICES",
    "USER_ERRORS",
    "USER_ERROR_EXIT",
    "console",
    "extractor_choice",
    "extractor_for_model",
    "memory_location",
    "one_line",
    "progress_bars",
    "require_module",
    "write_json",
]

#: What a user can cause (a bad option, a missing file or extra, a bad model
#: name): reported in one line with exit code :data:`USER_ERROR_EXIT`, not as a
#: traceback (``--debug`` or ``TIERED_MEMORY_DEBUG=1`` shows it).
#: A storage failure (a server that cannot be reached, a damaged file) is one
#: line too: its message names the database or file and the fix.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, StorageError)
USER_ERROR_EXIT = 2

#: The console every command prints to (user text printed literally, see :mod:`.output`).
console = plain_console()


def one_line(exc: BaseException) -> str:
    """An exception as one line: ``"error: <message>"`` with its whitespace folded.

    Example:
        >>> one_line(FileNotFoundError("no data  at ./x.json"))
        'error: no data at ./x.json'
    """
    return "error: " + (" ".join(str(exc).split()) or type(exc).__name__)


def progress_bars() -> Progress:
    """A progress display (bar, done/total, time left) that clears itself when done.

    Example:
        >>> bars = progress_bars()
        >>> task = bars.add_task("records", total=2)
        >>> bars.update(task, completed=2)
        >>> bars.tasks[0].finished
        True
    """
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def write_json(result: dict[str, Any], out: Path | None) -> None:
    """Write a result as JSON (creating folders) and say where; nothing when ``out`` is ``None``."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wrote {escape(str(out))}")


def require_module(module: str, option: str, extra: str) -> None:
    """Fail before any long work when ``option`` needs a package that is missing.

    Raises:
        typer.BadParameter: naming ``option`` and the extra that installs ``module``.
    """
    if importlib.util.find_spec(module) is None:
        raise typer.BadParameter(f"needs {module}: {install_hint(extra)}", param_hint=option)


#: What ``--extractor`` of ``chat`` takes.
EXTRACTOR_CHOICES = ("auto", "model", "rules+links", "rules", "learned")


def extractor_choice(choice: str) -> str:
    """``--extractor``'s value, checked (before any model is loaded).

    Raises:
        typer.BadParameter: for a value not in :data:`EXTRACTOR_CHOICES`.

    Example:
        >>> extractor_choice(" Rules ")
        'rules'
    """
    wanted = choice.strip().lower()
    if wanted not in EXTRACTOR_CHOICES:
        raise typer.BadParameter(
            f"use one of {', '.join(EXTRACTOR_CHOICES)}, got {choice!r}", param_hint="--extractor"
        )
    return wanted


def extractor_for_model(choice: str, model: Any, spec: str = "") -> Any:
    """The ``extractor=`` a command's memory gets for ``--extractor CHOICE`` and its model
    (``spec``: what ``--model`` said).

    ``"model"``: the model extractor on ``model`` (a
    :class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor`, batched
    off the add) when it is a chat model that gives structured output, else the
    offline default, ``"rules+links"`` (``model`` ``None``, or the echo model, which
    only repeats its prompt). ``"auto"``: the same, except for the offline SmolLM2
    (``--model local``): at 135M parameters it writes no fact the rules would not
    (benchmarks/README.md, "facts"), so the offline default writes.
    ``"rules+links"``, ``"rules"`` and ``"learned"``: those offline extractors,
    whatever the model.

    Raises:
        typer.BadParameter: for another choice.

    Example:
        >>> extractor_for_model("auto", None), extractor_for_model("rules", None)
        ('rules+links', 'rules')
    """
    from langchain_tiered_memory.models import LOCAL
    from langchain_tiered_memory.write.extraction import OFFLINE_EXTRACTORS

    wanted = extractor_choice(choice)
    if wanted in OFFLINE_EXTRACTORS:
        return wanted
    if wanted == "auto" and spec.strip().lower() == LOCAL:
        return "rules+links"
    from langchain_tiered_memory.write.model_extractor import model_extractor_for

    return (model_extractor_for(model) if model is not None else None) or "rules+links"


def memory_location(data_dir: Path, store: str | None) -> str | Path:
    """Where the memory is: ``--store`` (a Postgres URL) if given, else ``--data-dir``.

    Raises:
        typer.BadParameter: ``store`` is no ``postgresql://`` URL, or psycopg is missing.
    """
    from langchain_tiered_memory.storage.postgres.db import is_postgres_url, redact_url

    if store is None:
        return data_dir
    if not is_postgres_url(store):
        raise typer.BadParameter(
            f"expected a postgresql:// URL, got {redact_url(store)!r} (a directory goes to "
            "--data-dir)",
            param_hint="--store",
        )
    require_module("psycopg", "--store", "postgres")
    return store
