"""The application's chat model writes the facts in every entry point given one (issue 30,
item 2): the prebuilt graph, the ``create_agent`` middleware and the ``create_react_agent``
pre-model hook. ``extractor="rules"`` opts out; a model without structured output leaves
the rules running; a run never waits for the model's extraction call.

The model is scripted: a LangChain fake chat model that answers the conversation from
``messages`` and extraction calls (``with_structured_output``) from ``script``, and
records every extraction prompt.
"""

from __future__ import annotations

import itertools
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

from langchain_tiered_memory import MemoryStore
from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.integrations.agents import (
    TieredMemoryMiddleware,
    create_pre_model_hook,
)
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.write.model_extractor import Decisions

WINDOW = 8192
COUNTER = OpenAITokenCounter("gpt-4o-mini")  # the memory's counter (its default model's)
CONFIG = {"configurable": {"user_id": "ana", "thread_id": "t1"}}


class ScriptedModel(GenericFakeChatModel):
    """Replies "Noted." to the conversation; answers extraction calls from ``script``."""

    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    entered: Any = None  # a threading.Event set when an extraction call starts
    gate: Any = None  # a threading.Event the extraction call waits for

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def respond(messages: list[BaseMessage]) -> Any:
            self.prompts.append(list(messages))
            if self.entered is not None:
                self.entered.set()
            if self.gate is not None:
                assert self.gate.wait(20), "the test never opened the gate"
            return schema(decisions=self.script.pop(0) if self.script else [])

        return RunnableLambda(respond)

    @property
    def calls(self) -> int:
        return len(self.prompts)


def scripted(*answers: Any, **fields: Any) -> ScriptedModel:
    replies = itertools.cycle([AIMessage("Noted.")])
    return ScriptedModel(messages=replies, script=list(answers), prompts=[], **fields)


def unstructured() -> GenericFakeChatModel:
    """A LangChain fake model: no structured output."""
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage("Noted.")]))


class ToolsFake(GenericFakeChatModel):
    """A LangChain fake model that accepts tools (and ignores them): its "structured
    output" would be its scripted chat reply."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def tools_fake() -> ToolsFake:
    return ToolsFake(messages=itertools.cycle([AIMessage("Noted.")]))


def porto(turn: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "action": "add",
            "subject": "home_city",
            "content": "lives in Porto",
            "source_turn": turn,
            "reason": "said where they live",
        }
    ]


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "mem", embeddings=DeterministicFakeEmbedding(size=16))
    yield s
    s.close()


def model_events(store: MemoryStore) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in store.audit.events("ana", kinds=["write"])
        if e.payload.get("extraction") == "model"
    ]


def facts(store: MemoryStore) -> dict[str, str]:
    view = store.memory("ana", "reader", context_window=WINDOW, extractor="rules")
    return {f.subject: f.content for f in view.core.active()}


def eventually(check: Callable[[], bool], timeout: float = 20) -> bool:
    """Whether ``check`` holds within ``timeout`` seconds (the extraction is in the
    background: the test waits for its commit, which it cannot join)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


SAID = "I live in Porto."


# -- the prebuilt graph ------------------------------------------------------------------


def graph_with(store: MemoryStore, model: Any, **options: Any) -> Any:
    return build_memory_graph(
        model, store=store, checkpointer=False, context_window=WINDOW, extract_every=1, **options
    )


def test_the_graph_extracts_with_its_model_and_a_run_never_waits_for_it(
    store: MemoryStore,
) -> None:
    entered, gate = threading.Event(), threading.Event()
    model = scripted(porto(), entered=entered, gate=gate)
    graph = graph_with(store, model)
    out = graph.invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert out["messages"][-1].content == "Noted."
    assert entered.wait(60) and not gate.is_set()  # the run returned; the call is blocked
    assert "home_city" not in facts(store)  # not the rules: nothing before the answer
    gate.set()
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1
    assert "[t0] I live in Porto." in str(model.prompts[0][-1].content)
    assert [e["reason"] for e in model_events(store)] == ["said where they live"]


