"""``ConversationSummaryBufferMemory``'s interface over tiered memory.

:class:`TieredConversationMemory` is the drop-in replacement.

The classic memory interface of langchain-classic (``load_memory_variables``
/ ``save_context``), for ``ConversationChain`` and ``LLMChain``: swap the
class name and keep the rest. Needs ``pip install langchain-classic``; this
module imports without it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    get_buffer_string,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import BasePromptTemplate
from pydantic import PrivateAttr

from langchain_tiered_memory.budget.clipping import clip_text
from langchain_tiered_memory.budget.sections import TokenBudget
from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.summarize import (
    DEFAULT_SUMMARY_PROMPT,
    LLMSummarizer,
    SummarizationError,
)
from langchain_tiered_memory.values.turns import Turn, message_text

try:  # langchain-classic is optional: only TieredConversationMemory needs it
    from langchain_classic.base_memory import BaseMemory
except ImportError as _exc:  # pragma: no cover - exercised only without langchain-classic
    _CLASSIC_IMPORT_ERROR: ImportError | None = _exc
    BaseMemory = object  # type: ignore[assignment,misc]
else:
    _CLASSIC_IMPORT_ERROR = None

from langchain_tiered_memory.integrations.history import TieredChatMessageHistory
from langchain_tiered_memory.integrations.history_view import ViewMaker, clear_thread
from langchain_tiered_memory.integrations.identity import check_run_user

logger = logging.getLogger(__name__)

__all__ = [
    "CLASSIC_MAX_TOKEN_LIMIT",
    "ClassicSummarizer",
    "TieredConversationMemory",
    "budget_for_buffer",
    "get_prompt_input_key",
]

#: The classic ``ConversationSummaryBufferMemory.max_token_limit`` default.
CLASSIC_MAX_TOKEN_LIMIT = 2000


class ClassicSummarizer(LLMSummarizer):
    """A :class:`~langchain_tiered_memory.tiers.summarize.Summarizer` from a classic ``llm``.

    Accepts any LangChain language model - a chat model or a completion
    ``LLM`` - and, optionally, the classic summary prompt with ``{summary}``
    and ``{new_lines}`` (as ``ConversationSummaryBufferMemory(prompt=...)``).
    Without a prompt it uses the package's entity-keeping
    :data:`~langchain_tiered_memory.tiers.summarize.DEFAULT_SUMMARY_PROMPT`.

    Args:
        llm: The model that writes summaries.
        prompt: Classic prompt with exactly ``summary`` and ``new_lines``.
        counter: Clips an over-long summary to ``max_tokens`` when given.
        human_prefix, ai_prefix: Speaker names for ``new_lines``.
        timeout: Seconds before a call counts as failed.

    Raises (from ``summarize``):
        SummarizationError: on an exception, a timeout or an empty reply; the
            memory then keeps its buffer unchanged and retries later.

    Example:
        >>> from langchain_core.language_models.fake import FakeListLLM
        >>> s = ClassicSummarizer(FakeListLLM(responses=["Ana flies to Lisbon."]))
        >>> s.summarize("", [Turn(0, (HumanMessage("I'm Ana."),))], max_tokens=50)
        'Ana flies to Lisbon.'
    """

    def __init__(
        self,
        llm: BaseLanguageModel,
        *,
        prompt: BasePromptTemplate | None = None,
        counter: TokenCounter | None = None,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        timeout: float = 60.0,
    ) -> None:
        if prompt is not None and set(prompt.input_variables) != {"summary", "new_lines"}:
            raise ValueError(
                "The summary prompt must have exactly the input variables 'summary' and "
                f"'new_lines', got {sorted(prompt.input_variables)}."
            )
        self.llm = llm
        self.model = llm  # type: ignore[assignment]  # LLMSummarizer invokes it
        self.classic_prompt = prompt
        self.counter = counter
        self.human_prefix = human_prefix
        self.ai_prefix = ai_prefix
        self.timeout = timeout
        self.calls = 0

    def _input(self, summary: str, turns: Sequence[Turn], max_tokens: int) -> str | PromptValue:
        if self.classic_prompt is not None:
            new_lines = get_buffer_string(
                [m for t in turns for m in t.messages],
                human_prefix=self.human_prefix,
                ai_prefix=self.ai_prefix,
            )
            return self.classic_prompt.format_prompt(summary=summary, new_lines=new_lines)
        rendered = "\n\n".join(f"[t{t.index}]\n{t.transcript()}" for t in turns)
        return DEFAULT_SUMMARY_PROMPT.format(
            summary=summary or "(none yet)",
            turns=rendered,
            max_words=max(20, int(max_tokens * 0.7)),
        )

    def _text(self, reply: object, max_tokens: int) -> str:
        if isinstance(reply, str):
            text = reply
        elif isinstance(reply, BaseMessage):
            text = message_text(reply)
        else:
            text = ""
        text = text.strip()
        if not text:
            raise SummarizationError("The summariser returned an empty summary.")
        if self.counter is not None:
            text = clip_text(text, max_tokens, self.counter, note="; summary clipped")
        return text

    # LLMSummarizer runs the call (worker thread, timeout, errors); these two
    # hooks adapt it to completion models and the classic prompt
    def _messages(self, summary: str, turns: Sequence[Turn], max_tokens: int) -> Any:
        return self._input(summary, turns, max_tokens)

    def _check(self, reply: object, max_tokens: int) -> str:
        return self._text(reply, max_tokens)


# --- the classic memory interface ---------------------------------------------


def budget_for_buffer(
    max_token_limit: int, ratios: Mapping[str, float] | None = None
) -> TokenBudget:
    """The smallest budget whose ``buffer`` section holds ``max_token_limit`` tokens.

    This is how ``TieredConversationMemory(max_token_limit=N)`` maps the
    classic limit: the context window becomes ``N / ratios["buffer"]``
    (``2 * N`` with the default 50% buffer), so the buffer - running summary
    plus recent turns - gets exactly ``N`` tokens, and the other sections
    (system prompt, core memory, recall, the reply) get their usual shares
    on top.

    Raises:
        ValueError: if the resulting window would be too small (under 256 tokens).

    Example:
        >>> budget = budget_for_buffer(650)
        >>> budget.context_window, budget.caps["buffer"]
        (1300, 650)
    """
    if not isinstance(max_token_limit, int) or max_token_limit < 1:
        raise ValueError(f"max_token_limit must be a positive int, got {max_token_limit!r}")
    share = TokenBudget(context_window=100_000, ratios=dict(ratios or {})).ratios["buffer"]
    window = math.ceil(max_token_limit / share)
    if window < 256:
        raise ValueError(
            f"max_token_limit={max_token_limit} is too small: with a {share:.0%} buffer the "
            f"context window would be {window} tokens, and it must be at least 256. Use "
            f"max_token_limit >= {math.ceil(256 * share)}."
        )
    for candidate in range(max(256, window - 2), window + 3):
        budget = TokenBudget(context_window=candidate, ratios=dict(ratios or {}))
        if budget.caps["buffer"] >= max_token_limit:
            return budget
    return TokenBudget(context_window=window + 3, ratios=dict(ratios or {}))


def get_prompt_input_key(inputs: Mapping[str, Any], memory_variables: Sequence[str]) -> str:
    """The one input key that is not a memory variable (as langchain-classic resolves it).

    Raises:
        ValueError: unless exactly one such key exists (``"stop"`` is ignored).

    Example:
        >>> get_prompt_input_key({"input": "hi", "history": ""}, ["history"])
        'input'
    """
    keys = list(set(inputs).difference([*memory_variables, "stop"]))
    if len(keys) != 1:
        raise ValueError(f"One input key expected got {keys}")
    return keys[0]


def _require_classic() -> None:
    if _CLASSIC_IMPORT_ERROR is not None:
        raise ImportError(
            "TieredConversationMemory plugs into langchain-classic chains and needs it: "
            "pip install langchain-classic"
        ) from _CLASSIC_IMPORT_ERROR


class TieredConversationMemory(BaseMemory):
    """``ConversationSummaryBufferMemory``'s interface over a :class:`TieredMemory`.

    Swap the class name and keep the rest: ``TieredConversationMemory(llm=llm,
    max_token_limit=650, return_messages=True)`` works where
    ``ConversationSummaryBufferMemory(...)`` did - in ``ConversationChain``,
    ``LLMChain`` or by hand with ``load_memory_variables`` / ``save_context``.

    What the classic arguments become:

    * ``llm`` writes the running summary (a :class:`ClassicSummarizer`; any
      chat or completion model). Without it the memory uses the
      :class:`~langchain_tiered_memory.tiers.summarize.ExtractiveSummarizer` (no LLM
      calls). ``prompt`` - the classic ``{summary}`` / ``{new_lines}``
      template - is honoured when given.
    * ``max_token_limit`` is the size of the buffer section (summary plus
      recent turns): the context window becomes ``max_token_limit /
      ratios["buffer"]`` (see :func:`budget_for_buffer`). When neither it nor
      ``context_window`` / ``budget`` is given, the classic default of 2000
      applies. ``model`` only picks the tokenizer here.
    * ``memory_key``, ``input_key``, ``output_key``, ``return_messages``,
      ``human_prefix`` and ``ai_prefix`` behave as in the classic class.

    * Without ``store=`` the memory keeps to what the classic class did -
      the summary and the recent turns, plus core facts - and recalls
      nothing (``gate="never"``); with a :class:`~langchain_tiered_memory.store.MemoryStore`
      it is durable and recalls from its archive.

    ``load_memory_variables(inputs)`` knows the new input, so recall is gated
    on it and the history leaves room for it: older turns are left out of
    this prompt (not out of the memory) until history plus input fit the
    input budget.

    ``return_messages=False`` renders the view as text like the classic class:
    the summary, core-memory and recall sections as plain lines first, then
    ``get_buffer_string`` of the turns with the prefixes.

    Args:
        memory: The memory to wrap; built from the other arguments when ``None``.
        llm: The classic summariser model.
        max_token_limit: Tokens of the buffer section.
        prompt: Classic summary prompt (``summary`` and ``new_lines``).
        memory_key: Name of the chain input the history goes to.
        input_key: Which chain input is the user's message (default: the one
            input that is not a memory variable).
        output_key: Which chain output is the reply (default: the only one, or
            ``"output"``).
        return_messages: Give messages instead of a string.
        human_prefix, ai_prefix: Speaker names in the string form.
        include_system_prompt: Include the memory's pinned system prompt.
        **tiered_memory_kwargs: More :class:`TieredMemory` arguments.

    After construction, ``max_token_limit`` reports the buffer section's cap
    and ``llm`` the summariser model given (if any).

    Raises:
        ImportError: when langchain-classic is not installed.

    Example:
        >>> memory = TieredConversationMemory(max_token_limit=650)
        >>> memory.memory.budget.caps["buffer"]
        650
        >>> memory.save_context({"input": "I live in Lisbon."}, {"response": "Lovely!"})
        >>> print(memory.load_memory_variables({})["history"])  # doctest: +ELLIPSIS
        Core memory from the recent turns - more facts about the user ...
        - home_city: lives in Lisbon (stated, turn 0, ...)
        Human: I live in Lisbon.
        AI: Lovely!
    """

    memory: TieredMemory
    llm: BaseLanguageModel | None = None
    max_token_limit: int | None = None
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    include_system_prompt: bool = False

    _views: ViewMaker = PrivateAttr()
    _history: TieredChatMessageHistory | None = PrivateAttr(default=None)

    def __init__(
        self,
        memory: TieredMemory | None = None,
        *,
        llm: BaseLanguageModel | None = None,
        max_token_limit: int | None = None,
        prompt: BasePromptTemplate | None = None,
        memory_key: str = "history",
        input_key: str | None = None,
        output_key: str | None = None,
        return_messages: bool = False,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        include_system_prompt: bool = False,
        **tiered_memory_kwargs: Any,
    ) -> None:
        _require_classic()
        if memory is None:
            memory = self._make_memory(
                llm, max_token_limit, prompt, human_prefix, ai_prefix, tiered_memory_kwargs
            )
        elif llm is not None or max_token_limit is not None or prompt is not None:
            raise TypeError(
                "Given a ready TieredMemory, configure it directly: llm=, max_token_limit= "
                "and prompt= apply only when the memory is built here."
            )
        elif tiered_memory_kwargs:
            raise TypeError(
                "Given a ready TieredMemory, configure it directly: TieredMemory arguments "
                f"({sorted(tiered_memory_kwargs)}) apply only when the memory is built here."
            )
        fields: dict[str, Any] = {
            "memory": memory,
            "llm": llm,
            "max_token_limit": memory.budget.caps["buffer"],
            "memory_key": memory_key,
            "input_key": input_key,
            "output_key": output_key,
            "return_messages": return_messages,
            "human_prefix": human_prefix,
            "ai_prefix": ai_prefix,
            "include_system_prompt": include_system_prompt,
        }
        super().__init__(**fields)
        self._views = ViewMaker(memory, include_system_prompt, 0)  # the input is counted exactly

    @staticmethod
    def _make_memory(
        llm: BaseLanguageModel | None,
        max_token_limit: int | None,
        prompt: BasePromptTemplate | None,
        human_prefix: str,
        ai_prefix: str,
        kwargs: dict[str, Any],
    ) -> TieredMemory:
        sized = "context_window" in kwargs or "budget" in kwargs
        if max_token_limit is not None and sized:
            raise ValueError(
                "Give max_token_limit= (the buffer size) or context_window=/budget=, not both."
            )
        if max_token_limit is None and not sized:
            max_token_limit = CLASSIC_MAX_TOKEN_LIMIT
        if max_token_limit is not None:
            kwargs["budget"] = budget_for_buffer(max_token_limit, kwargs.pop("ratios", None))
        if llm is not None and kwargs.get("summarizer") is not None:
            raise ValueError("Give llm= (the classic summariser) or summarizer=, not both.")
        if prompt is not None and llm is None:
            raise ValueError("prompt= is the summary prompt of llm=; give llm= too.")
        if kwargs.get("store") is None:
            # the drop-in keeps to what ConversationSummaryBufferMemory did - summary, recent
            # turns (and core facts): recall, of a durable archive, comes with store=
            kwargs.setdefault("gate", "never")
        memory = TieredMemory(**kwargs)
        if llm is not None:
            memory.summarizer = ClassicSummarizer(
                llm,
                prompt=prompt,
                counter=memory.counter,
                human_prefix=human_prefix,
                ai_prefix=ai_prefix,
            )
        return memory

    # -- the classic surface ---------------------------------------------------

    @property
    def memory_variables(self) -> list[str]:
        """The one chain input this memory fills: ``[memory_key]``."""
        return [self.memory_key]

    @property
    def buffer(self) -> str | list[BaseMessage]:
        """The history as ``load_memory_variables({})`` gives it."""
        value: str | list[BaseMessage] = self.load_memory_variables({})[self.memory_key]
        return value

    @property
    def moving_summary_buffer(self) -> str:
        """The running summary of the evicted turns (read-only)."""
        return self.memory.state.summary

    @property
    def chat_memory(self) -> TieredChatMessageHistory:
        """A chat-history view of the same memory (``add_user_message`` etc.)."""
        if self._history is None:
            self._history = TieredChatMessageHistory(
                self.memory, include_system_prompt=self.include_system_prompt
            )
        return self._history

    def _query(self, inputs: Mapping[str, Any]) -> str | None:
        if self.input_key is not None:
            value = inputs.get(self.input_key)
        else:
            try:
                value = inputs[get_prompt_input_key(inputs, self.memory_variables)]
            except ValueError:
                return None
        return value if isinstance(value, str) and value.strip() else None

    def _variables(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        if self.return_messages:
            return {self.memory_key: list(messages)}
        head = 0
        while head < len(messages) and isinstance(messages[head], SystemMessage):
            head += 1
        lines = [message_text(m).strip() for m in messages[:head]]
        turns = get_buffer_string(
            list(messages[head:]), human_prefix=self.human_prefix, ai_prefix=self.ai_prefix
        )
        text = "\n".join(part for part in [*lines, turns] if part)
        return {self.memory_key: text}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The budgeted history under ``memory_key``; recall is gated on the new input."""
        check_run_user(self.memory.user_id)
        query = self._query(inputs)
        views = self._viewer()
        return self._variables(views.shape(views.context(query, None), self._reserve(query)))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async twin of :meth:`load_memory_variables`."""
        check_run_user(self.memory.user_id)
        query = self._query(inputs)
        views = self._viewer()
        context = await views.acontext(query, None)
        return self._variables(views.shape(context, self._reserve(query)))

    def _viewer(self) -> ViewMaker:
        views = self._views
        if views.include_system_prompt != self.include_system_prompt:
            views.include_system_prompt = self.include_system_prompt
        return views

    def _reserve(self, query: str | None) -> int:
        """Room for the new input, which the chain adds after the history."""
        if not query:
            return 0
        counter = self.memory.counter
        return counter.count_messages([HumanMessage(query)]) - counter.count_messages([])

    def _get_input_output(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> tuple[Any, Any]:
        if self.input_key is None:
            prompt_input_key = get_prompt_input_key(inputs, self.memory_variables)
        else:
            prompt_input_key = self.input_key
        if self.output_key is None:
            if len(outputs) == 1:
                output_key = next(iter(outputs))
            elif "output" in outputs:
                output_key = "output"
                warnings.warn(
                    f"'{type(self).__name__}' got multiple output keys: {outputs.keys()}. "
                    "The default 'output' key is being used. If this is not desired, "
                    "please manually set 'output_key'.",
                    stacklevel=3,
                )
            else:
                raise ValueError(
                    f"Got multiple output keys: {outputs.keys()}, cannot determine which to "
                    "store in memory. Please set the 'output_key' explicitly."
                )
        else:
            output_key = self.output_key
        return inputs[prompt_input_key], outputs[output_key]

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Save the exchange: facts extracted, compressed when due (summary by ``llm``).

        Raises:
            IdentityError: inside a run whose runtime context or config names
                another user than this memory's (nothing is stored).
        """
        check_run_user(self.memory.user_id)
        question, answer = self._get_input_output(inputs, outputs)
        self.memory.add_messages([HumanMessage(content=question), AIMessage(content=answer)])
        self._views.invalidate()

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async twin of :meth:`save_context`."""
        check_run_user(self.memory.user_id)
        question, answer = self._get_input_output(inputs, outputs)
        await self.memory.aadd_messages([HumanMessage(content=question), AIMessage(content=answer)])
        self._views.invalidate()

    def prune(self) -> None:
        """Compress now if a trigger is due (the classic ``prune``)."""
        self.memory.compress(force=False)
        self._views.invalidate()

    def clear(self) -> None:
        """Clear this thread's buffer (recent turns and running summary).

        The user's long-term memory - core facts and the archive - stays; use
        :meth:`forget_user` to delete it.
        """
        clear_thread(self.memory)
        self._views.invalidate()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    def forget_user(self) -> None:
        """Delete everything this user has, in every tier."""
        self.memory.forget_user()
        self._views.invalidate()
