"""A forget is never undone: through the API, the graph, the agent middleware and ``chat``.

Each test opens a view of the user, forgets the user from elsewhere (another
view, the store, another thread), then keeps using the open view - whose
conversation state (a LangGraph checkpoint, a chat session) still holds the
old messages - and checks that nothing forgotten comes back, in the prompt
or in the files, and that what is said after the forget is kept.
"""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.cli.chat import ChatSession
from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import MemoryStore

SECRET = "zebrasecret"


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that records every prompt it is sent."""

    prompts: list = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self

    def _generate(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model() -> RecordingModel:
    return RecordingModel(messages=iter([AIMessage(f"reply {i}") for i in range(50)]), prompts=[])


def make_store(path: Path) -> MemoryStore:
    return MemoryStore(path, embeddings=DeterministicFakeEmbedding(size=16))


def on_disk(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())


def cfg(user: str, thread: str) -> dict:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def test_the_api_never_writes_a_forgotten_buffer_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = make_store(data)
    chat = store.memory("ana", "chat", context_window=1024)
    other = store.memory("ana", "other", context_window=1024)
    chat.add_messages([HumanMessage(f"I'm allergic to {SECRET}."), AIMessage("Noted.")])
    other.add_messages([HumanMessage("Delete everything you know about me.")])
    chat.add_messages([HumanMessage("My name is Ana."), AIMessage("Hi Ana.")])  # the open view
    assert SECRET not in repr(chat.build_context().messages)
    store.close()
    assert SECRET.encode() not in on_disk(data)
    with make_store(data) as again:
        assert again.core("ana").get("name") is not None  # said after the forget: kept
        assert not any(f.subject.startswith("allergy") for f in again.core("ana").history())
        assert [m.content for m in again.memory("ana", "chat").messages][-2:] == [
            "My name is Ana.",
            "Hi Ana.",
        ]


def test_the_graph_does_not_resync_a_forgotten_checkpoint(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = make_store(data)
    llm = model()
    graph = build_memory_graph(llm, store=store, checkpointer=InMemorySaver(), context_window=2048)
    graph.invoke({"messages": [HumanMessage(f"My dog is called {SECRET}.")]}, cfg("ana", "t1"))
    store.forget_user("ana")  # from elsewhere: the checkpoint still holds the thread
    graph.invoke({"messages": [HumanMessage("What's my name? I'm Ana.")]}, cfg("ana", "t1"))
    assert SECRET not in repr(llm.prompts[-1])
    assert SECRET not in repr(store.export_user("ana"))
    assert store.memory("ana", "t1").messages[0].content == "What's my name? I'm Ana."
    store.close()
    assert SECRET.encode() not in on_disk(data)


def test_the_middleware_does_not_resync_a_forgotten_checkpoint(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = make_store(data)
    llm = model()
    agent = create_agent(
        llm,
        checkpointer=InMemorySaver(),
        middleware=[TieredMemoryMiddleware(store, context_window=2048)],
    )
    agent.invoke({"messages": [HumanMessage(f"I'm allergic to {SECRET}.")]}, cfg("ana", "a1"))
    assert store.core("ana").get(f"allergy:{SECRET}") is not None
    store.forget_user("ana")
    agent.invoke({"messages": [HumanMessage("I live in Lisbon.")]}, cfg("ana", "a1"))
    assert SECRET not in repr(llm.prompts[-1])
    assert store.core("ana").active()[0].subject == "home_city"  # said after the forget: kept
    assert len(store.core("ana").active()) == 1
    assert SECRET not in repr(store.export_user("ana"))
    store.close()
    assert SECRET.encode() not in on_disk(data)


def test_chat_forget_all_is_honoured_by_another_open_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = make_store(data)
    first = ChatSession(store.memory("ana", "chat", context_window=2048), model=None)
    second = ChatSession(store.memory("ana", "phone", context_window=2048), model=None)
    first.handle(f"My sister is called {SECRET}.")
    second.handle("I'm vegetarian.")
    assert "forgot" in first.handle("/forget all").lower()
    second.handle("I live in Porto.")  # the other session goes on
    assert SECRET not in second.handle("/core") + repr(second.memory.build_context().messages)
    assert second.memory.core.get("home_city") is not None
    assert second.memory.core.get("diet") is None
    store.close()
    assert SECRET.encode() not in on_disk(data)
    with make_store(data) as again:
        assert again.core("ana").get("home_city") is not None
