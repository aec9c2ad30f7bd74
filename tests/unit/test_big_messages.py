"""One very long message must not stall a worker (issue 23 item 7).

Before the fix the rule extractor was quadratic on long text without breaks
(100,000 characters: ~50 s; 10 MB never finished) and tiktoken's merge is
quadratic on one unbroken run. These tests give each add a generous limit:
they check that the work is bounded, not how fast a machine is (``tiered-memory
bench big-messages`` measures that).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.write.extraction import RuleBasedExtractor
from tiered_memory_bench.big_messages import big_message


def _within(seconds: float, work: Any) -> float:
    done: list[float] = []

    def run() -> None:
        started = time.perf_counter()
        work()
        done.append(time.perf_counter() - started)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert done, f"did not finish in {seconds} s"
    return done[0]


def test_one_long_unbroken_message_is_added_in_bounded_time(tmp_path: Any) -> None:
    store = MemoryStore(tmp_path / "s", embeddings=DeterministicFakeEmbedding(size=16))
    try:
        memory = store.memory("ana", "t1", context_window=128_000)
        memory.add_messages([HumanMessage("I'm allergic to peanuts.")])
        text = big_message(300_000, "unbroken")
        _within(90, lambda: memory.add_messages([HumanMessage(text)]))
        assert memory.core.get("allergy:peanuts") is not None
        assert any(text in str(m.content) for m in memory.messages)  # stored whole
    finally:
        store.close()


def test_the_extractor_reads_a_bounded_prefix() -> None:
    extractor = RuleBasedExtractor()
    text = "I'm allergic to kiwis. " + big_message(1_000_000, "words")
    facts: list[Any] = []
    _within(60, lambda: facts.extend(extractor.extract_text(text)))
    assert "allergy:kiwis" in {f.subject for f in facts}


def test_long_texts_are_counted_in_pieces_with_the_same_count() -> None:
    counter = OpenAITokenCounter("gpt-4o-mini")
    text = big_message(150_000, "words")  # cut before spaces: exactly tiktoken's count
    assert counter.count_text(text) == len(counter.encoding.encode(text))
    unbroken = big_message(2_000_000, "unbroken")
    count = _within(60, lambda: counter.count_text(unbroken))
    assert count < 60
    assert abs(counter.count_text(unbroken) - 400_000) <= 200  # a token per cut at most
