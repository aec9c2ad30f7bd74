"""Summarisers: fold evicted turns into the running summary.

A summariser takes the previous running summary and the turns being evicted
and returns the new summary (recursive summarisation, as in MemGPT). Two ship:

* :class:`ExtractiveSummarizer` - no LLM, no cost: keeps the sentences of each
  turn that carry verifiable entities (numbers, dates, names, places,
  decisions), tagged with their turn number so they can be traced back to the
  archive.
* :class:`LLMSummarizer` - any LangChain chat model, with a prompt that keeps
  times, places, people, quantities and decisions.

Any object with ``summarize`` of the same signature works (async callers run it in a
worker thread, as every public class's async twin does).
A summariser signals failure by raising :class:`SummarizationError` (or any
exception); the buffer then stays exactly as it was.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
    >>> from langchain_tiered_memory.values.turns import Turn
    >>> turn = Turn(0, (HumanMessage("I fly to Lisbon on 12 May at 9:40."),
    ...                 AIMessage("Noted, have a good trip!")))
    >>> s = ExtractiveSummarizer(OpenAITokenCounter("gpt-4o-mini"))
    >>> print(s.summarize("", [turn], max_tokens=60))
    [t0] user: I fly to Lisbon on 12 May at 9:40.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_tiered_memory.budget.clipping import clip_text
from langchain_tiered_memory.budget.tokens import TokenCounter
from langchain_tiered_memory.models import ECHO, LOCAL
from langchain_tiered_memory.recall.time_expressions import MONTH_NAMES, MONTHS, WEEKDAYS
from langchain_tiered_memory.values.turns import Turn, message_text

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "SummarizationError",
    "Summarizer",
    "summarizer_from",
]


class SummarizationError(RuntimeError):
    """The summariser failed; the buffer is left unchanged and retried later."""


@runtime_checkable
class Summarizer(Protocol):
    """Folds turns into a running summary of at most ``max_tokens`` tokens."""

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Return the new running summary."""
        ...


# --- extractive ------------------------------------------------------------

#: The characters of a message the extractive summary reads (a pasted 10 MB log costs
#: what its first page does; the turn itself is archived whole).
READ_LIMIT = 8_000

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_MONTHS = "|".join([*MONTHS, *WEEKDAYS, "today", "tomorrow", "yesterday", "week", "month", "year"])
_SIGNALS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"\d"), 2.0),
    (re.compile(rf"\b({_MONTHS})\b", re.I), 1.5),
    (re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}"), 1.0),
    (
        re.compile(
            r"\b(decid\w*|agree\w*|plan\w*|will|going to|allerg\w*|prefer\w*|"
            r"love|hate|favou?rite|never|always|moved?|live|work\w*|name|"
            r"birthday|remember|promise\w*|need|must|deadline)\b",
            re.I,
        ),
        1.5,
    ),
    (re.compile(r"[年月日号点]|[一二三四五六七八九十百千万]+|过敏|喜欢|计划|决定|搬"), 1.5),
    (re.compile(r"\b(I|I'm|I've|my|me)\b"), 0.5),
)


def _score(sentence: str) -> float:
    score = 0.0
    for pattern, weight in _SIGNALS:
        if pattern.search(sentence):
            score += weight
    return score


_TAG = re.compile(r"^\[t[\d-]+\]\s*([^:]{1,64}):\s*")
_NAMED = re.compile(r"\d+(?:[.,:]\d+)*|(?<!^)(?<![.!?]\s)\b[A-Z][\w'-]+")
_CALENDAR = re.compile(
    # "may" is left out: as often a verb as a month
    rf"\b(?:{'|'.join([*(m for m in MONTH_NAMES if m != 'may'), *WEEKDAYS])})\b",
    re.I,
)


def _entities(text: str) -> set[str]:
    """The verifiable tokens of a text: numbers, names (capitalised, not sentence-initial),
    months and weekdays - the details a summary exists to keep.

    Example:
        >>> sorted(_entities("Sure. The Casa Azul is near Ribeira, check-in at 3 on Friday."))
        ['3', 'azul', 'casa', 'friday', 'ribeira']
        >>> _entities("Anything I can help with today?")
        set()
    """
    found = {m.group().lower() for m in _NAMED.finditer(text)}
    found |= {m.group().lower() for m in _CALENDAR.finditer(text)}
    return found


def _line_parts(line: str) -> tuple[str | None, str]:
    """``(speaker, text)`` of a summary line ``[tN] speaker: text``."""
    match = _TAG.match(line)
    if match is None:
        return None, line
    return match.group(1), line[match.end() :]


