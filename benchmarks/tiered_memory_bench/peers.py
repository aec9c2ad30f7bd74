"""Peer strategies for the tokens bench: what other memories would send.

Each peer is replayed on the same conversation, message by message, next to
:class:`~langchain_tiered_memory.memory.TieredMemory`; after every message it
returns the prompt it would send next, and the bench counts it with the same
exact token counter.

* :class:`FullHistory` - every message so far after the system prompt.
* :class:`TrimMessagesPeer` - ``langchain_core.messages.trim_messages`` to the
  input budget (``strategy="last"``, ``start_on="human"``,
  ``include_system=True``).
* :class:`LangMemPeer` - LangMem's ``SummarizationNode`` (package
  ``langmem``) with ``max_tokens`` = the input budget and
  ``max_summary_tokens`` = our summary's cap.
* :class:`ClassicSummaryBufferPeer` - langchain-classic's
  ``ConversationSummaryBufferMemory`` with ``max_token_limit`` = the input
  budget less the system prompt and our summary's cap.

The summarising peers call a chat model. To compare like with like, offline,
they are driven by the same summariser as ours: with the default extractive
summariser, :class:`ExtractiveChatModel` is a deterministic fake chat model
that reads the peer's summarisation prompt and answers with
:class:`~langchain_tiered_memory.tiers.summarize.ExtractiveSummarizer`'s output,
capped at the same number of tokens. Given a real chat model instead, the
peers call that model. Summariser calls are counted with a callback.

The peers come with this distribution (``pip install -e ./benchmarks`` in a checkout).

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    >>> counter = OpenAITokenCounter("gpt-4o-mini")
    >>> peer = TrimMessagesPeer(counter=counter, system_prompt="Be brief.", input_budget=40)
    >>> for i in range(6):
    ...     prompt = peer.add(HumanMessage(f"Question {i} about the weather in Paris?"))
    ...     prompt = peer.add(AIMessage(f"Answer {i}: sunny."))
    >>> counter.count_messages(prompt) <= 40, prompt[0].content
    (True, 'Be brief.')
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
    trim_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter, TokenCounter
from langchain_tiered_memory.extras import install_hint
from langchain_tiered_memory.tiers.summarize import ExtractiveSummarizer
from langchain_tiered_memory.values.turns import Turn, message_text

__all__ = [
    "PEERS",
    "CallCounter",
    "ClassicSummaryBufferPeer",
    "ExtractiveChatModel",
    "FullHistory",
    "LangMemPeer",
    "MemoCounter",
    "Peer",
    "TrimMessagesPeer",
    "make_peer",
]

#: Peer names, in report order.
PEERS = ("full_history", "trim_messages", "langmem_summarization_node", "classic_summary_buffer")

_INSTALL_HINT = install_hint("bench")

# the summarisation prompts of the peers, as the fake chat model recognises them
_LANGMEM_INITIAL = "Create a summary of the conversation above:"
_LANGMEM_EXISTING = "This is summary of the conversation so far: "
_LANGMEM_EXTEND = "\n\nExtend this summary by taking into account the new messages above:"
_CLASSIC_CURRENT = "Current summary:\n"
_CLASSIC_NEW = "\n\nNew lines of conversation:\n"
_CLASSIC_END = "\n\nNew summary:"


class MemoCounter:
    """The exact prompt cost of a message list, memoised per message object.

    The peers count the same long histories again and again (``trim_messages``
    bisects, LangMem and the classic memory re-count their buffers every
    turn). For :class:`~langchain_tiered_memory.budget.tokens.OpenAITokenCounter`,
    whose counts are additive, each message's cost is computed once; the
    result is identical to ``counter.count_messages``. Other counters are
    called as they are.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> counter = OpenAITokenCounter("gpt-4o-mini")
        >>> memo, msgs = MemoCounter(counter), [HumanMessage("Hello there!")]
        >>> memo(msgs) == counter.count_messages(msgs) == memo(msgs)
        True
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[int, tuple[BaseMessage, int]] = {}

    def __call__(self, messages: Iterable[Any]) -> int:
        """Tokens of ``messages`` as one prompt (reply priming included)."""
        items = [m if isinstance(m, BaseMessage) else convert_to_messages([m])[0] for m in messages]
        if not isinstance(self.counter, OpenAITokenCounter):
            return self.counter.count_messages(items)
        total = self.counter.reply_priming
        for message in items:
            hit = self._cache.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, self.counter.message_tokens(message))
                self._cache[id(message)] = hit
            total += hit[1]
        return total


class CallCounter(BaseCallbackHandler):
    """Counts chat-model (and LLM) calls made through a model it is attached to."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Count one chat-model call."""
        self.calls += 1

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        """Count one completion-model call."""
        self.calls += 1


