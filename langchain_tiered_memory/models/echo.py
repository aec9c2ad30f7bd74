"""A chat model that calls no LLM (the model ``"echo"`` resolves to).

Example:
    >>> from langchain_tiered_memory.models import resolve_chat_model
    >>> type(resolve_chat_model("echo")).__name__
    'EchoChatModel'
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable

from langchain_tiered_memory.budget.markup import (
    CORE_HEADER,
    CORE_RECENT_HEADER,
    RECALL_HEADER,
    SUMMARY_HEADER,
    split_turn_memory,
)
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.values.turns import message_text

__all__ = ["EchoChatModel", "echo_reply", "memory_sections"]

#: The memory sections a prompt may carry: (label in the reply, the header that opens it).
#: Both core headers - the pinned one and the recent turns' - report as "core memory".
SECTIONS: tuple[tuple[str, str], ...] = (
    ("core memory", CORE_HEADER),
    ("core memory", CORE_RECENT_HEADER),
    ("running summary", SUMMARY_HEADER.split("{", 1)[0]),
    ("recalled", RECALL_HEADER),
)

#: What the echo model can do, as LangChain reads it (``model.profile``): text in, text out,
#: no tool calls, no structured output.
ECHO_PROFILE: ModelProfile = {
    "text_inputs": True,
    "text_outputs": True,
    "image_inputs": False,
    "audio_inputs": False,
    "video_inputs": False,
    "pdf_inputs": False,
    "tool_calling": False,
    "tool_choice": False,
    "structured_output": False,
}


class EchoChatModel(BaseChatModel):
    """A chat model that calls no LLM: it answers with what the memory put in its prompt.

    The reply quotes the latest user message and, section by section, the
    memory the prompt carried (core memory, running summary, recalled
    records), each clipped to ``max_chars`` characters - so you can watch
    the memory work in ``langgraph dev``, the CLI or a test without an API
    key. It finds the sections wherever the adapters put them: in system
    messages (``RunnableWithMessageHistory``, ``TieredConversationMemory``,
    even as text inside a prompt template) or in the per-turn block of the
    newest user message (``build_context``, the LangGraph nodes).

    It behaves as a LangChain chat model in full - it streams in chunks
    (``stream``, ``astream``, ``astream_events``), reports ``usage_metadata``
    (tokens counted with tiktoken's ``gpt-4o-mini`` encoding) and honours
    ``stop`` - and it passes LangChain's standard chat-model tests for what
    its :attr:`profile` declares. It is no tool-calling model
    (``profile["tool_calling"]`` is ``False``): ``bind_tools`` accepts tools
    so that a graph or agent with tools runs offline, but it never calls one.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> reply = EchoChatModel().invoke([SystemMessage("Be brief."), HumanMessage("Hi!")])
        >>> print(reply.content)
        [echo model - no LLM was called] You said: Hi!
        Memory in my prompt: none.
        >>> reply.usage_metadata["output_tokens"] > 0, reply.response_metadata["model_name"]
        (True, 'echo')
        >>> [chunk.content for chunk in EchoChatModel().stream("Hi!")][:3]
        ['[echo ', 'model ', '- ']
    """

    model_name: str = "echo"
    """The model's name, as LangChain's tracing and usage callbacks report it."""
    max_chars: int = 240
    """Each quoted part of the reply is clipped to this many characters."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _resolve_model_profile(self) -> ModelProfile | None:
        return dict(ECHO_PROFILE)  # type: ignore[return-value]

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "max_chars": self.max_chars}

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept tools, so a graph or agent with tools runs offline; they are never called."""
        return self

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None
    ) -> tuple[str, UsageMetadata]:
        text = echo_reply(messages, max_chars=self.max_chars)
        for word in stop or ():
            if word and word in text:
                text = text[: text.index(word)]
        counter = _counter()
        input_tokens = counter.count_messages(messages)
        output_tokens = counter.count_text(text)
        usage: UsageMetadata = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_token_details": {},
            "output_token_details": {},
        }
        return text, usage

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text, usage = self._reply(messages, stop)
        message = AIMessage(
            text, usage_metadata=usage, response_metadata={"model_name": self.model_name}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply a word (with the whitespace after it) per chunk; the last chunk carries
        the usage and the model's name."""
        text, usage = self._reply(messages, stop)
        for piece in re.findall(r"\S+\s*|\s+", text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=usage,
                response_metadata={"model_name": self.model_name},
                chunk_position="last",
            )
        )


@lru_cache(maxsize=1)
def _counter() -> OpenAITokenCounter:
    return OpenAITokenCounter("gpt-4o-mini")


def memory_sections(text: str) -> list[tuple[str, str]]:
    """The memory sections quoted in ``text``, as ``(label, body)`` in the order they come.

    A section opens at its header (:data:`SECTIONS`) and runs to the next
    header or the end of the text; the running summary's body starts after
    its header line.

    Example:
        >>> from langchain_tiered_memory.budget.markup import CORE_HEADER, RECALL_HEADER
        >>> memory_sections("Notes:\\n" + CORE_HEADER + "- name: Ana\\n" + RECALL_HEADER + "<x>")
        [('core memory', '- name: Ana\\n'), ('recalled', '<x>')]
    """
    starts: list[tuple[int, str, str]] = []
    for label, header in SECTIONS:
        at = text.find(header)
        while at >= 0:
            starts.append((at, label, header))
            at = text.find(header, at + len(header))
    starts.sort()
    found: list[tuple[str, str]] = []
    for i, (at, label, header) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        body = text[at + len(header) : end]
        if label == "running summary":
            body = body.split("\n", 1)[-1]
        found.append((label, body))
    return found


def echo_reply(messages: Sequence[BaseMessage], *, max_chars: int = 240) -> str:
    """The :class:`EchoChatModel`'s answer to ``messages``.

    "You said" quotes the newest user message (without its per-turn memory
    block); "Memory in my prompt" lists each memory section once, in the
    order the prompt first carries it - from the system messages and from
    the user messages (the per-turn block, or history pasted in as text).

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> from langchain_tiered_memory.budget.markup import CORE_RECENT_HEADER
        >>> print(echo_reply([SystemMessage(CORE_RECENT_HEADER + "- home: Lisbon"),
        ...                   HumanMessage("Where do I live?")]))
        [echo model - no LLM was called] You said: Where do I live?
        Memory in my prompt: core memory: - home: Lisbon.
    """

    def clip(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"

    bodies: dict[str, list[str]] = {}  # label -> bodies, labels in first-seen order
    said = ""
    for message in messages:
        if isinstance(message, HumanMessage):  # this turn's memory opens the newest one
            core, recalled, said = split_turn_memory(message_text(message))
            parts = [("core memory", core), ("recalled", recalled), *memory_sections(said)]
        elif isinstance(message, SystemMessage):
            parts = memory_sections(message_text(message))
        else:
            continue
        for label, body in parts:
            if body.strip():
                bodies.setdefault(label, []).append(body)
    sections = [f"{label}: {clip(' '.join(texts))}" for label, texts in bodies.items()]
    memory = "; ".join(sections) if sections else "none"
    return (
        f"[echo model - no LLM was called] You said: {clip(said)}\nMemory in my prompt: {memory}."
    )
