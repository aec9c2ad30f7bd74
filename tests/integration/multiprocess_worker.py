"""A worker process for tests/integration/test_multiprocess.py (a script, one role per process).

Roles (all on one data directory):

* ``writer USER THREAD TAG TURNS FACTS SHARED PAUSE`` - adds TURNS exchanges to
  its user's thread (PAUSE seconds apart) and FACTS facts, half of them to the
  user SHARED; prints
  ``ack turn TAG N <time> <started>`` / ``ack fact USER SUBJECT <time> <started>`` after each
  call returns.
* ``forgetter USERS ROUNDS`` - once every user has a thread, forgets each
  user ROUNDS times, printing
  ``forget USER <start> <end>`` around each call.
* ``searcher DONEFILE`` - opens the store first, waits until DONEFILE exists
  (the writers finished), then dense-searches every record of every user by
  its own text and prints ``miss ID`` for each one not found first.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import sys
import time
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact

DIM = 256


class HashWords(Embeddings):
    """Deterministic bag-of-words vectors: the same text gives the same vector in every process."""

    def _vector(self, text: str) -> list[float]:
        out = [0.0] * DIM
        for word in re.findall(r"\w+", text.lower()):
            out[int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "big") % DIM] += 1.0
        norm = math.sqrt(sum(x * x for x in out)) or 1.0
        return [x / norm for x in out]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def open_store(data: str) -> MemoryStore:
    return MemoryStore(data, embeddings=HashWords(), index_save_every=4)


def say(*parts: object) -> None:
    print(*parts, flush=True)


def writer(
    data: str, user: str, thread: str, tag: str, turns: int, facts: int, shared: str, pause: float
) -> None:
    rng = random.Random(tag)
    with open_store(data) as store:
        memory = store.memory(user, thread, context_window=1024)
        extra = store.memory(shared, f"{thread}-{tag}", context_window=1024)
        for n in range(turns):
            started = time.time()
            memory.add_messages(
                [
                    HumanMessage(f"{tag}q{n} tells about trains number {n} and lamps"),
                    AIMessage(f"{tag}a{n} noted the trains"),
                ]
            )
            say("ack", "turn", tag, n, time.time(), started)
            if n < facts:
                target = extra if n % 2 else memory
                subject = f"{tag}-fact{n}"
                started = time.time()
                target.write_fact(CoreFact.new(subject, f"value {tag}{n}"))
                say("ack", "fact", target.user_id, subject, time.time(), started)
            if rng.random() < 0.2:
                memory.recall(f"{tag}q{rng.randrange(n + 1)} trains")
            time.sleep(pause)


def forgetter(data: str, users: list[str], rounds: int) -> None:
    rng = random.Random(7)
    with open_store(data) as store:
        deadline = time.time() + 120
        while not all(store.threads(u) for u in users) and time.time() < deadline:
            time.sleep(0.05)  # start once the users' writers are writing
        for _ in range(rounds):
            for user in users:
                time.sleep(rng.uniform(0.2, 0.6))
                start = time.time()
                store.forget_user(user)
                say("forget", user, start, time.time())


def searcher(data: str, done: str) -> None:
    with open_store(data) as store:
        store.archive.count()  # opened (and its FAISS copy loaded) before anything is written
        while not Path(done).exists():
            time.sleep(0.1)
        for user in store.users():
            for record in store.archive.records(user):
                hits = store.archive.dense_search(record.text, user, n=3)
                if record.id not in [r.id for r, _ in hits]:
                    say("miss", "dense", record.id)
                words = store.archive.keyword_search(record.text, user, n=50)
                if record.id not in [r.id for r, _ in words]:
                    say("miss", "keyword", record.id)
                say("checked", record.id)


if __name__ == "__main__":
    role, data, *args = sys.argv[1:]
    if role == "writer":
        writer(data, args[0], args[1], args[2], int(args[3]), int(args[4]), args[5], float(args[6]))
    elif role == "forgetter":
        forgetter(data, args[0].split(","), int(args[1]))
    elif role == "searcher":
        searcher(data, args[0])
    else:
        raise SystemExit(f"unknown role {role!r}")
