"""How the command line prints: what a user supplied is shown literally.

Rich reads ``[bold]`` as markup and ``:peanuts:`` as an emoji code, so a fact
``allergy:peanuts:`` would print as ``allergy🥜``. Every console of the CLI is
made by :func:`plain_console` (no emoji codes, no highlighting) and every
piece of user text goes into a table or a line as :func:`literal` (never
parsed as markup).

Example:
    >>> import io
    >>> console = plain_console(width=40, file=io.StringIO())
    >>> console.print(literal("allergy:peanuts: [bold]x[/bold]"))
    >>> console.file.getvalue().strip()
    'allergy:peanuts: [bold]x[/bold]'
"""

from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = ["clip", "literal", "plain_console", "print_wrapped", "wrapped"]


def plain_console(**kwargs: Any) -> Console:
    """A rich ``Console`` that leaves ``:name:`` codes and numbers alone."""
    kwargs.setdefault("emoji", False)
    kwargs.setdefault("highlight", False)
    return Console(**kwargs)


def literal(value: object) -> Text:
    """``value`` as text rich prints exactly as it is (no markup, no emoji codes)."""
    return Text(str(value))


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (``…``
    marks a cut). A first word longer than ``limit`` is kept whole: never cut mid-word.

    Example:
        >>> clip("I'm planning a trip and could use\\nsome help.", 30)
        "I'm planning a trip and could…"
        >>> clip("short", 30), clip("Supercalifragilistic day", 5)
        ('short', 'Supercalifragilistic…')
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    end = flat[:limit].rfind(" ")  # the last word boundary that leaves room for "…"
    if end <= 0:  # one long word: keep it whole
        first = flat.split(" ", 1)[0]
        return first + ("…" if len(first) < len(flat) else "")
    return flat[:end].rstrip(" ,;:-") + "…"


def wrapped(text: str, width: int, *, indent: int = 0) -> str:
    """``text`` (one paragraph) filled to ``width`` columns at word boundaries; lines after
    the first hang ``indent + 2`` columns in. Words are never split: one longer than the
    line keeps a line of its own.

    Example:
        >>> print(wrapped("   recalled (turn 1): user: I am allergic to peanuts.", 30, indent=3))
           recalled (turn 1): user: I
             am allergic to peanuts.
    """
    lead = " " * indent
    return textwrap.fill(
        " ".join(text.split()),
        width=max(width, indent + 12),
        initial_indent=lead,
        subsequent_indent=lead + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def print_wrapped(
    console: Console, text: str, *, indent: int = 0, style: str | None = None
) -> None:
    """Print ``text`` literally, wrapped to the console's width by :func:`wrapped` (so the
    lines it continues are indented, and no word is cut), never re-wrapped by rich."""
    console.print(
        Text(wrapped(text, console.width, indent=indent), style=style or ""), soft_wrap=True
    )
