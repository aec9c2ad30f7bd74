"""A ReAct agent (``langchain.agents.create_agent``) that looks things up in its memory.

The agent gets one tool, ``retrieve_memory``, over a durable
:class:`~langchain_tiered_memory.store.MemoryStore`. One tool instance serves
every user: each run says whose memory to search in
``config["configurable"]["user_id"]``.

Runs offline: the chat model is a scripted fake that first calls the tool and
then answers. Swap in a real model (e.g. ``ChatOpenAI(model="gpt-4o-mini")``)
and it decides by itself when to call the tool.

    python examples/react_agent_tool.py
"""

from __future__ import annotations

import tempfile
from typing import Any

from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.buffer import CompressionTriggers


class ScriptedToolModel(GenericFakeChatModel):
    """A fake chat model that replays scripted messages (tool calls included)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


def remember(store: MemoryStore, user_id: str, turns: list[tuple[str, str]]) -> None:
    """Replay an old conversation and page it out to the archive."""
    # Tiny ratios so this short chat is compressed into the archive right away.
    triggers = CompressionTriggers(summary_ratio=0.01, target_ratio=0.02)
    memory = store.memory(user_id, "last-month", context_window=4096, triggers=triggers)
    for user, reply in turns:
        memory.add_messages([HumanMessage(user), AIMessage(reply)])
    memory.compress(force=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        # DeterministicFakeEmbedding keeps the example offline; use the default
        # embedder (embeddings=None) or any LangChain Embeddings in a real app.
        store = MemoryStore(data_dir, embeddings=DeterministicFakeEmbedding(size=16))
        remember(
            store,
            "ana",
            [
                ("I'm allergic to peanuts, badly.", "Noted - no peanuts, ever."),
                ("My flight to Lisbon is on 14 April.", "Got it: Lisbon, 14 April."),
                ("Any idea for a quick lunch?", "A tomato and mozzarella salad."),
            ],
        )
        remember(
            store,
            "bob",
            [
                ("I'm allergic to shellfish.", "Noted - no shellfish."),
                ("I love hiking in the Alps.", "Sounds wonderful."),
            ],
        )

        tool = create_retrieve_memory_tool(store)
        model = ScriptedToolModel(
            messages=iter(
                [
                    AIMessage(
                        "",
                        tool_calls=[
                            {
                                "name": "retrieve_memory",
                                "args": {"query": "allergic peanuts allergy"},
                                "id": "call_1",
                            }
                        ],
                    ),
                    AIMessage(
                        "You told me you are badly allergic to peanuts, so I'll pick a "
                        "peanut-free restaurant in Lisbon."
                    ),
                ]
            )
        )
        agent = create_agent(model, tools=[tool], system_prompt="You are a travel assistant.")

        result = agent.invoke(
            {"messages": [HumanMessage("Book me a Thai place for dinner. Anything to avoid?")]},
            config={"configurable": {"user_id": "ana", "thread_id": "this-week"}},
        )
        for message in result["messages"]:
            if isinstance(message, ToolMessage):
                print(f"--- tool result ({message.name}) ---")
                print(message.content)
        print("--- final answer ---")
        print(result["messages"][-1].content)

        events = store.audit.events(user_id="ana", kinds=["recall"])
        print(f"--- audit: {len(events)} recall event(s) for ana ---")
        store.close()
    print("react_agent_tool example OK")


if __name__ == "__main__":
    main()
