"""Ids: what a user or thread id may be, what stored text may hold, and record ids that
cannot collide.

User and thread ids come from applications (configs, HTTP requests, tool
calls), so they are checked once, at the edge, with one rule
(:func:`check_id`): a non-blank string of at most :data:`MAX_ID_LENGTH`
characters that UTF-8 can encode and that holds no NUL or other control
character. A string that breaks the rule is a :class:`ValueError` that names
the id; anything but a string (``0``, ``None``) is a :class:`TypeError`, never
converted.

Text an application stores directly (a record's text, a LangGraph store
item, an ``archival_memory_insert``) is checked with :func:`check_text`: no
lone UTF-16 surrogate (UTF-8 cannot encode it) and no NUL (Postgres text
cannot hold it), or a :class:`ValueError` naming the field and the position,
before anything is written. (Conversation text is repaired instead: see
:func:`~langchain_tiered_memory.values.turns.clean_text`.)

Record ids derived from user and thread ids escape ``%`` and ``:`` in each
part, so no two (user, thread) pairs ever share an id: user ``a:b`` with
thread ``c`` and user ``a`` with thread ``b:c`` get different ids.

Example:
    >>> turn_record_id("a:b", "c", 4) != turn_record_id("a", "b:c", 4)
    True
    >>> summary_record_id("a:b", "c", 4), summary_record_id("a", "b:c", 4)
    ('a%3Ab:c:summary:4', 'a:b%3Ac:summary:4')
    >>> check_id("ana\\x00", "user_id")
    Traceback (most recent call last):
    ...
    ValueError: user_id 'ana\\x00' holds a control character (U+0000); ids must be printable text
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_ID_LENGTH",
    "check_id",
    "check_text",
    "fact_record_id",
    "id_part",
    "summary_record_id",
    "turn_record_id",
]

#: Longest user or thread id accepted (characters).
MAX_ID_LENGTH = 512

_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def check_id(value: object, name: str = "id") -> str:
    """``value`` if it is a valid user or thread id, else a clear ``TypeError`` or ``ValueError``.

    Raises:
        TypeError: for a non-string (``0``, ``False``, ``None``): ids are never converted.
        ValueError: for an empty, blank (only whitespace) or over-long string, a lone
            UTF-16 surrogate (UTF-8 cannot store it) or a control character (NUL,
            newline, ...).

    Example:
        >>> check_id("ana", "user_id")
        'ana'
        >>> check_id(0, "user_id")
        Traceback (most recent call last):
        ...
        TypeError: user_id must be a non-empty string, got 0 (int)
    """
    if not isinstance(value, str):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a non-empty string, got {value!r} ({kind})")
    if not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if not value.strip():
        raise ValueError(f"{name} must not be blank, got {value!r}")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{name} is {len(value)} characters long; at most {MAX_ID_LENGTH}")
    if (bad := _SURROGATE.search(value)) is not None:
        raise ValueError(
            f"{name} {value!r} holds a lone UTF-16 surrogate (U+{ord(bad.group()):04X}), "
            "which UTF-8 cannot store; decode the id properly"
        )
    if (bad := _CONTROL.search(value)) is not None:
        raise ValueError(
            f"{name} {value!r} holds a control character (U+{ord(bad.group()):04X}); "
            "ids must be printable text"
        )
    return value


def check_text(value: str, name: str) -> str:
    """``value`` if every backend can store it as text, else a ``ValueError`` saying where.

    Raises:
        ValueError: for a lone UTF-16 surrogate or a NUL character, naming
            ``name``, the character and its position.

    Example:
        >>> check_text("likes tea", "text")
        'likes tea'
        >>> check_text("tea\\x00", "the item's text")
        Traceback (most recent call last):
        ...
        ValueError: the item's text holds a NUL character (U+0000) at position 3: Postgres text cannot hold it; remove it
    """  # noqa: E501
    if (bad := _UNSTORABLE.search(value)) is None:
        return value
    char, at = bad.group(), bad.start()
    if char == "\x00":
        what, why = "a NUL character (U+0000)", "Postgres text cannot hold it; remove it"
    else:
        what = f"a lone UTF-16 surrogate (U+{ord(char):04X})"
        why = "UTF-8 cannot encode it; decode the text properly"
    raise ValueError(f"{name} holds {what} at position {at}: {why}")


def id_part(value: str) -> str:
    """``value`` with ``%`` and ``:`` escaped, for use as one part of a ``:``-joined id.

    Example:
        >>> id_part("a:b%c")
        'a%3Ab%25c'
    """
    return value.replace("%", "%25").replace(":", "%3A")


def turn_record_id(user_id: str, thread_id: str, index: int) -> str:
    """The deterministic record id of a thread's turn (so archiving is idempotent).

    Example:
        >>> turn_record_id("ana", "t1", 3)
        'ana:t1:turn:3'
    """
    return f"{id_part(user_id)}:{id_part(thread_id)}:turn:{int(index)}"


def summary_record_id(user_id: str, thread_id: str, through: int) -> str:
    """The record id of a thread's running summary covering turns up to ``through``.

    Example:
        >>> summary_record_id("ana", "t1", 9)
        'ana:t1:summary:9'
    """
    return f"{id_part(user_id)}:{id_part(thread_id)}:summary:{int(through)}"


def fact_record_id(user_id: str, fact_id: str) -> str:
    """The record id of one version of a core fact.

    Example:
        >>> fact_record_id("ana", "f00d")
        'ana:fact:f00d'
    """
    return f"{id_part(user_id)}:fact:{id_part(fact_id)}"
