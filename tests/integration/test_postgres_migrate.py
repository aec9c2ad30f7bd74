"""``tiered-memory migrate DATA_DIR postgresql://…``: a SQLite directory copied into Postgres.

The copy is checked from the outside: every user's export (records, threads
with every message, core facts with their history, audit events) reads back
the same from Postgres as from the directory, both searches find the same
records, a conversation continues where it stopped, a re-run copies
nothing, an interrupted run is finished by running it again, and a database
holding other memory is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.storage.postgres.migrate import migrate_directory
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact

STEMS = ("peanut", "allerg", "jazz", "tea", "train", "lamp", "berlin", "paris", "cat")
USERS = ("ana", "bob", "ché")


def fill(directory: Path, embeddings: Any) -> None:
    with MemoryStore(directory, embeddings=embeddings) as store:
        for user in (*USERS, "gone"):
            memory = store.memory(user, "chat", context_window=1024, system_prompt="Be brief.")
            for i in range(24):
                memory.add_messages(
                    [
                        HumanMessage(f"{user} says {i}: trains, lamps and tea", id=f"{user}-h{i}"),
                        AIMessage(f"noted {i} about trains", id=f"{user}-a{i}"),
                    ]
                )
            memory.write_fact(CoreFact.new("home_city", "lives in Paris"))
            memory.write_fact(CoreFact.new("home_city", "moved to Berlin"))  # keeps history
            store.memory(user, "other", context_window=1024).add_messages(["I like jazz"])
        store.forget_user("gone")  # a generation and message digests to carry over


def export(store: MemoryStore, user: str) -> dict[str, Any]:
    data = store.export_user(user)
    data.pop("exported_at")
    return data


def test_migrate_copies_everything_and_is_safe_to_rerun(
    tmp_path: Path, postgres_url: str, stem_axis: Any
) -> None:
    directory = tmp_path / "data"
    fill(directory, stem_axis(STEMS))
    result = CliRunner().invoke(app, ["migrate", str(directory), postgres_url, "--batch", "50"])
    assert result.exit_code == 0, result.output
    assert "verified" in result.output
    with (
        MemoryStore(directory, embeddings=stem_axis(STEMS)) as old,
        MemoryStore(postgres_url, embeddings=stem_axis(STEMS)) as new,
    ):
        assert new.users() == old.users() == sorted(USERS)
        for user in USERS:
            assert export(new, user) == export(old, user)
            for query in ("trains and tea", "jazz", "Berlin", "says 7"):
                # the same records match (BM25 ties are ordered differently by the engines)
                mine = old.archive.keyword_search(query, user, n=1000)
                theirs = new.archive.keyword_search(query, user, n=1000)
                assert {r.id for r, _ in theirs} == {r.id for r, _ in mine} != set(), query
                # the same vectors: the same best scores
                mine = old.archive.dense_search(query, user, n=5)
                theirs = new.archive.dense_search(query, user, n=5)
                assert [round(s, 5) for _, s in theirs] == [round(s, 5) for _, s in mine]
        assert export(new, "gone")["threads"] == {}
        # the forgotten user's replayed messages stay forgotten; the log continues
        memory = new.memory("gone", "chat", context_window=1024)
        assert memory.sync([HumanMessage("old", id="gone-h0"), HumanMessage("new", id="n1")])
        assert [m.content for m in memory.messages] == ["new"]
        ana = new.memory("ana", "chat", context_window=1024)
        before = [t.index for t in ana.state.turns]
        ana.add_messages([HumanMessage("one more about trains"), AIMessage("sure")])
        assert ana.state.turns[-1].index == before[-1] + 1
        assert new.core("ana").get("home_city").content == "moved to Berlin"  # type: ignore[union-attr]
    again = migrate_directory(directory, postgres_url)
    assert again.ok and set(again.copied.values()) == {0}


def test_an_interrupted_migration_is_finished_by_running_it_again(
    tmp_path: Path, postgres_url: str, stem_axis: Any
) -> None:
    directory = tmp_path / "data"
    fill(directory, stem_axis(STEMS))

    def stop_in_messages(table: str, done: int, total: int) -> None:
        if table == "messages" and done >= 40:
            raise KeyboardInterrupt  # the operator pressed ^C

    with pytest.raises(KeyboardInterrupt):
        migrate_directory(directory, postgres_url, batch=20, on_progress=stop_in_messages)
    report = migrate_directory(directory, postgres_url, batch=20)
    assert report.ok, report.problems
    assert report.copied["messages"] == report.source_rows["messages"] - 40
    assert report.copied["records"] == report.source_rows["records"] > 0
    with (
        MemoryStore(directory, embeddings=stem_axis(STEMS)) as old,
        MemoryStore(postgres_url, embeddings=stem_axis(STEMS)) as new,
    ):
        assert all(export(new, u) == export(old, u) for u in USERS)


def test_a_database_with_other_memory_is_refused(
    tmp_path: Path, postgres_url: str, stem_axis: Any
) -> None:
    directory = tmp_path / "data"
    fill(directory, stem_axis(STEMS))
    with MemoryStore(postgres_url, embeddings=stem_axis(STEMS)) as elsewhere:
        elsewhere.memory("zoe", "t").add_messages(["hello"])
    result = CliRunner().invoke(app, ["migrate", str(directory), postgres_url])
    assert result.exit_code == 2 and "migrate into an empty database" in result.output
    missing = CliRunner().invoke(app, ["migrate", str(tmp_path / "nothing"), postgres_url])
    assert missing.exit_code == 2 and "no data directory" in missing.output
    wrong = CliRunner().invoke(app, ["migrate", str(directory), str(tmp_path)])
    assert wrong.exit_code == 2 and "postgresql://" in wrong.output
