from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory import CompressionTriggers, LLMSummarizer, MemoryStore, TieredMemory
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.tiers.buffer import BufferState, append_messages, should_compress
from langchain_tiered_memory.tiers.summarize import ExtractiveSummarizer, SummarizationError
from langchain_tiered_memory.values.turns import Turn, group_turns


def exchange(i: int) -> list:
    return [
        HumanMessage(f"On day {i} I met Ana in Porto and we spent {i * 3} euros on lunch."),
        AIMessage(f"Noted: day {i}, Porto, {i * 3} euros. Anything else?"),
    ]


def tool_exchange(i: int) -> list:
    return [
        HumanMessage(f"Look up the weather for trip {i}."),
        AIMessage("", tool_calls=[{"name": "weather", "args": {"trip": i}, "id": f"call-{i}"}]),
        ToolMessage(f"Sunny for trip {i}, 21 degrees.", tool_call_id=f"call-{i}"),
        AIMessage(f"Trip {i} will be sunny."),
    ]


class FailingSummarizer:
    """Fails the first `fail_times` calls the way a flaky model does."""

    def __init__(self, fail_times: int, mode: str = "raise") -> None:
        self.fail_times = fail_times
        self.mode = mode
        self.calls = 0

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        self.calls += 1
        if self.calls <= self.fail_times:
            if self.mode == "empty":
                return "   "
            raise SummarizationError("model unavailable")
        return (summary + "\n" if summary else "") + f"turns {turns[0].index}-{turns[-1].index}"


def test_group_turns_keeps_tool_calls_with_results() -> None:
    turns = group_turns(tool_exchange(1) + exchange(2))
    assert [len(t) for t in turns] == [4, 2]
    with pytest.raises(ValueError, match="no matching tool call"):
        group_turns([HumanMessage("hi"), ToolMessage("orphan", tool_call_id="nope")])


def test_append_extends_the_open_turn(counter) -> None:
    state = append_messages(BufferState(), [HumanMessage("hi")], counter)
    state = append_messages(state, [AIMessage("hello")], counter)
    assert len(state.turns) == 1
    assert state.turns[0].tokens == counter.count_messages(state.turns[0].messages) - 3
    state = append_messages(state, [HumanMessage("next")], counter)
    assert [t.index for t in state.turns] == [0, 1]


def test_soft_trigger_waits_for_new_tokens(counter) -> None:
    triggers = CompressionTriggers(
        soft_ratio=0.8, every_new_tokens=10_000, target_ratio=0.5, summary_ratio=0.2
    )
    state = BufferState()
    for i in range(12):
        state = append_messages(state, exchange(i), counter)
    cap = int(state.tokens / 0.85)  # buffer at 85% of its cap
    assert should_compress(state, cap=cap, triggers=triggers) == "soft"  # step capped by gap
    from dataclasses import replace

    assert should_compress(replace(state, new_tokens=0), cap=cap, triggers=triggers) is None
    assert should_compress(state, cap=state.tokens - 1, triggers=triggers) == "hard"


def archived_turns(memory: TieredMemory) -> list[int]:
    """Indices of the memory's turns in the archive, oldest first."""
    records = memory.archive.records(
        RecordFilter(memory.user_id, thread_id=memory.thread_id, kinds="turn")
    )
    return sorted(int(r.metadata["turn_index"]) for r in records)


def test_compression_evicts_oldest_whole_turns_to_archive_first(counter) -> None:
    memory = TieredMemory(context_window=1024)
    for i in range(40):
        memory.add_messages(tool_exchange(i) if i % 3 == 0 else exchange(i))
        kept = [t.index for t in memory.state.turns]
        # at every moment each turn is in the buffer or the archive, never neither
        assert sorted(set(archived_turns(memory)) | set(kept)) == list(range(i + 1))
    archived = archived_turns(memory)
    assert archived, "compression never ran"
    kept = [t.index for t in memory.state.turns]
    assert archived + kept == list(range(40))  # nothing lost, order kept
    for record in memory.archive.records(RecordFilter(memory.user_id, kinds="turn")):
        # whole turns: tool calls travel with results
        assert record.text.count("[calls") == record.text.count("tool result")
    assert memory.state.summary
    assert memory.state.tokens <= memory.buffer_cap


def test_summary_keeps_verifiable_entities(counter) -> None:
    summarizer = ExtractiveSummarizer(counter)
    turn = Turn(
        3,
        (
            HumanMessage(
                "Hey! So, I'm flying to Tokyo on 14 March with Kenji, "
                "budget 2,500 dollars. Weather is nice."
            ),
            AIMessage("Cool, sounds fun!"),
        ),
    )
    summary = summarizer.summarize("", [turn], max_tokens=100)
    for entity in ("Tokyo", "14 March", "Kenji", "2,500"):
        assert entity in summary
    assert summary.startswith("[t3]")
    assert "sounds fun" not in summary  # small talk is not kept


def test_extractive_summary_respects_its_cap(counter) -> None:
    summarizer = ExtractiveSummarizer(counter)
    turns = [Turn(i, tuple(exchange(i))) for i in range(50)]
    summary = summarizer.summarize("", turns, max_tokens=120)
    assert counter.count_text(summary) <= 120
    assert "[t49]" in summary  # newest details survive


