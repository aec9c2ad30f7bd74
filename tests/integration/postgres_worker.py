"""A worker for tests/integration/test_postgres_workers.py (a script, one role per process).

Roles (all on one Postgres database):

* ``serve URL WORKER ROUNDS USER:THREAD ...`` - a stateless worker: for each
  round, for each of its users, opens the user's thread (a fresh view, as a
  server does per request), adds one exchange, every third round writes a
  fact, and recalls. Prints ``ack turn USER WORKER N <started> <returned>`` /
  ``ack fact USER SUBJECT <started> <returned>`` after each call returns (the
  times the call started and returned), and ``cross USER RECORD_ID`` for any
  recalled record that is not the user's.
* ``forget URL ROUNDS USER ...`` - once every user has a thread, forgets each
  user ROUNDS times, printing ``forget USER <start> <end>`` around each call.

Every turn's text carries its user, worker and number
(``<user>/<worker>/<n> tells about trains``), so a test can find it - or its
absence - anywhere in the database.
"""

from __future__ import annotations

import random
import sys
import time

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import CoreFact


def say(*parts: object) -> None:
    print(*parts, flush=True)


def open_store(url: str) -> MemoryStore:
    from multiprocess_worker import HashWords  # beside this script (on its sys.path)

    return MemoryStore(url, embeddings=HashWords(), pool_size=4)


def serve(url: str, worker: str, rounds: int, targets: list[tuple[str, str]]) -> None:
    rng = random.Random(worker)
    with open_store(url) as store:
        for n in range(rounds):
            for user, thread in targets:
                memory = store.memory(user, thread, context_window=1024)
                started = time.time()  # the add starts (a view opened before a forget adds too)
                memory.add_messages(
                    [
                        HumanMessage(f"{user}/{worker}/{n} tells about trains and lamps"),
                        AIMessage(f"noted for {user} by {worker}"),
                    ]
                )
                say("ack", "turn", user, worker, n, started, time.time())
                if n % 3 == 0:
                    subject = f"{worker}-fact{n}"
                    started = time.time()
                    memory.write_fact(CoreFact.new(subject, f"value {user} {worker} {n}"))
                    say("ack", "fact", user, subject, started, time.time())
                if rng.random() < 0.3:
                    hits = memory.recall(f"{user} trains {rng.randrange(n + 1)}")
                    found = store.archive.get([h.record_id for h in hits])  # any user's
                    for record in found:
                        foreign = record.kind == "turn" and f"{user}/" not in record.text
                        if record.user_id != user or foreign:
                            say("cross", user, record.id)
                    say("recall", user, len(found))


def forget(url: str, rounds: int, users: list[str]) -> None:
    rng = random.Random(7)
    with open_store(url) as store:
        deadline = time.time() + 120
        while not all(store.threads(u) for u in users) and time.time() < deadline:
            time.sleep(0.05)  # start once the users are being served
        for _ in range(rounds):
            for user in users:
                time.sleep(rng.uniform(0.3, 0.8))
                start = time.time()
                store.forget_user(user)
                say("forget", user, start, time.time())


if __name__ == "__main__":
    role, url, *args = sys.argv[1:]
    if role == "serve":
        pairs = [tuple(a.split(":", 1)) for a in args[2:]]
        serve(url, args[0], int(args[1]), [(u, t) for u, t in pairs])
    elif role == "forget":
        forget(url, int(args[0]), args[1:])
    else:
        raise SystemExit(f"unknown role {role!r}")
