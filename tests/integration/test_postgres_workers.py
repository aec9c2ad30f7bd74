"""Many stateless workers on one Postgres database: nothing lost, nothing crossed, nothing back.

Four worker processes (tests/integration/postgres_worker.py) serve 50 users, opening a
fresh view per request as a server does: each worker has ten users of its
own, five users' one thread is served by all four workers at once, and five
more users are served by all four on a thread per worker. A fifth process
forgets four users (two served by one worker, two by all four) twice each
while they are being served. Afterwards, from a new process's view:

* 0 lost acknowledged turns (each exactly once, archive or buffer) or facts;
* 0 cross-user results (every recall returned only the caller's records;
  and every user's keyword and dense search return only their own);
* 0 resurrected text: nothing a forgotten user said before their last
  forget began is in any row of any table; everything after it ended is kept.

"Before" and "after" are by the worker's clock around each call: a turn is
before a forget when its add *returned* before the forget started (it was
committed, and must be gone), after it when its add *started* after the
forget returned (it must be kept, exactly once). An add that overlaps the
forget may land on either side - but whole, and at most once.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory.store import MemoryStore

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

WORKER = Path(__file__).with_name("postgres_worker.py")
_spec = importlib.util.spec_from_file_location(
    "multiprocess_worker", WORKER.with_name("multiprocess_worker.py")
)
assert _spec is not None and _spec.loader is not None
_hashing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hashing)
HashWords = _hashing.HashWords
WORKERS = ("w0", "w1", "w2", "w3")
ROUNDS = 9
USERS = [f"u{i:02d}" for i in range(50)]
ONE_THREAD = USERS[40:45]  # one thread, served by every worker at once
THREAD_EACH = USERS[45:50]  # every worker, a thread each
FORGOTTEN = ["u08", "u09", "u44", "u49"]


def spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKER.parent,
    )


def finish(process: subprocess.Popen[str]) -> list[list[str]]:
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-3000:]
    return [line.split() for line in out.splitlines() if line.strip()]


def targets(index: int, worker: str) -> list[str]:
    own = [f"{u}:chat" for u in USERS[index * 10 : index * 10 + 10]]
    return [*own, *(f"{u}:main" for u in ONE_THREAD), *(f"{u}:{worker}" for u in THREAD_EACH)]


def test_four_workers_fifty_users_one_forgetter(postgres_url: str, dump_postgres: Any) -> None:
    # the schema, once: the workers race on use, not creation
    MemoryStore(postgres_url, embeddings=HashWords()).close()
    workers = {
        w: spawn("serve", postgres_url, w, ROUNDS, *targets(i, w)) for i, w in enumerate(WORKERS)
    }
    forgetter = spawn("forget", postgres_url, 2, *FORGOTTEN)
    lines = [row for process in workers.values() for row in finish(process)]
    forgets = finish(forgetter)

    # (worker, n, started, returned) and (subject, started, returned), by user
    turns: dict[str, list[tuple[str, int, float, float]]] = defaultdict(list)
    facts: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for row in lines:
        if row[:2] == ["ack", "turn"]:
            turns[row[2]].append((row[3], int(row[4]), float(row[5]), float(row[6])))
        elif row[:2] == ["ack", "fact"]:
            facts[row[2]].append((row[3], float(row[4]), float(row[5])))
    assert not [row for row in lines if row[0] == "cross"]  # 0 cross-user recall results
    recalled = [int(row[2]) for row in lines if row[0] == "recall"]
    assert len(recalled) > 100 and sum(1 for r in recalled if r) > 20  # recalls found records
    last_forget = {row[1]: (float(row[2]), float(row[3])) for row in forgets}
    assert set(last_forget) == set(FORGOTTEN) and len(forgets) == 2 * len(FORGOTTEN)
    assert sum(len(v) for v in turns.values()) == ROUNDS * (40 + 4 * 10)

    rows = dump_postgres(postgres_url)
    with MemoryStore(postgres_url, embeddings=HashWords()) as store:
        for user in USERS:
            text = _user_text(store, user)
            stored = {f.subject for f in store.core(user).history()}
            if user in FORGOTTEN:
                start, end = last_forget[user]
                before = [t for t in turns[user] if t[3] < start]  # returned before it began
                after = [t for t in turns[user] if t[2] > end]  # started after it returned
                assert before, user
                for worker, n, _, _ in before:  # 0 resurrected, in the API and in every row
                    assert f"{user}/{worker}/{n} tells" not in text, (user, worker, n)
                    assert f"{user}/{worker}/{n} tells".encode() not in rows, (user, worker, n)
                for worker, n, _, _ in after:
                    assert text.count(f"{user}/{worker}/{n} tells") == 1, (user, worker, n)
                for worker, n, _, _ in turns[user]:  # overlapping ones: either side, once
                    assert text.count(f"{user}/{worker}/{n} tells") <= 1, (user, worker, n)
                for subject, started, returned in facts[user]:
                    if returned < start:
                        assert subject not in stored, (user, subject)
                    elif started > end:
                        assert subject in stored, (user, subject)
                continue
            for worker, n, _, _ in turns[user]:  # 0 lost, none stored twice
                assert text.count(f"{user}/{worker}/{n} tells") == 1, (user, worker, n)
            acked = {subject for subject, _, _ in facts[user]}
            assert acked and acked <= stored, (user, sorted(acked - stored)[:5])
            if user in ONE_THREAD:  # four workers' turns on one thread were compressed
                assert store.archive.count(user) > 0
            for search in (store.archive.keyword_search, store.archive.dense_search):
                hits = search(f"{user} trains lamps", user, n=50)
                assert hits and all(r.user_id == user for r, _ in hits)


def _user_text(store: MemoryStore, user: str) -> str:
    """Every turn the user's memory holds: archived, and in each thread's buffer."""
    exported = store.export_user(user)
    archived = [r["text"] for r in exported["records"] if r["kind"] == "turn"]
    buffered = [
        str(m["message"]["data"]["content"])
        for thread in exported["threads"].values()
        for m in thread["messages"]
        if m["turn"] >= thread["buffer_start"]
    ]
    return "\n".join(archived + buffered)
