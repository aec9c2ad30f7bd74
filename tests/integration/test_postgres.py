"""The Postgres backend beyond the conformance suite, on a real PostgreSQL with pgvector.

Dropped connections (idle ones after a restart, and one killed inside a
transaction with ``pg_terminate_backend``), what ``VACUUM FULL`` leaves in
the server's files after a forget, keyword search in Chinese and with
diacritics, the per-user HNSW index, LangGraph's Postgres checkpointer on
the same database (forgotten with its user, sync and async), workers
creating the schema at once, and clear errors.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.errors import StorageUnavailableError
from langchain_tiered_memory.storage.postgres import db as pgdb
from langchain_tiered_memory.storage.postgres.ann import ann_index_name
from langchain_tiered_memory.storage.postgres.backend import PostgresBackend
from langchain_tiered_memory.store import MemoryStore

SECRET = "zebrasecret"
STEMS = ("peanut", "allerg", "jazz", "tea", "train", "lamp", "zebra", "cat", "花生")


@pytest.fixture
def store(postgres_url: str, stem_axis: Any) -> Any:
    opened = MemoryStore(postgres_url, embeddings=stem_axis(STEMS))
    yield opened
    opened.close()


def terminate_others(url: str, *, pids: set[int] | None = None) -> int:
    """Kill the database's other connections (all, or ``pids``), as a restart or failover."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
        killed = 0
        for (pid,) in rows:
            if pids is None or pid in pids:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                killed += 1
    return killed


def test_idle_connections_dropped_by_a_restart_are_replaced(store: Any, postgres_url: str) -> None:
    memory = store.memory("ana", "t1", context_window=1024)
    memory.add_messages([HumanMessage("I like jazz", id="m1"), AIMessage("Noted", id="m2")])
    assert terminate_others(postgres_url) >= 1  # every pooled connection is now dead
    memory.add_messages([HumanMessage("and tea", id="m3")])  # no error: checked on checkout
    again = store.memory("ana", "t1", context_window=1024)
    assert [m.id for m in again.messages] == ["m1", "m2", "m3"]


def kill_inside(url: str, marker: str, times: int = 1) -> Any:
    """A ``PostgresTx.execute`` that kills its own connection (from another one, so the
    server really drops it mid-transaction) right after the first ``times`` statements
    containing ``marker``."""
    original = pgdb.PostgresTx.execute
    left = [times]

    def execute(tx: Any, sql: str, params: Any = ()) -> Any:
        cursor = original(tx, sql, params)
        if left[0] and marker in sql:
            left[0] -= 1
            terminate_others(url, pids={tx.conn.info.backend_pid})
        return cursor

    return execute


