"""One very long message must not stall a worker (issue 23 item 7).

Before the fix the rule extractor was quadratic on long text without breaks
(100,000 characters: ~50 s; 10 MB never finished) and tiktoken's merge is
quadratic on one unbroken run. These tests give each add a generous limit:
they check that the work is bounded, not how fast a machine is (``tiered-memory
bench big-messages`` measures that).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.recall.excerpt import RECALL_EXCERPT_CHARS
from langchain_tiered_memory.storage.base import RecordFilter
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


# -- what a huge message costs later (issue 33 item 11) ---------------------------------


def _in_child(code: str, seconds: float) -> Any:
    """Run ``code`` in a fresh interpreter with a time limit; the JSON it prints last.

    A child process, because a regex stuck in C holds the GIL: a thread's time
    limit would not fire until it finished.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"did not finish in {seconds} s") from None
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_near_duplicate_merging_is_linear_on_one_long_word() -> None:
    """A text with a word of a million letters was quadratic (a regex backtracked)."""
    merged = _in_child(
        """
        import json
        from langchain_tiered_memory.recall.dedupe import merge_near_duplicates
        from langchain_tiered_memory.records import MemoryRecord, ScoredRecord
        from tiered_memory_bench.big_messages import big_message
        word = big_message(1_000_000, "unbroken")
        texts = [f"user: {word} 7 a b", f"{word} a b 7!", f"{word} a b 8"]
        hits = [ScoredRecord(MemoryRecord.new(user_id="u", kind="turn", text=t), 1.0 - i / 10)
                for i, t in enumerate(texts)]
        print(json.dumps(len(merge_near_duplicates(hits))))
        """,
        120,
    )
    assert merged == 2  # the second folded into the first; the third differs in a number


def _huge_turn_memory(tmp_path: Any, text: str, **kwargs: Any) -> Any:
    store = MemoryStore(tmp_path / "s", embeddings=DeterministicFakeEmbedding(size=16))
    memory = store.memory("ana", "t1", context_window=16_000)
    memory.add_messages([HumanMessage("I live in Lisbon.")])
    memory.add_messages([HumanMessage(text, **kwargs)])
    memory.add_messages([AIMessage("Noted."), HumanMessage("Where do I live?")])
    return store, memory


def test_a_huge_archived_turn_costs_later_prompts_no_more_than_a_normal_one(
    tmp_path: Any,
) -> None:
    marker = "my locker code is zanzibar"
    text = big_message(1_000_000, "words") + f" {marker} " + big_message(1_000_000, "words")
    store, memory = _huge_turn_memory(tmp_path, text)
    try:
        (turn,) = [
            r
            for r in store.archive.records(RecordFilter("ana", kinds="turn"))
            if len(r.text) > 1000
        ]
        assert text in turn.text  # kept whole in the archive
        for query in ("locker code zanzibar", "market apples sister"):
            context = memory.build_context(query=query, recall=True)
            recalled = [r for r in context.recalled if r.record_id == turn.id]
            assert recalled, query  # findable
            assert len(recalled[0].text) <= RECALL_EXCERPT_CHARS + 200
            assert context.usage["recall"] <= 1_000
        found = memory.build_context(query="locker code zanzibar", recall=True)
        assert any("zanzibar" in r.text for r in found.recalled)  # the part that matches
    finally:
        store.close()


def test_every_call_after_a_huge_tool_call_finishes() -> None:
    """A 200k-character tool argument without spaces and a 100k-character name."""
    usage = _in_child(
        """
        import json, tempfile
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langchain_tiered_memory.store import MemoryStore
        from tiered_memory_bench.big_messages import big_message
        word = big_message(200_000, "unbroken")
        usage = []
        with tempfile.TemporaryDirectory() as folder:
            with MemoryStore(folder, embeddings=DeterministicFakeEmbedding(size=16)) as store:
                memory = store.memory("ana", "t1", context_window=16_000)
                memory.add_messages([HumanMessage("I live in Lisbon.")])
                call = {"name": "search", "args": {"q": word}, "id": "c1"}
                memory.add_messages([
                    HumanMessage("run it", name=big_message(100_000, "unbroken")),
                    AIMessage("", tool_calls=[call]),
                    ToolMessage("done", tool_call_id="c1"),
                ])
                for i in range(3):
                    memory.add_messages([AIMessage("ok"), HumanMessage(f"Where do I live? {i}")])
                    context = memory.build_context(query=word[:30], recall=True)
                    usage.append(context.usage["recall"])
        print(json.dumps(usage))
        """,
        180,
    )
    assert len(usage) == 3 and max(usage) <= 1_000
