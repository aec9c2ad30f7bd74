"""The prebuilt memory graph: ``build_memory_graph(model, store=..., checkpointer=...)``.

One call builds and compiles::

    load_memory -> (recall?) -> recall -> answer -> update_memory

Each run names its user and thread in ``config["configurable"]``. The graph
state carries what the memory did for the turn: ``gate`` (the recall decision
and its reason), ``recalled``, ``token_usage`` (tokens per section of the
prompt the model got), ``summary`` and ``core_memory``. Messages the memory
has paged out to the archive are removed from the graph state, so the
checkpoint stays small as the conversation grows.

Runs offline in a few seconds: ``python examples/prebuilt_graph.py``.
"""

from __future__ import annotations

import tempfile

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.store import MemoryStore

TURNS = [
    "Hi, I'm Ana. I'm allergic to peanuts.",
    "I live in Porto and I work as a nurse.",
    *(f"Day {d} of my Lisbon trip: which museum opens early on day {d}?" for d in range(1, 13)),
    "What's the capital of Australia?",
    "Can you suggest a dessert for tonight?",
]


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        # DeterministicFakeEmbedding keeps the example offline; use the default
        # embedder (embeddings=None) or any LangChain Embeddings in a real app.
        store = MemoryStore(data_dir, embeddings=DeterministicFakeEmbedding(size=32))
        model = GenericFakeChatModel(
            messages=(AIMessage(f"Reply #{i}: happy to help with that.") for i in range(100))
        )
        graph = build_memory_graph(
            model,
            store=store,
            checkpointer=InMemorySaver(),
            context_window=1024,  # small, so the buffer compresses within a few turns
            system_prompt="You are a concise travel assistant.",
        )
        # LangGraph thread ids are global: give each user their own.
        config: RunnableConfig = {"configurable": {"user_id": "ana", "thread_id": "ana:lisbon"}}
        for i, text in enumerate(TURNS):
            out = graph.invoke({"messages": [HumanMessage(text)]}, config)
            gate = out["gate"]
            decision = "recall" if gate["recall"] else "no recall"
            usage = out["token_usage"]
            print(
                f"turn {i:2}: gate={decision:<9} prompt={sum(usage.values()):4} tokens "
                f"{usage} state messages={len(out['messages'])}"
            )
        print(f"last gate reason: {gate['reason']}")
        print(f"recalled for the last turn: {len(out['recalled'])} record(s)")
        print(f"running summary: {out['summary'].splitlines()[0] if out['summary'] else ''!r}")
        print(f"core memory: {out['core_memory'].splitlines()[1:]}")
        memory = store.memory("ana", "ana:lisbon", context_window=1024)
        print(
            f"buffer keeps turns {[t.index for t in memory.state.turns]}; "
            f"older turns are in the archive ({store.archive.count('ana')} records)"
        )
        store.close()
    print("prebuilt_graph example OK")


if __name__ == "__main__":
    main()