def test_a_connection_dropped_mid_turn_leaves_no_half_turn_and_is_retried(
    postgres_url: str, stem_axis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryStore(postgres_url, embeddings=stem_axis(STEMS), retries=0) as store:
        memory = store.memory("ana", "t1", context_window=1024)
        memory.add_messages([HumanMessage("first", id="m1")])
        monkeypatch.setattr(
            pgdb.PostgresTx, "execute", kill_inside(postgres_url, "INSERT INTO messages")
        )
        batch = [HumanMessage("I like trains", id="m2"), AIMessage("Noted", id="m3")]
        with pytest.raises(StorageUnavailableError, match="nothing of this call was written"):
            memory.add_messages(batch)
        monkeypatch.undo()
        fresh = store.memory("ana", "t1", context_window=1024)
        assert [m.id for m in fresh.messages] == ["m1"]  # no half-written turn
        read = store.backend.read_thread("ana", "t1", None)
        assert (read.head.next_turn, read.head.last_seq) == (1, read.messages[-1].seq)
    with MemoryStore(postgres_url, embeddings=stem_axis(STEMS)) as store:  # retries=2
        memory = store.memory("ana", "t1", context_window=1024)
        monkeypatch.setattr(pgdb.PostgresTx, "execute", kill_inside(postgres_url, "INTO messages"))
        memory.add_messages(batch)  # killed once, retried, stored once
        monkeypatch.undo()
        assert [m.id for m in store.memory("ana", "t1").messages] == ["m1", "m2", "m3"]


def test_a_drop_during_commit_is_retried_only_when_harmless(
    store: Any, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = pgdb.PostgresDatabase._transaction
    kills = {"left": 1}

    def kill_before_commit(self: Any, begin: str, doing: str) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def wrapped() -> Any:
            with original(self, begin, doing) as tx:
                yield tx
                if kills["left"] and begin == "BEGIN":
                    kills["left"] -= 1
                    terminate_others(postgres_url, pids={tx.conn.info.backend_pid})

        return wrapped()

    monkeypatch.setattr(pgdb.PostgresDatabase, "_transaction", kill_before_commit)
    backend = store.backend
    with pytest.raises(StorageUnavailableError, match="whether it was written is unknown"):
        backend.append_messages("ana", "t1", [HumanMessage("no id")])  # could be stored twice
    kills["left"] = 1
    backend.append_messages("ana", "t1", [HumanMessage("with an id", id="m9")])  # retried
    monkeypatch.undo()
    texts = [m.message.content for m in backend.read_thread("ana", "t1", None).messages]
    assert texts == ["with an id"]  # the killed COMMIT never happened; the retry stored it once


def _data_files(postgres_url: str) -> list[Path]:
    host = parse_qs(urlsplit(postgres_url).query).get("host", [""])[0]
    base = Path(host) / "base"
    if not host or not base.is_dir():
        pytest.skip("the server's data directory is not on this machine (an external server)")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        oid = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
    assert oid is not None
    return sorted(p for p in (base / str(oid[0])).rglob("*") if p.is_file())


@pytest.mark.slow
def test_vacuum_full_leaves_no_forgotten_byte_in_the_data_files(
    store: Any, postgres_url: str, dump_postgres: Any
) -> None:
    def leftovers() -> list[str]:
        return [p.name for p in _data_files(postgres_url) if SECRET.encode() in p.read_bytes()]

    def checkpoint() -> None:  # write the shared buffers out to the data files
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")

    for user in ("ana", "bob"):
        memory = store.memory(user, "t1", context_window=1024)
        for i in range(30):
            word = f" {SECRET}{i}" if user == "ana" else ""
            memory.add_messages(
                [
                    HumanMessage(f"message {i} about trains and lamps{word}"),
                    AIMessage(f"reply {i} about trains{word}"),
                ]
            )
    assert store.archive.count("ana") > 0 and store.archive.count("bob") > 0
    store.backend.vacuum()  # the statistics now sample the secret rows: a real leak path
    checkpoint()
    assert leftovers()  # what the files hold before (else this test checks nothing)
    store.forget_user("ana")
    assert SECRET.encode() not in dump_postgres(postgres_url)  # no row of any table
    store.backend.vacuum(full=True)
    assert leftovers() == []
    assert store.archive.count("bob") > 0 and store.memory("bob", "t1").messages
    store.archive.add([MemoryRecord.new(user_id="bob", kind="fact", text=SECRET, id="b")])
    store.backend.vacuum()
    checkpoint()
    assert leftovers()
    store.forget_user("bob")  # the last user: tables left empty keep their old statistics
    store.backend.vacuum(full=True)
    assert leftovers() == []


def test_keywords_match_chinese_diacritics_and_stopword_queries(store: Any) -> None:
    store.archive.add(
        [
            MemoryRecord.new(user_id="ana", kind="fact", text="我对花生过敏", id="zh"),
            MemoryRecord.new(user_id="ana", kind="fact", text="we met at the Café Crème", id="fr"),
            MemoryRecord.new(user_id="ana", kind="fact", text="who are you, she asked", id="st"),
            MemoryRecord.new(user_id="ana", kind="fact", text="trains, trains, running", id="en"),
        ]
    )

    def ids(query: str) -> list[str]:
        return [r.id for r, _ in store.archive.keyword_search(query, "ana")]

    assert ids("花生") == ["zh"]
    assert ids("过敏吗") == ["zh"]
    assert ids("花") == ["zh"]  # one character: a prefix of its bigrams
    assert ids("cafe creme") == ["fr"] and ids("CAFÉ") == ["fr"]
    assert ids("who are you?") == ["st"]  # only stopwords: they are searched
    assert ids("train run") == ["en"]  # stemmed
    assert ids("'; DROP TABLE records; --") == []  # text, never SQL or query syntax
    assert store.archive.keyword_search("花生", "bob") == []


def test_a_large_user_gets_an_hnsw_index_and_loses_it_when_forgotten(
    postgres_url: str, stem_axis: Any
) -> None:
    backend = PostgresBackend(postgres_url, embeddings=stem_axis(STEMS), ann_min_records=100)
    try:
        records = backend.records
        words = ["peanut", "jazz", "tea", "train", "lamp", "cat"]
        records.add(
            [
                MemoryRecord.new(
                    user_id="big", kind="turn", text=f"{words[i % 6]} note {i}", id=f"b{i}"
                )
                for i in range(300)
            ]
            + [MemoryRecord.new(user_id="small", kind="turn", text="jazz", id="s1")]
        )
        exact = records.dense_search("jazz", "big", n=10)
        assert records.warm_up("big") and not records.warm_up("small")
        assert records.ann.dimension("big") == len(STEMS) + 1
        approximate = records.dense_search("jazz", "big", n=10)
        assert len(approximate) == 10 and all(r.user_id == "big" for r, _ in approximate)
        assert round(approximate[0][1], 4) == round(exact[0][1], 4) == 1.0  # a "jazz" note
        with psycopg.connect(postgres_url) as conn:  # the planner really uses it (analysed)
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN SELECT id FROM records r WHERE r.user_id = 'big' ORDER BY "
                    f"(r.embedding::vector({len(STEMS) + 1})) <#> "
                    f"array_fill(0.1, ARRAY[{len(STEMS) + 1}])::vector({len(STEMS) + 1}) "
                    "LIMIT 5"
                ).fetchall()
            )
        assert ann_index_name("big") in plan
        filtered = records.dense_search("jazz", RecordFilter("big", kinds="turn"), n=5)  # exact
        assert [round(s, 4) for _, s in filtered] == [round(s, 4) for _, s in exact[:5]]
        backend.forget_user("big")
        assert records.ann.dimension("big") is None
        assert records.dense_search("jazz", "big") == []
        assert [r.id for r, _ in records.dense_search("jazz", "small")] == ["s1"]
    finally:
        backend.close()


