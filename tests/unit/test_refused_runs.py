"""Nothing from a refused run is ever adopted, by the graph or by the agent middleware.

LangGraph saves a run's input in the thread before any node runs. A run the
identity rule refuses - no user id, a user id that is not a string, config
and runtime context naming different users, another user than the one who
owns the thread - must not leave that input where the next run on the same
``thread_id`` syncs it into its user's memory: the refused "I'm allergic to
kiwis." must never become anyone's core memory, and a thread one user
already used cannot feed another user's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.identity import IdentityError
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import MemoryStore

KIWI = "I'm allergic to kiwis."

Run = Callable[..., Any]


def fake() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(f"ok {i}") for i in range(40)]))


@pytest.fixture
def store(tmp_path: Path):
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as s:
        yield s


def make_app(store: MemoryStore, kind: str) -> tuple[Any, InMemorySaver]:
    saver = InMemorySaver()
    if kind == "graph":
        return build_memory_graph(
            fake(), store=store, checkpointer=saver, context_window=4096
        ), saver
    middleware = TieredMemoryMiddleware(store, checkpointer=saver, context_window=4096)
    return create_agent(fake(), checkpointer=saver, middleware=[middleware]), saver


def said(store: MemoryStore, user: str) -> list[str]:
    """Everything ``user``'s memory holds: their messages on every thread, their facts."""
    texts = [str(m.content) for t in store.threads(user) for m in store.memory(user, t).messages]
    return texts + [f.content for f in store.core(user).active()]


def in_state(saver: InMemorySaver, thread: str) -> list[str]:
    latest = saver.get_tuple({"configurable": {"thread_id": thread}})
    assert latest is not None
    return [str(m.content) for m in latest.checkpoint["channel_values"].get("messages", [])]


REFUSED: dict[str, tuple[dict[str, Any], Any, type[Exception]]] = {
    "no user id": ({"thread_id": "t9"}, None, IdentityError),
    "an empty user id": ({"thread_id": "t9", "user_id": " "}, None, IdentityError),
    "a user id that is not a string": ({"thread_id": "t9", "user_id": 7}, None, TypeError),
    "config and context disagree": (
        {"thread_id": "t9", "user_id": "ana"},
        {"user_id": "eve"},
        IdentityError,
    ),
}


@pytest.mark.parametrize("kind", ["graph", "middleware"])
@pytest.mark.parametrize("case", REFUSED)
def test_a_refused_run_leaves_nothing_the_next_run_syncs(store, kind, case) -> None:
    app, saver = make_app(store, kind)
    configurable, context, error = REFUSED[case]
    with pytest.raises(error):
        app.invoke(
            {"messages": [HumanMessage(KIWI)]}, {"configurable": configurable}, context=context
        )
    assert KIWI not in in_state(saver, "t9")  # taken back out of the thread
    assert store.users() == []
    config = {"configurable": {"user_id": "ana", "thread_id": "t9"}}
    app.invoke({"messages": [HumanMessage("Hi, I'm Ana.")]}, config)
    assert store.core("ana").get("allergy:kiwis") is None
    assert not [t for t in said(store, "ana") if "kiwi" in t]
    assert "Hi, I'm Ana." in said(store, "ana")


@pytest.mark.parametrize("kind", ["graph", "middleware"])
def test_a_thread_one_user_used_feeds_no_other_users_memory(store, kind) -> None:
    app, saver = make_app(store, kind)
    bob = {"configurable": {"user_id": "bob", "thread_id": "b1"}}
    app.invoke({"messages": [HumanMessage("I'm Bob, I like jazz.")]}, bob)
    # ana on bob's thread: refused, and her input does not stay for bob's next run
    with pytest.raises(ValueError, match="belongs to another user"):
        app.invoke(
            {"messages": [HumanMessage("I'm allergic to mangoes.")]},
            {"configurable": {"user_id": "ana", "thread_id": "b1"}},
        )
    # a run naming nobody on bob's thread: refused, and nothing of it stays either
    with pytest.raises(IdentityError):
        app.invoke({"messages": [HumanMessage(KIWI)]}, {"configurable": {"thread_id": "b1"}})
    assert not [t for t in in_state(saver, "b1") if "mango" in t or "kiwi" in t]
    app.invoke({"messages": [HumanMessage("Hello again.")]}, bob)
    assert [t for t in said(store, "bob") if "mango" in t or "kiwi" in t] == []
    assert store.core("bob").get("allergy:mangoes") is None
    assert "I'm Bob, I like jazz." in said(store, "bob")
    assert said(store, "ana") == []  # nor did bob's thread feed ana's memory
