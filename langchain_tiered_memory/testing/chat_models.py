"""A chat model that calls no LLM (the model ``"echo"`` resolves to).

Example:
    >>> from langchain_tiered_memory.models import resolve_chat_model
    >>> type(resolve_chat_model("echo")).__name__
    'EchoChatModel'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_tiered_memory.budget.markup import (
    CORE_HEADER,
    RECALL_HEADER,
    SUMMARY_HEADER,
    split_turn_memory,
)
from langchain_tiered_memory.values.turns import message_text

__all__ = ["EchoChatModel", "echo_reply"]


class EchoChatModel(BaseChatModel):
    """A chat model that calls no LLM: it answers with what the memory put in its prompt.

    The reply quotes the latest user message and, section by section, the
    memory the prompt carried (core memory, running summary, recalled
    records), each clipped to ``max_chars`` characters - so you can watch
    the memory work in ``langgraph dev``, the CLI or a test without an API
    key. It never calls tools (``bind_tools`` accepts and ignores them).

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> reply = EchoChatModel().invoke([SystemMessage("Be brief."), HumanMessage("Hi!")])
        >>> print(reply.content)
        [echo model - no LLM was called] You said: Hi!
        Memory in my prompt: none.
    """

    max_chars: int = 240

    @property
    def _llm_type(self) -> str:
        return "echo"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """Accept tools (the echo model never calls them)."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = echo_reply(messages, max_chars=self.max_chars)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def echo_reply(messages: Sequence[BaseMessage], *, max_chars: int = 240) -> str:
    """The :class:`EchoChatModel`'s answer to ``messages``."""

    def clip(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"

    headers = {
        "core memory": CORE_HEADER,
        "running summary": SUMMARY_HEADER.split("{", 1)[0],
        "recalled": RECALL_HEADER,
    }
    sections: list[str] = []
    said = ""
    for message in messages:
        if isinstance(message, HumanMessage):  # this turn's memory opens the newest one
            core, recalled, said = split_turn_memory(message_text(message))
            if core:
                sections.append(f"core memory: {clip(core)}")
            if recalled:
                sections.append(f"recalled: {clip(recalled)}")
            continue
        if not isinstance(message, SystemMessage):
            continue
        text = message_text(message)
        for label, header in headers.items():
            at = text.find(header)
            if at >= 0:
                body = text[at + len(header) :]
                if label == "running summary":
                    body = body.split("\n", 1)[-1]
                sections.append(f"{label}: {clip(body)}")
    memory = "; ".join(sections) if sections else "none"
    return (
        f"[echo model - no LLM was called] You said: {clip(said)}\nMemory in my prompt: {memory}."
    )
