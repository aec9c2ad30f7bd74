"""Readers for the public benchmark formats (LoCoMo and LongMemEval).

The data itself is never shipped: download it and pass the path of your copy
(``--data PATH``). LoCoMo is ``data/locomo10.json`` of
https://github.com/snap-research/locomo; LongMemEval is
``longmemeval_s.json`` (or ``_m``/``_oracle``) from
https://github.com/xiaowu0162/LongMemEval (its Hugging Face dataset
``xiaowu0162/longmemeval``). ``benchmarks/README.md`` ("Data") describes
both formats; the benches read no data they are not given.

Example:
    >>> import json, tempfile, os
    >>> raw = [{"sample_id": "c1", "conversation": {
    ...     "speaker_a": "Ana", "speaker_b": "Ben",
    ...     "session_1_date_time": "1:56 pm on 8 May, 2023",
    ...     "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"}]},
    ...     "qa": [{"question": "Who?", "answer": "Ben", "evidence": ["D1:1"], "category": 4}]}]
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.json")
    >>> with open(path, "w") as f:
    ...     json.dump(raw, f)
    >>> conv = load_locomo(path)[0]
    >>> conv.sessions[0].turns[0].dia_id, conv.questions[0].evidence
    ('D1:1', ('D1:1',))
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

__all__ = [
    "LOCOMO_SOURCE",
    "LONGMEMEVAL_SOURCE",
    "DialogTurn",
    "LocomoConversation",
    "LocomoQuestion",
    "LongMemEvalQuestion",
    "Session",
    "load_locomo",
    "load_longmemeval",
    "parse_evidence",
]

#: Where to get the data sets (said by the "not found" errors).
LOCOMO_SOURCE = (
    "Download locomo10.json from https://github.com/snap-research/locomo (data/locomo10.json)."
)
LONGMEMEVAL_SOURCE = (
    "Download longmemeval_s.json from https://github.com/xiaowu0162/LongMemEval "
    "(the Hugging Face dataset xiaowu0162/longmemeval); .json.gz works too."
)

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(items: list[Any] | None) -> tuple[str, ...]:
    """Normalise LoCoMo evidence ids (``'D8:6; D9:17'`` -> ``('D8:6', 'D9:17')``).

    Example:
        >>> parse_evidence(["D8:6; D9:17", "D:11:26"])
        ('D8:6', 'D9:17', 'D11:26')
    """
    found: list[str] = []
    for item in items or []:
        for session, turn in _EVIDENCE.findall(str(item)):
            ident = f"D{int(session)}:{int(turn)}"
            if ident not in found:
                found.append(ident)
    return tuple(found)


@dataclass(frozen=True)
class DialogTurn:
    """One utterance of a LoCoMo conversation."""

    speaker: str
    dia_id: str
    text: str
    caption: str | None = None

    def content(self) -> str:
        """The text, with a shared image's caption appended."""
        if self.caption:
            return f"{self.text} [shares a photo: {self.caption}]"
        return self.text


@dataclass(frozen=True)
class Session:
    """One session of a conversation, with its date."""

    index: int
    date_time: str
    turns: tuple[DialogTurn, ...]


@dataclass(frozen=True)
class LocomoQuestion:
    """A LoCoMo QA item."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class LocomoConversation:
    """A LoCoMo conversation: two speakers, dated sessions and questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[LocomoQuestion, ...] = field(default=())

    def dialog_turns(self) -> list[tuple[Session, DialogTurn]]:
        """Every utterance with its session, in order."""
        return [(s, t) for s in self.sessions for t in s.turns]

    def to_message(self, session: Session, turn: DialogTurn, *, first: bool) -> BaseMessage:
        """``speaker_a`` as the user, ``speaker_b`` as the assistant; the first
        message of each session carries the session's date."""
        text = turn.content()
        if first:
            text = f"[{session.date_time}] {text}"
        if turn.speaker == self.speaker_a:
            return HumanMessage(text, name=_safe_name(turn.speaker))
        return AIMessage(text, name=_safe_name(turn.speaker))


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "speaker"


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Read a LoCoMo-format JSON file (e.g. ``locomo10.json``).

    Raises:
        FileNotFoundError: naming the expected location.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"LoCoMo data not found at {path}. {LOCOMO_SOURCE} Then pass --data PATH."
        )
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for n, item in enumerate(raw):
        conv = item["conversation"]
        numbers = sorted(
            int(m.group(1))
            for key in conv
            if (m := re.fullmatch(r"session_(\d+)", key)) and conv[key]
        )
        sessions = tuple(
            Session(
                index=i,
                date_time=str(conv.get(f"session_{i}_date_time", "")),
                turns=tuple(
                    DialogTurn(
                        speaker=t["speaker"],
                        dia_id=str(t["dia_id"]),
                        text=str(t.get("text", "")),
                        caption=t.get("blip_caption"),
                    )
                    for t in conv[f"session_{i}"]
                ),
            )
            for i in numbers
        )
        questions = tuple(
            LocomoQuestion(
                question=str(q["question"]),
                answer=str(q.get("answer", q.get("adversarial_answer", ""))),
                evidence=parse_evidence(q.get("evidence")),
                category=int(q.get("category", 0)),
            )
            for q in item.get("qa", [])
        )
        conversations.append(
            LocomoConversation(
                sample_id=str(item.get("sample_id", f"conv-{n}")),
                speaker_a=conv["speaker_a"],
                speaker_b=conv["speaker_b"],
                sessions=sessions,
                questions=questions,
            )
        )
    return conversations


@dataclass(frozen=True)
class LongMemEvalQuestion:
    """A LongMemEval question with its haystack of dated sessions."""

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: str
    session_ids: tuple[str, ...]
    session_dates: tuple[str, ...]
    sessions: tuple[tuple[dict[str, Any], ...], ...]
    answer_session_ids: tuple[str, ...]


def load_longmemeval(path: str | Path) -> list[LongMemEvalQuestion]:
    """Read a LongMemEval JSON file (optionally gzipped)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"LongMemEval data not found at {path}. {LONGMEMEVAL_SOURCE} Then pass --data PATH."
        )
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    return [
        LongMemEvalQuestion(
            question_id=str(q["question_id"]),
            question_type=str(q["question_type"]),
            question=str(q["question"]),
            answer=str(q.get("answer", "")),
            question_date=str(q.get("question_date", "")),
            session_ids=tuple(str(s) for s in q["haystack_session_ids"]),
            session_dates=tuple(str(d) for d in q["haystack_dates"]),
            sessions=tuple(tuple(s) for s in q["haystack_sessions"]),
            answer_session_ids=tuple(str(s) for s in q.get("answer_session_ids", [])),
        )
        for q in raw
    ]
