"""Your own LangGraph graph from the memory nodes, with the recall gate as an edge.

Instead of the prebuilt ``build_memory_graph``, this wires a ``StateGraph``
by hand: the ``MemoryNodes`` adapter supplies ``load_memory``, ``recall`` and
``update_memory``; the ``answer`` node is written here from the pure
``answer(memory, model, messages, recalled)`` function (the place to add your
own prompt logic); ``should_recall`` is the conditional edge that skips the
archive search when the gate says the message needs no memories::

    START -> load_memory -(should_recall)-> recall -> answer -> update_memory -> END
                         \\---------------------------^

Runs offline in a few seconds: ``python examples/langgraph_nodes.py``.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langchain_tiered_memory.budget.context import RecalledMemory
from langchain_tiered_memory.integrations.langgraph import MemoryNodes, MemoryState, answer
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.recall.gate import should_recall
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionTriggers


def remember_last_month(store: MemoryStore) -> None:
    """An earlier conversation of ana's, already paged out to the archive."""
    # Tiny ratios so this short chat is compressed into the archive right away.
    triggers = CompressionTriggers(summary_ratio=0.01, target_ratio=0.02)
    memory = store.memory("ana", "ana:last-month", context_window=4096, triggers=triggers)
    for user, reply in [
        ("I'm allergic to peanuts, badly.", "Noted - no peanuts, ever."),
        ("My flight to Lisbon is on 14 April.", "Got it: Lisbon, 14 April."),
        ("My sister Marta lives in Porto.", "Nice, Porto is close to Lisbon."),
        ("Thanks, that's all for today.", "You're welcome!"),  # newest turn stays buffered
    ]:
        memory.add_messages([HumanMessage(user), AIMessage(reply)])
    memory.compress(force=True)


def to_recalled(data: dict[str, Any]) -> RecalledMemory:
    """A recalled record from its dict form in graph state."""
    values = dict(data)
    if values.get("created_at"):
        values["created_at"] = datetime.fromisoformat(values["created_at"])
    return RecalledMemory(**values)


def build_graph(resolver: MemoryResolver, model: GenericFakeChatModel) -> Any:
    """Wire the nodes by hand (what ``build_memory_graph`` does, minus tools)."""
    nodes = MemoryNodes(resolver)

    def answer_node(state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        # Your own node: find this run's memory and call the pure function with
        # the records the recall node put in state (quoted as data in the prompt).
        memory = resolver.for_config(config)
        recalled = [to_recalled(r) for r in state.get("recalled") or []]
        reply, context = answer(memory, model, state["messages"], recalled)
        return {"messages": [reply], "token_usage": dict(context.usage)}

    builder = StateGraph(MemoryState)
    builder.add_node("load_memory", nodes.load_memory)
    builder.add_node("recall", nodes.recall)
    builder.add_node("answer", answer_node)
    builder.add_node("update_memory", nodes.update_memory)
    builder.add_edge(START, "load_memory")
    builder.add_conditional_edges(
        "load_memory", should_recall, {"recall": "recall", "answer": "answer"}
    )
    builder.add_edge("recall", "answer")
    builder.add_edge("answer", "update_memory")
    builder.add_edge("update_memory", END)
    return builder.compile(checkpointer=InMemorySaver())


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        # DeterministicFakeEmbedding keeps the example offline; use the default
        # embedder (embeddings=None) or any LangChain Embeddings in a real app.
        store = MemoryStore(data_dir, embeddings=DeterministicFakeEmbedding(size=32))
        remember_last_month(store)
        resolver = MemoryResolver(
            store, context_window=4096, system_prompt="You are a travel assistant."
        )
        model = GenericFakeChatModel(
            messages=iter(
                [
                    AIMessage("17 x 23 = 391."),
                    AIMessage("Rice crackers and fruit - nothing with peanuts."),
                    AIMessage("Your flight to Lisbon is on 14 April."),
                ]
            )
        )
        graph = build_graph(resolver, model)
        # LangGraph thread ids are global: prefix them with the user.
        config: RunnableConfig = {"configurable": {"user_id": "ana", "thread_id": "ana:today"}}
        for text in [
            "What's 17 * 23?",
            "Can you suggest a snack for my flight?",
            "Remind me when my flight to Lisbon is.",
        ]:
            out = graph.invoke({"messages": [HumanMessage(text)]}, config)
            gate = out["gate"]
            print(f"user: {text}")
            print(f"  gate: {'recall' if gate['recall'] else 'no recall'} - {gate['reason']}")
            for item in out["recalled"][:3]:
                print(f"  recalled ({item['source']}): {item['text'][:60]!r}")
            print(f"  tokens per section: {out['token_usage']}")
            print(f"  assistant: {out['messages'][-1].content}")
        memory = resolver.get("ana", "ana:today")
        print(f"core memory: {memory.core.render().splitlines()[1:]}")
        store.close()
    print("langgraph_nodes example OK")


if __name__ == "__main__":
    main()