@pytest.mark.parametrize("mode", ["raise", "empty"])
def test_failed_summary_leaves_buffer_unchanged_then_retries(mode: str) -> None:
    summarizer = FailingSummarizer(fail_times=1, mode=mode)
    memory = TieredMemory(
        context_window=1024,
        summarizer=summarizer,
        triggers=CompressionTriggers(every_new_tokens=50),
    )
    before = None
    failed_at = None
    for i in range(60):
        snapshot = memory.state
        events = memory.add_messages(exchange(i))
        if any(e.kind == "summary_failed" for e in events):
            before, failed_at = snapshot, i
            after = memory.state
            # the failed attempt changed nothing but the new turn and the retry clock
            assert [t.index for t in after.turns] == [t.index for t in before.turns] + [i]
            assert after.summary == before.summary
            assert not archived_turns(memory)
            break
    assert failed_at is not None
    assert (
        memory.events[-1].error and "model unavailable" in memory.events[-1].error
    ) or mode == "empty"
    for i in range(failed_at + 1, failed_at + 40):
        memory.add_messages(exchange(i))
    assert any(e.kind == "compression" for e in memory.events)
    assert memory.state.summary.startswith("turns 0-")
    assert memory.build_context().total_tokens <= memory.budget.input_budget


def test_hard_limit_pages_out_without_summary_and_folds_in_later() -> None:
    summarizer = FailingSummarizer(fail_times=3)
    memory = TieredMemory(
        context_window=1024,
        summarizer=summarizer,
        triggers=CompressionTriggers(soft_ratio=0.99, hard_ratio=1.0, every_new_tokens=10**6),
    )
    for i in range(80):
        memory.add_messages(exchange(i))
        assert memory.build_context().total_tokens <= memory.budget.input_budget
        assert memory.state.tokens <= memory.buffer_cap + 200  # at most one turn over
    kinds = [e.kind for e in memory.events]
    assert "page_out_unsummarized" in kinds and "compression" in kinds
    first_ok = kinds.index("compression")
    assert kinds[:first_ok] == ["page_out_unsummarized"] * 3
    # the summary written after recovery covers the turns paged out unsummarised
    assert memory.state.summary.splitlines()[0].startswith("turns 0-")
    assert archived_turns(memory) + [t.index for t in memory.state.turns] == list(range(80))


class BrokenEmbeddings(DeterministicFakeEmbedding):
    """Embeds nothing: every archive write fails before its transaction."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise OSError("embedding service down")


def test_archive_failure_keeps_turns_in_buffer() -> None:
    store = MemoryStore(embeddings=BrokenEmbeddings(size=8))
    memory = TieredMemory(context_window=1024, store=store)
    for i in range(40):
        memory.add_messages(exchange(i))
        assert memory.build_context().total_tokens <= memory.budget.input_budget
    assert [t.index for t in memory.state.turns] == list(range(40))
    assert {e.kind for e in memory.events} == {"archive_failed"}
    assert "embedding service down" in (memory.events[0].error or "")
    assert memory.build_context().omitted_turns  # not in this prompt, still in the buffer
    assert memory.archive.count() == 0


def test_llm_summarizer_with_a_fake_model(counter) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Ana [t0] met in Porto, 0 euros.")] * 50))
    memory = TieredMemory(context_window=1024, summarizer=model)
    for i in range(30):
        memory.add_messages(exchange(i))
    assert isinstance(memory.summarizer, LLMSummarizer)
    assert memory.summarizer.calls >= 1
    assert "Porto" in memory.state.summary


def test_llm_summarizer_timeout_is_a_failure(counter) -> None:
    class Slow(GenericFakeChatModel):
        def _generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            time.sleep(1.0)
            return super()._generate(*args, **kwargs)

    slow = Slow(messages=iter([AIMessage("late")]))
    summarizer = LLMSummarizer(slow, timeout=0.05)
    with pytest.raises(SummarizationError, match="timed out"):
        summarizer.summarize("", [Turn(0, (HumanMessage("hi"),))], max_tokens=50)


def test_llm_summarizer_errors_become_summarization_errors() -> None:
    empty = GenericFakeChatModel(messages=iter([AIMessage("")]))
    with pytest.raises(SummarizationError, match="empty"):
        LLMSummarizer(empty).summarize("", [Turn(0, (HumanMessage("hi"),))], max_tokens=50)
    exhausted = GenericFakeChatModel(messages=iter([]))
    with pytest.raises(SummarizationError, match="failed"):
        LLMSummarizer(exhausted).summarize("", [Turn(0, (HumanMessage("hi"),))], max_tokens=50)
    with pytest.raises(ValueError, match="summary"):
        LLMSummarizer(empty, prompt="no placeholders")


async def test_async_twins() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Summary: Porto trips.")] * 50))
    memory = TieredMemory(context_window=1024, summarizer=model)
    for i in range(30):
        await memory.aadd_messages(exchange(i))
    ctx = await memory.abuild_context()
    assert ctx.total_tokens <= memory.budget.input_budget
    assert "Porto trips" in memory.state.summary


def test_bad_triggers() -> None:
    with pytest.raises(ValueError, match="summary_ratio < target_ratio"):
        CompressionTriggers(target_ratio=0.9, soft_ratio=0.8)
    with pytest.raises(ValueError, match="keep_last_turns"):
        CompressionTriggers(keep_last_turns=0)
    with pytest.raises(ValueError, match="hard_ratio"):
        CompressionTriggers(hard_ratio=1.5)
