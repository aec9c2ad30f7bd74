"""Crash safety: a writer killed with SIGKILL at random points loses no acknowledged turn.

A child process adds turns to a durable memory (compressing, archiving and
updating the vector index as it goes) and prints ``ack N`` only after
``add_messages`` returned. The parent kills it with SIGKILL after a random
delay, reopens the store, and checks that every acknowledged turn is in the
buffer or the archive and that the vector index agrees with the records.

Each writer is forked from a *zygote* that imported the package and ran the
write path once (in a scratch store, one thread, so forking is safe): a fresh
process that opens the store and writes, as a new interpreter would, without
paying ~9 s of imports and warm-up per run under load. The kills land where
they did, a random 0.2-2 s into the writing (about as many acknowledged
turns per run as before).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore

RUNS = int(os.environ.get("CRASH_RUNS", "50"))

WRITER = textwrap.dedent("""
    import os
    import sys
    import tempfile
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    from langchain_tiered_memory.store import MemoryStore

    def write(data):
        store = MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16),
                            index_save_every=3)
        memory = store.memory("ana", "t", context_window=1024, gate="never")
        start = memory.state.next_index
        print("ready", flush=True)
        for n in range(start, start + 10_000):
            memory.add_messages([HumanMessage(f"turn {n}: I paid {n} euros for item-{n}."),
                                 AIMessage(f"noted item-{n}")])
            print(f"ack {n}", flush=True)

    # The one-off costs a fresh writer pays on its first adds (imports, the tokenizer's
    # message conversion, the code paths of compression and index writes), paid once
    # here - in a scratch store - before any fork.
    OpenAITokenCounter("gpt-4o-mini").count_messages([HumanMessage("warm"), AIMessage("up")])
    with MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16),
                     index_save_every=3) as scratch:
        warm = scratch.memory("ana", "t", context_window=1024, gate="never")
        for n in range(40):
            warm.add_messages([HumanMessage(f"turn {n}: I paid {n} euros for item-{n}."),
                               AIMessage(f"noted item-{n}")])
    print("zygote", flush=True)
    for _ in sys.stdin:  # a line: fork a writer, say its pid, and reap it once it is killed
        pid = os.fork()
        if pid == 0:
            write(sys.argv[1])
            os._exit(0)
        print(f"child {pid}", flush=True)
        os.waitpid(pid, 0)
        # a writer killed inside a print leaves its line without the newline: end it first
        print("\\nreaped", flush=True)
""")


def _acked(output: str) -> list[int]:
    # a line a kill cut short ("ack 35" of "ack 3545") names a turn acknowledged earlier
    return [int(m.group(1)) for m in re.finditer(r"^ack (\d+)$", output, re.MULTILINE)]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(
    not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"), reason="needs POSIX fork, signals"
)
def test_sigkill_at_random_points_loses_no_acknowledged_turn(tmp_path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    data = tmp_path / "data"
    rng = random.Random(1234)
    acknowledged: set[int] = set()
    zygote = subprocess.Popen(
        [sys.executable, str(script), str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    try:
        assert zygote.stdout.readline().strip() == "zygote"
        for _ in range(RUNS):
            zygote.stdin.write("write\n")
            zygote.stdin.flush()
            pid, ready = None, False
            while pid is None or not ready:  # the two lines may come in either order
                line = zygote.stdout.readline()
                assert line, "the zygote died"
                assert line.strip() != "reaped", "a writer died before it was ready"
                if not line.strip():  # the zygote's newline before "reaped"
                    continue
                if line.startswith("child "):
                    pid = int(line.split()[1])
                ready = ready or line.strip() == "ready"
            time.sleep(rng.uniform(0.2, 2.0))
            os.kill(pid, signal.SIGKILL)
            out = []
            for line in iter(zygote.stdout.readline, ""):
                if line.strip() == "reaped":
                    break
                out.append(line)
            acknowledged.update(_acked("".join(out)))
    finally:
        zygote.kill()
        zygote.communicate(timeout=60)
    assert len(acknowledged) > RUNS  # the writer got real work done between kills

    with MemoryStore(data, embeddings=DeterministicFakeEmbedding(size=16)) as store:
        state = store.memory("ana", "t").state
        buffered = {t.index for t in state.turns}
        archived = {
            int(r.id.rsplit(":", 1)[1])
            for r in store.archive.records(RecordFilter("ana", kinds=["turn"]))
        }
        missing = sorted(acknowledged - buffered - archived)
        assert not missing, f"acknowledged turns lost: {missing[:10]}"
        # the vector index agrees with the records (it is rebuilt on open if not)
        ids = store.archive.index.ids()
        assert ids is not None and len(ids) == store.archive.count()
        # and dense search works on the recovered archive
        hits = store.archive.dense_search("turn 3", "ana", n=3)
        assert hits
