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

__all__ = [
    "Turn",
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
