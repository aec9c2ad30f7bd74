"""The agent's own chat model as the fact extractor: one structured-output call per batch.

:class:`ModelExtractor` shows the model the user's current facts (each under
a short id, ``[f1]``) and a batch of new turns (``[t12]``), and the model
answers per candidate fact: ``add``, ``update`` (naming the fact it
replaces), ``end`` (a fact that stopped holding) or ``nothing``, each with a
short reason. :func:`plan_changes` turns the answer into the writes one
transaction commits (:meth:`~langchain_tiered_memory.storage.base.MemoryBackend.commit_extraction`).

What the model sees is only the user's own words (:func:`extractable_text`):
the ``<memory_context>`` block memory folds into a prompt's newest user
message (recalled records, core facts) is cut off, and so are quoted, pasted
and forwarded passages (:func:`~langchain_tiered_memory.text.strip_quoted`,
fenced code, ``>`` lines); assistant and tool messages are never shown. So
recalled text is never extracted again, and a friend's bio never becomes the
user's facts. A call - the prompt and the answer's schema - fits
``max_input_tokens`` counted with the memory's counter: the oldest turns of
the batch that fit go in, whole, the rest wait for the next call; a turn too
long for any call is left to the caller (the memory runs the rules on it). The
prompts are text files in ``write/prompts/``.

A model's decision acts only where it can be checked: ``update`` and ``end``
must name a fact that was in the prompt, every decision must cite a turn of
the batch, and an added fact's words must appear in that turn (a fact the
model made up, or copied from the current facts, is dropped).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.values.turns import Turn
    >>> extractable_text(HumanMessage('My friend\\'s bio: "Tom lives in Oslo and cooks." I live in Porto.'))
    "My friend's bio: I live in Porto."
    >>> grounded("lives in Porto", "I live in Porto.")
    True
    >>> grounded("lives in Oslo", "I live in Porto.")
    False
"""  # noqa: E501

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, ValidationError

from langchain_tiered_memory.budget.markup import split_turn_memory
from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.models import ECHO, require_chat_model
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import FactChange
from langchain_tiered_memory.text import strip_quoted
from langchain_tiered_memory.values.facts import CoreFact, FactCategory
from langchain_tiered_memory.values.turns import Turn, message_text
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.extraction import OFFLINE_EXTRACTORS
from langchain_tiered_memory.write.fact_time import clause_time
from langchain_tiered_memory.write.forget import detect_forget
from langchain_tiered_memory.write.importance import rate_importance

logger = logging.getLogger(__name__)

__all__ = [
    "BatchAnswer",
    "Decision",
    "MalformedAnswer",
    "ModelExtractor",
    "extractable_text",
    "grounded",
    "load_prompt",
    "model_extractor_for",
    "plan_changes",
]

Action = Literal["add", "update", "end", "nothing"]

#: The module of LangChain's fake chat models (:meth:`ModelExtractor.supports_structured_output`).
_FAKES = "langchain_core.language_models.fake_chat_models"


def load_prompt(name: str) -> str:
    """A prompt shipped in ``langchain_tiered_memory/write/prompts/`` (package data).

    Example:
        >>> "{turns}" in load_prompt("extract_facts.user.txt")
        True
    """
    return (
        resources.files("langchain_tiered_memory.write")
        .joinpath("prompts")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


class Decision(BaseModel):
    """One decision of the model about one candidate fact (the structured output)."""

    action: Action = Field(description="add, update, end or nothing")
    fact_id: str | None = Field(
        default=None, description="update/end: the id of the current fact, e.g. 'f2'"
    )
    subject: str = Field(default="", description="short key, e.g. 'home_city', 'likes:jazz'")
    content: str = Field(default="", description="the fact in plain words, names/dates kept")
    category: FactCategory = "fact"
    stated: bool = Field(default=True, description="true only if the user said it outright")
    confidence: float = Field(default=0.9, ge=0, le=1)
    source_turn: int | None = Field(default=None, description="the [tN] number it came from")
    reason: str = Field(default="", description="why, in a few words")


class Decisions(BaseModel):
    """The model's whole answer for a batch."""

    decisions: list[Decision] = Field(default_factory=list)


class MalformedAnswer(ValueError):
    """The model answered an extraction call, but not with the schema.

    Attributes:
        turns: The turns the call covered (empty where not known yet).
    """

    def __init__(self, message: str, turns: Sequence[Turn] = ()) -> None:
        super().__init__(message)
        self.turns = tuple(turns)


@dataclass(frozen=True)
class BatchAnswer:
    """What one model call decided: the turns it covered (the oldest of the batch that
    fit the prompt), its decisions, and the prompt's fact ids (``f1`` -> fact)."""

    turns: tuple[Turn, ...]
    decisions: tuple[Decision, ...]
    aliases: dict[str, CoreFact] = field(default_factory=dict)

    @property
    def through(self) -> int:
        """The newest turn covered (the extraction watermark after this batch)."""
        return max(t.index for t in self.turns)


_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.M)