def _line_rank(line: str) -> tuple[int, float]:
    """How much a summary line is worth keeping: the user's statements before the
    assistant's, then by the sentence's signals (the ``[tN]`` tag is not scored)."""
    speaker, text = _line_parts(line)
    return (0 if speaker == "assistant" else 1, _score(text))


class ExtractiveSummarizer:
    """A summariser that needs no model: keeps the entity-bearing sentences.

    For each evicted turn it keeps up to ``sentences_per_turn`` of the
    highest-scoring sentences per speaker (numbers, dates, capitalised names,
    decisions and preferences score highest), each line tagged ``[tN]`` with
    its turn number. What the user says is what the summary is for: an
    assistant sentence is kept only when it adds a detail (a number, a name,
    a date) that the user's messages of the turn do not hold, so "Anything I
    can help with today?" never crowds out a statement. When the summary grows
    past ``max_tokens``, the assistant's lines go first, then the
    lowest-scoring of the user's (oldest first among equals); their turns stay
    in the archive. It reads each message's first :data:`READ_LIMIT`
    characters, so a huge message costs what its first page does.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
        >>> from langchain_tiered_memory.values.turns import Turn
        >>> s = ExtractiveSummarizer(OpenAITokenCounter("gpt-4o-mini"))
        >>> print(s.summarize("", [Turn(3, (
        ...     HumanMessage("I'm allergic to shellfish and my sister Ines lives in Porto."),
        ...     AIMessage("Noted! Anything I can help with today?")))], max_tokens=200))
        [t3] user: I'm allergic to shellfish and my sister Ines lives in Porto.

    Args:
        counter: The memory's token counter.
        sentences_per_turn: Sentences kept per speaker per turn.
        max_sentence_tokens: Longer sentences are clipped to this.
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        sentences_per_turn: int = 1,
        max_sentence_tokens: int = 48,
    ) -> None:
        self.counter = counter
        self.sentences_per_turn = sentences_per_turn
        self.max_sentence_tokens = max_sentence_tokens

    def _turn_lines(self, turn: Turn) -> list[str]:
        lines: list[str] = []
        said = set().union(
            *(
                _entities(message_text(m)[:READ_LIMIT])
                for m in turn.messages
                if isinstance(m, HumanMessage)
            )
        )
        for message in turn.messages:
            if not isinstance(message, HumanMessage | AIMessage):
                continue
            text = " ".join(message_text(message)[:READ_LIMIT].split())
            if not text:
                continue
            sentences = [s for s in _SENTENCE.split(text) if s.strip()]
            if isinstance(message, AIMessage):  # only what the assistant adds
                sentences = [s for s in sentences if _entities(s) - said]
            ranked = [
                pair
                for pair in sorted(enumerate(sentences), key=lambda p: (-_score(p[1]), p[0]))
                if _score(pair[1]) > 0
            ][: self.sentences_per_turn]
            if not ranked:
                continue  # small talk: nothing verifiable to keep
            kept = " ".join(s for _, s in sorted(ranked))
            kept = clip_text(kept, self.max_sentence_tokens, self.counter)
            role = message.name or ("user" if isinstance(message, HumanMessage) else "assistant")
            lines.append(f"[t{turn.index}] {role}: {kept}")
        return lines

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Append the new turns' key sentences, then trim to ``max_tokens``."""
        lines = [line for line in summary.splitlines() if line.strip()]
        new = [line for turn in turns for line in self._turn_lines(turn)]
        if not new and turns:
            # nothing verifiable: say so, so the summary still accounts for them
            new = [f"[t{turns[0].index}-t{turns[-1].index}] small talk, no details kept"]
        lines.extend(new)
        return self._fit(lines, max_tokens)

    def _fit(self, lines: list[str], max_tokens: int) -> str:
        text = "\n".join(lines)
        if self.counter.count_text(text) <= max_tokens:
            return text
        costs = [self.counter.count_text(line) + 1 for line in lines]
        total = sum(costs)
        order = sorted(range(len(lines)), key=lambda i: (_line_rank(lines[i]), i))
        dropped: set[int] = set()
        for i in order:
            if total <= max_tokens:
                break
            dropped.add(i)
            total -= costs[i]
        kept = [line for i, line in enumerate(lines) if i not in dropped]
        text = "\n".join(kept)
        while kept and self.counter.count_text(text) > max_tokens:
            kept.pop(0)
            text = "\n".join(kept)
        if not kept and lines:  # no whole line fits: the best one, clipped to the room
            best = max(range(len(lines)), key=lambda i: (_line_rank(lines[i]), i))
            text = clip_text(lines[best], max_tokens, self.counter)
        return text


# --- LLM ---------------------------------------------------------------------

