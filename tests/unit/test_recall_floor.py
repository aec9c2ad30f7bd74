"""Recall that knows when it has nothing (issue 33, items 6-9): calibrated scores,
a relevance floor, exact identifiers, weights that steer, and honest labels."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_tiered_memory.integrations.tools import NO_MEMORIES, create_retrieve_memory_tool
from langchain_tiered_memory.recall.calibration import (
    DEFAULT_MIN_SCORE,
    Calibration,
    CalibrationFileError,
    default_calibration,
    load_calibrations,
)
from langchain_tiered_memory.recall.hybrid import Recaller, RecallWeights, score_candidates
from langchain_tiered_memory.recall.signals import Candidate
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.store import MemoryStore

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
ANA = [
    "user: I'm allergic to peanuts, so no satay for me.",
    "user: My daughter Lea starts school in September.",
    "user: I fly to Lisbon on 12 May for the conference.",
    "user: My passport expires next year, I should renew it.",
    "user: The door code of the office is 4711.",
    "user: I play the cello in a small orchestra on Tuesdays.",
]


@pytest.fixture(scope="module")
def ana_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryStore]:
    """A store with the default (offline MiniLM) embedder and a few of Ana's turns."""
    store = MemoryStore(tmp_path_factory.mktemp("ana"))
    store.archive.add(
        [
            MemoryRecord.new(
                user_id="ana", thread_id="old", kind="turn", text=t, sources=(f"turn:{i}",)
            )
            for i, t in enumerate(ANA)
        ]
    )
    yield store
    store.close()


# ------------------------------------------------------- item 6: calibrated scores, a floor


@pytest.mark.parametrize(
    "question",
    [
        "what's the weather on Mars",
        "Who won the football world cup in 1998?",
        "How do I bake bread?",
    ],
)
def test_a_question_memory_cannot_answer_finds_nothing(ana_store: MemoryStore, question) -> None:
    tool = create_retrieve_memory_tool(ana_store)
    assert tool.invoke({"query": question}, config={"configurable": {"user_id": "ana"}}) == (
        NO_MEMORIES
    )
    assert ana_store.memory("ana", "new").recall(question) == []


