"""LCEL + RunnableWithMessageHistory with durable tiered memory.

A chat prompt piped into a (fake) chat model is wrapped in
``RunnableWithMessageHistory``; ``tiered_history_factory`` gives every
``(user_id, conversation_id)`` its own budgeted memory in a ``MemoryStore``.
The store is closed and reopened half-way - as after a restart - and the
conversation carries on where it stopped.

Runs offline in a few seconds: ``python examples/lcel_message_history.py``.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableFieldSpec, RunnableConfig
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_tiered_memory.integrations.history import (
    TieredHistoryFactory,
    tiered_history_factory,
)

# RunnableWithMessageHistory is deprecated upstream (LangGraph persistence is
# the successor); keep the demo output readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

SYSTEM = "You are a concise travel assistant."
PROMPT = ChatPromptTemplate(
    [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{input}")]
)


def replies() -> GenericFakeChatModel:
    """A fake chat model with an endless supply of short replies."""
    return GenericFakeChatModel(messages=(AIMessage(f"Reply #{i}.") for i in range(10_000)))


def open_chain(data_dir: Path) -> tuple[RunnableWithMessageHistory, TieredHistoryFactory]:
    """The LCEL chain with a tiered history per user and conversation."""
    factory = tiered_history_factory(
        data_dir,
        embeddings=DeterministicFakeEmbedding(size=16),  # offline; use a real model in prod
        context_window=768,
        system_prompt=SYSTEM,  # same text as the prompt's system message: it is budgeted
    )
    chain = RunnableWithMessageHistory(
        PROMPT | replies(),
        factory,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=[
            ConfigurableFieldSpec(id="user_id", annotation=str, is_shared=True),
            ConfigurableFieldSpec(id="conversation_id", annotation=str, is_shared=True),
        ],
    )
    return chain, factory


def config(user: str, conversation: str) -> RunnableConfig:
    """The per-call config naming the user and the conversation."""
    return {"configurable": {"user_id": user, "conversation_id": conversation}}


def main() -> None:
    """Talk, restart, and talk again."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "memory"
        chain, factory = open_chain(data_dir)
        chain.invoke({"input": "I'm allergic to peanuts."}, config("ana", "lisbon"))
        chain.invoke({"input": "I live in Porto."}, config("ana", "lisbon"))
        chain.invoke({"input": "I'm vegetarian."}, config("bob", "rome"))
        for day in range(1, 13):
            text = f"Day {day}: which museum opens early on day {day} of the trip?"
            chain.invoke({"input": text}, config("ana", "lisbon"))
        factory.close()  # ... the process restarts ...

        chain, factory = open_chain(data_dir)
        with factory:
            answer = chain.invoke({"input": "Suggest a dessert."}, config("ana", "lisbon"))
            history = factory(user_id="ana", conversation_id="lisbon")
            context = history.context
            print(f"model answered: {answer.content}")
            state = history.memory.state
            print(
                f"turns kept verbatim: {len(state.turns)}; older turns summarised "
                f"through t{state.summarized_through} and archived"
            )
            print(
                f"prompt tokens: {context.total_tokens} of {context.input_budget}; "
                f"per section: {context.usage}"
            )
            print(f"history messages: {[m.type for m in history.messages][:4]} ...")
            allergy = history.memory.core.get("allergy:peanuts")
            print(f"ana's allergy is in core memory: {allergy is not None}")
            bob = factory(user_id="bob", conversation_id="rome")
            print(f"bob's history: {[m.content for m in bob.messages if m.type == 'human']}")
    print("lcel_message_history example OK")


if __name__ == "__main__":
    main()
