from __future__ import annotations

import warnings

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.integrations.agents import (
    TieredMemoryMiddleware,
    create_pre_model_hook,
)
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore


class RecordingModel(GenericFakeChatModel):
    """Fake chat model that records its prompts and accepts tools."""

    prompts: list = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self

    def _generate(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@pytest.fixture
def store(tmp_path):
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as s:
        yield s


def cfg(user: str, thread: str) -> dict:
    return {"configurable": {"user_id": user, "thread_id": thread}}


SYSTEM = "You are a concise assistant."


def test_middleware_keeps_every_prompt_in_budget_and_pins_the_system_prompt(store) -> None:
    model = RecordingModel(messages=iter([AIMessage(f"reply {i}") for i in range(80)]), prompts=[])
    agent = create_agent(
        model,
        system_prompt=SYSTEM,
        checkpointer=InMemorySaver(),
        middleware=[TieredMemoryMiddleware(store, context_window=1024, gate="never")],
    )
    agent.invoke({"messages": [HumanMessage("I'm allergic to peanuts.")]}, cfg("ana", "a1"))
    for i in range(79):
        agent.invoke(
            {"messages": [HumanMessage(f"Message {i}: tell me about topic {i}.")]}, cfg("ana", "a1")
        )
    memory = store.memory("ana", "a1", context_window=1024)
    for prompt in model.prompts:
        assert isinstance(prompt[0], SystemMessage)
        assert prompt[0].content.startswith(SYSTEM)
        assert memory.counter.count_messages(prompt) <= memory.budget.input_budget
    last = model.prompts[-1]
    assert "allergic to peanuts" in last[0].content  # core memory survives compression
    assert last[-1].content.startswith("Message 78")
    state = agent.get_state(cfg("ana", "a1")).values
    assert len(state["messages"]) < 160  # archived turns left the checkpoint
    assert state["memory_user_id"] == "ana"


def test_middleware_refuses_another_users_thread(store) -> None:
    model = RecordingModel(messages=iter([AIMessage("x"), AIMessage("y")]), prompts=[])
    agent = create_agent(
        model,
        checkpointer=InMemorySaver(),
        middleware=[TieredMemoryMiddleware(store, context_window=4096)],
    )
    agent.invoke({"messages": [HumanMessage("I'm allergic to peanuts.")]}, cfg("ana", "shared"))
    with pytest.raises(ValueError, match="belongs to another user"):
        agent.invoke({"messages": [HumanMessage("hello")]}, cfg("bob", "shared"))
    assert store.memory("bob", "shared").core.active() == []


async def test_middleware_async(store) -> None:
    model = RecordingModel(messages=iter([AIMessage("async reply")]), prompts=[])
    agent = create_agent(model, middleware=[TieredMemoryMiddleware(store, context_window=4096)])
    out = await agent.ainvoke({"messages": [HumanMessage("I live in Porto.")]}, cfg("ana", "x"))
    assert out["messages"][-1].content == "async reply"
    assert store.memory("ana", "x").core.get("home_city").content == "lives in Porto"


def test_pre_model_hook_with_create_react_agent(store) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    model = RecordingModel(messages=iter([AIMessage(f"r{i}") for i in range(40)]), prompts=[])
    agent = create_react_agent(
        model,
        tools=[],
        checkpointer=InMemorySaver(),
        pre_model_hook=create_pre_model_hook(store, context_window=1024, gate="never"),
    )
    for i in range(40):
        agent.invoke(
            {"messages": [HumanMessage(f"Fact {i}: my locker code is {1000 + i}.")]},
            cfg("ana", "r1"),
        )
    memory = store.memory("ana", "r1", context_window=1024)
    assert all(
        memory.counter.count_messages(p) <= memory.budget.input_budget for p in model.prompts
    )
    assert model.prompts[-1][-1].content.startswith("Fact 39")
    assert store.archive.records(RecordFilter("ana", kinds=["turn"]))