@pytest.mark.parametrize(
    ("make", "options"),
    [
        (scripted, {"extractor": "rules"}),  # opted out
        (unstructured, {}),  # a model without structured output
        (tools_fake, {}),  # a fake that accepts tools: still no structured output
    ],
    ids=["rules", "no-structured-output", "fake-with-tools"],
)
def test_the_graph_runs_the_rules_when_opted_out_or_the_model_cannot(
    store: MemoryStore, make: Callable[[], Any], options: dict[str, Any], caplog: Any
) -> None:
    model = make()
    with caplog.at_level("INFO", logger="langchain_tiered_memory.write.model_extractor"):
        graph = graph_with(store, model, **options)
    graph.invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert facts(store)["home_city"] == "lives in Porto"  # the rules, inside the run
    assert model_events(store) == []
    if isinstance(model, ScriptedModel):
        assert model.calls == 0
    else:
        said = f"{type(model).__name__} gives no structured output: the offline extractor"
        assert said in caplog.text


def test_the_graph_hands_its_model_to_a_resolvers_memories(store: MemoryStore) -> None:
    model = scripted(porto())
    resolver = MemoryResolver(store, context_window=WINDOW, extract_every=1)
    graph = build_memory_graph(model, store=resolver, checkpointer=False)
    graph.invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1


@pytest.mark.parametrize(("window", "by_model"), [(1024, False), (2048, True), (4096, True)])
def test_the_graph_extracts_with_its_model_only_where_the_call_fits_the_window(
    store: MemoryStore, window: int, by_model: bool
) -> None:
    # the extraction instructions and the answer's schema are 896 tokens: a 1,024 window
    # (869 input tokens) cannot hold a call, and its memories run the rules
    model = scripted(porto())
    graph = build_memory_graph(
        model, store=store, checkpointer=False, context_window=window, extract_every=1
    )
    graph.invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == int(by_model)
    budget = TokenBudget(context_window=window).input_budget
    schema = COUNTER.count_text(json.dumps(convert_to_openai_tool(Decisions)))
    assert all(COUNTER.count_messages(p) + schema <= budget for p in model.prompts)


def test_a_graph_with_a_per_run_model_runs_the_rules(store: MemoryStore) -> None:
    graph = graph_with(store, None)
    run = {"configurable": {"user_id": "ana", "thread_id": "t1", "model": "echo"}}
    graph.invoke({"messages": [HumanMessage(SAID)]}, run)
    assert facts(store)["home_city"] == "lives in Porto"


# -- create_agent + the middleware --------------------------------------------------------


def agent_with(model: Any, middleware: Any) -> Any:
    from langchain.agents import create_agent

    return create_agent(model, middleware=[middleware])


def test_the_middleware_extracts_with_the_agents_model(store: MemoryStore) -> None:
    entered, gate = threading.Event(), threading.Event()
    model = scripted(porto(), entered=entered, gate=gate)
    middleware = TieredMemoryMiddleware(store, context_window=WINDOW, extract_every=1)
    agent = agent_with(model, middleware)
    agent.invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    # the reply is stored by the call's end: that add asks for the batch, and returns
    assert entered.wait(60) and not gate.is_set()
    assert "home_city" not in facts(store)
    gate.set()
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1 and len(model_events(store)) == 1


async def test_the_async_middleware_extracts_with_the_agents_model(store: MemoryStore) -> None:
    model = scripted(porto())
    middleware = TieredMemoryMiddleware(store, context_window=WINDOW, extract_every=1)
    await agent_with(model, middleware).ainvoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1 and len(model_events(store)) == 1