def test_the_graph_checkpoints_in_the_same_database_and_forgets_them(
    store: Any, postgres_url: str, dump_postgres: Any
) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted."), AIMessage("Hi again.")]))
    graph = build_memory_graph(model, store=store, context_window=4096, gate="never")
    assert type(graph.checkpointer).__name__ == "PostgresSaver"
    config = {"configurable": {"user_id": "ana", "thread_id": "ana-chat"}}
    graph.invoke({"messages": [HumanMessage(f"My cat is called {SECRET}.")]}, config)
    assert graph.checkpointer.get_tuple(config) is not None
    assert SECRET.encode() in dump_postgres(postgres_url)
    store.forget_user("ana")
    assert graph.checkpointer.get_tuple(config) is None  # the checkpointed thread is gone
    assert SECRET.encode() not in dump_postgres(postgres_url)
    out = graph.invoke({"messages": [HumanMessage("Hello")]}, config)  # a fresh start
    assert [m.content for m in out["messages"]] == ["Hello", "Hi again."]


def test_a_worker_that_never_checkpointed_forgets_another_workers_checkpoints(
    store: Any, postgres_url: str, stem_axis: Any, dump_postgres: Any
) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")]))
    graph = build_memory_graph(model, store=store, context_window=4096, gate="never")
    config = {"configurable": {"user_id": "ana", "thread_id": "ana-chat"}}
    graph.invoke({"messages": [HumanMessage(f"My cat is called {SECRET}.")]}, config)
    other = MemoryStore(postgres_url, embeddings=stem_axis(STEMS))  # another worker
    try:
        other.forget_user("ana")
    finally:
        other.close()
    assert graph.checkpointer.get_tuple(config) is None
    assert SECRET.encode() not in dump_postgres(postgres_url)


def test_the_async_checkpointer_serves_ainvoke(store: Any) -> None:
    async def run() -> list[str]:
        saver = await store.acheckpointer()
        try:
            model = GenericFakeChatModel(messages=iter([AIMessage("Hello Ana.")]))
            graph = build_memory_graph(
                model, store=store, context_window=4096, gate="never", checkpointer=saver
            )
            config = {"configurable": {"user_id": "ana", "thread_id": "ana-async"}}
            await graph.ainvoke({"messages": [HumanMessage("Hi, I'm Ana.")]}, config)
            state = await graph.aget_state(config)
            await asyncio.to_thread(store.forget_user, "ana")
            assert await saver.aget_tuple(config) is None
            return [m.content for m in state.values["messages"]]
        finally:
            await saver.conn.close()

    assert asyncio.run(run()) == ["Hi, I'm Ana.", "Hello Ana."]