def extractable_text(message: BaseMessage) -> str:
    """The user's own words in ``message`` (``""`` for anything but a user message).

    Cut off: the per-turn ``<memory_context>`` block memory put in a prompt
    (recalled records and core facts, should such a prompt ever be stored),
    quoted passages and text to work on
    (:func:`~langchain_tiered_memory.text.strip_quoted`), fenced code and
    ``>`` quoted lines (pasted text).

    Example:
        >>> extractable_text(HumanMessage("> Ana is vegan\\nI'm not, though."))
        "I'm not, though."
    """
    if not isinstance(message, HumanMessage):
        return ""
    _, _, said = split_turn_memory(message_text(message))
    said = _QUOTE_LINE.sub(" ", _FENCE.sub(" ", said))
    return strip_quoted(said).strip()


_WORD = re.compile(r"[^\W_]{3,}|\d+|[\u4e00-\u9fff]")
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "have",
        "has",
        "had",
        "was",
        "were",
        "are",
        "not",
        "but",
        "you",
        "your",
        "user",
        "about",
        "into",
        "than",
        "then",
        "they",
        "them",
        "their",
        "there",
        "here",
        "will",
        "would",
        "can",
        "could",
        "just",
        "very",
        "now",
        "also",
        "been",
        "being",
        "does",
        "did",
        "its",
        "it's",
        "i'm",
    }
)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def grounded(content: str, said: str) -> bool:
    """Whether ``content`` keeps the user's words: every name and number in it (a
    capitalised word, digits) appears in ``said``, and so does at least one other
    content word (or a Chinese character). A fact without them is the model's own -
    made up, read from text that was not shown, or copied from the current facts."""
    said_lower = said.lower()
    names = re.findall(r"\b(?:[A-Z][\w'-]*|\d[\d.,:]*)", content)
    if any(n.lower() not in said_lower for n in names if n != "I"):
        return False
    said_words = _words(said)
    stems = {w[:4] for w in said_words}
    return any(w in said_words or w[:4] in stems for w in _words(content))


def _render_facts(facts: Sequence[CoreFact]) -> tuple[str, dict[str, CoreFact]]:
    aliases = {f"f{i}": fact for i, fact in enumerate(facts, 1)}
    lines = [
        f"[{alias}] {' '.join(f.subject.split())}: {' '.join(f.content.split())}"
        for alias, f in aliases.items()
    ]
    return ("\n".join(lines) or "(none)"), aliases


def _render_turn(turn: Turn) -> str:
    said = " ".join(t for m in turn.messages if (t := extractable_text(m)))
    return f"[t{turn.index}] {' '.join(said.split())}"


