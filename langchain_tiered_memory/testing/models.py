"""A scripted chat model for tests of the model extractor: its structured output is a script.

:class:`ScriptedExtractionModel` is LangChain's ``GenericFakeChatModel`` (a plain
call answers ``reply``) whose ``with_structured_output(schema)`` answers each
call with the next entry of ``script``:

* a list of decisions (dicts): the answer ``schema(decisions=[...])`` (a dict:
  ``schema.model_validate(dict)``);
* a string: an answer that does not parse - with ``include_raw=True`` the
  result carries the text as ``raw`` and a ``parsing_error``, as LangChain's
  providers return it; without, an ``OutputParserException`` is raised;
* an exception: raised (a model that failed).

An empty script answers with no decisions. Every prompt is kept in ``prompts``;
with ``usage`` set, the raw answer reports those token counts, as a provider does.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.write.model_extractor import Decisions
    >>> model = ScriptedExtractionModel(script=[[{"action": "add", "subject": "home_city",
    ...     "content": "lives in Porto", "source_turn": 0}], "not json"])
    >>> runnable = model.with_structured_output(Decisions, include_raw=True)
    >>> runnable.invoke([HumanMessage("...")])["parsed"].decisions[0].content
    'lives in Porto'
    >>> runnable.invoke([HumanMessage("...")])["parsing_error"] is not None
    True
    >>> model.invoke("hi").content, len(model.prompts)
    ('Noted.', 2)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Field

__all__ = ["ScriptedExtractionModel"]


class ScriptedExtractionModel(GenericFakeChatModel):
    """A fake chat model: plain calls answer ``reply``, structured calls follow ``script``.

    Attributes:
        script: One entry per structured call (decisions, unparsable text, or an
            exception), consumed in order.
        prompts: The messages of every structured call.
        usage: Token counts the raw answer reports (``input_tokens``,
            ``output_tokens``), or ``None`` (then the caller counts).
        reply: What a plain call answers.
    """

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: itertools.repeat(""))
    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    usage: dict[str, int] | None = None
    reply: str = "Noted."

    def model_post_init(self, context: Any) -> None:
        """Plain calls answer ``reply``."""
        self.messages = itertools.repeat(self.reply)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """The next entry of the script, as ``schema`` (see the module's docstring)."""

        def respond(messages: Any) -> Any:
            self.prompts.append(list(messages))
            item = self.script.pop(0) if self.script else []
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, str):
                error = OutputParserException(f"could not parse the answer: {item[:80]!r}")
                if not include_raw:
                    raise error
                return {"raw": self._raw(item), "parsed": None, "parsing_error": error}
            parsed = (
                schema.model_validate(item) if isinstance(item, dict) else schema(decisions=item)
            )
            if not include_raw:
                return parsed
            text = parsed.model_dump_json() if isinstance(parsed, BaseModel) else ""
            return {"raw": self._raw(text), "parsed": parsed, "parsing_error": None}

        return RunnableLambda(respond)

    def _raw(self, text: str) -> AIMessage:
        """The raw answer, with ``usage`` as its token counts."""
        raw = AIMessage(text)
        if self.usage is not None:
            sent = self.usage.get("input_tokens", 0)
            received = self.usage.get("output_tokens", 0)
            raw.usage_metadata = UsageMetadata(  # type: ignore[typeddict-item]
                input_tokens=sent, output_tokens=received, total_tokens=sent + received
            )
        return raw

    @property
    def calls(self) -> int:
        """Structured calls made."""
        return len(self.prompts)