def test_workers_opening_a_new_database_at_once_create_one_schema(
    postgres_url: str, stem_axis: Any
) -> None:
    errors: list[BaseException] = []
    stores: list[MemoryStore] = []
    start = threading.Barrier(6)

    def open_one() -> None:
        try:
            start.wait(timeout=30)
            stores.append(MemoryStore(postgres_url, embeddings=stem_axis(STEMS), pool_size=2))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=open_one) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    try:
        assert not errors, errors[:2]
        stores[0].archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="tea", id="f")])
        assert all(s.archive.count("ana") == 1 for s in stores)
    finally:
        for opened in stores:
            opened.close()


def test_errors_name_the_database_without_its_password(tmp_path: Path) -> None:
    url = f"postgresql://app:hunter2@/memory?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StorageUnavailableError) as caught:
        MemoryStore(url, embeddings="none")
    assert "hunter2" not in str(caught.value) and "app:***@" in str(caught.value)
    with pytest.raises(ValueError, match="pgvector"):
        MemoryStore(url, vector_store=object())


def test_nul_characters_follow_the_text_rule_of_every_backend(store: Any) -> None:
    """Postgres text cannot hold NUL: conversation text has it repaired (as on SQLite),
    a record holding one is refused (see ``langchain_tiered_memory.ids.check_text``)."""
    memory = store.memory("ana", "t1", context_window=1024)
    memory.add_messages([HumanMessage("a\x00b", id="m1")])
    assert store.memory("ana", "t1").messages[0].content == "a\ufffdb"
    with pytest.raises(ValueError, match="NUL"):
        store.archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="x\x00y", id="f1")])
    assert store.archive.get(["f1"]) == []


@pytest.mark.slow
def test_the_overhead_bench_measures_postgres_beside_sqlite(
    tmp_path: Path, postgres_server: str
) -> None:
    import json

    from typer.testing import CliRunner

    from langchain_tiered_memory.cli.app import app

    out = tmp_path / "overhead.json"
    args = ["bench", "overhead", "--records", "400", "--records-per-user", "200", "--queries", "5"]
    args += ["--workdir", str(tmp_path / "w"), "--store", postgres_server, "--out", str(out)]
    args += ["--concurrency", "1,3", "--concurrency-seconds", "0.2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Postgres" in result.output and "SQLite" in result.output
    report = json.loads(out.read_text())
    for rows in (report, report["postgres"]):
        for layout in ("sizes", "single_user"):
            row = rows[layout]["400"]
            assert row["recall_p95_ms"] >= row["recall_p50_ms"] > 0
            assert row["bytes_per_record"] > 100
            assert row["throughput"]["3"]["add_per_s"] > 0
    assert report["postgres"]["sizes"]["400"]["users"] == 2
    with psycopg.connect(postgres_server, autocommit=True) as conn:  # the bench's own databases
        for name in ("tm_bench_typical_400", "tm_bench_single_user_400"):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_long_records_and_ids_are_indexed_and_found(store: Any) -> None:
    user, thread = "ü" * 500, "t" * 512  # 1,000 + 512 bytes: past any B-tree row with a tsvector
    long_text = "花生" * 1500 + " jazz " + " ".join(f"word{i}" for i in range(3000))
    where = {"user_id": user, "thread_id": thread}
    store.archive.add(
        [
            MemoryRecord.new(**where, kind="summary", text=long_text, id="l"),
            MemoryRecord.new(**where, kind="fact", text="short jazz", id="s"),
        ]
    )
    found = store.archive.keyword_search("jazz", user)
    assert {r.id for r, _ in found} == {"l", "s"}
    assert [r.id for r, _ in store.archive.keyword_search("word2999", user)] == ["l"]
    assert {r.id for r, _ in store.archive.dense_search("jazz", user)} == {"l", "s"}
    assert store.archive.keyword_search("jazz", "ü" * 499) == []


def test_chat_and_inspect_run_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from langchain_tiered_memory.cli.app import app

    runner = CliRunner()
    common = ["--store", postgres_url, "--user", "ana", "--embeddings", "none"]
    said = runner.invoke(
        app,
        ["chat", *common, "--model", "none"],
        input="I'm allergic to peanuts and I live in Lisbon.\n/quit\n",
    )
    assert said.exit_code == 0, said.output
    assert "***@" in said.output and "hunter" not in said.output  # the URL, redacted
    shown = runner.invoke(app, ["inspect", *common, "--json"])
    assert shown.exit_code == 0, shown.output
    facts = {f["subject"] for f in json.loads(shown.output)["core_memory"]["active"]}
    assert {"allergy:peanuts", "home_city"} <= facts
    wrong = runner.invoke(app, ["inspect", "--store", str(tmp_path), "--user", "ana"])
    assert wrong.exit_code == 2 and "postgresql://" in wrong.output
