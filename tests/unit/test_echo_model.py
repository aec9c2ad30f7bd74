"""The echo model (``"echo"``: no LLM) - LangChain's standard chat-model tests run against it,
and what it reports of a prompt's memory, whichever adapter built the prompt."""

from __future__ import annotations

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.integrations.classic import TieredConversationMemory
from langchain_tiered_memory.integrations.history import TieredChatMessageHistory
from langchain_tiered_memory.testing import EchoChatModel


class TestEchoStandardUnit(ChatModelUnitTests):
    """LangChain's unit tests for chat models, on the echo model."""

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return EchoChatModel

    @property
    def has_tool_calling(self) -> bool:
        # what the model declares: it accepts tools (graphs with tools run offline) but
        # never calls one, so the tool-calling tests are not for it
        return bool(EchoChatModel().profile.get("tool_calling"))  # type: ignore[union-attr]


class TestEchoStandardIntegration(ChatModelIntegrationTests):
    """LangChain's integration tests for chat models: the echo model needs no network."""

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return EchoChatModel

    @property
    def has_tool_calling(self) -> bool:
        return bool(EchoChatModel().profile.get("tool_calling"))  # type: ignore[union-attr]


# -- what the echo model reports of a prompt's memory ----------------------------------


def _fed(memory_view: list[BaseMessage], said: str) -> str:
    return str(EchoChatModel().invoke([*memory_view, HumanMessage(said)]).content)


def test_echo_reports_the_memory_of_a_message_history_chain() -> None:
    # RunnableWithMessageHistory: the view heads with "Core memory from the recent turns"
    history = TieredChatMessageHistory(context_window=4096)
    history.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | EchoChatModel(),
        lambda session_id: history,
        input_messages_key="input",
        history_messages_key="history",
    )
    reply = chain.invoke({"input": "A snack?"}, {"configurable": {"session_id": "s"}}).content
    assert "Memory in my prompt: none" not in reply
    assert "core memory:" in reply and "allergic to peanuts" in reply
    assert "Be brief." not in reply


@pytest.mark.parametrize("return_messages", [True, False])
def test_echo_reports_the_memory_of_the_classic_memory(return_messages: bool) -> None:
    memory = TieredConversationMemory(max_token_limit=650, return_messages=return_messages)
    memory.save_context({"input": "I live in Lisbon."}, {"response": "Lovely!"})
    history = memory.load_memory_variables({"input": "Where do I live?"})["history"]
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
        if return_messages
        else [("system", "The conversation so far:\n{history}"), ("human", "{input}")]
    )
    reply = (prompt | EchoChatModel()).invoke({"history": history, "input": "Where?"}).content
    assert "You said: Where?" in reply
    assert "core memory:" in reply and "lives in Lisbon" in reply


def test_echo_reports_every_section_once_in_order() -> None:
    memory = TieredMemory(context_window=1024, gate="always")
    for i in range(30):
        said = f"Turn {i}: I'm allergic to peanuts. We hiked near Sintra and it rained."
        memory.add_messages([HumanMessage(said), AIMessage("Ok, that sounds nice.")])
    reply = _fed(TieredChatMessageHistory(memory).messages, "And dinner?")
    memory_part = reply.split("Memory in my prompt: ", 1)[1]
    labels = [part.split(":", 1)[0] for part in memory_part.split("; ")]
    assert labels == ["core memory", "running summary", "recalled"]
    assert "allergic to peanuts" in memory_part.split("; ")[0]
