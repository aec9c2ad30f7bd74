"""The ``tiered-memory`` command line: :mod:`.app` (the commands), the demo, chat and inspect."""

from langchain_tiered_memory.cli.app import app

__all__ = ["app"]
