"""Budgets are exact in every adapter: 0 prompts over budget over long sessions.

Each adapter (the prebuilt graph, the ``create_agent`` middleware, the
``create_react_agent`` pre-model hook, ``RunnableWithMessageHistory`` with the
chat history, the classic memory in an ``LLMChain``) drives a fake chat model
that records what it is really sent - the messages *and* the tool schemas
bound to it - and every one of those prompts is counted with the exact
tokenizer against the memory's input budget. Hypothesis draws the sessions:
message and reply sizes, facts, tool calls with long results.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.integrations.agents import (
    TieredMemoryMiddleware,
    create_pre_model_hook,
)
from langchain_tiered_memory.integrations.classic import TieredConversationMemory
from langchain_tiered_memory.integrations.history import tiered_history_factory
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import MemoryStore

SYSTEM = "You are a concise travel assistant. Answer in one or two sentences."
COUNTER = OpenAITokenCounter("gpt-4o-mini")
WORDS = ("tram", "river", "tiles", "museum", "harbour", "market", "bridge", "garden", "tower")
FACTS = (
    "I'm allergic to peanuts.",
    "I live in Lisbon.",
    "My daughter is called Inês.",
    "I prefer window seats.",
    "I work as a nurse.",
    "",
)


class CapturingModel(BaseChatModel):
    """Replies from a script; records every prompt it is sent, with its bound tools."""

    script: list[AIMessage] = Field(default_factory=list)
    sent: list[tuple[list[BaseMessage], list[dict[str, Any]]]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "capturing"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.sent.append((list(messages), list(kwargs.get("tools") or [])))
        reply = self.script.pop(0) if self.script else AIMessage("(script ended)")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def sent_tokens(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> int:
    """What a prompt really costs: the messages plus the tool schemas sent with them."""
    return COUNTER.count_messages(messages) + sum(COUNTER.count_text(json.dumps(t)) for t in tools)


def over_budget(model: CapturingModel, window: int) -> list[int]:
    budget = TokenBudget(context_window=window).input_budget
    return [n for n in (sent_tokens(m, t) for m, t in model.sent) if n > budget]


def words(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


# A session: per turn, the user's message size (and maybe a fact), the reply size,
# and maybe a tool call whose result has the drawn size.
TURN = st.fixed_dictionaries(
    {
        "user": st.integers(1, 60),
        "fact": st.sampled_from(FACTS),
        "reply": st.integers(1, 160),
        "tool": st.one_of(st.none(), st.integers(1, 500)),
    }
)
SESSION = st.lists(TURN, min_size=20, max_size=32)
PROPERTY = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def user_text(i: int, turn: dict[str, Any]) -> str:
    return f"Turn {i}: {turn['fact']} {words(turn['user'], i)}".replace("  ", " ")


def script_for(session: list[dict[str, Any]], *, tools: bool) -> list[AIMessage]:
    script: list[AIMessage] = []
    for i, turn in enumerate(session):
        if tools and turn["tool"] is not None:
            call = {"name": "lookup", "args": {"query": f"topic {i}"}, "id": f"call-{i}"}
            script.append(AIMessage("", tool_calls=[call]))
        script.append(AIMessage(f"Reply {i}: {words(turn['reply'], i + 3)}"))
    return script


def lookup_tool(session: list[dict[str, Any]]) -> Any:
    results = {f"topic {i}": words(t["tool"], i + 5) for i, t in enumerate(session) if t["tool"]}

    @tool
    def lookup(query: str) -> str:
        """Look up travel facts about a topic in the guidebook (long results)."""
        return results.get(query, "nothing found")

    return lookup


def store_in(folder: str) -> MemoryStore:
    return MemoryStore(Path(folder) / "data", embeddings=DeterministicFakeEmbedding(size=16))


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"user_id": "ana", "thread_id": thread}}


# -- the prebuilt graph -----------------------------------------------------------------


def run_graph(session: list[dict[str, Any]], window: int) -> CapturingModel:
    model = CapturingModel(script=script_for(session, tools=True))
    with tempfile.TemporaryDirectory() as folder, store_in(folder) as store:
        graph = build_memory_graph(
            model,
            store=store,
            tools=[lookup_tool(session)],
            checkpointer=InMemorySaver(),
            context_window=window,
            system_prompt=SYSTEM,
        )
        for i, turn in enumerate(session):
            graph.invoke({"messages": [HumanMessage(user_text(i, turn))]}, config())
    return model


@pytest.mark.slow
@PROPERTY
@given(session=SESSION)
def test_graph_never_sends_a_prompt_over_budget(session) -> None:
    model = run_graph(session, 2048)
    assert len(model.sent) >= len(session)
    assert over_budget(model, 2048) == []


# -- create_agent + TieredMemoryMiddleware ------------------------------------------------


def run_middleware(session: list[dict[str, Any]], window: int) -> CapturingModel:
    from langchain.agents import create_agent

    model = CapturingModel(script=script_for(session, tools=True))
    with tempfile.TemporaryDirectory() as folder, store_in(folder) as store:
        agent = create_agent(
            model,
            tools=[lookup_tool(session)],
            system_prompt=SYSTEM,
            checkpointer=InMemorySaver(),
            middleware=[TieredMemoryMiddleware(store, context_window=window)],
        )
        for i, turn in enumerate(session):
            agent.invoke({"messages": [HumanMessage(user_text(i, turn))]}, config())
    return model


@pytest.mark.slow
@PROPERTY
@given(session=SESSION)
def test_middleware_never_sends_a_prompt_over_budget(session) -> None:
    model = run_middleware(session, 2048)
    assert all(tools for _, tools in model.sent)  # the schemas really are sent
    assert over_budget(model, 2048) == []


# -- create_react_agent + create_pre_model_hook -----------------------------------------


@tool
def book_trip(city: str, start: str, end: str, travellers: int, budget_eur: int) -> str:
    """Book a trip for the user: flights, hotel and transfers in one go.

    Use it only when the user has confirmed the city, the dates, how many
    people travel and the budget. Dates are ISO dates (YYYY-MM-DD); the
    budget is the total in euros for everybody, including taxes and fees.
    The booking is provisional for 24 hours: tell the user they must confirm
    it in the app, that cancellation is free until then, and that a hotel
    with a restaurant is preferred when the user mentioned food allergies.
    Never book for dates in the past, never book more than 9 travellers in
    one call, and ask again when the city is ambiguous (Porto, Portugal or
    Porto Alegre, Brazil; Paris, France or Paris, Texas).
    """
    return f"Provisional booking for {travellers} in {city}, {start} to {end}."


def run_react(
    session: list[dict[str, Any]],
    window: int,
    *,
    count_tools: bool,
    extra_tools: Sequence[Any] = (),
    **memory_options: Any,
) -> CapturingModel:
    from langgraph.prebuilt import create_react_agent

    model = CapturingModel(script=script_for(session, tools=True))
    tools = [lookup_tool(session), *extra_tools]
    with tempfile.TemporaryDirectory() as folder, store_in(folder) as store:
        hook = create_pre_model_hook(
            store,
            tools=tools if count_tools else (),
            context_window=window,
            system_prompt=SYSTEM,
            **memory_options,
        )
        agent = create_react_agent(model, tools, pre_model_hook=hook, checkpointer=InMemorySaver())
        for i, turn in enumerate(session):
            agent.invoke({"messages": [HumanMessage(user_text(i, turn))]}, config())
    return model


@pytest.mark.slow
@PROPERTY
@given(session=SESSION)
def test_pre_model_hook_never_sends_a_prompt_over_budget(session) -> None:
    model = run_react(session, 2048, count_tools=True)
    assert over_budget(model, 2048) == []


@pytest.mark.slow
def test_pre_model_hook_counts_the_bound_tool_schemas() -> None:
    # the case: 30 turns with two tools in a 2,048-token window (recall on, so
    # every section is in use); the big schema needs a larger system section
    session = [{"user": 40, "fact": FACTS[i % 5], "reply": 150, "tool": 300} for i in range(30)]
    room = {"gate": "always", "ratios": {"system": 0.25, "buffer": 0.35}}
    fixed = run_react(session, 2048, count_tools=True, extra_tools=[book_trip], **room)
    assert over_budget(fixed, 2048) == []
    blind = run_react(session, 2048, count_tools=False, extra_tools=[book_trip], **room)
    assert len(over_budget(blind, 2048)) >= len(blind.sent) // 3  # what the hook did before
    # and a schema too big for its section is a clear error, not an overflow
    with pytest.raises(ValueError, match="tool schemas"):
        run_react(session[:1], 2048, count_tools=True, extra_tools=[book_trip])


# -- RunnableWithMessageHistory + the chat history ----------------------------------------


def run_history(
    session: list[dict[str, Any]], window: int, **factory_options: Any
) -> CapturingModel:
    model = CapturingModel(script=script_for(session, tools=False))
    prompt = ChatPromptTemplate(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    factory = tiered_history_factory(context_window=window, system_prompt=SYSTEM, **factory_options)
    chain = RunnableWithMessageHistory(
        prompt | model, factory, input_messages_key="input", history_messages_key="history"
    )
    for i, turn in enumerate(session):
        chain.invoke({"input": user_text(i, turn)}, config={"configurable": {"session_id": "s1"}})
    return model


# user messages up to the automatic reserve's floor (87 tokens in a 1,024 window)
HISTORY_TURN = st.fixed_dictionaries(
    {
        "user": st.integers(1, 55),
        "fact": st.sampled_from(FACTS),
        "reply": st.one_of(st.integers(1, 200), st.integers(400, 900)),
        "tool": st.none(),
    }
)


@pytest.mark.slow
@PROPERTY
@given(session=st.lists(HISTORY_TURN, min_size=20, max_size=36))
def test_chat_history_never_sends_a_prompt_over_budget(session) -> None:
    model = run_history(session, 1024)
    assert len(model.sent) == len(session)
    assert over_budget(model, 1024) == []


def test_chat_history_leaves_room_for_the_new_input_by_default(caplog) -> None:
    # the case: 31 prompts, a 39-token input, a 1,024 window
    # (with long replies now and then, the view fills the whole input budget)
    session = [
        {"user": 24, "fact": FACTS[i % 5], "reply": 600 if i % 2 else 40, "tool": None}
        for i in range(31)
    ]
    costs = [
        COUNTER.count_messages([HumanMessage(user_text(i, t))]) - COUNTER.count_messages([])
        for i, t in enumerate(session)
    ]
    assert 35 <= max(costs) <= 39
    assert over_budget(run_history(session, 1024), 1024) == []
    # without the reserve (what the default was) prompts go over
    assert len(over_budget(run_history(session, 1024, reserve_tokens=0), 1024)) >= 7
    # an input longer than the reserve is reported
    long_input = [{"user": 300, "fact": "", "reply": 5, "tool": None} for _ in range(3)]
    with caplog.at_level("WARNING", logger="langchain_tiered_memory.integrations.history"):
        run_history(long_input, 1024)
    assert "reserve_tokens=" in caplog.text


# -- the classic memory in an LLMChain -----------------------------------------------------


@PROPERTY
@given(session=st.lists(TURN, min_size=20, max_size=32))
def test_classic_memory_never_sends_a_prompt_over_budget(session) -> None:
    from langchain_classic.chains import LLMChain

    model = CapturingModel(script=script_for(session, tools=False))
    prompt = ChatPromptTemplate(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    memory = TieredConversationMemory(
        return_messages=True, context_window=1024, system_prompt=SYSTEM
    )
    chain = LLMChain(llm=model, prompt=prompt, memory=memory)
    for i, turn in enumerate(session):
        chain.invoke({"input": user_text(i, turn)})
    assert len(model.sent) == len(session)
    assert over_budget(model, 1024) == []


@pytest.mark.parametrize("window", [1024, 4096])
def test_graph_budget_holds_in_other_windows(window) -> None:
    session = [
        {"user": 50, "fact": FACTS[i % len(FACTS)], "reply": 150, "tool": 450 if i % 3 else None}
        for i in range(24)
    ]
    assert over_budget(run_graph(session, window), window) == []
