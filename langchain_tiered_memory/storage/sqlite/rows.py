"""The ``records`` table of the SQLite archive: its columns and how a row becomes a record.

Example:
    >>> row = (1, "r1", "ana", "t1", "fact", "likes tea", 1_700_000_000_000_000, None, 5.0,
    ...        "[]", "{}", None)
    >>> row_record(row).text, marks(3)
    ('likes tea', '?,?,?')
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.codec import from_micros
from langchain_tiered_memory.storage.sql.records import chunks

__all__ = ["CHUNK", "COLUMNS", "R_COLUMNS", "id_chunks", "marks", "row_record"]

#: Ids per ``IN (...)`` list.
CHUNK = 500


# Statements that look records up by id also check their user with ``+user_id``:
# the unary plus keeps SQLite's planner off the (user_id, ...) indexes, which it
# otherwise picks and then walks every record of the user - a second per
# statement for a user with a million records - instead of the id index.

#: The ``records`` columns a record is read from, in :func:`row_record`'s order.
COLUMNS = (
    "rid, id, user_id, thread_id, kind, text, created_at, last_accessed_at, importance, "
    "sources, metadata, expires_at"
)
#: :data:`COLUMNS` of the table aliased ``r``.
R_COLUMNS = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))


def id_chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    """``items`` in slices of at most ``size``, one ``IN (...)`` list each."""
    return chunks(items, size)


def marks(n: int) -> str:
    """``n`` SQL parameter marks: ``?,?,...``."""
    return ",".join("?" * n)


def row_record(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read with :data:`COLUMNS` (more columns may follow)."""
    # recall hydrates a few hundred rows per query: positional arguments (in field
    # order, checked by the round-trip tests) and no JSON parser for empty values
    sources, metadata = row[9], row[10]
    return MemoryRecord(
        row[1],  # id
        row[2],  # user_id
        row[3],  # thread_id
        row[4],  # kind
        row[5],  # text
        from_micros(row[6]),  # created_at
        from_micros(row[7]) if row[7] is not None else None,  # last_accessed_at
        float(row[8]),  # importance
        () if sources == "[]" else tuple(json.loads(sources)),
        {} if metadata == "{}" else json.loads(metadata),
        from_micros(row[11]) if row[11] is not None else None,  # expires_at
    )
