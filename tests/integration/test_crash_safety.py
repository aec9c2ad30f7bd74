"""Crash safety: a writer killed with SIGKILL at random points loses no acknowledged turn.

A child process adds turns to a durable memory (compressing, archiving and
updating the vector index as it goes) and prints ``ack N`` only after
``add_messages`` returned. The parent kills it with SIGKILL after a random
delay, reopens the store, and checks that every acknowledged turn is in the
buffer or the archive and that the vector index agrees with the records.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_tiered_memory.store import MemoryStore

RUNS = int(os.environ.get("CRASH_RUNS", "50"))

WRITER = textwrap.dedent("""
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_tiered_memory.store import MemoryStore

    store = MemoryStore(sys.argv[1], embeddings=DeterministicFakeEmbedding(size=16),
                        index_save_every=3)
    memory = store.memory("ana", "t", context_window=1024, gate="never")
    start = memory.state.next_index
    # Pay the one-off import of the tokenizer's message conversion before the kill
    # timer starts (under load it alone can outlast the shortest run).
    memory.counter.count_messages([HumanMessage("warm"), AIMessage("up")])
    print("ready", flush=True)
    for n in range(start, start + 10_000):
        memory.add_messages([HumanMessage(f"turn {n}: I paid {n} euros for item-{n}."),
                             AIMessage(f"noted item-{n}")])
        print(f"ack {n}", flush=True)
""")


def _acked(output: str) -> list[int]:
    return [int(line.split()[1]) for line in output.splitlines() if line.startswith("ack ")]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_at_random_points_loses_no_acknowledged_turn(tmp_path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    data = tmp_path / "data"
    rng = random.Random(1234)
    acknowledged: set[int] = set()
    for _ in range(RUNS):
        child = subprocess.Popen(
            [sys.executable, str(script), str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.2, 2.0))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=60)
        acknowledged.update(_acked(out))
    assert len(acknowledged) > RUNS  # the writer got real work done between kills

    with MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16)) as store:
        state = store.memory("ana", "t").state
        buffered = {t.index for t in state.turns}
        archived = {
            int(r.id.rsplit(":", 1)[1]) for r in store.archive.records("ana", kinds=["turn"])
        }
        missing = sorted(acknowledged - buffered - archived)
        assert not missing, f"acknowledged turns lost: {missing[:10]}"
        # the vector index agrees with the records (it is rebuilt on open if not)
        ids = store.archive.index.ids()
        assert ids is not None and len(ids) == store.archive.count()
        # and dense search works on the recovered archive
        hits = store.archive.dense_search("turn 3", user_id="ana", n=3)
        assert hits
