"""Fixtures of the benchmarks' tests. Like the library's tests, they never need ../shared:
they use invented data in the benchmarks' formats (``tests/fixtures`` of the repository)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.testing import StemAxisEmbeddings

FIXTURES = Path(__file__).parents[2] / "tests" / "fixtures"


@pytest.fixture(scope="session")
def counter() -> OpenAITokenCounter:
    return OpenAITokenCounter("gpt-4o-mini")


@pytest.fixture(scope="session")
def locomo_fixture() -> Path:
    # a small synthetic conversation in LoCoMo format, written for the tests
    return FIXTURES / "synthetic_conversation.json"


@pytest.fixture(scope="session")
def stem_axis() -> type[StemAxisEmbeddings]:
    """The :class:`StemAxisEmbeddings` class (test modules cannot import conftest)."""
    return StemAxisEmbeddings


# Invented sessions in the LongMemEval *format* (nothing from the data set): a
# gold user turn, a gold assistant turn, and gold turns spread over two sessions.
_FILLER = {
    "f0": [
        ("user", "Can you give me a recipe for banana bread?"),
        (
            "assistant",
            "Mix three ripe bananas, flour, sugar, an egg and butter; bake 60 minutes at 175 C.",
        ),
        ("user", "Thanks!"),
    ],
    "f1": [
        ("user", "What is a good stretching routine for runners?"),
        ("assistant", "Try hamstring, calf and hip flexor stretches for 30 seconds each."),
        ("user", "Thanks!"),
    ],
    "f2": [
        ("user", "Explain how compound interest works."),
        (
            "assistant",
            "Interest is added to the principal, so later interest is earned on earlier interest.",
        ),
    ],
    "f3": [
        ("user", "Suggest a name for a fantasy novel about dragons."),
        ("assistant", "How about 'The Ember Crown'?"),
    ],
}
_FILLER_DATES = {
    "f0": "2023/05/10 (Wed) 10:00",
    "f1": "2023/05/11 (Wed) 11:00",
    "f2": "2023/05/12 (Wed) 12:00",
    "f3": "2023/05/13 (Wed) 13:00",
}


def _lme_question(
    qid: str,
    kind: str,
    question: str,
    answer: str,
    date: str,
    sessions: list[tuple[str, str, list[tuple[str, str]]]],
    gold: dict[str, set[int]],
) -> dict:
    """One question; ``sessions`` are (id, date, turns), ``gold`` a session's gold turns."""
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "answer": answer,
        "question_date": date,
        "haystack_session_ids": [sid for sid, _, _ in sessions],
        "haystack_dates": [when for _, when, _ in sessions],
        "haystack_sessions": [
            [
                {
                    "role": role,
                    "content": text,
                    **({"has_answer": True} if i in gold.get(sid, ()) else {}),
                }
                for i, (role, text) in enumerate(turns)
            ]
            for sid, _, turns in sessions
        ],
        "answer_session_ids": list(gold),
    }


def synthetic_longmemeval() -> list[dict]:
    """Three invented questions in the LongMemEval file format."""

    def filler(*ids: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
        return [(sid, _FILLER_DATES[sid], _FILLER[sid]) for sid in ids]

    puppy = [
        ("user", "We just adopted a new puppy, a beagle called Biscuit!"),
        ("assistant", "Congratulations on Biscuit!"),
        ("user", "Thanks!"),
    ]
    first = [
        ("user", "I ran my first marathon in Boston last spring."),
        ("assistant", "Boston is a great race!"),
    ]
    more = [
        ("user", "I finished two more marathons since then, Chicago and Berlin."),
        ("assistant", "Impressive, well done."),
    ]
    return [
        _lme_question(
            "q_user",
            "single-session-user",
            "What breed is my new puppy?",
            "a beagle",
            "2023/06/01 (Thu) 09:00",
            [*filler("f0"), ("s_gold", "2023/05/20 (Sat) 08:00", puppy), *filler("f1", "f2", "f3")],
            {"s_gold": {0}},
        ),
        _lme_question(
            "q_asst",
            "single-session-assistant",
            "Which temperature did you tell me to bake the banana bread at?",
            "175 C",
            "2023/06/01 (Thu) 09:00",
            filler("f0", "f1", "f2", "f3"),
            {"f0": {1}},
        ),
        _lme_question(
            "q_multi",
            "multi-session",
            "How many marathons have I run in total?",
            "three",
            "2023/06/02 (Fri) 10:00",
            [
                *filler("f0"),
                ("s_m1", "2023/05/20 (Sat) 08:00", first),
                *filler("f1"),
                ("s_m2", "2023/05/21 (Sat) 08:00", more),
                *filler("f2", "f3"),
            ],
            {"s_m1": {0}, "s_m2": {0}},
        ),
    ]


@pytest.fixture(scope="session")
def longmemeval_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small LongMemEval-format file of invented questions (see :func:`synthetic_longmemeval`)."""
    path = tmp_path_factory.mktemp("longmemeval") / "synthetic_longmemeval.json"
    path.write_text(json.dumps(synthetic_longmemeval(), indent=1), encoding="utf-8")
    return path
