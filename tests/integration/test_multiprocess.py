"""Many processes on one data directory: nothing lost, nothing resurrected, one truth.

Seven processes share one directory (tests/integration/multiprocess_worker.py): three
writers on their own users that also write facts to one shared user, a
fourth writer on the shared user's thread that the third also writes (two
processes, one conversation), two writers whose users a forgetter process
deletes three times while they keep writing, and a searcher that opened the
store before anything was written and checks, at the end, that its own
(in-process) vector index and the keyword index find every record any
process wrote.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

WORKER = Path(__file__).with_name("multiprocess_worker.py")
_spec = importlib.util.spec_from_file_location("multiprocess_worker", WORKER)
assert _spec is not None and _spec.loader is not None
_worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_worker)
open_store = _worker.open_store
TURNS = 40
FACTS = 30


def spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKER.parent,
    )


def finish(process: subprocess.Popen[str]) -> list[list[str]]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return [line.split() for line in out.splitlines() if line.strip()]


def test_processes_share_one_directory_without_losing_or_resurrecting(tmp_path: Path) -> None:
    data = tmp_path / "data"
    open_store(str(data)).close()  # created once, so the processes race on use, not creation
    done = tmp_path / "writers-done"
    searcher = spawn("searcher", data, done)
    writers = {
        "w1": spawn("writer", data, "u1", "a", "w1", TURNS, FACTS, "shared", 0),
        "w2": spawn("writer", data, "u2", "a", "w2", TURNS, FACTS, "shared", 0),
        "w3": spawn("writer", data, "shared", "main", "w3", TURNS, FACTS, "shared", 0),
        "w4": spawn("writer", data, "shared", "main", "w4", TURNS, 0, "shared", 0),
        "v1": spawn("writer", data, "victim1", "v", "v1", 100, 20, "victim2", 0.05),
        "v2": spawn("writer", data, "victim2", "v", "v2", 100, 20, "victim1", 0.05),
    }
    forgetter = spawn("forgetter", data, "victim1,victim2", 3)
    lines = {tag: finish(p) for tag, p in writers.items()}
    forgets = finish(forgetter)
    done.touch()
    searched = finish(searcher)

    # (what, when the write returned, when it started): a write that started before a
    # forget ended may be erased by it even when it returned after
    turn_acks: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    fact_acks: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for tag, rows in lines.items():
        for row in rows:
            if row[:2] == ["ack", "turn"]:
                turn_acks[tag].append((int(row[3]), float(row[4]), float(row[5])))
            elif row[:2] == ["ack", "fact"]:
                fact_acks[row[2]].append((row[3], float(row[4]), float(row[5])))
    last_forget = {row[1]: (float(row[2]), float(row[3])) for row in forgets}
    assert set(last_forget) == {"victim1", "victim2"} and len(forgets) == 6

    with open_store(str(data)) as store:
        owner = {"w1": "u1", "w2": "u2", "w3": "shared", "w4": "shared", "v1": "victim1"}
        owner["v2"] = "victim2"
        text: dict[str, str] = {}
        for user in {*owner.values()}:
            exported = store.export_user(user)
            archived = [r["text"] for r in exported["records"] if r["kind"] == "turn"]
            buffered = [  # the log keeps paged-out turns too: the buffer is its window
                str(m["message"]["data"]["content"])
                for thread in exported["threads"].values()
                for m in thread["messages"]
                if m["turn"] >= thread["buffer_start"]
            ]
            text[user] = "\n".join(archived + buffered)
        # 0 lost acknowledged turns, none stored twice (two processes on w3/w4's thread)
        for tag in ("w1", "w2", "w3", "w4"):
            assert len(turn_acks[tag]) == TURNS
            for n, _, _ in turn_acks[tag]:
                assert text[owner[tag]].count(f"{tag}q{n} tells") == 1, (tag, n)
        # 0 lost acknowledged facts, from three processes writing one user's facts
        for user in ("u1", "u2", "shared"):
            stored = {f.subject for f in store.core(user).history()}
            acked = {subject for subject, _, _ in fact_acks[user]}
            assert acked and acked <= stored, sorted(acked - stored)[:5]
        assert len(fact_acks["shared"]) == FACTS // 2 * 2 + FACTS  # w1, w2 half; w3 all
        # forgotten users: nothing from before their last forget, everything after it
        everything = b"".join(p.read_bytes() for p in data.iterdir() if p.is_file())
        for tag in ("v1", "v2"):
            start, end = last_forget[owner[tag]]
            before = [n for n, at, _ in turn_acks[tag] if at < start]
            after = [n for n, _, began in turn_acks[tag] if began > end]
            assert before and after, (tag, len(before), len(after))
            for n in before:
                assert f"{tag}q{n} tells" not in text[owner[tag]]
                assert f"{tag}q{n} tells".encode() not in everything, (tag, n)
            for n in after:
                assert text[owner[tag]].count(f"{tag}q{n} tells") == 1, (tag, n)
        for user in ("victim1", "victim2"):
            start, end = last_forget[user]
            stored = {f.subject for f in store.core(user).history()}
            for subject, at, began in fact_acks[user]:
                if at < start:
                    assert subject not in stored, subject
                elif began > end:
                    assert subject in stored, subject
        # dense and keyword recall agree on what exists, in a process opened first
        checked = [row[1] for row in searched if row[0] == "checked"]
        misses = [row for row in searched if row[0] == "miss"]
        assert len(checked) == store.archive.count() > 100
        assert not misses, misses[:5]
