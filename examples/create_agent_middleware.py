"""``langchain.agents.create_agent`` with ``TieredMemoryMiddleware`` and ``retrieve_memory``.

The middleware gives the model a budgeted context on every call (pinned
system prompt, core memory, running summary, recalled records, recent whole
turns) instead of the whole history, and stores the agent's messages in the
user's tiered memory. The ``retrieve_memory`` tool lets the model search the
archive itself when it decides to (ReAct / MemGPT style).

Middleware and tool share one ``MemoryResolver``, so both work on the same
memory object per (user, thread). The user and thread come from
``config["configurable"]`` (or the runtime ``context``), never from the model.

Runs offline: the chat model is a scripted fake that first calls
``retrieve_memory`` and then answers. ``python examples/create_agent_middleware.py``
"""

from __future__ import annotations

import tempfile
from typing import Any

from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.resolver import MemoryResolver
from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionTriggers


class ScriptedToolModel(GenericFakeChatModel):
    """A fake chat model that replays scripted messages (tool calls included)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


def remember_last_month(store: MemoryStore) -> None:
    """An earlier conversation of ana's, already paged out to the archive."""
    # Tiny ratios so this short chat is compressed into the archive right away.
    triggers = CompressionTriggers(summary_ratio=0.01, target_ratio=0.02)
    memory = store.memory("ana", "ana:last-month", context_window=4096, triggers=triggers)
    for user, reply in [
        ("I'm allergic to peanuts, badly.", "Noted - no peanuts, ever."),
        ("My flight to Lisbon is on 14 April.", "Got it: Lisbon, 14 April."),
        ("Thanks, that's all for today.", "You're welcome!"),  # newest turn stays buffered
    ]:
        memory.add_messages([HumanMessage(user), AIMessage(reply)])
    memory.compress(force=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        # DeterministicFakeEmbedding keeps the example offline; use the default
        # embedder (embeddings=None) or any LangChain Embeddings in a real app.
        store = MemoryStore(data_dir, embeddings=DeterministicFakeEmbedding(size=32))
        remember_last_month(store)

        resolver = MemoryResolver(store, context_window=4096)
        model = ScriptedToolModel(
            messages=iter(
                [
                    AIMessage(
                        "",
                        tool_calls=[
                            {
                                "name": "retrieve_memory",
                                "args": {"query": "peanuts allergy"},
                                "id": "call_1",
                            }
                        ],
                    ),
                    AIMessage("You are badly allergic to peanuts, so skip the satay."),
                ]
            )
        )
        agent = create_agent(
            model,
            tools=[create_retrieve_memory_tool(resolver)],
            middleware=[TieredMemoryMiddleware(resolver)],
            system_prompt="You are a travel assistant.",
        )
        # LangGraph thread ids are global: prefix them with the user.
        config: RunnableConfig = {"configurable": {"user_id": "ana", "thread_id": "ana:today"}}
        result = agent.invoke(
            {"messages": [HumanMessage("Which Thai dishes should I avoid in Lisbon?")]}, config
        )
        for message in result["messages"]:
            if isinstance(message, ToolMessage):
                print(f"--- tool result ({message.name}) ---")
                print(message.content)
        print("--- final answer ---")
        print(result["messages"][-1].content)

        memory = resolver.get("ana", "ana:today")
        print("--- memory ---")
        print(f"gate before the last model call: {memory.last_gate.reason}")
        recalls = store.audit.events("ana", kinds=["recall"])
        print(f"audit: {len(recalls)} recall event(s) for ana (gate-driven and by the tool)")
        print(f"pinned system prompt: {memory.system_prompt!r}")
        print(f"buffered messages: {[m.type for m in memory.messages]}")
        context = memory.build_context()  # what the next model call would get
        print(f"next prompt: {context.total_tokens} of {context.input_budget} tokens")
        print(f"  per section: {context.usage}")
        store.close()
    print("create_agent_middleware example OK")


if __name__ == "__main__":
    main()