def _fill(template: str, **values: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


class ModelExtractor:
    """Facts from a batch of turns with one structured-output call of a chat model.

    Args:
        model: A chat model with ``with_structured_output``, or a model spec
            (:func:`~langchain_tiered_memory.models.resolve_chat_model`).
        system_prompt: The instructions (default: ``prompts/extract_facts.system.txt``).
        user_prompt: The data message, with ``{facts}`` and ``{turns}``
            (default: ``prompts/extract_facts.user.txt``).
        max_facts: Current facts shown at most (the most important first).

    Attributes:
        calls: Model calls made (those that failed included).
        input_tokens: Prompt tokens sent (the provider's count where it reports one).
        output_tokens: Answer tokens received (likewise).
        parse_failures: Calls whose answer was no valid structured output (the
            rules extract that batch instead).
        decisions: Decisions answered other than ``nothing`` (before any is
            dropped as ungrounded).
        seconds: Wall time spent in model calls.

    Raises:
        ValueError: for a user prompt without ``{facts}`` or ``{turns}``.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from langchain_core.runnables import RunnableLambda
        >>> from langchain_tiered_memory.budget.tokens import ApproximateTokenCounter
        >>> class Scripted(GenericFakeChatModel):
        ...     def with_structured_output(self, schema, **kw):
        ...         return RunnableLambda(lambda _: schema(decisions=[{"action": "add",
        ...             "subject": "home_city", "content": "lives in Porto",
        ...             "source_turn": 0, "reason": "the user said so"}]))
        >>> ex = ModelExtractor(Scripted(messages=iter([])))
        >>> answer = ex.decide([Turn(0, (HumanMessage("I live in Porto."),))], [],
        ...                    counter=ApproximateTokenCounter(), max_input_tokens=2000)
        >>> [(d.action, d.content) for d in answer.decisions], answer.through, ex.calls
        ([('add', 'lives in Porto')], 0, 1)
    """

    def __init__(
        self,
        model: BaseChatModel | str,
        *,
        system_prompt: str | None = None,
        user_prompt: str | None = None,
        max_facts: int = 60,
    ) -> None:
        self.model = require_chat_model(model, what="extractor")
        self.system_prompt = system_prompt or load_prompt("extract_facts.system.txt")
        self.user_prompt = user_prompt or load_prompt("extract_facts.user.txt")
        for slot in ("{facts}", "{turns}"):
            if slot not in self.user_prompt:
                raise ValueError(f"The extraction user prompt must contain {slot}.")
        self.max_facts = max_facts
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.parse_failures = 0
        self.decisions = 0
        self.seconds = 0.0

    def supports_structured_output(self) -> bool:
        """Whether the model can give structured output at all (fake and echo models
        cannot: the memory then runs the rules).

        LangChain's fake chat models reply with scripted text, so they cannot, even
        where a subclass accepts tools; a subclass that overrides
        ``with_structured_output`` (to script the answers) can.
        """
        kind = type(self.model)
        fake = any(c.__module__ == _FAKES for c in kind.__mro__)
        if fake and kind.with_structured_output is BaseChatModel.with_structured_output:
            return False
        try:
            self.model.with_structured_output(Decisions)
        except NotImplementedError:
            return False
        return True

    # -- the prompt ------------------------------------------------------------------

    def schema_tokens(self, counter: TokenCounter) -> int:
        """Tokens the answer's schema adds to every call (sent as a tool or a response
        format, counted as the OpenAI tool JSON)."""
        return counter.count_text(json.dumps(convert_to_openai_tool(Decisions)))

    def overhead(self, counter: TokenCounter) -> int:
        """Tokens of a call without facts or turns: the instructions, the data message's
        frame and the answer's schema. A budget no larger than this fits no turn."""
        frame = [SystemMessage(self.system_prompt), HumanMessage(_fill(self.user_prompt))]
        return counter.count_messages(frame) + self.schema_tokens(counter)

    def prompt(
        self,
        turns: Sequence[Turn],
        facts: Sequence[CoreFact],
        *,
        counter: TokenCounter,
        max_input_tokens: int,
    ) -> tuple[list[BaseMessage], tuple[Turn, ...], dict[str, CoreFact]]:
        """The messages for one call, the turns they cover and the fact ids.

        The call - these messages plus the answer's schema
        (:meth:`schema_tokens`), counted with ``counter`` - fits
        ``max_input_tokens``: the oldest turns of ``turns`` that fit go in,
        whole; the current facts, most important first, get at most half of
        the room and never the room the oldest turn needs. When not even the
        oldest turn fits (with no facts), nothing is covered: ``([], (), {})``
        (the caller extracts that turn another way).
        """
        ordered = sorted(turns, key=lambda t: t.index)
        schema = self.schema_tokens(counter)
        room = max_input_tokens - self.overhead(counter)
        if room <= 0 or not ordered:
            return [], (), {}
        lines = [_render_turn(t) for t in ordered]
        first = counter.count_text(lines[0])
        if first > room:
            return [], (), {}
        ranked = sorted(facts, key=lambda f: (-f.importance, f.created_at))[: self.max_facts]
        shown: list[CoreFact] = []
        for fact in ranked:  # at most half the room, and never the oldest turn's
            if counter.count_text(_render_facts([*shown, fact])[0]) > min(room // 2, room - first):
                break
            shown.append(fact)
        left = room - counter.count_text(_render_facts(shown)[0])
        count = 1
        while count < len(lines) and counter.count_text("\n".join(lines[: count + 1])) <= left:
            count += 1  # this turn fits; the newer ones wait for the next call if not
        while True:  # the pieces were counted apart: check the whole call, and trim
            facts_text, aliases = _render_facts(shown)
            data = _fill(self.user_prompt, facts=facts_text, turns="\n".join(lines[:count]))
            messages: list[BaseMessage] = [SystemMessage(self.system_prompt), HumanMessage(data)]
            if counter.count_messages(messages) + schema <= max_input_tokens:
                return messages, tuple(ordered[:count]), aliases
            if count > 1:
                count -= 1
            elif shown:
                shown.pop()
            else:
                return [], (), {}

    # -- calling the model -------------------------------------------------------------

    def _account(self, result: Any, messages: Sequence[BaseMessage], counter: TokenCounter) -> Any:
        """The parsed answer; counts the call's tokens (the provider's, else counted).

        Raises:
            MalformedAnswer: for an answer that is no valid structured output (counted
                in :attr:`parse_failures`).
        """
        raw: Any = None
        parsing_error: Any = None
        if isinstance(result, dict) and "parsed" in result:
            raw, parsing_error, result = (
                result.get("raw"),
                result.get("parsing_error"),
                result["parsed"],
            )
        usage = getattr(raw, "usage_metadata", None) if isinstance(raw, AIMessage) else None
        if usage:
            self.input_tokens += int(usage.get("input_tokens", 0))
            self.output_tokens += int(usage.get("output_tokens", 0))
        else:
            self.input_tokens += counter.count_messages(messages)
            if isinstance(result, BaseModel):
                text = result.model_dump_json()
            else:
                text = message_text(raw) if isinstance(raw, AIMessage) else str(result or "")
            self.output_tokens += counter.count_text(text)
        try:
            if parsing_error is not None:
                raise MalformedAnswer(f"malformed extraction answer: {parsing_error}")
            if isinstance(result, dict):
                try:
                    result = Decisions.model_validate(result)
                except ValidationError as exc:
                    raise MalformedAnswer(f"malformed extraction answer: {exc}") from exc
            if not isinstance(result, Decisions):
                raise MalformedAnswer(f"malformed extraction answer: {type(result).__name__}")
        except MalformedAnswer:
            self.parse_failures += 1
            raise
        self.decisions += sum(d.action != "nothing" for d in result.decisions)
        return result

    def _call(self, messages: list[BaseMessage], counter: TokenCounter) -> Any:
        """One counted, timed model call; the parsed answer."""
        self.calls += 1
        started = time.perf_counter()
        try:
            result = self._runnable().invoke(messages)
        except OutputParserException:
            self.parse_failures += 1
            self.input_tokens += counter.count_messages(messages)
            raise
        finally:
            self.seconds += time.perf_counter() - started
        return self._account(result, messages, counter)

    async def _acall(self, messages: list[BaseMessage], counter: TokenCounter) -> Any:
        """Async twin of :meth:`_call`."""
        self.calls += 1
        started = time.perf_counter()
        try:
            result = await self._runnable().ainvoke(messages)
        except OutputParserException:
            self.parse_failures += 1
            self.input_tokens += counter.count_messages(messages)
            raise
        finally:
            self.seconds += time.perf_counter() - started
        return self._account(result, messages, counter)

    def _runnable(self) -> Any:
        try:
            return self.model.with_structured_output(Decisions, include_raw=True)
        except TypeError:  # a model whose with_structured_output takes no include_raw
            return self.model.with_structured_output(Decisions)

    def decide(
        self,
        turns: Sequence[Turn],
        facts: Sequence[CoreFact],
        *,
        counter: TokenCounter,
        max_input_tokens: int,
    ) -> BatchAnswer | None:
        """One model call on the oldest turns of ``turns`` that fit (:meth:`prompt`);
        ``None``, with no call, when not even the oldest turn fits.

        Raises:
            MalformedAnswer: the model answered, but not with the schema (the caller
                extracts those turns another way: asking again would cost another call
                and most likely get the same answer).
            Exception: whatever the model raises (the caller keeps the batch pending
                and retries).
        """
        messages, covered, aliases = self.prompt(
            turns, facts, counter=counter, max_input_tokens=max_input_tokens
        )
        if not covered:
            return None
        try:
            answer = self._call(messages, counter)
        except (OutputParserException, MalformedAnswer) as exc:
            raise MalformedAnswer(str(exc), covered) from exc
        return BatchAnswer(covered, tuple(answer.decisions), aliases)

    async def adecide(
        self,
        turns: Sequence[Turn],
        facts: Sequence[CoreFact],
        *,
        counter: TokenCounter,
        max_input_tokens: int,
    ) -> BatchAnswer | None:
        """Async twin of :meth:`decide`."""
        messages, covered, aliases = self.prompt(
            turns, facts, counter=counter, max_input_tokens=max_input_tokens
        )
        if not covered:
            return None
        try:
            answer = await self._acall(messages, counter)
        except (OutputParserException, MalformedAnswer) as exc:
            raise MalformedAnswer(str(exc), covered) from exc
        return BatchAnswer(covered, tuple(answer.decisions), aliases)


def model_extractor_for(spec: Any, model: Any = None) -> ModelExtractor | None:
    """The model extractor a memory runs for ``extractor=spec`` and ``model=model``, or
    ``None`` for the rules (or another :class:`~langchain_tiered_memory.write.writer.Extractor`).

    * a :class:`ModelExtractor`: it;
    * an offline extractor's name (``"rules+links"``, ``"rules"``, ``"learned"``), or
      an object with ``extract``: ``None``;
    * a chat model or a model spec (``"openai:gpt-4o-mini"``, ``"local"``): a
      ``ModelExtractor`` on it;
    * ``None`` (the default): a ``ModelExtractor`` on ``model`` when it is a chat model.

    A model that cannot give structured output (the echo model, LangChain's fake
    models) gets the offline default (``None``), with a log line saying so.

    Example:
        >>> model_extractor_for("rules+links") is None, model_extractor_for(None, "gpt-4o") is None
        (True, True)
    """
    if isinstance(spec, ModelExtractor):
        return spec
    if spec is None:
        if not isinstance(model, BaseChatModel):
            return None
        spec = model
    elif isinstance(spec, str) and spec.strip().lower() in OFFLINE_EXTRACTORS:
        return None  # the offline extractors
    elif not isinstance(spec, str | BaseChatModel):
        return None  # an Extractor object (or a wrong value, which extractor_from refuses)
    extractor = ModelExtractor(spec)
    echo = getattr(extractor.model, "_llm_type", None) == ECHO  # answers with its prompt
    if echo or not extractor.supports_structured_output():
        logger.info(
            "%s gives no structured output: the offline extractor runs instead",
            type(extractor.model).__name__,
        )
        return None
    return extractor


def _said_by_turn(turns: Sequence[Turn]) -> dict[int, str]:
    said: dict[int, str] = {}
    for turn in turns:
        texts = [extractable_text(m) for m in turn.messages]
        users = [m for m in turn.messages if isinstance(m, HumanMessage)]
        if any(detect_forget(message_text(m)) for m in users):
            continue  # a forget request is a command, never a fact
        said[turn.index] = " ".join(t for t in texts if t)
    return said


def _other_names(
    fact: CoreFact, shown: Iterable[CoreFact], schema: AttributeSchema, turn: int | None
) -> list[FactChange]:
    """Ends for the prompt's facts that hold ``fact``'s single value under another name
    (a ``location`` fact written before ``home_city`` was declared)."""
    if not schema.is_single(fact.subject):
        return []
    return [
        FactChange(
            end=(old.subject, old.block),
            reason=f"replaced by {fact.subject}",
            audit={"extraction": "model", "action": "end", "reason": "one attribute", "turn": turn},
        )
        for old in shown
        if old.subject != fact.subject
        and old.block == fact.block
        and schema.canonical(old.subject, old.content) == fact.subject
    ]


def plan_changes(
    answer: BatchAnswer,
    *,
    user_id: str,
    thread_id: str | None,
    min_confidence: float = 0.75,
    schema: AttributeSchema | None = None,
) -> tuple[list[FactChange], list[MemoryRecord], list[dict[str, Any]]]:
    """The writes a batch answer makes (pure): core-fact changes, "possibly" records for
    inferred or unsure facts, and the decisions dropped (with why, for the log).

    Subjects go through ``schema``'s :meth:`~.attributes.AttributeSchema.canonical`
    (default: the declared attributes), as the rules' do: a model that says "home city",
    "home_city" or "location" files under one attribute, so a new value supersedes the
    current one whichever extractor wrote it. An ``update`` whose fact id names no fact
    of the prompt is filed by its subject (and dropped without one); a fact of the prompt
    stored under another name of the same single-valued attribute is ended. A fact gets
    the time it holds (``valid_from``, ``valid_until``) from the clause of the user's turn
    that states it, read as the rules read it
    (:func:`~langchain_tiered_memory.write.fact_time.clause_time`): "moved to Porto last
    month", "my flight is tomorrow".

    Example:
        >>> turn = Turn(4, (HumanMessage("We moved to Porto!"),))
        >>> old = CoreFact.new("home_city", "lives in Lisbon")
        >>> answer = BatchAnswer((turn,), (Decision(action="update", fact_id="f1",
        ...     content="moved to Porto", source_turn=4, reason="moved"),), {"f1": old})
        >>> changes, possible, dropped = plan_changes(answer, user_id="ana", thread_id="t")
        >>> [(c.fact.subject, c.fact.content, c.audit["action"]) for c in changes]
        [('home_city', 'moved to Porto', 'update')]
    """
    schema = schema or AttributeSchema()
    said = _said_by_turn(answer.turns)
    at = {t.index: t.created_at for t in answer.turns}
    changes: list[FactChange] = []
    possible: list[MemoryRecord] = []
    dropped: list[dict[str, Any]] = []

    def drop(decision: Decision, why: str) -> None:
        dropped.append({"action": decision.action, "why": why, "turn": decision.source_turn})

    for d in answer.decisions:
        if d.action == "nothing":
            continue
        if d.source_turn not in said:
            drop(d, "cites no turn of the batch")
            continue
        target = answer.aliases.get((d.fact_id or "").strip().strip("[]"))
        reason = " ".join(d.reason.split())[:200]
        audit: dict[str, Any] = {
            "extraction": "model",
            "action": d.action,
            "reason": reason,
            "turn": d.source_turn,
        }
        if d.action == "end":
            if target is None:
                drop(d, "ends no fact of the prompt")
                continue
            changes.append(
                FactChange(
                    end=(target.subject, target.block), reason=reason or "ended", audit=audit
                )
            )
            continue
        if d.action == "update" and target is None and not d.subject.strip():
            drop(d, "replaces no fact of the prompt")
            continue
        content = d.content.strip()
        named = target.subject if target is not None else d.subject
        subject = schema.canonical(named, content) if named.strip() else ""
        if not subject or not content:
            drop(d, "no subject or content")
            continue
        if not grounded(content, said[d.source_turn]):
            drop(d, "not in the user's own words")
            continue
        importance = rate_importance(content, category=d.category)
        if d.stated and d.confidence >= min_confidence:
            # when it holds: read, as the rules read it, from the user's clause that says it
            held = clause_time(said[d.source_turn], content, at[d.source_turn])
            fact = CoreFact.new(
                subject,
                content,
                block=target.block if target is not None else "human",
                category=d.category,
                confidence=d.confidence,
                stated=True,
                source_turn=d.source_turn,
                source="user",
                importance=importance,
                created_at=at[d.source_turn],
                source_thread=thread_id,
                valid_from=held.valid_from if held else None,
                valid_until=held.valid_until if held else None,
            )
            changes.append(
                FactChange(fact=fact, reason=f"superseded by turn {d.source_turn}", audit=audit)
            )
            changes += _other_names(fact, answer.aliases.values(), schema, d.source_turn)
        else:
            possible.append(
                MemoryRecord.new(
                    user_id=user_id,
                    thread_id=None,
                    kind="fact",
                    text=f"{subject}: {content}",
                    importance=importance,
                    sources=(f"turn:{d.source_turn}",),
                    metadata={
                        "stated": d.stated,
                        "confidence": d.confidence,
                        "possibly": True,
                        "subject": subject,
                        "thread_id": thread_id,
                    },
                )
            )
    return changes, possible, dropped
