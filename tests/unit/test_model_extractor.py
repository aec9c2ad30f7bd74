"""The agent's own chat model as the fact extractor (issue 30, item 2): batched off the add's
thread, one structured-output call per batch, the batch's facts and the watermark committed
in one transaction, only the user's own words shown to the model.

The model is scripted: a LangChain fake chat model whose ``with_structured_output`` answers
from a list (a decision list, or an exception to raise) and records every prompt.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langchain_tiered_memory import MemoryStore, TieredMemory
from langchain_tiered_memory.budget.context import RecalledMemory
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.models import resolve_chat_model
from langchain_tiered_memory.storage.errors import StorageError
from langchain_tiered_memory.storage.sql.facts import FactLog
from langchain_tiered_memory.tiers.core import CoreFact
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.model_extractor import (
    Decisions,
    ModelExtractor,
    extractable_text,
)

WINDOW = 8192
EXACT = OpenAITokenCounter("gpt-4o-mini")
OUT_OF_SCHEMA = object()  # a scripted answer that is not the schema


class ScriptedModel(GenericFakeChatModel):
    """Answers extraction calls from ``script`` (a list of decisions, or an exception)."""

    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    entered: Any = None  # a threading.Event set when a call starts
    gate: Any = None  # a threading.Event the call waits for

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def respond(messages: list[BaseMessage]) -> Any:
            self.prompts.append(list(messages))
            if self.entered is not None:
                self.entered.set()
            if self.gate is not None:
                assert self.gate.wait(20), "the test never opened the gate"
            item = self.script.pop(0) if self.script else []
            if isinstance(item, BaseException):
                raise item
            if item is OUT_OF_SCHEMA:
                return None  # what a tool-calling parser gives for a reply without the call
            return schema(decisions=item)

        return RunnableLambda(respond)

    @property
    def calls(self) -> int:
        return len(self.prompts)

    def prompt_text(self, i: int = -1) -> str:
        return "\n".join(str(m.content) for m in self.prompts[i])


def scripted(*answers: Any, **fields: Any) -> ScriptedModel:
    return ScriptedModel(messages=iter([]), script=list(answers), prompts=[], **fields)


def add(decision: str, content: str, turn: int, subject: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "action": decision,
        "subject": subject,
        "content": content,
        "source_turn": turn,
        "reason": extra.pop("reason", f"{decision} from turn {turn}"),
        **extra,
    }


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "mem", embeddings=DeterministicFakeEmbedding(size=16))
    yield s
    s.close()


def memory_with(
    store: MemoryStore, model: ScriptedModel, *, every: int = 4, thread: str = "t1"
) -> TieredMemory:
    return store.memory("ana", thread, context_window=WINDOW, extractor=model, extract_every=every)


def exchange(text: str) -> list[BaseMessage]:
    return [HumanMessage(text), AIMessage("Noted.")]


def model_events(store: MemoryStore) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in store.audit.events("ana", kinds=["write"])
        if e.payload.get("extraction") == "model"
    ]


# -- a batch ----------------------------------------------------------------------------


def test_one_call_per_batch_with_reasons_in_the_audit_log(store: MemoryStore) -> None:
    model = scripted(
        [
            add("add", "allergic to peanuts", 1, "allergy:peanuts", reason="stated allergy"),
            add("add", "lives in Porto", 3, "home_city", reason="said where they live"),
            {"action": "nothing", "source_turn": 0, "reason": "small talk"},
        ]
    )
    memory = memory_with(store, model)
    for text in ["Hi there!", "I'm allergic to peanuts.", "Nice weather.", "I live in Porto."][:3]:
        memory.add_messages(exchange(text))
    time.sleep(0.2)
    assert model.calls == 0  # three turns: the batch (4) is not full
    memory.add_messages(exchange("I live in Porto."))
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 1
    prompt = model.prompt_text()
    assert "[t0] Hi there!" in prompt and "[t3] I live in Porto." in prompt
    assert "Noted." not in prompt  # the assistant's words are never extractable
    assert {f.subject: f.content for f in memory.core.active()} == {
        "allergy:peanuts": "allergic to peanuts",
        "home_city": "lives in Porto",
    }
    assert memory.head.extracted_through == 3
    assert store.backend.read_thread("ana", "t1", None).head.extracted_through == 3
    events = model_events(store)
    assert [(e["action"], e["reason"], e["turn"]) for e in events] == [
        ("add", "stated allergy", 1),
        ("add", "said where they live", 3),
    ]
    assert {e["fact_id"] for e in events} == {f.id for f in memory.core.active()}


def test_a_compression_extracts_what_is_pending_even_before_the_batch_is_full(
    store: MemoryStore,
) -> None:
    model = scripted([add("add", "vegetarian", 0, "diet")])
    memory = memory_with(store, model, every=50)
    memory.add_messages(exchange("I'm vegetarian."))
    memory.add_messages(exchange("What should I cook tonight?"))
    memory.compress()  # evicts the turns: their facts must not be skipped
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 1
    assert memory.core.get("diet").content == "vegetarian"
    assert memory.head.extracted_through == 1


# -- an add never waits for the model ---------------------------------------------------


def test_an_add_returns_while_the_model_is_still_answering(store: MemoryStore) -> None:
    entered, gate = threading.Event(), threading.Event()
    model = scripted([add("add", "lives in Porto", 0, "home_city")], entered=entered, gate=gate)
    memory = memory_with(store, model, every=1)
    started = time.monotonic()
    memory.add_messages(exchange("I live in Porto."))
    assert entered.wait(60)  # the model was called ...
    assert not gate.is_set()  # ... and is blocked, yet the add has returned
    memory.add_messages(exchange("And I like jazz."))  # another add does not wait either
    assert time.monotonic() - started < 10
    assert memory.core.get("home_city") is None  # nothing written before the answer
    assert memory.build_context().total_tokens > 0  # reads do not wait either
    gate.set()
    assert memory.flush_extraction(timeout=60)
    assert memory.core.get("home_city").content == "lives in Porto"


async def test_the_async_add_returns_before_the_model_answers(store: MemoryStore) -> None:
    entered, gate = threading.Event(), threading.Event()
    model = scripted([add("add", "lives in Porto", 0, "home_city")], entered=entered, gate=gate)
    memory = memory_with(store, model, every=1)
    await memory.aadd_messages(exchange("I live in Porto."))
    assert entered.wait(60) and not gate.is_set()
    gate.set()
    assert await memory.aflush_extraction(timeout=60)
    assert memory.core.get("home_city").content == "lives in Porto"


# -- a crash in the middle of a batch ---------------------------------------------------


def test_a_model_failure_writes_nothing_and_the_batch_is_retried_once(
    store: MemoryStore,
) -> None:
    model = scripted(
        TimeoutError("model timed out"), [add("add", "lives in Porto", 0, "home_city")]
    )
    memory = memory_with(store, model, every=50)  # runs only when flushed
    memory.add_messages(exchange("I live in Porto."))
    memory.add_messages(exchange("Any tips?"))
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 1 and memory.core.active() == []
    assert memory.head.extracted_through == -1  # the watermark did not move
    assert memory.flush_extraction(timeout=60)  # a later run (the next add, a flush)
    assert model.calls == 2
    assert "[t0] I live in Porto." in model.prompt_text()  # the same batch again
    assert [f.content for f in memory.core.history("home_city")] == ["lives in Porto"]
    assert len(model_events(store)) == 1


class FailingCommit:
    """A backend whose first ``commit_extraction`` dies after the model answered."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.failed = 0

    def commit_extraction(self, *args: Any, **kwargs: Any) -> Any:
        if not self.failed:
            self.failed += 1
            raise StorageError("the process died between the answer and the commit")
        return self._inner.commit_extraction(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_crash_between_the_answer_and_the_commit_loses_nothing_and_writes_nothing_twice(
    store: MemoryStore,
) -> None:
    answer = [
        add("add", "lives in Porto", 0, "home_city"),
        add("add", "likes jazz", 1, "likes:jazz"),
    ]
    model = scripted(answer, list(answer))
    memory = memory_with(store, model, every=50)  # runs only when flushed
    memory.backend = FailingCommit(store.backend)  # type: ignore[assignment]
    memory.add_messages(exchange("I live in Porto."))
    memory.add_messages(exchange("I like jazz a lot."))
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 1 and memory.backend.failed == 1  # type: ignore[attr-defined]
    assert memory.core.active() == [] and memory.head.extracted_through == -1
    # a new process (a fresh view of the same store) finds the batch still due
    again = memory_with(store, model, every=50)
    assert again.flush_extraction(timeout=60)
    assert model.calls == 2
    assert sorted(f.content for f in again.core.history()) == ["likes jazz", "lives in Porto"]
    assert len(model_events(store)) == 2
    assert store.backend.read_thread("ana", "t1", None).head.extracted_through == 1


def test_two_views_of_one_thread_write_a_batch_once(store: MemoryStore) -> None:
    entered, gate = threading.Event(), threading.Event()
    slow = scripted([add("add", "lives in Porto", 0, "home_city")], entered=entered, gate=gate)
    fast = scripted([add("add", "lives in Porto", 0, "home_city")])
    a = memory_with(store, slow, every=50)
    b = memory_with(store, fast, every=50)
    a.add_messages(exchange("I live in Porto."))
    a.add_messages(exchange("Thanks."))
    waiting = threading.Thread(target=a.flush_extraction)
    waiting.start()  # a's batch starts and blocks in the model
    assert entered.wait(60)
    assert b.flush_extraction(timeout=60)  # b extracts and commits the same turns first
    gate.set()
    waiting.join(20)
    assert a.flush_extraction(timeout=60)  # a's commit found the watermark moved: dropped
    assert slow.calls == 1 and fast.calls == 1
    assert [f.content for f in a.core.history("home_city")] == ["lives in Porto"]
    assert len(model_events(store)) == 1
    assert a.head.extracted_through == b.head.extracted_through == 1


# -- update and end -----------------------------------------------------------------------


def test_an_update_supersedes_the_fact_it_names(store: MemoryStore) -> None:
    model = scripted(
        [add("update", "moved to Porto", 0, fact_id="f1", reason="the user moved again")]
    )
    memory = memory_with(store, model, every=1)
    old = memory.write_fact(CoreFact.new("home_city", "moved to Lisbon")).fact
    memory.add_messages(exchange("Actually we moved again, to Porto."))
    assert memory.flush_extraction(timeout=60)
    assert "[f1] home_city: moved to Lisbon" in model.prompt_text()  # the current facts
    assert memory.core.get("home_city").content == "moved to Porto"
    history = memory.core.history("home_city")
    assert [(f.content, f.status) for f in history] == [
        ("moved to Lisbon", "superseded"),
        ("moved to Porto", "active"),
    ]
    (event,) = model_events(store)
    assert event["replaces"] == old.id and event["reason"] == "the user moved again"


def test_an_end_ends_the_fact_it_names_and_nothing_else(store: MemoryStore) -> None:
    model = scripted(
        [
            {"action": "end", "fact_id": "f2", "source_turn": 0, "reason": "quit smoking"},
            {"action": "end", "fact_id": "f9", "source_turn": 0, "reason": "no such fact"},
            {"action": "update", "fact_id": "f1", "content": "x", "source_turn": 7},
        ]
    )
    memory = memory_with(store, model, every=1)
    memory.write_fact(CoreFact.new("diet", "vegetarian", importance=9))
    memory.write_fact(CoreFact.new("smoking", "smokes", importance=5))
    memory.add_messages(exchange("I don't smoke any more."))
    assert memory.flush_extraction(timeout=60)
    assert "[f2] smoking: smokes" in model.prompt_text()
    assert [f.subject for f in memory.core.active()] == ["diet"]
    (ended,) = [f for f in memory.core.history("smoking")]
    assert ended.status == "ended" and ended.reason == "quit smoking"
    assert [e["action"] for e in model_events(store)] == ["end"]


# -- only the user's own words --------------------------------------------------------


def test_a_quoted_friends_bio_never_becomes_the_users_facts(store: MemoryStore) -> None:
    bio = "Tom Berg lives in Oslo, works as a vegan chef and has two cats."
    model = scripted(
        [
            add("add", "lives in Oslo", 0, "home_city"),  # the model read the bio anyway
            add("add", "works as a vegan chef", 0, "job"),
            add("add", "is proofreading a friend's bio", 0, "task"),
        ]
    )
    memory = memory_with(store, model, every=1)
    memory.add_messages(exchange(f"Can you polish my friend's bio? \"{bio}\" I'm proofreading it."))
    assert memory.flush_extraction(timeout=60)
    prompt = model.prompt_text()
    assert "Oslo" not in prompt and "vegan chef" not in prompt
    assert "quoted, pasted or forwarded" in prompt  # the prompt says so
    subjects = {f.subject for f in memory.core.history()}
    assert "home_city" not in subjects and "job" not in subjects
    assert [f.content for f in memory.core.active()] == ["is proofreading a friend's bio"]


def test_recalled_text_in_a_stored_prompt_is_never_extracted_again(store: MemoryStore) -> None:
    # build_context folds recalled records into the newest user message; an app that
    # stores the prompt's messages back (instead of the user's) must not feed them
    # to the extractor
    model = scripted(
        [add("add", "wants dinner ideas for the greyhound", 0, "task")],
        [add("add", "adopted a greyhound from a shelter in Leeds", 0, "pet:dog")],
    )
    memory = memory_with(store, model, every=1)
    memory.add_messages(HumanMessage("Dinner ideas for tonight with my greyhound?"))
    assert memory.flush_extraction(timeout=60)
    recalled = RecalledMemory("Ana adopted her greyhound from a shelter in Leeds.")
    ctx = memory.build_context(recalled=[recalled])
    assert "<memory_context>" in ctx.messages[-1].content and "Leeds" in ctx.messages[-1].content
    other = memory_with(store, model, every=1, thread="t2")
    other.add_messages([ctx.messages[-1]])  # the whole prompt message, stored back
    assert other.flush_extraction(timeout=60)
    assert model.calls == 2
    for i in range(model.calls):
        assert "Leeds" not in model.prompt_text(i)
        assert "<memory_context>" not in model.prompt_text(i)
    # the model "extracting" the recalled text anyway is not taken: not the user's words
    assert [f.subject for f in memory.core.history()] == ["task"]
    assert "Leeds" not in extractable_text(ctx.messages[-1])


# -- the prompt fits the budget ---------------------------------------------------------


def sent(messages: list[BaseMessage]) -> int:
    """What a call costs a provider: the messages plus the answer's schema as a tool."""
    schema = json.dumps(convert_to_openai_tool(Decisions))
    return EXACT.count_messages(messages) + EXACT.count_text(schema)


@pytest.mark.parametrize("budget", [1000, 1200, 1739, 3000])
def test_the_call_fits_the_budget_and_the_rest_waits_for_the_next_call(budget: int) -> None:
    extractor = ModelExtractor(scripted([], []))
    turns = [Turn(i, (HumanMessage(f"turn {i}: " + "word " * 90),)) for i in range(30)]
    facts = [CoreFact.new(f"k{i}", "a fact " * 20) for i in range(30)]
    messages, covered, aliases = extractor.prompt(
        turns, facts, counter=EXACT, max_input_tokens=budget
    )
    assert 0 < sent(messages) <= budget  # the schema counted too
    assert 0 < len(covered) < len(turns)
    assert [t.index for t in covered] == list(range(len(covered)))  # the oldest first
    assert "[t0] turn 0: " + "word " * 89 + "word" in messages[-1].content  # whole, not clipped
    assert len(aliases) < len(facts)
    answer = extractor.decide(turns, facts, counter=EXACT, max_input_tokens=budget)
    assert answer is not None and answer.through == covered[-1].index
    assert extractor.calls == 1 and extractor.input_tokens > 0


def test_the_facts_never_take_the_room_the_oldest_turn_needs() -> None:
    extractor = ModelExtractor(scripted())
    budget = extractor.overhead(EXACT) + 300
    turns = [Turn(0, (HumanMessage("I moved to Porto. " + "word " * 200),))]
    facts = [CoreFact.new(f"k{i}", "a fact " * 20) for i in range(30)]
    messages, covered, aliases = extractor.prompt(
        turns, facts, counter=EXACT, max_input_tokens=budget
    )
    assert covered == tuple(turns) and sent(messages) <= budget
    assert 0 < len(aliases) < 5  # fewer facts, but the turn went in whole


def test_a_turn_too_long_for_any_call_gets_no_call() -> None:
    model = scripted([])
    extractor = ModelExtractor(model)
    budget = extractor.overhead(EXACT) + 100
    turns = [Turn(3, (HumanMessage("I live in Porto. " + "word " * 200),))]
    assert extractor.prompt(turns, [], counter=EXACT, max_input_tokens=budget) == ([], (), {})
    assert extractor.decide(turns, [], counter=EXACT, max_input_tokens=budget) is None
    assert model.calls == 0


def test_a_turn_too_long_for_any_call_is_extracted_once_by_the_rules(store: MemoryStore) -> None:
    model = scripted(
        [add("add", "lives in Porto", 0, "home_city")],
        [add("add", "likes jazz", 2, "likes:jazz")],
    )
    memory = store.memory("ana", "t1", context_window=2048, extractor=model, extract_every=50)
    room = memory.budget.input_budget - ModelExtractor(model).overhead(memory.counter)
    long = "I'm allergic to peanuts. " + "Here is my essay on the history of trams. " * 90
    assert memory.counter.count_text(long) > room  # no call can hold it
    for text in ["I live in Porto.", long, "I like jazz a lot."]:
        memory.add_messages(exchange(text))
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 2
    assert "[t0]" in model.prompt_text(0) and "[t1]" not in model.prompt_text(0)
    assert "[t2]" in model.prompt_text(1) and "[t1]" not in model.prompt_text(1)
    assert all(sent(p) <= memory.budget.input_budget for p in model.prompts)
    contents = sorted((f.subject, f.content) for f in memory.core.history())
    assert contents == [
        ("allergy:peanuts", "allergic to peanuts"),  # by the rules
        ("home_city", "lives in Porto"),
        ("likes:jazz", "likes jazz"),
    ]
    assert memory.head.extracted_through == 2
    assert store.backend.read_thread("ana", "t1", None).head.extracted_through == 2
    assert len(model_events(store)) == 2


def test_a_model_whose_instructions_do_not_fit_the_window_gets_the_rules(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    model = scripted()
    with caplog.at_level("INFO", logger="langchain_tiered_memory.memory"):
        memory = store.memory("ana", "t1", context_window=1024, extractor=model)
    assert memory.model_extractor is None
    assert "does not fit 869 input tokens: no model extraction" in caplog.text
    memory.add_messages(exchange("I'm allergic to peanuts."))
    assert memory.core.get("allergy:peanuts") is not None  # the rules ran in the add
    assert type(memory.writer.extractor).__name__ == "LinkedRulesExtractor"  # the default
    assert model.calls == 0


def test_an_answer_out_of_schema_hands_its_turns_to_the_rules(store: MemoryStore) -> None:
    model = scripted(OUT_OF_SCHEMA, [add("add", "likes jazz", 2, "likes:jazz")])
    memory = memory_with(store, model, every=2)
    memory.add_messages(exchange("I live in Porto."))
    memory.add_messages(exchange("I'm allergic to peanuts."))  # a batch: the model fails it
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 1  # not asked again for the same batch
    assert {f.subject for f in memory.core.active()} == {"home_city", "allergy:peanuts"}
    assert memory.head.extracted_through == 1
    memory.add_messages(exchange("I like jazz a lot."))
    assert memory.flush_extraction(timeout=60)
    assert model.calls == 2 and "[t2]" in model.prompt_text() and "[t1]" not in model.prompt_text()
    assert memory.core.get("likes:jazz").content == "likes jazz"
    assert memory.head.extracted_through == 2


def test_a_failure_inside_the_rules_fallback_writes_nothing_and_the_batch_is_retried_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules' fallback commits its facts with the watermark as one: a failure after the
    batch's first fact was written leaves neither; the next run writes the batch once."""
    model = scripted(OUT_OF_SCHEMA, OUT_OF_SCHEMA)
    memory = memory_with(store, model, every=50)  # runs only when flushed
    written: list[int] = []
    write = FactLog.write

    def dying(self: FactLog, *args: Any, **kwargs: Any) -> Any:
        update = write(self, *args, **kwargs)
        written.append(1)
        if len(written) == 2:
            raise StorageError("the disk failed after the batch's first fact")
        return update

    monkeypatch.setattr(FactLog, "write", dying)
    memory.add_messages(exchange("I live in Porto and I work at Acme."))
    memory.add_messages(exchange("Thanks."))
    assert memory.flush_extraction(timeout=60)  # the model fails the batch, the rules take it
    assert model.calls == 1 and len(written) == 2  # the rules wrote one fact, then failed
    assert memory.core.history() == [] and memory.head.extracted_through == -1
    monkeypatch.undo()
    assert memory.flush_extraction(timeout=60)  # the next run: the same batch
    assert model.calls == 2
    assert sorted(f.content for f in memory.core.history()) == ["lives in Porto", "works at Acme"]
    assert memory.head.extracted_through == 1
    events = [e for e in store.audit.events("ana", kinds=["write"]) if "extraction" in e.payload]
    assert sorted((e.payload["extraction"], e.payload["action"]) for e in events) == [
        ("rules", "add"),
        ("rules", "add"),
    ]


# -- which extractor runs ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, None),  # no chat model: the rules
        ({"model": "model"}, ModelExtractor),  # the application's chat model
        ({"model": "model", "extractor": "rules"}, None),  # opted out
        ({"model": "fake"}, None),  # a model without structured output: the rules
        ({"model": "echo"}, None),
    ],
)
def test_the_model_extractor_runs_by_default_when_a_chat_model_is_given(
    kwargs: dict[str, Any], expected: type | None
) -> None:
    models: dict[str, Callable[[], Any]] = {
        "model": lambda: scripted(),
        "fake": lambda: GenericFakeChatModel(messages=iter([])),
        "echo": lambda: resolve_chat_model("echo"),
    }
    if "model" in kwargs:
        kwargs = {**kwargs, "model": models[kwargs["model"]]()}
    memory = TieredMemory(context_window=WINDOW, token_counter="gpt-4o-mini", **kwargs)
    if expected is None:
        assert memory.model_extractor is None
        memory.add_messages(exchange("I'm allergic to peanuts."))
        assert memory.core.get("allergy:peanuts") is not None  # the rules ran in the add
    else:
        assert isinstance(memory.model_extractor, expected)


