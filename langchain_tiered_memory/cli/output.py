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

from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = ["literal", "plain_console"]


def plain_console(**kwargs: Any) -> Console:
    """A rich ``Console`` that leaves ``:name:`` codes and numbers alone."""
    kwargs.setdefault("emoji", False)
    kwargs.setdefault("highlight", False)
    return Console(**kwargs)


def literal(value: object) -> Text:
    """``value`` as text rich prints exactly as it is (no markup, no emoji codes)."""
    return Text(str(value))
