"""The write policy in one place: what a candidate fact does to memory.

Pure functions decide; :func:`apply_decision` is the thin adapter that writes
through core memory (and so through the store), and :func:`possible_record`
is what the archive gets.

* **promote** - a stated, confident candidate (confidence at least
  ``min_confidence``) goes to core memory. A fact with the same subject is
  superseded (kept in the history); so is a fact under another subject of
  the same single-valued attribute (:mod:`.attributes`), whichever extractor
  wrote it; a value that ends another attribute ends it (a birth ends the
  pregnancy).
* **possible** - below the confidence core needs (hedged, inferred), the
  candidate goes to the archive as a dated statement marked "possibly",
  where recall finds it by meaning; so does the negation of a single value
  that is not current ("I no longer live in Berlin" with no home known).
* **end** - "no longer" / "not any more" of a single-valued attribute, or a
  candidate with ``op="end"``: the current fact stops holding (``ended``,
  kept in the history); nothing is written in its place.
* **undo** - :func:`undo_supersession` brings a superseded or ended version
  back as the current one, by writing it again (the history keeps everything).

Example:
    >>> from langchain_tiered_memory.tiers.core import CoreMemory
    >>> core = CoreMemory()
    >>> for said in (Candidate("home_city", "moved to Lisbon"), Candidate("location", "Porto")):
    ...     _ = apply_decision(decide(said, core.history()), core)
    >>> core.get("home_city").content, [f.status for f in core.history("home_city")]
    ('Porto', ['superseded', 'active'])
    >>> decide(Candidate("diet", "vegan", confidence=0.5, stated=False), []).action
    'possible'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.facts import FactUpdate
from langchain_tiered_memory.write.attributes import AttributeSchema
from langchain_tiered_memory.write.candidate import Candidate

__all__ = [
    "MIN_CONFIDENCE",
    "Action",
    "Applied",
    "Decision",
    "apply_decision",
    "decide",
    "possible_record",
    "resolve_against",
    "resolve_subject",
    "undo_supersession",
]

#: The confidence a candidate needs to reach core memory.
MIN_CONFIDENCE = 0.75

#: What the policy does with a candidate.
Action = Literal["promote", "possible", "end", "skip"]

_STOP = {"my", "the", "a", "an", "that", "this", "about", "what", "i", "said", "you", "it"}
_NEGATED = re.compile(r"^(?:no longer|not|doesn't|does not|never|不再|不)\b", re.I)
_DEFAULT_SCHEMA = AttributeSchema()


def resolve_against(subject: str, current: Sequence[CoreFact], *, block: str = "human") -> str:
    """The subject a new fact updates, when the extractor could only point at it (pure).

    ``current`` is every version of the user's facts (oldest first).

    * ``"budget:*"`` ("I can go up to 850 now"): the newest current fact whose
      subject starts with ``budget:``, else ``"budget"``;
    * ``"~coffee"`` ("I switched from coffee to tea"): the newest current fact
      that mentions those words, else ``"usual"``;
    * ``"plan:check-up"`` when no such plan exists ("they moved my check-up
      to Thursday"): the newest plan whose text names a check-up;
    * anything else as it is.

    Example:
        >>> facts = [CoreFact.new("budget:laptop", "budget for laptop: 600")]
        >>> resolve_against("budget:*", facts), resolve_against("budget:*", [])
        ('budget:laptop', 'budget')
    """
    live = [f for f in current if f.status in ("active", "archived") and f.block == block][::-1]
    if subject.endswith(":*"):
        prefix = subject[:-1]
        match = next((f for f in live if f.subject.startswith(prefix)), None)
        return match.subject if match else subject[:-2]
    if subject.startswith("~"):
        found = _mentioning(subject[1:], live)
        return found.subject if found else "usual"
    if subject.startswith("plan:") and not any(f.subject == subject for f in live):
        word = subject.split(":", 1)[1]
        match = next(
            (
                f
                for f in live
                if f.subject.startswith("plan:")
                and re.search(rf"\b{re.escape(word)}\b", f.content, re.I)
            ),
            None,
        )
        return match.subject if match else subject
    return subject


def _mentioning(words_text: str, live: Sequence[CoreFact]) -> CoreFact | None:
    words = [w for w in words_text.split() if w not in _STOP]
    return next(
        (
            f
            for f in live
            if words
            and all(
                re.search(rf"\b{re.escape(w)}", f"{f.subject} {f.content}", re.I) for w in words
            )
        ),
        None,
    )


def resolve_subject(subject: str, core: CoreMemory, *, block: str = "human") -> str:
    """:func:`resolve_against` the facts of ``core`` (sorted oldest first).

    Example:
        >>> core = CoreMemory([CoreFact.new("budget:laptop", "budget for laptop: 600")])
        >>> resolve_subject("budget:*", core), resolve_subject("budget:*", CoreMemory())
        ('budget:laptop', 'budget')
    """
    return resolve_against(subject, core.history(), block=block)


@dataclass(frozen=True)
class Decision:
    """What the policy does with one candidate.

    Attributes:
        action: ``promote``, ``possible``, ``end`` or ``skip``.
        candidate: The candidate, its subject resolved to the one it is stored under.
        ends: Other subjects whose current facts stop holding with it (another
            subject of the same single-valued attribute; a pregnancy at a birth).
        why: A short reason, for the history and the logs.
    """

    action: Action
    candidate: Candidate
    ends: tuple[str, ...] = ()
    why: str = ""


def _current(current: Sequence[CoreFact], subject: str) -> CoreFact | None:
    found = None
    for fact in current:
        if fact.status in ("active", "archived") and fact.subject == subject:
            found = fact
    return found


def decide(
    candidate: Candidate,
    current: Sequence[CoreFact],
    *,
    schema: AttributeSchema | None = None,
    min_confidence: float = MIN_CONFIDENCE,
) -> Decision:
    """Where ``candidate`` goes, given the user's facts ``current`` (every version,
    oldest first) (pure).

    Example:
        >>> home = CoreFact.new("home_city", "lives in Berlin")
        >>> decide(Candidate("home_city", "no longer lives in Berlin"), [home]).action
        'end'
        >>> decide(Candidate("home_city", "no longer lives in Berlin"), []).action
        'possible'
    """
    schema = schema or _DEFAULT_SCHEMA
    subject = schema.canonical(candidate.subject, candidate.content)
    subject = resolve_against(subject, current)
    if candidate.op == "end" and candidate.subject.startswith("~"):
        live = [f for f in current if f.status in ("active", "archived")][::-1]
        found = _mentioning(candidate.subject[1:], live)
        subject = found.subject if found else ""
    resolved = replace(candidate, subject=subject or candidate.subject)
    if not (candidate.stated and candidate.confidence >= min_confidence):
        return Decision("possible", resolved, why="not certain enough for core memory")
    single = schema.is_single(subject) if subject else False
    negated = single and bool(_NEGATED.match(candidate.content))
    if candidate.op == "end" or negated:
        if subject and _current(current, subject) is not None:
            return Decision("end", resolved, why=f"ended by turn {candidate.source_turn}")
        if candidate.op == "end":
            return Decision("skip", resolved, why="nothing current to end")
        return Decision("possible", resolved, why="the negation of a value not known")
    ends = tuple(
        s
        for s in (*schema.same_slot(subject), *schema.ended_by(subject))
        if _current(current, s) is not None
    )
    return Decision(
        "promote", resolved, ends=ends, why=f"superseded by turn {candidate.source_turn}"
    )


@dataclass
class Applied:
    """What :func:`apply_decision` did."""

    promoted: list[FactUpdate] = field(default_factory=list)
    ended: list[CoreFact] = field(default_factory=list)


def apply_decision(
    decision: Decision, core: CoreMemory, *, said_at: datetime | None = None
) -> Applied:
    """Carry out a ``promote`` or ``end`` decision in ``core`` (others change nothing).

    ``said_at``: when the candidate's turn was said (the new version's time; an
    imported turn may be years old).
    """
    applied = Applied()
    fact = decision.candidate
    if decision.action == "promote":
        dated = {"created_at": said_at} if said_at is not None else {}
        update = core.upsert(
            CoreFact.new(
                fact.subject,
                fact.content,
                category=fact.category,
                confidence=fact.confidence,
                stated=True,
                source_turn=fact.source_turn,
                source="user",
                importance=fact.importance,
                valid_from=fact.valid_from,
                valid_until=fact.valid_until,
                **dated,
            ),
            reason=fact.reason or decision.why,
        )
        if not update.unchanged:
            applied.promoted.append(update)
            at = fact.valid_from or said_at
            for subject in decision.ends:
                ended = core.end(subject, at=at, reason=f"replaced by {fact.subject}")
                if ended is not None:
                    applied.ended.append(ended)
    elif decision.action == "end":
        ended = core.end(
            fact.subject, at=fact.valid_from or said_at, reason=fact.reason or decision.why
        )
        if ended is not None:
            applied.ended.append(ended)
    return applied


def possible_record(candidate: Candidate, *, user_id: str, thread_id: str | None) -> MemoryRecord:
    """The archive's record of a fact core memory is unsure of: a dated statement
    marked "possibly" (pure).

    Example:
        >>> r = possible_record(Candidate("diet", "vegan", confidence=0.5, stated=False,
        ...                               source_turn=3), user_id="ana", thread_id="t")
        >>> r.text, r.sources, r.metadata["possibly"]
        ('diet: vegan', ('turn:3',), True)
    """
    return MemoryRecord.new(
        user_id=user_id,
        thread_id=None,
        kind="fact",
        text=f"{candidate.subject}: {candidate.content}",
        importance=candidate.importance,
        sources=(f"turn:{candidate.source_turn}",) if candidate.source_turn is not None else (),
        metadata={
            "stated": candidate.stated,
            "confidence": candidate.confidence,
            "possibly": True,
            "subject": candidate.subject,
            "thread_id": thread_id,
        },
    )


def undo_supersession(core: CoreMemory, fact_id: str) -> FactUpdate:
    """Make the superseded or ended version ``fact_id`` current again, by writing it as a
    new version (the version that replaced it is superseded in turn; the history keeps
    every version).

    Raises:
        KeyError: when the user has no version with that id.
        ValueError: when that version is not superseded or ended (nothing to undo).

    Example:
        >>> core = CoreMemory()
        >>> old = core.upsert(CoreFact.new("home_city", "lives in Lisbon")).fact
        >>> _ = core.upsert(CoreFact.new("home_city", "lives in Porto"))
        >>> undo_supersession(core, old.id).fact.content, len(core.history("home_city"))
        ('lives in Lisbon', 3)
    """
    version = next((f for f in core.history() if f.id == fact_id), None)
    if version is None:
        raise KeyError(f"no fact version {fact_id!r} in this user's history")
    if version.status not in ("superseded", "ended"):
        raise ValueError(
            f"fact version {fact_id!r} is {version.status}, not superseded or ended: "
            "there is nothing to undo"
        )
    restored = CoreFact.new(
        version.subject,
        version.content,
        block=version.block,
        category=version.category,
        confidence=version.confidence,
        stated=version.stated,
        source_turn=version.source_turn,
        source=version.source,
        importance=version.importance,
        source_thread=version.source_thread,
        valid_from=version.valid_from,
    )
    return core.upsert(restored, reason=f"undone: {fact_id} restored")