def test_forgetting_a_fact_removes_the_models_reasons_from_the_audit_log(
    store: MemoryStore,
) -> None:
    model = scripted([add("add", "lives in Porto", 0, "home_city", reason="Porto, said at t0")])
    memory = memory_with(store, model, every=1)
    memory.add_messages(exchange("I live in Porto."))
    assert memory.flush_extraction(timeout=60)
    assert len(model_events(store)) == 1
    memory.forget_fact("home_city")
    assert model_events(store) == []
    assert all("Porto" not in str(e.payload) for e in store.audit.events("ana"))


# -- one attribute, whichever extractor names it ---------------------------------------------


@pytest.mark.parametrize(
    ("action", "subject", "fact_id"),
    [
        ("update", "home city", None),  # names the attribute in words, no fact id
        ("update", "Home-City", "f9"),  # a fact id the prompt never showed
        ("add", "home_city", None),
        ("add", "location", None),  # a declared alias
        ("update", "lives in", None),
    ],
)
def test_a_rules_fact_is_superseded_by_a_model_naming_the_attribute_differently(
    store: MemoryStore, action: str, subject: str, fact_id: str | None
) -> None:
    rules = store.memory("ana", "t0", context_window=WINDOW, extractor="rules")
    rules.add_messages(exchange("I live in Lisbon."))
    (old,) = [f for f in rules.core.active() if "Lisbon" in f.content]
    assert old.subject == "home_city"  # the rules' subject
    model = scripted([add(action, "moved to Porto", 0, subject, fact_id=fact_id)])
    memory = memory_with(store, model, every=1)
    memory.add_messages(exchange("Update: our new home is Porto, we moved to Porto."))
    assert memory.flush_extraction(timeout=60)
    assert [(f.subject, f.content) for f in memory.core.active()] == [
        ("home_city", "moved to Porto")
    ]
    history = [(f.content, f.status) for f in memory.core.history("home_city")]
    assert history == [(old.content, "superseded"), ("moved to Porto", "active")]


def test_an_update_of_a_fact_stored_under_an_alias_files_under_the_attribute(
    store: MemoryStore,
) -> None:
    model = scripted([add("update", "moved to Porto", 0, fact_id="f1")])
    memory = memory_with(store, model, every=1)
    memory.write_fact(CoreFact.new("location", "lives in Lisbon"))  # written before the schema
    memory.add_messages(exchange("We moved to Porto."))
    assert memory.flush_extraction(timeout=60)
    assert [(f.subject, f.content) for f in memory.core.active()] == [
        ("home_city", "moved to Porto")
    ]
    assert [f.status for f in memory.core.history("location")] == ["ended"]
