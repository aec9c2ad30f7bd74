"""Turns: the unit the buffer keeps, evicts and archives.

A turn is a user message, the assistant's reply, and every tool call with its
tool result in between. Turns travel whole: a tool call is never separated
from its result, because providers reject a prompt that splits them.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> msgs = [
    ...     HumanMessage("weather?"),
    ...     AIMessage("", tool_calls=[{"name": "w", "args": {}, "id": "c1"}]),
    ...     ToolMessage("sunny", tool_call_id="c1"),
    ...     AIMessage("It is sunny."),
    ...     HumanMessage("thanks"),
    ... ]
    >>> [len(t) for t in group_turns(msgs)]
    [4, 1]
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ABANDONED_TOOL_RESULT",
    "Turn",
    "assign_turns",
    "clean_message",
    "clean_text",
    "close_dangling_calls",
    "group_turns",
    "message_text",
    "pending_tool_call_ids",
    "render_transcript",
]


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Turn:
    """One exchange, kept whole.

    Attributes:
        index: Position of the turn in its thread (0-based, never reused).
        messages: The messages, in order.
        tokens: Their cost in a prompt under the memory's counter (no priming).
        created_at: When the turn's first message was added (UTC).
        clipped: True when a message was clipped to fit; the original went to
            the archive.
    """

    index: int
    messages: tuple[BaseMessage, ...]
    tokens: int = 0
    created_at: datetime = field(default_factory=_now)
    clipped: bool = False

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def has_pending_tool_calls(self) -> bool:
        """True while a tool call in this turn still waits for its result."""
        return bool(pending_tool_call_ids(self.messages))

    def with_messages(self, messages: Sequence[BaseMessage], tokens: int) -> Turn:
        """Return a copy holding ``messages`` (token count recomputed by caller)."""
        return replace(self, messages=tuple(messages), tokens=tokens)

    def transcript(self) -> str:
        """The turn as plain ``role: text`` lines."""
        return render_transcript(self.messages)


def message_text(message: BaseMessage) -> str:
    """The text of a message, whatever shape its content has.

    Example:
        >>> message_text(HumanMessage(content=[{"type": "text", "text": "hi"}]))
        'hi'
    """
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(f"[{block.get('type', 'non-text')} content]")
    return "\n".join(parts)


_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def clean_text(text: str) -> str:
    """``text`` with lone UTF-16 surrogates and NUL characters replaced by U+FFFD.

    A lone surrogate (``"\\ud800"``, e.g. from a bad JSON escape) cannot be
    encoded as UTF-8, so SQLite, tokenizers and HTTP clients reject it; left in
    a turn it would fail every later archive write of the thread. Postgres
    text cannot hold NUL. Conversation text is *repaired* this way (a turn is
    never refused for a bad escape); records and items an application stores
    directly are *checked* instead (:func:`~langchain_tiered_memory.ids.check_text`).
    Valid surrogate pairs are joined into their character.

    Example:
        >>> clean_text("ok \\ud800 \\ud83d\\ude00") == "ok \\ufffd \\U0001f600"
        True
        >>> clean_text("a\\x00b") == "a\\ufffdb"
        True
        >>> s = "plain"; clean_text(s) is s
        True
    """
    if not _UNSTORABLE.search(text):
        return text
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text.replace("\x00", "\ufffd")


def _clean_value(value: object) -> object:
    """``value`` with every string in it cleaned; the same object if nothing changed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        items = [_clean_value(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        pairs = [(_clean_value(k), _clean_value(v)) for k, v in value.items()]
        changed = any(
            k2 is not k or v2 is not v
            for (k, v), (k2, v2) in zip(value.items(), pairs, strict=True)
        )
        return dict(pairs) if changed else value
    return value


# message fields that carry text into the buffer, the archive or the prompt (not ``id``:
# graphs match messages by id)
_TEXT_FIELDS = (
    "content",
    "name",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "additional_kwargs",
    "response_metadata",
)


def clean_message(message: BaseMessage) -> BaseMessage:
    """Check a message's content and replace lone surrogates in its text.

    Returns ``message`` itself when it is clean, else a copy.

    Raises:
        TypeError: for content that is not a string or a list of strings and
            dicts (e.g. ``None`` or a dict, possible with ``model_construct``),
            a ``text`` block whose ``text`` is not a string, or tool-call
            arguments that are not JSON.

    Example:
        >>> clean_message(HumanMessage("hi \\udc00")).content == "hi \\ufffd"
        True
        >>> clean_message(HumanMessage.model_construct(content=None))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: HumanMessage content must be a string or a list of content blocks ...
    """
    content = message.content
    kind = type(message).__name__
    if isinstance(content, list):
        for i, block in enumerate(content):
            if isinstance(block, dict):
                if block.get("type") == "text" and not isinstance(block.get("text"), str):
                    raise TypeError(
                        f"{kind} content block {i} is a 'text' block whose 'text' is "
                        f"{type(block.get('text')).__name__}, not a string"
                    )
            elif not isinstance(block, str):
                raise TypeError(
                    f"{kind} content block {i} is a {type(block).__name__}; content blocks "
                    "are strings or dicts such as {'type': 'text', 'text': '...'}"
                )
    elif not isinstance(content, str):
        raise TypeError(
            f"{kind} content must be a string or a list of content blocks (strings or dicts "
            f"such as {{'type': 'text', 'text': '...'}}), got {type(content).__name__}"
        )
    for call in getattr(message, "tool_calls", None) or ():
        try:
            json.dumps(call.get("args"))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"The arguments of tool call {call.get('name')!r} ({call.get('id')!r}) are not "
                f"JSON ({exc}); tool-call args must be JSON values, as providers send them."
            ) from exc
    updates: dict[str, object] = {}
    for name in _TEXT_FIELDS:
        value = getattr(message, name, None)
        cleaned = _clean_value(value)
        if cleaned is not value:
            updates[name] = cleaned
    return message.model_copy(update=updates) if updates else message


_ROLE = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def render_transcript(messages: Iterable[BaseMessage]) -> str:
    """Render messages as ``role: text`` lines (tool calls shown by name).

    Example:
        >>> print(render_transcript([HumanMessage("hi"), AIMessage("hello")]))
        user: hi
        assistant: hello
    """
    lines: list[str] = []
    for message in messages:
        role = message.name or _ROLE.get(message.type, message.type)
        text = message_text(message).strip()
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        if isinstance(message, ToolMessage):
            role = f"tool result ({message.name or message.tool_call_id})"
        lines.append(f"{role}: {text}")
    return "\n".join(lines)


def pending_tool_call_ids(messages: Iterable[BaseMessage]) -> set[str]:
    """Ids of tool calls in ``messages`` that have no tool result yet."""
    pending: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            pending.update(c["id"] for c in message.tool_calls if c.get("id") is not None)  # type: ignore[misc]
        elif isinstance(message, ToolMessage):
            pending.discard(message.tool_call_id)
    return pending


def group_turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Split a message list into turns (pure).

    A human message opens a new turn unless a tool call of the current turn
    is still waiting for its result. Messages before the first human message
    form a turn of their own. System messages are not turns: pass them as the
    memory's system prompt instead.

    Raises:
        ValueError: for a system message, or a tool result whose call is not
            in the same turn.
    """
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            raise ValueError(
                "System messages are pinned, not buffered: pass the system prompt "
                "as system_prompt=..., not as a turn."
            )
        if isinstance(message, HumanMessage) and not (turns and pending_tool_call_ids(turns[-1])):
            turns.append([message])
            continue
        if isinstance(message, ToolMessage) and (
            not turns or message.tool_call_id not in pending_tool_call_ids(turns[-1])
        ):
            raise ValueError(
                f"Tool result for call {message.tool_call_id!r} has no matching "
                "tool call in the same turn. Add the AIMessage with that tool "
                "call first."
            )
        if not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


#: Content of the tool result written for a tool call still unanswered when the
#: next user message arrives (see :func:`close_dangling_calls`).
ABANDONED_TOOL_RESULT = "No result: the tool call was abandoned when the next user message arrived."


def close_dangling_calls(
    open_turn: Sequence[BaseMessage], messages: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """``messages`` with an error result inserted for every tool call still waiting
    when a user message arrives (pure).

    A turn stays open while a tool call waits for its result; a call whose result
    never comes would otherwise keep it open for the rest of the thread: one turn
    that can never be paged out, and a prompt providers reject.

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "w", "args": {}, "id": "c1"}])
        >>> [m.type for m in close_dangling_calls([HumanMessage("hi"), call],
        ...                                       [HumanMessage("never mind")])]
        ['tool', 'human']
    """
    pending: dict[str, str] = {}
    out: list[BaseMessage] = []
    for i, message in enumerate([*open_turn, *messages]):
        if isinstance(message, HumanMessage) and pending:
            logger.warning(
                "tool call(s) %s got no result before the next user message; closing them",
                sorted(pending),
            )
            out.extend(
                ToolMessage(ABANDONED_TOOL_RESULT, tool_call_id=call_id, name=name, status="error")
                for call_id, name in pending.items()
            )
            pending = {}
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") is not None:
                    pending[str(call["id"])] = call["name"]
        elif isinstance(message, ToolMessage):
            pending.pop(message.tool_call_id, None)
        if i >= len(open_turn):
            out.append(message)
    return out


def assign_turns(
    open_turn: Sequence[BaseMessage],
    open_index: int | None,
    next_index: int,
    messages: Sequence[BaseMessage],
) -> list[tuple[int, BaseMessage]]:
    """The turn index of each message appended to a thread (pure).

    What every backend runs inside the append transaction, on the thread's
    newest turn as stored (``open_turn``, index ``open_index``; ``None`` when
    the thread has no open turn) - never on a cached copy. Tool calls left
    unanswered when a user message arrives get an error result first
    (:func:`close_dangling_calls`); then the rules of :func:`group_turns`.

    Raises:
        ValueError: for a system message, or a tool result whose call is not
            in its turn. Nothing is appended then.

    Example:
        >>> planned = assign_turns([HumanMessage("hi")], 4, 5,
        ...                        [AIMessage("hello"), HumanMessage("bye")])
        >>> [(turn, message.content) for turn, message in planned]
        [(4, 'hello'), (5, 'bye')]
    """
    head = list(open_turn) if open_index is not None else []
    messages = close_dangling_calls(head, messages)
    grouped = group_turns([*head, *messages])
    out: list[tuple[int, BaseMessage]] = []
    index = next_index
    for number, group in enumerate(grouped):
        if head and number == 0:
            assert open_index is not None
            out.extend((open_index, m) for m in group[len(head) :])
            continue
        out.extend((index, m) for m in group)
        index += 1
    return out
