"""How the Postgres record store writes a record: one statement with both its indexes.

The columns and how a row becomes a record are both stores'
(:mod:`langchain_tiered_memory.storage.sql.records`).

Example:
    >>> "ON CONFLICT DO NOTHING RETURNING rid, id" in record_insert_sql()
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.postgres.db import postgres_sql
from langchain_tiered_memory.storage.postgres.keywords import document_text
from langchain_tiered_memory.storage.postgres.schema import TS_CONFIG, small_tsv_sql
from langchain_tiered_memory.storage.sql.records import RECORD_COLUMNS, record_values

__all__ = [
    "CHUNK",
    "INSERT",
    "UPSERT",
    "insert_params",
    "record_insert_sql",
    "stored_vector",
]

#: Ids per ``= ANY(?)`` list.
CHUNK = 1000


def record_insert_sql(*, with_rid: bool = False) -> str:
    """The ``INSERT`` of one record (``?`` placeholders: [rid,] id, user_id, thread_id,
    kind, text, created_at, last_accessed_at, importance, sources, metadata, expires_at,
    vector, keyword text); skips an id stored already and returns ``rid, id``."""
    names = [*RECORD_COLUMNS, "embedding"]
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
        for c in (*RECORD_COLUMNS, "embedding", "tsv", "tsv_small")
        if c not in ("id", "user_id")
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


def stored_vector(value: Any) -> np.ndarray:
    """A ``vector`` column's value (pgvector's ``Vector``, or an array) as float32."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)
