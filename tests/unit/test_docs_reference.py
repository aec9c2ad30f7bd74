"""The reference pages list what the code has (the pages themselves build in test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from langchain_tiered_memory.cli.app import app

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_command_line_page_lists_every_command() -> None:
    group = get_command(app)
    commands = set(group.list_commands(None))  # type: ignore[attr-defined,arg-type]
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", page, flags=re.M))
    assert commands and listed == commands, (sorted(commands), sorted(listed))