DEFAULT_SUMMARY_PROMPT = """You maintain the running summary of a long conversation \
between a user and an assistant. Merge the new turns into the existing summary.

Rules:
- Keep every verifiable detail: dates and times, places, people's names, \
quantities and numbers, decisions, commitments, preferences, allergies and \
health facts, and what the user asked the assistant to remember.
- Prefer the latest information when facts change, and say what changed \
("moved from Paris to Berlin in May").
- Do not invent anything. Do not add advice. Write in the conversation's language.
- Tag facts with the turn numbers they come from, like [t12].
- At most {max_words} words.

Existing summary:
{summary}

New turns:
{turns}

Return only the updated summary."""


class LLMSummarizer:
    """Summarise with any LangChain chat model.

    Args:
        model: The chat model, or a spec for
            :func:`~langchain_tiered_memory.models.resolve_chat_model`
            (``"openai:gpt-4o-mini"``, ``"local"``, ...), resolved now.
        prompt: Template with ``{summary}``, ``{turns}`` and ``{max_words}``.
        timeout: Seconds before the call counts as failed.
        counter: When given, an over-long summary is clipped to ``max_tokens``
            with a marker rather than rejected.

    Raises (from ``summarize``):
        SummarizationError: on an exception, a timeout or an empty reply. The
            caller keeps the buffer unchanged.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> fake = GenericFakeChatModel(messages=iter([AIMessage("User: Ana, Lisbon.")]))
        >>> LLMSummarizer(fake).summarize("", [Turn(0, (HumanMessage("I'm Ana"),))],
        ...                               max_tokens=50)
        'User: Ana, Lisbon.'
    """

    def __init__(
        self,
        model: BaseChatModel | str,
        *,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        timeout: float = 60.0,
        counter: TokenCounter | None = None,
    ) -> None:
        from langchain_tiered_memory.models import require_chat_model

        for key in ("{summary}", "{turns}", "{max_words}"):
            if key not in prompt:
                raise ValueError(f"The summary prompt must contain {key}.")
        self.model = require_chat_model(model, what="summarizer")
        self.prompt = prompt
        self.timeout = timeout
        self.counter = counter
        self.calls = 0

    def _messages(self, summary: str, turns: Sequence[Turn], max_tokens: int) -> Any:
        rendered = "\n\n".join(f"[t{t.index}]\n{t.transcript()}" for t in turns)
        text = self.prompt.format(
            summary=summary or "(none yet)",
            turns=rendered,
            max_words=max(20, int(max_tokens * 0.7)),
        )
        return [SystemMessage(text)]

    def _check(self, reply: object, max_tokens: int) -> str:
        text = message_text(reply).strip() if isinstance(reply, AIMessage) else ""
        if not text:
            raise SummarizationError("The summariser returned an empty summary.")
        if self.counter is not None:
            text = clip_text(text, max_tokens, self.counter, note="; summary clipped")
        return text

    def summarize(self, summary: str, turns: Sequence[Turn], *, max_tokens: int) -> str:
        """Call the model (in a worker thread, so ``timeout`` is enforced)."""
        self.calls += 1
        messages = self._messages(summary, turns, max_tokens)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            reply = pool.submit(self.model.invoke, messages).result(timeout=self.timeout)
        except concurrent.futures.TimeoutError as exc:
            raise SummarizationError(f"The summariser timed out after {self.timeout}s.") from exc
        except Exception as exc:
            raise SummarizationError(f"The summariser failed: {exc!r}") from exc
        finally:
            pool.shutdown(wait=False)
        return self._check(reply, max_tokens)


def summarizer_from(spec: Any, counter: TokenCounter) -> Summarizer:
    """The summariser for ``summarizer=``: ``None``/``"extractive"`` (no LLM), a
    :class:`~langchain_tiered_memory.tiers.summarize.Summarizer`, or a model spec
    (wrapped in :class:`~langchain_tiered_memory.tiers.summarize.LLMSummarizer`).

    Raises:
        TypeError: for something that is neither.

    Example:
        >>> from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
        >>> type(summarizer_from("echo", OpenAITokenCounter())).__name__
        'LLMSummarizer'
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "extractive"):
        return ExtractiveSummarizer(counter)
    if isinstance(spec, str | BaseChatModel):
        return LLMSummarizer(spec, counter=counter)
    if callable(getattr(spec, "summarize", None)):
        return spec
    raise TypeError(
        "summarizer must be a Summarizer, a chat model, an init_chat_model string such as "
        f"'openai:gpt-4o-mini', {LOCAL!r}, {ECHO!r} or 'extractive'; got {type(spec).__name__}"
    )
