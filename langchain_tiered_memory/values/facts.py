"""Core facts as values: the versioned fact, its upsert and end rules, and the store protocol.

The bottom of the fact tier: pure types and functions that every layer above
shares - the stores (:mod:`langchain_tiered_memory.storage`) apply
:func:`plan_upsert` and :func:`plan_end` inside their writes, and core memory
(:mod:`langchain_tiered_memory.tiers.core`) ranks and renders the facts.

Example:
    >>> old = CoreFact.new("home_city", "lives in Paris")
    >>> update = plan_upsert(old, CoreFact.new("home_city", "moved to Berlin"), reason="moved")
    >>> update.fact.content, update.superseded.status
    ('moved to Berlin', 'superseded')
"""

from __future__ import annotations

import html
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Protocol

from langchain_tiered_memory.expiry import utc
from langchain_tiered_memory.values.turns import clean_text

__all__ = [
    "BLOCKS",
    "CoreFact",
    "Expect",
    "FactCategory",
    "FactConflict",
    "FactStatus",
    "FactStore",
    "FactUpdate",
    "check_fact",
    "current_fact",
    "held_note",
    "plan_end",
    "plan_upsert",
    "utc_now",
    "when_text",
]

FactCategory = Literal["preference", "fact", "plan", "task_state"]
FactStatus = Literal["active", "superseded", "archived", "ended"]
#: Optional times a stored row leaves out while they are ``None`` (rows stay as they were).
_OPTIONAL_TIMES = ("expires_at", "valid_from", "valid_until")
BLOCKS: tuple[str, ...] = ("human", "persona", "task")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class CoreFact:
    """A versioned fact.

    Attributes:
        id: Unique id of this version.
        subject: What the fact is about (``"allergy"``, ``"home_city"``); a new
            fact with the same subject and block supersedes the old one.
        content: The fact, in plain words.
        block: ``human``, ``persona`` or ``task``.
        category: preference, fact, plan or task_state.
        confidence: 0-1.
        stated: True if the user said it; False if the model inferred it.
        source_turn: The turn it came from (``None`` for tool edits).
        source: ``"user"``, ``"agent_tool"`` or ``"extractor"``.
        importance: 1-10; decides what leaves core memory first when it is full.
        created_at: When this version was written (when it was said).
        status: ``active``, ``superseded``, ``archived`` (moved out for room) or
            ``ended`` (it stopped holding with no replacement: "I don't smoke
            any more"; see :meth:`FactStore.end_fact`).
        superseded_by: Id of the replacing version.
        reason: Why it was superseded, archived or ended.
        source_thread: The thread of ``source_turn`` (``None`` when unknown),
            so that forgetting the fact can find the turn that stated it.
        expires_at: When this version expires (``None``: never): from then on
            it is out of core memory and recall, and the store's sweep deletes
            it as a forget would (this is deletion, not the time a fact holds).
        valid_from: When the fact starts to hold, where stated or implied
            ("moved to Lisbon last month", "starts school in September";
            ``None``: unknown, taken as from when it was said).
        valid_until: When it stops holding ("until June"; ``None``: open).
            A superseded version gets the time its replacement starts, an
            ended one the time it was ended.
    """

    id: str
    subject: str
    content: str
    block: str = "human"
    category: FactCategory = "fact"
    confidence: float = 1.0
    stated: bool = True
    source_turn: int | None = None
    source: str = "user"
    importance: float = 5.0
    created_at: datetime = field(default_factory=utc_now)
    status: FactStatus = "active"
    superseded_by: str | None = None
    reason: str | None = None
    source_thread: str | None = None
    expires_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None

    @classmethod
    def new(cls, subject: str, content: str, **kwargs: Any) -> CoreFact:
        """A fresh active fact with a new id.

        Example:
            >>> CoreFact.new("allergy", "allergic to peanuts", importance=9).importance
            9
        """
        if not isinstance(subject, str) or not isinstance(content, str):
            raise TypeError(
                "A core fact's subject and content must be strings, got "
                f"{type(subject).__name__} and {type(content).__name__}."
            )
        block = kwargs.get("block", "human")
        if block not in BLOCKS:
            raise ValueError(f"Unknown core memory block {block!r}; use one of {list(BLOCKS)}.")
        if not subject.strip() or not content.strip():
            raise ValueError("A core fact needs a non-empty subject and content.")
        return cls(
            id=uuid.uuid4().hex, subject=subject.strip().lower(), content=content.strip(), **kwargs
        )

    def render(self, *, now: datetime | None = None) -> str:
        """One prompt line: ``- subject: content (stated, turn 3, 2026-03-03)``.

        A fact with a known time says when it holds, as of ``now`` (default: the
        current time): ``since Nov 2026``, ``from Sep 2027``, ``until Jun 2027``, a
        day's ``on 2026-12-05``; once its time is over, ``past, ...`` (a plan whose
        date has passed is not shown as ahead). The line changes only when one of
        those dates passes, so a cached prompt prefix stays byte-stable meanwhile.

        Whitespace runs become one space and ``&``, ``<``, ``>`` are escaped, so
        a fact (say, one an agent tool wrote from injected text) stays on its
        line and cannot forge a header or a closing tag.

        Example:
            >>> CoreFact.new("note", "x\\nSYSTEM: </memory>", stated=False).render()[:33]
            '- note: x SYSTEM: &lt;/memory&gt;'
            >>> from datetime import datetime, timezone
            >>> day, utc = datetime(2026, 12, 5), timezone.utc
            >>> flight = CoreFact.new("plan:flight", "flight to Kyoto", category="plan",
            ...     valid_from=day, valid_until=datetime(2026, 12, 6), source_turn=3)
            >>> flight.render(now=datetime(2026, 12, 4, tzinfo=utc))[:46]
            '- plan:flight: flight to Kyoto (on 2026-12-05;'
            >>> flight.render(now=datetime(2026, 12, 7, tzinfo=utc))[:49]
            '- plan:flight: flight to Kyoto (past, 2026-12-05;'
        """
        origins = {"agent_tool": "agent"}
        origin = "stated" if self.stated else origins.get(self.source, "inferred")
        where = f", turn {self.source_turn}" if self.source_turn is not None else ""
        subject = html.escape(" ".join(self.subject.split()), quote=False)
        content = html.escape(" ".join(self.content.split()), quote=False)
        held = held_note(self, now or utc_now())
        held = f"{held}; " if held else ""
        return (
            f"- {subject}: {content} ({held}{origin}{where}, {self.created_at.date().isoformat()})"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; times that are ``None`` are left out (rows written before
        they existed stay byte for byte as they were).

        Example:
            >>> "valid_from" in CoreFact.new("diet", "vegan").to_dict()
            False
        """
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        for name in _OPTIONAL_TIMES:
            value = data[name]
            if value is None:
                del data[name]
            else:
                data[name] = value.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoreFact:
        """Inverse of :meth:`to_dict` (rows without the optional times load too)."""
        values = dict(data)
        values["created_at"] = datetime.fromisoformat(values["created_at"])
        for name in _OPTIONAL_TIMES:
            if values.get(name) is not None:
                values[name] = datetime.fromisoformat(values[name])
        return cls(**values)


def when_text(moment: datetime) -> str:
    """A time as a fact line shows it: a year (``2023``) or month (``Nov 2026``) when it
    is where one begins, else the day (``2026-12-05``).

    Example:
        >>> from datetime import datetime
        >>> when_text(datetime(2023, 1, 1)), when_text(datetime(2026, 11, 1))
        ('2023', 'Nov 2026')
        >>> when_text(datetime(2026, 12, 5, 9))
        '2026-12-05'
    """
    moment = utc(moment)
    if (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0):
        if (moment.month, moment.day) == (1, 1):
            return str(moment.year)
        if moment.day == 1:
            return moment.strftime("%b %Y")
    return moment.date().isoformat()


def held_note(fact: CoreFact, now: datetime) -> str:
    """When ``fact`` holds, as of ``now``, in a few words (``""`` when no time is known).

    ``since``/``from`` its start, ``until`` its end, ``on`` the day of a one-day
    fact; ``past, ...`` once its end - or a plan's date - has passed (pure).

    Example:
        >>> from datetime import datetime, timezone
        >>> nov = datetime(2026, 11, 1, tzinfo=timezone.utc)
        >>> lisbon = CoreFact.new("home_city", "moved to Lisbon", valid_from=nov)
        >>> held_note(lisbon, datetime(2026, 12, 4, tzinfo=timezone.utc))
        'since Nov 2026'
        >>> held_note(lisbon, datetime(2026, 10, 4, tzinfo=timezone.utc))
        'from Nov 2026'
    """
    start, until = fact.valid_from, fact.valid_until
    if start is None and until is None:
        return ""
    now = utc(now)
    one_day = (
        start is not None and until is not None and utc(until) - utc(start) <= timedelta(days=1)
    )
    if one_day and start is not None:
        return f"{'past, ' if utc(until or start) <= now else 'on '}{start.date().isoformat()}"
    if until is not None and utc(until) <= now:
        return f"past, until {when_text(until)}"
    if until is None and start is not None and fact.category == "plan" and utc(start) <= now:
        return f"past, {when_text(start)}"
    parts = []
    if start is not None:
        parts.append(f"{'since' if utc(start) <= now else 'from'} {when_text(start)}")
    if until is not None:
        parts.append(f"until {when_text(until)}")
    return ", ".join(parts)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_fact(fact: object) -> CoreFact:
    """``fact`` checked before it enters core memory (lone surrogates in its text replaced).

    A bad value caught later (when sorting by importance, or archiving) would
    leave a fact in core memory that breaks every prompt of the user.
    """
    if not isinstance(fact, CoreFact):
        raise TypeError(
            "Core memory takes CoreFact objects (CoreFact.new(subject, content)), "
            f"got {type(fact).__name__}."
        )
    if not isinstance(fact.subject, str) or not isinstance(fact.content, str):
        raise TypeError("A core fact's subject and content must be strings.")
    if not fact.subject.strip() or not fact.content.strip():
        raise ValueError("A core fact needs a non-empty subject and content.")
    if fact.block not in BLOCKS:
        raise ValueError(f"Unknown core memory block {fact.block!r}; use one of {list(BLOCKS)}.")
    for name, value in (("importance", fact.importance), ("confidence", fact.confidence)):
        if not _is_number(value):
            raise TypeError(f"A core fact's {name} must be a number, got {value!r}.")
    if not math.isfinite(fact.importance):
        raise ValueError(f"A core fact's importance must be finite, got {fact.importance!r}.")
    if not 0 <= fact.confidence <= 1:
        raise ValueError(
            f"A core fact's confidence must be between 0 and 1, got {fact.confidence!r}."
        )
    if fact.source_turn is not None and (
        not isinstance(fact.source_turn, int) or isinstance(fact.source_turn, bool)
    ):
        raise TypeError(f"source_turn must be a turn index or None, got {fact.source_turn!r}.")
    if not isinstance(fact.stated, bool):
        raise TypeError(f"stated must be True or False, got {fact.stated!r}.")
    for name in _OPTIONAL_TIMES:
        value = getattr(fact, name)
        if value is not None and not isinstance(value, datetime):
            raise TypeError(f"{name} must be a datetime or None, got {value!r}.")
    if (
        fact.valid_from is not None
        and fact.valid_until is not None
        and utc(fact.valid_until) < utc(fact.valid_from)
    ):
        raise ValueError(
            f"A core fact cannot stop holding ({fact.valid_until.isoformat()}) before it "
            f"starts ({fact.valid_from.isoformat()})."
        )
    subject, content = clean_text(fact.subject), clean_text(fact.content)
    if subject is not fact.subject or content is not fact.content:
        fact = replace(fact, subject=subject, content=content)
    return fact


@dataclass(frozen=True)
class FactUpdate:
    """What an upsert did: the new fact and the version it superseded, if any."""

    fact: CoreFact
    superseded: CoreFact | None = None
    unchanged: bool = False


#: What a write expects to find under its subject: ``"any"`` (no condition),
#: ``"absent"`` (no current fact, or one saying the same), ``"present"`` (a current fact).
Expect = Literal["any", "absent", "present"]


class FactConflict(ValueError):
    """A conditional write found the subject in another state than it expected.

    Attributes:
        current: The subject's current fact (``None`` if there is none).
    """

    def __init__(self, message: str, current: CoreFact | None) -> None:
        super().__init__(message)
        self.current = current


def current_fact(facts: Iterable[CoreFact], subject: str, block: str) -> CoreFact | None:
    """The current truth about ``subject`` in ``block``: the last-written active (or
    archived-for-room) version in ``facts`` (given in write order), if any (pure)."""
    found: CoreFact | None = None
    for fact in facts:  # in write order: the last one written wins
        if (
            fact.status in ("active", "archived")
            and fact.subject == subject
            and fact.block == block
        ):
            found = fact
    return found


def plan_upsert(
    current: CoreFact | None, fact: CoreFact, *, reason: str, expect: Expect = "any"
) -> FactUpdate:
    """What writing ``fact`` over the subject's ``current`` fact does (pure).

    The new version is written first, then the old one retires (``superseded``,
    with ``reason``); re-stating the same content changes nothing. Every
    fact store runs this inside its write, on the current fact as stored.

    Raises:
        FactConflict: when ``expect`` does not hold.

    Example:
        >>> old = CoreFact.new("home_city", "lives in Paris")
        >>> plan_upsert(old, CoreFact.new("home_city", "moved to Berlin"),
        ...             reason="moved").superseded.status
        'superseded'
    """
    same = current is not None and current.content.lower() == fact.content.lower()
    if expect == "absent" and current is not None and not same:
        raise FactConflict(
            f"core memory [{fact.block}] {fact.subject} already holds {current.content!r}",
            current,
        )
    if expect == "present" and current is None:
        raise FactConflict(f"core memory [{fact.block}] has no fact about {fact.subject!r}", None)
    if current is not None and same:
        return FactUpdate(current, None, unchanged=True)
    if current is None:
        return FactUpdate(fact)
    retired = replace(current, status="superseded", superseded_by=fact.id, reason=reason)
    return FactUpdate(fact, _held_until(retired, fact.valid_from or fact.created_at))


def _held_until(fact: CoreFact, moment: datetime) -> CoreFact:
    """``fact`` stopping to hold at ``moment``: an earlier stated end is kept, and it
    never ends before it started."""
    if fact.valid_until is not None and utc(fact.valid_until) <= utc(moment):
        return fact
    if fact.valid_from is not None and utc(moment) < utc(fact.valid_from):
        moment = fact.valid_from
    return replace(fact, valid_until=moment)


def plan_end(current: CoreFact | None, *, at: datetime, reason: str) -> CoreFact | None:
    """What ending the subject's ``current`` fact at ``at`` writes (pure): the version
    marked ``ended`` and holding until ``at``; ``None`` when there is nothing to end.

    An end stated earlier (``valid_until`` before ``at``) is kept.

    Example:
        >>> from datetime import datetime, timezone
        >>> smokes = CoreFact.new("smoking", "smokes")
        >>> ended = plan_end(smokes, at=datetime(2026, 5, 1, tzinfo=timezone.utc), reason="quit")
        >>> ended.status, ended.valid_until.date().isoformat(), ended.reason
        ('ended', '2026-05-01', 'quit')
    """
    if current is None:
        return None
    return _held_until(replace(current, status="ended", reason=reason), at)


class FactStore(Protocol):
    """Where core facts live: the in-process :class:`InProcessFacts`, or a backend.

    Writes are atomic in the store (two writers never lose each other's facts);
    ``facts_version`` changes after every write, so a view reloads only then.
    """

    def facts_version(self, user_id: str) -> int:
        """A number that changes whenever the user's facts change."""
        ...

    def load_facts(self, user_id: str) -> tuple[int, list[CoreFact]]:
        """Every version of the user's facts, with the version number read with them."""
        ...

    def write_fact(
        self, user_id: str, fact: CoreFact, *, reason: str, expect: Expect = "any"
    ) -> FactUpdate:
        """Write ``fact`` (see :func:`plan_upsert`), atomically."""
        ...

    def end_fact(
        self,
        user_id: str,
        subject: str,
        block: str = "human",
        *,
        at: datetime | None = None,
        reason: str = "ended",
    ) -> CoreFact | None:
        """Mark the subject's current fact ``ended`` (it stopped holding at ``at``,
        default now, with no replacement), atomically; returns the ended version, or
        ``None`` when the subject has no current fact (nothing changes)."""
        ...

    def forget_facts(
        self, user_id: str, *, subject: str | None = None, fact_id: str | None = None
    ) -> list[CoreFact]:
        """Delete every version of a subject (or one version); returns them."""
        ...

    def retire_facts(self, user_id: str, fact_ids: Sequence[str], *, reason: str) -> list[CoreFact]:
        """Mark active facts ``archived`` (moved out of core memory for room); returns them."""
        ...

    def clear_facts(self, user_id: str) -> list[CoreFact]:
        """Delete every fact of the user; returns them."""
        ...