@pytest.mark.parametrize(
    ("make", "options"),
    [
        (scripted, {"extractor": "rules"}),
        (unstructured, {}),
        (tools_fake, {}),
    ],
    ids=["rules", "no-structured-output", "fake-with-tools"],
)
def test_the_middleware_runs_the_rules_when_opted_out_or_the_model_cannot(
    store: MemoryStore, make: Callable[[], Any], options: dict[str, Any]
) -> None:
    model = make()
    middleware = TieredMemoryMiddleware(store, context_window=WINDOW, extract_every=1, **options)
    agent_with(model, middleware).invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert facts(store)["home_city"] == "lives in Porto"
    assert model_events(store) == []
    assert not isinstance(model, ScriptedModel) or model.calls == 0


@pytest.mark.parametrize(("options", "by_model"), [({}, True), ({"extractor": "rules"}, False)])
def test_the_middleware_hands_its_model_to_a_resolvers_memories_unless_they_chose(
    store: MemoryStore, options: dict[str, Any], by_model: bool
) -> None:
    model = scripted(porto())
    resolver = MemoryResolver(store, context_window=WINDOW, extract_every=1, **options)
    agent_with(model, TieredMemoryMiddleware(resolver)).invoke(
        {"messages": [HumanMessage(SAID)]}, CONFIG
    )
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == int(by_model) and len(model_events(store)) == int(by_model)


def test_the_middleware_leaves_the_memories_of_a_callable_source_as_built(
    store: MemoryStore,
) -> None:
    model = scripted(porto())
    resolver = MemoryResolver(
        lambda user, thread: store.memory(user, thread, context_window=WINDOW)
    )
    agent_with(model, TieredMemoryMiddleware(resolver)).invoke(
        {"messages": [HumanMessage(SAID)]}, CONFIG
    )
    assert facts(store)["home_city"] == "lives in Porto" and model.calls == 0


# -- create_react_agent + the pre-model hook ----------------------------------------------


def react_with(model: Any, hook: Any) -> Any:
    from langgraph.prebuilt import create_react_agent

    return create_react_agent(model, [], pre_model_hook=hook)


def test_the_pre_model_hook_extracts_with_the_model_it_is_given(store: MemoryStore) -> None:
    model = scripted(porto())
    hook = create_pre_model_hook(store, model=model, context_window=WINDOW, extract_every=1)
    react_with(model, hook).invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1 and len(model_events(store)) == 1


@pytest.mark.parametrize(
    ("make", "options"),
    [
        (scripted, {"extractor": "rules"}),
        (unstructured, {}),
        (scripted, {"model": None}),  # not given the model: the hook cannot see it
    ],
    ids=["rules", "no-structured-output", "no-model"],
)
def test_the_pre_model_hook_runs_the_rules_when_opted_out_or_the_model_cannot(
    store: MemoryStore, make: Callable[[], Any], options: dict[str, Any]
) -> None:
    model = make()
    options = {"model": model, **options}
    hook = create_pre_model_hook(store, context_window=WINDOW, extract_every=1, **options)
    react_with(model, hook).invoke({"messages": [HumanMessage(SAID)]}, CONFIG)
    assert facts(store)["home_city"] == "lives in Porto"
    assert model_events(store) == []
    assert not isinstance(model, ScriptedModel) or model.calls == 0


def test_the_pre_model_hook_takes_a_model_name_as_the_memorys_size_only(
    store: MemoryStore,
) -> None:
    hook = create_pre_model_hook(store, model="gpt-4o-mini")
    hook({"messages": [HumanMessage(SAID, id="1")]}, CONFIG)
    memory = store.memory("ana", "t1")
    assert memory.budget.context_window == 128_000 and facts(store)["home_city"]


def test_the_pre_model_hook_hands_its_model_to_a_resolvers_memories(store: MemoryStore) -> None:
    model = scripted(porto())
    resolver = MemoryResolver(store, context_window=WINDOW, extract_every=1)
    react_with(model, create_pre_model_hook(resolver, model=model)).invoke(
        {"messages": [HumanMessage(SAID)]}, CONFIG
    )
    assert eventually(lambda: facts(store).get("home_city") == "lives in Porto")
    assert model.calls == 1