def test_a_question_memory_can_answer_still_finds_it_with_a_score_in_0_1(
    ana_store: MemoryStore,
) -> None:
    memory = ana_store.memory("ana", "new")
    for question, expected in [
        ("Do I have any food allergies?", "peanuts"),
        ("When is my flight to Lisbon?", "Lisbon"),
        ("What instrument do I play?", "cello"),
        ("What's my daughter's name?", "Lea"),
    ]:
        hits = memory.recall(question)
        assert hits and expected in hits[0].text, question
        assert all(h.score is not None and 0.0 <= h.score <= 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_daughter_question_brings_no_passport_or_door_code(tmp_path: Path) -> None:
    with MemoryStore(tmp_path) as store:
        store.archive.add(
            [
                MemoryRecord.new(user_id="bo", kind="turn", text=t)
                for t in ANA
                if "daughter" not in t
            ]
        )
        memory = store.memory("bo", "new")
        assert memory.recall("What do you know about my daughter?") == []
        store.archive.add([MemoryRecord.new(user_id="bo", kind="turn", text=ANA[1])])
        hits = memory.recall("What do you know about my daughter?")
        assert hits and "Lea" in hits[0].text
        assert hits[0].score > max(h.score or 0.0 for h in hits[1:])


def test_the_floor_is_configurable(ana_store: MemoryStore) -> None:
    question = "what's the weather on Mars"
    assert ana_store.memory("ana", "new", recall_min_score=None).recall(question) != []
    everything = ana_store.memory("ana", "new", recall_min_score=0.0).recall(question, k=10)
    assert len(everything) == len(ANA)
    with pytest.raises(ValueError, match="min_score"):
        Recaller(ana_store.archive, ana_store.embeddings, min_score=1.5)


def test_calibrated_scores_keep_the_ranking_scores_in_parts() -> None:
    a = MemoryRecord.new(user_id="u", kind="turn", text="user: I'm allergic to peanuts")
    b = MemoryRecord.new(user_id="u", kind="turn", text="user: I like jazz")
    cands = [Candidate(a, 0.6, 2.0), Candidate(b, 0.1, None)]
    raw = score_candidates(cands, now=NOW, query="peanut allergy?")
    calibrated = score_candidates(cands, now=NOW, query="peanut allergy?", calibration="default")
    assert [h.record.id for h in calibrated] == [h.record.id for h in raw]
    assert all(0.0 <= h.score <= 1.0 for h in calibrated)
    assert [h.parts["rank_score"] for h in calibrated] == [h.score for h in raw]
    assert calibrated[0].score > calibrated[1].score
    best = calibrated[0].score
    above = score_candidates(
        cands, now=NOW, query="peanut allergy?", calibration="default", min_score=best
    )
    assert [h.record.id for h in above] == [h.record.id for h in calibrated]  # the best counts
    below = score_candidates(
        cands, now=NOW, query="peanut allergy?", calibration="default", min_score=best + 1e-6
    )
    assert below == []  # nothing reaches the floor: nothing at all, not the best of the rest


def test_the_packaged_calibration_covers_every_ranker_and_archive() -> None:
    for ranker in ("learned", "hand"):
        for dense in (True, False):
            model = default_calibration(ranker, dense=dense)
            assert isinstance(model, Calibration)
            assert model.weights[0] > 0  # a higher ranking score is more likely relevant
    assert 0.0 < DEFAULT_MIN_SCORE < 1.0


def test_a_bad_calibration_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(CalibrationFileError, match="not a"):
        load_calibrations(path)
    with pytest.raises(CalibrationFileError, match="cannot read"):
        load_calibrations(tmp_path / "missing.json")


# ------------------------------------------------------- item 7: an exact identifier first


def _bookings(rng: random.Random) -> list[str]:
    cities = ["Lyon", "Porto", "Oslo", "Rome", "Berlin", "Madrid", "Vienna", "Prague"]
    texts = []
    for i in range(300):
        city = rng.choice(cities)
        if i % 3 == 0:
            number = f"{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}"
            texts.append(f"user: My hotel booking in {city} is confirmed, order number {number}.")
        elif i % 3 == 1:
            texts.append(f"user: I had a long day walking around {city} today.")
        else:
            texts.append(f"assistant: Here are some tips for {city}: museums, food and parks.")
    return texts


@pytest.mark.parametrize("embeddings", ["none", "fake"])
def test_a_quoted_order_number_finds_its_turn_first(tmp_path: Path, embeddings: str) -> None:
    store = MemoryStore(
        tmp_path, embeddings=DeterministicFakeEmbedding(size=32) if embeddings == "fake" else "none"
    )
    texts = _bookings(random.Random(7))
    texts.append("assistant: Booking 4821-3907 is confirmed.")  # the one asked about
    # another booking, two digits apart, that shares more of the question's words
    texts.append(
        "user: What's the status of my booking 4821-3970? I need the status of my booking."
    )
    store.archive.add(
        [
            MemoryRecord.new(user_id="ana", kind="turn", text=t, id=f"r{i}")
            for i, t in enumerate(texts)
        ]
    )
    question = "What's the status of my booking 4821-3907?"
    bm25 = store.archive.keyword_search(question, "ana", n=3)
    assert "4821-3970" in bm25[0][0].text  # BM25 alone puts the near miss first
    hits = Recaller(store.archive, store.embeddings, touch=False).recall(question, user_id="ana")
    assert "4821-3907" in hits[0].record.text
    assert hits[0].parts["identifiers"] == 1
    store.close()


def test_a_quoted_code_finds_its_turn_first(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, embeddings="none")
    texts = _bookings(random.Random(3))
    texts += [
        "user: Is my flight LX1234 to Zurich on time? The flight to Zurich, I mean.",
        "assistant: LX1243 was cancelled.",
    ]
    store.archive.add([MemoryRecord.new(user_id="ana", kind="turn", text=t) for t in texts])
    question = "Is my flight LX1243 to Zurich on time?"
    assert "LX1234" in store.archive.keyword_search(question, "ana", n=1)[0][0].text
    coded = Recaller(store.archive, None, touch=False).recall(question, user_id="ana")
    assert coded[0].record.text == "assistant: LX1243 was cancelled."
    store.close()


# ------------------------------------------------------- item 8: the weights steer


def test_given_weights_steer_the_ranking(tmp_path: Path) -> None:
    embeddings = DeterministicFakeEmbedding(size=32)
    records = [
        MemoryRecord.new(
            user_id="u",
            kind="turn",
            id=f"t{i}",
            text=f"user: I went hiking near the lake with {name}",
            importance=importance,
            created_at=NOW - timedelta(days=days),
        )
        for i, (name, importance, days) in enumerate(
            [("Ben", 2.0, 1), ("Clara", 9.0, 300), ("Dan", 5.0, 100), ("Eve", 3.0, 600)]
        )
    ]
    with SQLiteArchive(tmp_path / "a.sqlite", embeddings=embeddings) as archive:
        archive.add(records)

        def order(**kwargs: object) -> list[str]:
            recaller = Recaller(archive, embeddings, touch=False, min_score=None, **kwargs)
            return [
                h.record.id for h in recaller.recall("hiking near the lake", user_id="u", now=NOW)
            ]

        fresh = order(weights=RecallWeights(recency=5.0))
        weighty = order(weights=RecallWeights(importance=5.0))
        assert fresh[0] == "t0"  # the newest
        assert weighty[0] == "t1"  # the most important
        assert fresh != weighty
        assert Recaller(archive, embeddings, weights=RecallWeights()).scorer() is None
        assert Recaller(archive, embeddings).scorer() is not None  # the learned ranker


# ------------------------------------------------------- item 9: honest labels


def test_a_note_kept_over_mcp_is_not_possibly(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from langchain_tiered_memory.integrations.mcp_server import MemoryTools

    with MemoryStore(tmp_path, embeddings="none") as store:
        tools = MemoryTools(store, "ana")
        tools.remember("Ana's gym locker code is 3312.")
        assert 'confidence="possibly"' not in tools.recall("gym locker code")
        hits = store.memory("ana").recall("gym locker code")
        assert hits and not hits[0].possibly


def test_recalls_says_when_every_hit_was_already_in_core_memory(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.cli.chat import ChatSession

    with MemoryStore(tmp_path, embeddings="none") as store:
        memory = store.memory("ana", "chat", context_window=1024)
        memory.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
        for i in range(40):  # push the statement out of the buffer into the archive
            memory.add_messages(
                [HumanMessage(f"Tell me fact {i} about rivers."), AIMessage("x" * 80)]
            )
        session = ChatSession(memory, model=None)
        session.handle("Any snack ideas, given my peanut allergy?")
        context = session.last_context
        assert context is not None and not context.recalled and context.repeats
        out = session.handle("/recalls")
        assert "(nothing recalled)" not in out
        assert "already in the prompt" in out


# ------------------------------------------------------- item 21: summaries that open alike


def test_running_summaries_that_open_alike_take_one_recall_slot() -> None:
    trip = "[t2] user: My trip to Kyoto is on 14 April; the flight leaves at 9:40 from Lisbon."
    later = [
        "[t6] user: Can you draft a polite reply declining a meeting on Thursday?",
        "[t15] user: My colleague Priya got promoted today.",
        "[t32] user: Can you draft a polite reply declining a meeting on Thursday?",
    ]
    summaries = [
        MemoryRecord.new(
            user_id="u", kind="summary", text=f"{trip}\n{line}", sources=(f"turn:{10 * i}",)
        )
        for i, line in enumerate(later)
    ]
    other = MemoryRecord.new(user_id="u", kind="turn", text="user: I booked a ryokan in Kyoto.")
    cands = [Candidate(s, 0.7 - 0.01 * i, 3.0) for i, s in enumerate(summaries)]
    cands.append(Candidate(other, 0.5, 1.0))
    ranked = score_candidates(cands, now=NOW, query="When is my trip again, and the flight?", k=3)
    kinds = [h.record.kind for h in ranked]
    assert kinds.count("summary") == 1 and "ryokan" in ranked[-1].record.text
    assert set(ranked[0].record.sources) == {"turn:0", "turn:10", "turn:20"}  # traceable
