"""The ``records`` table of the Postgres record store: its columns, how a record is
inserted, and how a row becomes a record.

Example:
    >>> row = (1, "r1", "ana", "t1", "fact", "likes tea", 1_700_000_000_000_000, None, 5.0,
    ...        "[]", "{}", None)
    >>> row_record(row).text
    'likes tea'
    >>> "ON CONFLICT DO NOTHING RETURNING rid, id" in record_insert_sql()
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.codec import from_micros
from langchain_tiered_memory.storage.postgres.db import postgres_sql
from langchain_tiered_memory.storage.postgres.keywords import document_text
from langchain_tiered_memory.storage.postgres.schema import TS_CONFIG, small_tsv_sql
from langchain_tiered_memory.storage.sql.records import record_values

__all__ = [
    "CHUNK",
    "COLUMNS",
    "INSERT",
    "UPSERT",
    "insert_params",
    "record_insert_sql",
    "row_record",
    "stored_vector",
]

#: Ids per ``= ANY(?)`` list.
CHUNK = 1000
#: The ``records`` columns (table aliased ``r``) a record is read from, in
#: :func:`row_record`'s order.
COLUMNS = (
    "r.rid, r.id, r.user_id, r.thread_id, r.kind, r.text, r.created_at, r.last_accessed_at, "
    "r.importance, r.sources, r.metadata, r.expires_at"
)


def record_insert_sql(*, with_rid: bool = False) -> str:
    """The ``INSERT`` of one record (``?`` placeholders: [rid,] id, user_id, thread_id,
    kind, text, created_at, last_accessed_at, importance, sources, metadata, expires_at,
    vector, keyword text); skips an id stored already and returns ``rid, id``."""
    names = ["id", "user_id", "thread_id", "kind", "text", "created_at", "last_accessed_at"]
    names += ["importance", "sources", "metadata", "expires_at", "embedding"]
    types = ["text", "text", "text", "text", "text", "bigint", "bigint", "float8", "text"]
    types += ["text", "bigint", "vector"]
    if with_rid:
        names, types = ["rid", *names], ["bigint", *types]
    values = ", ".join(f"?::{t} AS {n}" for n, t in zip(names, types, strict=True))
    small = small_tsv_sql("v.tsv", "v.user_id", "v.thread_id", "v.kind")
    return (
        f"INSERT INTO records ({', '.join(names)}, tsv, tsv_small) "
        f"SELECT v.*, {small} FROM (SELECT {values}, to_tsvector('{TS_CONFIG}', ?) AS tsv) v "
        "ON CONFLICT DO NOTHING RETURNING rid, id"
    )


#: :func:`record_insert_sql` of a new record, in psycopg's placeholders.
INSERT = postgres_sql(record_insert_sql(), True)
#: :data:`INSERT` that replaces a stored row of the same id and user (``put_record``).
UPSERT = INSERT.replace(
    "ON CONFLICT DO NOTHING",
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(
        f"{c}=EXCLUDED.{c}"
        for c in [
            "thread_id",
            "kind",
            "text",
            "created_at",
            "last_accessed_at",
            "importance",
            "sources",
            "metadata",
            "expires_at",
            "embedding",
            "tsv",
            "tsv_small",
        ]
    )
    + " WHERE records.user_id = EXCLUDED.user_id",
)


def insert_params(
    record: MemoryRecord, sources: str, metadata: str, vector: np.ndarray | None
) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT` (and :data:`UPSERT`) for one record; a NUL in a
    text becomes U+FFFD (Postgres text cannot hold one)."""
    row = (*record_values(record, sources, metadata).values(), vector, document_text(record.text))
    return tuple(
        v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v for v in row
    )


def row_record(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read with :data:`COLUMNS` (more columns may follow)."""
    sources, metadata = row[9], row[10]
    return MemoryRecord(
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        from_micros(row[6]),
        from_micros(row[7]) if row[7] is not None else None,
        float(row[8]),
        () if sources == "[]" else tuple(json.loads(sources)),
        {} if metadata == "{}" else json.loads(metadata),
        from_micros(row[11]) if row[11] is not None else None,
    )


def stored_vector(value: Any) -> np.ndarray:
    """A ``vector`` column's value (pgvector's ``Vector``, or an array) as float32."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)