class ExtractiveChatModel(BaseChatModel):
    """A deterministic fake chat model that summarises like :class:`ExtractiveSummarizer`.

    It understands the summarisation prompts of LangMem (the messages to
    summarise, then "Create a summary..." or "This is summary of the
    conversation so far: ... Extend this summary...") and of
    langchain-classic's ``ConversationSummaryBufferMemory`` ("Current
    summary: ... New lines of conversation: ... New summary:"), and answers
    with the extractive summary of the new messages appended to the existing
    one, capped at ``max_tokens``. Any other prompt raises ``ValueError``, so
    a change in a peer's prompt cannot go unnoticed. Its token counting
    (``get_num_tokens_from_messages``) is the bench's counter.

    Example:
        >>> counter = OpenAITokenCounter("gpt-4o-mini")
        >>> fake = ExtractiveChatModel(counter=counter, max_tokens=100)
        >>> fake.invoke([HumanMessage("I fly to Lisbon on 12 May."),
        ...              HumanMessage("Create a summary of the conversation above:")]).content
        '[t0] user: I fly to Lisbon on 12 May.'
    """

    counter: Any
    max_tokens: int = 256
    next_index: int = 0

    @property
    def _llm_type(self) -> str:
        return "extractive-summarizer-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        existing, new = self._parse(messages)
        turns = []
        for message in new:
            turns.append(Turn(self.next_index, (message,)))
            self.next_index += 1
        summarizer = ExtractiveSummarizer(self.counter)
        summary = summarizer.summarize(existing, turns, max_tokens=self.max_tokens)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(summary))])

    @staticmethod
    def _parse(messages: Sequence[BaseMessage]) -> tuple[str, list[BaseMessage]]:
        if not messages:
            raise ValueError("ExtractiveChatModel got no messages")
        last = message_text(messages[-1])
        if last.strip() == _LANGMEM_INITIAL:
            return "", list(messages[:-1])
        if last.startswith(_LANGMEM_EXISTING) and last.endswith(_LANGMEM_EXTEND):
            existing = last[len(_LANGMEM_EXISTING) : -len(_LANGMEM_EXTEND)]
            return existing, list(messages[:-1])
        if _CLASSIC_CURRENT in last and _CLASSIC_NEW in last and last.endswith(_CLASSIC_END):
            body = last.rpartition(_CLASSIC_CURRENT)[2][: -len(_CLASSIC_END)]
            existing, _, lines = body.partition(_CLASSIC_NEW)
            return existing.strip(), _parse_buffer_string(lines)
        raise ValueError(
            "ExtractiveChatModel does not recognise this summarisation prompt: "
            f"{last[:120]!r}. Teach it the peer's prompt format."
        )

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """Count with the bench's counter (what the classic memory prunes by)."""
        return int(self.counter.count_messages(messages))


def _parse_buffer_string(text: str) -> list[BaseMessage]:
    """``"Human: hi\\nAI: hello"`` (``get_buffer_string``) back to messages."""
    out: list[BaseMessage] = []
    for line in text.splitlines():
        if line.startswith("Human: "):
            out.append(HumanMessage(line[len("Human: ") :]))
        elif line.startswith("AI: "):
            out.append(AIMessage(line[len("AI: ") :]))
        elif out:  # a message spanning several lines
            previous = out[-1]
            out[-1] = previous.model_copy(update={"content": f"{message_text(previous)}\n{line}"})
    return out


class Peer(Protocol):
    """A memory strategy replayed by the tokens bench."""

    @property
    def name(self) -> str:
        """The strategy's name in the report."""
        ...

    @property
    def settings(self) -> str:
        """How it was configured, for the report."""
        ...

    @property
    def summarizer_calls(self) -> int:
        """Summariser calls made so far."""
        ...

    def add(self, message: BaseMessage) -> list[BaseMessage]:
        """Take the next message; return the prompt the strategy would send now."""
        ...


class FullHistory:
    """Every message so far after the system prompt (no memory management)."""

    name = "full_history"
    summarizer_calls = 0
    settings = "system prompt + every message so far"

    def __init__(self, *, system_prompt: str) -> None:
        self.messages: list[BaseMessage] = [SystemMessage(system_prompt)]

    def add(self, message: BaseMessage) -> list[BaseMessage]:
        """Append and return everything."""
        self.messages.append(message)
        return list(self.messages)


class TrimMessagesPeer:
    """``trim_messages`` to the input budget, keeping the newest messages."""

    name = "trim_messages"
    summarizer_calls = 0

    def __init__(
        self, *, counter: TokenCounter | MemoCounter, system_prompt: str, input_budget: int
    ) -> None:
        self.count = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        self.input_budget = input_budget
        self.messages: list[BaseMessage] = [SystemMessage(system_prompt)]
        self.settings = (
            f"trim_messages(max_tokens={input_budget}, strategy='last', start_on='human', "
            "include_system=True)"
        )

    def add(self, message: BaseMessage) -> list[BaseMessage]:
        """Append, then trim the whole history to the budget."""
        self.messages.append(message)
        return list(
            trim_messages(
                self.messages,
                max_tokens=self.input_budget,
                token_counter=self.count,
                strategy="last",
                start_on="human",
                include_system=True,
            )
        )


class _ModelPeer:
    """Shared set-up of the peers that call a summariser model."""

    def __init__(self, model: BaseChatModel) -> None:
        self._calls = CallCounter()
        # a copy, so the counting callback does not stick to the caller's model
        self.model = model.model_copy(update={"callbacks": [self._calls]})

    @property
    def summarizer_calls(self) -> int:
        """Summariser calls made so far."""
        return self._calls.calls


