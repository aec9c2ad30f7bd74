"""Facts with time on stores written before facts had times (SQLite and Postgres).

The times live in each version's stored JSON, written only when set, so the
schema is unchanged: a row written by an older version (no ``valid_from``,
``valid_until`` or ``ended`` status) must read back, take part in supersession and
ending and in history queries, and stay byte for byte as it was while untouched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact

FAKE = DeterministicFakeEmbedding(size=16)

#: Rows exactly as the package wrote them before facts had times.
OLD_ROWS = {
    "f-home": (
        "home_city",
        '{"id": "f-home", "subject": "home_city", "content": "lives in Paris", '
        '"block": "human", "category": "fact", "confidence": 1.0, "stated": true, '
        '"source_turn": 2, "source": "user", "importance": 5.0, '
        '"created_at": "2021-01-10T00:00:00+00:00", "status": "active", '
        '"superseded_by": null, "reason": null, "source_thread": "t1"}',
    ),
    "f-smoke": (
        "smoking",
        '{"id": "f-smoke", "subject": "smoking", "content": "smokes", "block": "human", '
        '"category": "fact", "confidence": 1.0, "stated": true, "source_turn": 3, '
        '"source": "user", "importance": 5.0, "created_at": "2020-05-01T00:00:00+00:00", '
        '"status": "active", "superseded_by": null, "reason": null, "source_thread": "t1"}',
    ),
    "f-diet": (
        "diet",
        '{"id": "f-diet", "subject": "diet", "content": "vegetarian", "block": "human", '
        '"category": "fact", "confidence": 1.0, "stated": true, "source_turn": 4, '
        '"source": "user", "importance": 5.0, "created_at": "2020-05-01T00:00:00+00:00", '
        '"status": "active", "superseded_by": null, "reason": null, "source_thread": "t1"}',
    ),
}


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def _insert_old_rows(execute: Callable[[str, tuple[Any, ...]], Any]) -> None:
    for fact_id, (subject, body) in OLD_ROWS.items():
        execute(
            "INSERT INTO facts (user_id, fact_id, subject, block, status, body) "
            "VALUES ('ana', %s, %s, 'human', 'active', %s)",
            (fact_id, subject, body),
        )
    execute("INSERT INTO users (user_id, core_version) VALUES ('ana', 3)", ())


def _use(store: MemoryStore) -> None:
    """The old rows read back and work with times; returns nothing, asserts all."""
    core = store.core("ana")
    assert {f.content for f in core.active()} == {"lives in Paris", "smokes", "vegetarian"}
    assert all(f.valid_from is None and f.valid_until is None for f in core.history())
    core.upsert(CoreFact.new("home_city", "moved to Berlin", valid_from=day("2024-03-01")))
    assert core.end("smoking", at=day("2025-01-01")) is not None
    assert [f.content for f in store.fact_history("ana", at=day("2023-06-01"))] == [
        "smokes",
        "vegetarian",
        "lives in Paris",
    ]
    paris = store.fact_history("ana", "home_city")[0]
    assert (paris.status, paris.valid_until) == ("superseded", day("2024-03-01"))
    assert store.fact_history("ana", "smoking")[0].status == "ended"


def test_a_sqlite_store_written_before_facts_had_times(tmp_path: Path) -> None:
    path = tmp_path / "data"
    with MemoryStore(path, embeddings=FAKE):
        pass
    conn = sqlite3.connect(path / "archive.sqlite")
    _insert_old_rows(lambda sql, args: conn.execute(sql.replace("%s", "?"), args))
    conn.commit()
    conn.close()
    with MemoryStore(path, embeddings=FAKE) as store:
        _use(store)
    conn = sqlite3.connect(path / "archive.sqlite")
    body = conn.execute("SELECT body FROM facts WHERE fact_id='f-diet'").fetchone()[0]
    conn.close()
    assert body == OLD_ROWS["f-diet"][1]  # untouched: byte for byte as it was


def test_a_postgres_database_written_before_facts_had_times(postgres_url: str) -> None:
    import psycopg

    with MemoryStore(postgres_url, embeddings=FAKE):
        pass
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        _insert_old_rows(lambda sql, args: conn.execute(sql, args))
    with MemoryStore(postgres_url, embeddings=FAKE) as store:
        _use(store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute("SELECT body FROM facts WHERE fact_id='f-diet'").fetchone()
    assert row is not None and row[0] == OLD_ROWS["f-diet"][1]
