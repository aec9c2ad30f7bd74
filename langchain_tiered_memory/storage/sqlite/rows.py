"""Id lists in the SQLite archive's statements: how many per ``IN (...)``, and their marks.

The ``records`` columns and how a row becomes a record are both stores'
(:mod:`langchain_tiered_memory.storage.sql.records`).

Example:
    >>> marks(3), [list(c) for c in id_chunks(["a", "b", "c"], 2)]
    ('?,?,?', [['a', 'b'], ['c']])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_tiered_memory.storage.sql.records import chunks

__all__ = ["CHUNK", "id_chunks", "marks"]

#: Ids per ``IN (...)`` list.
CHUNK = 500


# Statements that look records up by id also check their user with ``+user_id``
# (``BaseSQLiteArchive._owner_is``):
# the unary plus keeps SQLite's planner off the (user_id, ...) indexes, which it
# otherwise picks and then walks every record of the user - a second per
# statement for a user with a million records - instead of the id index.


def id_chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    """``items`` in slices of at most ``size``, one ``IN (...)`` list each."""
    return chunks(items, size)


def marks(n: int) -> str:
    """``n`` SQL parameter marks: ``?,?,...``."""
    return ",".join("?" * n)