class LangMemPeer(_ModelPeer):
    """LangMem's ``SummarizationNode`` run on the growing history each turn.

    Raises:
        ImportError: if ``langmem`` is not installed.
    """

    name = "langmem_summarization_node"

    def __init__(
        self,
        *,
        model: BaseChatModel,
        counter: TokenCounter | MemoCounter,
        system_prompt: str,
        input_budget: int,
        summary_tokens: int,
    ) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its deps' deprecation notices
                from langmem.short_term import SummarizationNode
        except ImportError as exc:
            raise ImportError(f"The LangMem peer needs langmem: {_INSTALL_HINT}") from exc
        super().__init__(model)
        count = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        self.node = SummarizationNode(
            model=self.model,
            max_tokens=input_budget,
            max_summary_tokens=summary_tokens,
            token_counter=count,
        )
        self.messages: list[BaseMessage] = [SystemMessage(system_prompt, id="system")]
        self.context: dict[str, Any] = {}
        self.settings = (
            f"SummarizationNode(max_tokens={input_budget}, "
            f"max_summary_tokens={summary_tokens}, token_counter=<bench counter>)"
        )

    def add(self, message: BaseMessage) -> list[BaseMessage]:
        """Append (messages need ids), run the node, return its ``summarized_messages``."""
        if message.id is None:
            message = message.model_copy(update={"id": f"m{len(self.messages)}"})
        self.messages.append(message)
        update = self.node.invoke({"messages": self.messages, "context": self.context})
        self.context = update.get("context", self.context)
        return list(update["summarized_messages"])


class ClassicSummaryBufferPeer(_ModelPeer):
    """langchain-classic's ``ConversationSummaryBufferMemory`` (``return_messages=True``).

    Each message is added to its chat history and ``prune()`` runs, as
    ``save_context`` does for a human/AI pair (LoCoMo speakers do not always
    alternate). The prompt is the system prompt plus
    ``load_memory_variables``' history (the summary as a system message, then
    the buffer).

    Raises:
        ImportError: if ``langchain-classic`` is not installed.
    """

    name = "classic_summary_buffer"

    def __init__(
        self,
        *,
        model: BaseChatModel,
        counter: TokenCounter | MemoCounter,
        system_prompt: str,
        input_budget: int,
        summary_tokens: int,
    ) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from langchain_classic.memory import ConversationSummaryBufferMemory
        except ImportError as exc:
            raise ImportError(f"The classic peer needs langchain-classic: {_INSTALL_HINT}") from exc
        super().__init__(model)
        self.count = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        self.system = SystemMessage(system_prompt)
        # leave room for the system prompt and a summary as large as ours
        limit = input_budget - self.count([self.system, SystemMessage("")]) - summary_tokens
        if limit < 1:
            raise ValueError(f"input budget {input_budget} leaves no room for the classic buffer")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.memory = ConversationSummaryBufferMemory(
                llm=self.model, max_token_limit=limit, return_messages=True
            )
        self.settings = (
            f"ConversationSummaryBufferMemory(max_token_limit={limit}, return_messages=True)"
        )

    def add(self, message: BaseMessage) -> list[BaseMessage]:
        """Add to the chat history, prune, return the prompt."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.memory.chat_memory.add_message(message)
            self.memory.prune()
            history = self.memory.load_memory_variables({})["history"]
        return [self.system, *history]


def make_peer(
    name: str,
    *,
    counter: TokenCounter | MemoCounter,
    system_prompt: str,
    input_budget: int,
    summary_tokens: int,
    model: BaseChatModel | None = None,
) -> Peer:
    """Build one peer by name (see :data:`PEERS`) for one conversation.

    Args:
        name: One of :data:`PEERS`.
        counter: The bench's token counter.
        system_prompt: The system prompt every strategy sends.
        input_budget: ``context_window - output``.
        summary_tokens: Our summary's cap, given to the summarising peers.
        model: The summariser chat model (default: :class:`ExtractiveChatModel`
            capped at ``summary_tokens``).

    Raises:
        ValueError: for an unknown name.
        ImportError: if the peer's package is missing.
    """
    if name == "full_history":
        return FullHistory(system_prompt=system_prompt)
    if name == "trim_messages":
        return TrimMessagesPeer(
            counter=counter, system_prompt=system_prompt, input_budget=input_budget
        )
    base = counter.counter if isinstance(counter, MemoCounter) else counter
    chat = model or ExtractiveChatModel(counter=base, max_tokens=summary_tokens)
    if name == "langmem_summarization_node":
        return LangMemPeer(
            model=chat,
            counter=counter,
            system_prompt=system_prompt,
            input_budget=input_budget,
            summary_tokens=summary_tokens,
        )
    if name == "classic_summary_buffer":
        return ClassicSummaryBufferPeer(
            model=chat,
            counter=counter,
            system_prompt=system_prompt,
            input_budget=input_budget,
            summary_tokens=summary_tokens,
        )
    raise ValueError(f"unknown peer {name!r}; valid: {', '.join(PEERS)}")
