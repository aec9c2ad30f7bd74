from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from langchain_tiered_memory.budget.context import RecalledMemory
from langchain_tiered_memory.recall.dedupe import dedupe_key, merge_near_duplicates
from langchain_tiered_memory.recall.hybrid import (
    Recaller,
    RecallWeights,
    merge_candidates,
    rank_below_replacements,
    score_candidates,
    stale_turns,
    to_recalled_memories,
)
from langchain_tiered_memory.recall.signals import (
    Candidate,
    borrow_from_previous,
    keyword_scale,
    min_max,
    named_speakers,
    recency_score,
    strip_names,
)
from langchain_tiered_memory.records import MemoryRecord, ScoredRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
ONLY_RELEVANCE = RecallWeights(
    relevance=1.0, keyword=0.0, recency=0.0, importance=0.0, speaker=0.0, session=0.0
)


def rec(
    text: str,
    *,
    hours: float = 1.0,
    importance: float = 5.0,
    id: str | None = None,
    user: str = "u",
    **metadata: object,
) -> MemoryRecord:
    return MemoryRecord.new(
        user_id=user,
        thread_id="t",
        kind="turn",
        text=text,
        importance=importance,
        created_at=NOW - timedelta(hours=hours),
        metadata=dict(metadata),
        id=id,
    )


# ---------------------------------------------------------------- pure scoring


def test_min_max_scales_present_values_and_zeroes_missing() -> None:
    assert min_max([1.0, 3.0, None, 2.0]) == [0.0, 1.0, 0.0, 0.5]
    assert min_max([]) == []
    assert min_max([None, None]) == [0.0, 0.0]


def test_min_max_ignores_a_signal_that_does_not_vary() -> None:
    assert min_max([5.0, 5.0, 5.0]) == [0.0, 0.0, 0.0]
    assert min_max([0.9999990, 0.9999995]) == [0.0, 0.0]  # seconds of recency difference
    assert min_max([0.9999990, 0.9999995], min_spread=0.0) == [0.0, 1.0]


def test_recency_decays_0_995_per_hour_since_last_access() -> None:
    r = rec("x", hours=48)
    assert recency_score(r, NOW) == pytest.approx(0.995**48)
    touched = r.touched(NOW - timedelta(hours=2))
    assert recency_score(touched, NOW) == pytest.approx(0.995**2)
    assert recency_score(r, NOW, decay=0.9) == pytest.approx(0.9**48)
    future = rec("y", hours=-5)
    assert recency_score(future, NOW) == 1.0
    naive = MemoryRecord.new(
        user_id="u", kind="fact", text="z", created_at=datetime(2026, 3, 1, 11)
    )
    assert recency_score(naive, NOW) == pytest.approx(0.995)


def test_score_is_weighted_sum_of_scaled_signals() -> None:
    a = rec("alpha", hours=100, importance=2)
    b = rec("beta", hours=1, importance=9)
    c = rec("gamma", hours=50, importance=5)
    weights = RecallWeights(
        relevance=1.0, keyword=0.5, recency=0.3, importance=0.2, speaker=0.0, session=0.0
    )
    ranked = score_candidates(
        [Candidate(a, 0.9, 4.0), Candidate(b, 0.5, None), Candidate(c, 0.7, 2.0)],
        now=NOW,
        weights=weights,
    )
    by_text = {s.record.text: s for s in ranked}
    rec_a, rec_b, rec_c = (0.995**h for h in (100, 1, 50))
    for name, dense, kw, recency, imp in (
        ("alpha", 1.0, 1.0, 0.0, 0.0),
        ("beta", 0.0, 0.0, 1.0, 1.0),
        ("gamma", 0.5, 0.0, (rec_c - rec_a) / (rec_b - rec_a), 3 / 7),
    ):
        parts = by_text[name].parts
        assert parts["relevance"] == pytest.approx(dense)
        assert parts["keyword"] == pytest.approx(kw)
        assert parts["recency"] == pytest.approx(recency)
        assert parts["importance"] == pytest.approx(imp)
        expected = 1.0 * dense + 0.5 * kw + 0.3 * recency + 0.2 * imp
        assert by_text[name].score == pytest.approx(expected)
    assert [s.record.text for s in ranked] == sorted(by_text, key=lambda t: -by_text[t].score)


def test_importance_breaks_a_relevance_tie() -> None:
    low = rec("low importance", importance=2)
    high = rec("high importance", importance=9)
    weights = RecallWeights(importance=0.5, recency=0.0)
    ranked = score_candidates([Candidate(low, 0.8), Candidate(high, 0.8)], now=NOW, weights=weights)
    assert [s.record.text for s in ranked] == ["high importance", "low importance"]
    assert ranked[0].parts["importance"] == 1.0


def test_recency_weight_can_outrank_relevance() -> None:
    old = rec("old and relevant", hours=24 * 90)
    new = rec("new and vaguer", hours=1)
    cands = [Candidate(old, 0.9), Candidate(new, 0.6)]
    assert score_candidates(cands, now=NOW, weights=ONLY_RELEVANCE)[0].record is old
    heavy = RecallWeights(relevance=1.0, recency=2.0, importance=0.0, session=0.0)
    assert score_candidates(cands, now=NOW, weights=heavy)[0].record is new


def test_keyword_weight_and_dense_weight() -> None:
    a = rec("dense favourite")
    b = rec("keyword favourite")
    cands = [Candidate(a, 0.9, 1.0), Candidate(b, 0.5, 6.0)]
    dense_heavy = RecallWeights(relevance=1.0, keyword=0.2, session=0.0)
    keyword_heavy = RecallWeights(relevance=0.2, keyword=1.0, session=0.0)
    assert score_candidates(cands, now=NOW, weights=dense_heavy)[0].record is a
    assert score_candidates(cands, now=NOW, weights=keyword_heavy)[0].record is b


def test_negative_weight_is_rejected() -> None:
    with pytest.raises(ValueError, match="recency"):
        RecallWeights(recency=-0.1)


def test_relevance_floor_drops_weak_dense_only_candidates() -> None:
    weak = rec("weak")
    weak_keyword = rec("weak but keyword")
    strong = rec("strong")
    cands = [Candidate(weak, 0.1), Candidate(weak_keyword, 0.1, 2.0), Candidate(strong, 0.8)]
    kept = score_candidates(cands, now=NOW, relevance_floor=0.3)
    assert {s.record.text for s in kept} == {"strong", "weak but keyword"}
    assert len(score_candidates(cands, now=NOW)) == 3
    assert score_candidates([Candidate(weak, 0.1)], now=NOW, relevance_floor=0.3) == []


def test_dedupe_keeps_the_best_of_same_and_near_duplicate_texts() -> None:
    best = rec("I'm allergic to peanuts, so no satay please")
    same = rec("i'm ALLERGIC to peanuts so no satay please!")
    near = rec("I'm allergic to peanuts, so no satay please today")
    other = rec("My dog is called Max")
    cands = [
        Candidate(best, 0.9),
        Candidate(same, 0.8),
        Candidate(near, 0.7),
        Candidate(other, 0.5),
    ]
    ranked = score_candidates(cands, now=NOW, weights=ONLY_RELEVANCE)
    assert [s.record for s in ranked] == [best, other]
    assert len(score_candidates(cands, now=NOW, weights=ONLY_RELEVANCE, dedupe=False)) == 4
    assert dedupe_key(" Hello,  WORLD! ") == "hello world"


def test_short_texts_are_not_near_duplicates() -> None:
    a, b = rec("Sounds good"), rec("Sounds great")
    ranked = score_candidates([Candidate(a, 0.9), Candidate(b, 0.8)], now=NOW)
    assert len(ranked) == 2


def test_k_limits_after_dedupe() -> None:
    cands = [Candidate(rec(f"memory number {i} about topic {i}"), 1 - i / 10) for i in range(8)]
    cands.insert(1, Candidate(rec("memory number 0 about topic 0"), 0.95))
    ranked = score_candidates(cands, now=NOW, weights=ONLY_RELEVANCE, k=3)
    assert [s.record.text for s in ranked] == [
        "memory number 0 about topic 0",
        "memory number 1 about topic 1",
        "memory number 2 about topic 2",
    ]
    assert score_candidates([], now=NOW) == []
    assert len(score_candidates(cands, now=NOW)) == 5  # small default k
    assert len(score_candidates(cands, now=NOW, k=None)) == 8


def test_speaker_named_in_query_lifts_their_records() -> None:
    ana = rec("I went hiking on Sunday", speaker="Ana")
    ben = rec("Ana, did you go hiking on Sunday?", speaker="Ben")
    other = rec("The weather was fine", speaker="Ben")
    cands = [Candidate(ana, 0.70), Candidate(ben, 0.75), Candidate(other, 0.1)]
    weights = RecallWeights(speaker=0.5, session=0.0)
    plain = score_candidates(cands, now=NOW, weights=weights, query="Who went hiking?")
    assert plain[0].record is ben
    named = score_candidates(cands, now=NOW, weights=weights, query="When did Ana go hiking?")
    assert named[0].record is ana
    assert named[0].parts["speaker"] == 1.0
    both = score_candidates(cands, now=NOW, weights=weights, query="Did Ana and Ben go hiking?")
    assert both[0].record is ben  # two speakers named: no speaker signal


def test_chat_roles_are_lifted_by_who_the_question_is_about() -> None:
    """Records spoken by roles: "my"/"I" point at the user's turns, "you recommended" at the
    assistant's; asking the assistant for help names neither."""
    mine = rec("We adopted a beagle puppy last week", speaker="user")
    yours = rec("Beagles are friendly dogs; a puppy needs training and walks", speaker="assistant")
    other = rec("The weather was fine", speaker="user")
    cands = [Candidate(mine, 0.70), Candidate(yours, 0.75), Candidate(other, 0.1)]
    weights = RecallWeights(speaker=0.5, session=0.0)
    ask = score_candidates(cands, now=NOW, weights=weights, query="Can you help with a puppy?")
    assert ask[0].record is yours and ask[0].parts["speaker"] == 0.0
    first_person = score_candidates(
        cands, now=NOW, weights=weights, query="What breed is my puppy?"
    )
    assert first_person[0].record is mine and first_person[0].parts["speaker"] == 1.0
    cites = score_candidates(
        [Candidate(mine, 0.75), Candidate(yours, 0.70), Candidate(other, 0.1)],
        now=NOW,
        weights=weights,
        query="Which puppy food did you recommend?",
    )
    assert cites[0].record is yours
    named_people = [
        Candidate(rec("my puppy", speaker="Ana"), 0.7),
        Candidate(rec("x", speaker="Ben"), 0.75),
    ]
    assert (
        score_candidates(named_people, now=NOW, weights=weights, query="my puppy?")[0].parts[
            "speaker"
        ]
        == 0.0
    )  # names, not roles: first person says nothing about who spoke


def test_session_signal_lifts_turns_of_a_matching_session() -> None:
    s1 = [rec(f"s1 turn {i}", session=1) for i in range(3)]
    s2 = [rec(f"s2 turn {i}", session=2) for i in range(3)]
    cands = [
        Candidate(s1[0], 0.80),
        Candidate(s1[1], 0.79),
        Candidate(s1[2], 0.78),
        Candidate(s2[0], 0.85),  # best single turn, lonely session
        Candidate(s2[1], 0.10),
        Candidate(s2[2], 0.10),
    ]
    off = RecallWeights(session=0.0, recency=0.0, importance=0.0)
    on = RecallWeights(session=1.0, recency=0.0, importance=0.0)
    assert score_candidates(cands, now=NOW, weights=off)[0].record is s2[0]
    ranked = score_candidates(cands, now=NOW, weights=on)
    assert ranked[0].record is s1[0]
    assert ranked[0].parts["session"] == 1.0


def test_session_signal_is_off_without_sessions() -> None:
    a, b = rec("a thing"), rec("another thing")
    ranked = score_candidates([Candidate(a, 0.9), Candidate(b, 0.2)], now=NOW)
    assert all(s.parts["session"] == 0.0 for s in ranked)


@pytest.mark.parametrize("fusion", ["minmax", "rrf", "both"])
def test_fusion_methods_rank_agreeing_signals_first(fusion: str) -> None:
    a, b, c = rec("a"), rec("b"), rec("c")
    cands = [Candidate(a, 0.9, 5.0), Candidate(b, 0.5, 1.0), Candidate(c, 0.7, None)]
    ranked = score_candidates(cands, now=NOW, fusion=fusion)  # type: ignore[arg-type]
    assert ranked[0].record is a


def test_rrf_uses_ranks_not_magnitudes() -> None:
    a, b, c = rec("a"), rec("b"), rec("c")
    # a wins dense by a hair, b wins keyword by a mile: minmax prefers b, rrf ties them.
    cands = [Candidate(a, 0.91, 1.0), Candidate(b, 0.90, 100.0), Candidate(c, 0.5, 0.5)]
    weights = RecallWeights(session=0.0)
    minmax = score_candidates(cands, now=NOW, weights=weights, fusion="minmax")
    rrf = score_candidates(cands, now=NOW, weights=weights, fusion="rrf")
    assert minmax[0].record is b
    assert rrf[0].score == pytest.approx(rrf[1].score)


def test_unknown_fusion_is_rejected() -> None:
    with pytest.raises(ValueError, match="fusion"):
        score_candidates([Candidate(rec("a"), 0.5)], now=NOW, fusion="sum")  # type: ignore[arg-type]


def test_merge_candidates_joins_by_id() -> None:
    a, b = rec("a", id="a"), rec("b", id="b")
    merged = {c.record.id: c for c in merge_candidates([(a, 0.8)], [(a, 2.0), (b, 1.0)])}
    assert (merged["a"].dense, merged["a"].keyword) == (0.8, 2.0)
    assert (merged["b"].dense, merged["b"].keyword) == (None, 1.0)


def test_named_speakers_and_strip_names() -> None:
    assert named_speakers("what did caroline say?", ["Caroline", "Mel"]) == {"Caroline"}
    assert named_speakers("What did Carol say?", ["Caroline"]) == set()
    assert named_speakers("Where did Mary Ann go?", ["Mary Ann"]) == {"Mary Ann"}
    assert strip_names("When did Caroline go to Caroline's class?", ["Caroline"]) == (
        "When did go to class?"
    )
    assert strip_names("Caroline?", ["Caroline"]) == "Caroline?"  # nothing left: unchanged


def test_to_recalled_memories_marks_inferred_and_low_confidence() -> None:
    stated = rec("Ana is allergic to peanuts", stated=True, confidence=0.95)
    inferred = rec("Ana may like sushi", stated=False)
    hedged = rec("Ana might move", confidence=0.5)
    flagged = rec("Ana possibly vegan", inferred=True)
    many = MemoryRecord.new(
        user_id="u", kind="summary", text="s", sources=("turn:1", "turn:2", "turn:3", "turn:4")
    )
    items = to_recalled_memories(
        [
            ScoredRecord(r, 1.0 - i / 10)
            for i, r in enumerate([stated, inferred, hedged, flagged, many])
        ]
    )
    assert all(isinstance(i, RecalledMemory) for i in items)
    assert [i.possibly for i in items] == [False, True, True, True, False]
    assert items[0].record_id == stated.id and items[0].score == 1.0
    assert items[0].created_at == stated.created_at
    assert items[4].source == "summary turn:1, turn:2, turn:3, ..."


# ---------------------------------------------------------------- Recaller


VOCAB = ["peanut", "allerg", "dog", "run", "paint", "sunset", "berlin", "move"]


@pytest.fixture
def archive(tmp_path, stem_axis):
    emb = stem_axis(VOCAB)
    arch = SQLiteArchive(tmp_path / "memory.sqlite", embeddings=emb)
    texts = [
        ("Ana", 1, "I'm allergic to peanuts, so never satay."),
        ("Ben", 1, "Got it, Ana, no peanuts."),
        ("Ana", 1, "I run 5 km every Tuesday with my dog Max."),
        ("Ben", 2, "Ana, I painted a sunset yesterday."),
        ("Ana", 2, "I moved to Berlin last week."),
        ("Ben", 2, "How is Berlin?"),
    ]
    arch.add(
        [
            MemoryRecord.new(
                user_id="ana",
                thread_id="t1",
                kind="turn",
                text=f"{speaker}: {text}",
                id=f"r{i}",
                created_at=NOW - timedelta(days=30 - i),
                sources=(f"D{session}:{i}",),
                metadata={"speaker": speaker, "session": session},
            )
            for i, (speaker, session, text) in enumerate(texts)
        ]
        + [
            MemoryRecord.new(
                user_id="bob", kind="fact", text="Bob is allergic to peanuts", id="bob1"
            )
        ]
    )
    yield arch, emb
    arch.close()


def test_recaller_finds_the_relevant_record(archive) -> None:
    arch, emb = archive
    recaller = Recaller(arch, emb, k=2)
    hits = recaller.recall("Is Ana allergic to peanuts?", user_id="ana", now=NOW)
    assert len(hits) == 2
    assert hits[0].record.id == "r0"
    assert all(h.record.user_id == "ana" for h in hits)


def test_recaller_embeds_once_without_the_speaker_name(archive) -> None:
    arch, emb = archive
    Recaller(arch, emb).recall("Where did Ana move to?", user_id="ana", now=NOW)
    assert emb.queries == ["Where did move to?"]
    emb.queries.clear()
    Recaller(arch, emb, strip_speaker_names=False).recall(
        "Where did Ana move to?", user_id="ana", now=NOW
    )
    assert emb.queries == ["Where did Ana move to?"]


def test_recaller_speaker_signal_prefers_the_named_speaker(archive) -> None:
    arch, emb = archive
    query = "What did Ana say about Berlin?"
    plain = Recaller(arch, emb, k=1, weights=RecallWeights(speaker=0.0), ranker=None)
    assert plain.recall(query, user_id="ana")[0].record.id == "r5"  # Ben: How is Berlin?
    boosted = Recaller(arch, emb, k=1, weights=RecallWeights(speaker=2.0), ranker=None)
    assert boosted.recall(query, user_id="ana")[0].record.id == "r4"  # Ana: I moved to Berlin
    # the learned ranker weighs the speaker too
    learned = Recaller(arch, emb, k=1)
    assert learned.recall(query, user_id="ana")[0].record.id == "r4"


def test_recaller_touches_returned_records(archive) -> None:
    arch, emb = archive
    at = NOW + timedelta(hours=1)
    hits = Recaller(arch, emb, k=2).recall("dog run", user_id="ana", now=at)
    stored = {r.id: r for r in arch.get([h.record.id for h in hits])}
    assert all(r.last_accessed_at == at for r in stored.values())
    untouched = arch.get(["r5"])[0]
    assert untouched.last_accessed_at is None
    hits2 = Recaller(arch, emb, k=1, touch=False).recall("sunset painting", user_id="ana")
    assert arch.get([hits2[0].record.id])[0].last_accessed_at is None


def test_recaller_filters_by_user_kind_and_time(archive) -> None:
    arch, emb = archive
    recaller = Recaller(arch, emb)
    assert [h.record.id for h in recaller.recall("peanuts", user_id="bob")] == ["bob1"]
    assert recaller.recall("peanuts", user_id="ana", kinds=["fact"]) == []
    recent = recaller.recall("peanuts", user_id="ana", since=NOW - timedelta(days=26, hours=12))
    assert {h.record.id for h in recent} <= {"r4", "r5"}
    assert recaller.recall("   ", user_id="ana") == []


def test_recaller_default_k_is_small(archive) -> None:
    arch, emb = archive
    recaller = Recaller(arch, emb)
    assert recaller.k == 5
    assert len(recaller.recall("Ana peanuts dog Berlin sunset", user_id="ana")) == 5
    with pytest.raises(ValueError):
        Recaller(arch, emb, k=0)


def test_arecall_matches_recall(archive) -> None:
    arch, emb = archive
    recaller = Recaller(arch, emb, k=3, touch=False)
    sync = recaller.recall("dog", user_id="ana", now=NOW)
    async_ = asyncio.run(recaller.arecall("dog", user_id="ana", now=NOW))
    assert [h.record.id for h in sync] == [h.record.id for h in async_]


def test_recaller_works_with_a_minimal_archive(stem_axis) -> None:
    a = rec("Ana: I love sunsets", id="a", speaker="Ana")
    b = rec("Ben: Ana, nice sunset!", id="b", speaker="Ben")

    class Minimal:
        def __init__(self) -> None:
            self.touched: list[str] = []

        def dense_search(
            self, vector: object, where: RecordFilter, *, n: int = 50
        ) -> list[tuple[MemoryRecord, float]]:
            return [(b, 0.9), (a, 0.85)][:n]

        def keyword_search(
            self, text: str, where: RecordFilter, *, n: int = 50
        ) -> list[tuple[MemoryRecord, float]]:
            return [(a, 2.0), (b, 1.0)][:n] if "sunset" in text.lower() else []

        def touch(
            self, ids: list[str], at: datetime | None = None, *, user_id: str | None = None
        ) -> int:
            self.touched.extend(ids)
            return len(ids)

    store = Minimal()
    hits = Recaller(store, stem_axis(VOCAB), k=1).recall("What does Ana love? sunsets", user_id="u")
    assert hits[0].record is a
    assert store.touched == ["a"]


def test_recaller_over_a_vectorstore_archive_passes_the_text(tmp_path, stem_axis) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_tiered_memory.storage.vectorstore import VectorStoreArchive

    emb = stem_axis(VOCAB)
    arch = VectorStoreArchive(InMemoryVectorStore(emb), tmp_path / "records.sqlite")
    try:
        arch.add(
            [
                MemoryRecord.new(user_id="ana", kind="fact", text="Ana runs with her dog", id="a"),
                MemoryRecord.new(user_id="ana", kind="fact", text="Ana moved to Berlin", id="b"),
            ]
        )
        hits = Recaller(arch, emb, k=1).recall("Where did she move?", user_id="ana")
        assert [h.record.id for h in hits] == ["b"]
    finally:
        arch.close()


# ---------------------------------------------------------------- issue 16: ranking fixes


def test_keyword_scale_keeps_a_lone_match_strong() -> None:
    assert keyword_scale([None, 3.2, None]) == [0.0, 1.0, 0.0]
    assert keyword_scale([4.0, 3.9]) == pytest.approx([1.0, 0.95])  # near-equal: both high
    assert keyword_scale([10.0, 1.0, 5.5]) == [1.0, 0.0, 0.5]  # spread out: min-max
    assert keyword_scale([None, None]) == [0.0, 0.0]
    with pytest.raises(ValueError, match="floor"):
        keyword_scale([1.0], floor=1.0)


def test_a_lone_keyword_match_outranks_dense_noise() -> None:
    """A name found in exactly one record counts as a strong match, not as 0."""
    lone = rec("We flew to Zanzibar for the wedding", id="lone")
    noise = [rec(f"unrelated chat number {i}", id=f"n{i}") for i in range(20)]
    # the embedder is weak: the right record's dense score is among the lowest
    cands = [Candidate(r, 0.50 + i / 100) for i, r in enumerate(noise)]
    cands.append(Candidate(lone, 0.49, keyword=1.7))
    ranked = score_candidates(cands, now=NOW, weights=RecallWeights(session=0.0), k=5)
    assert lone in [s.record for s in ranked]
    assert next(s for s in ranked if s.record is lone).parts["keyword"] == 1.0


def test_a_lone_keyword_match_reaches_the_top_5_with_a_weak_embedder(tmp_path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    emb = DeterministicFakeEmbedding(size=16)  # random vectors: dense similarity is noise
    arch = SQLiteArchive(tmp_path / "a.sqlite", embeddings=emb)
    texts = [f"user: we talked about topic {i} and the weather" for i in range(40)]
    texts[17] = "user: my cousin Oyelaran lives in Lagos"
    arch.add(
        [
            MemoryRecord.new(user_id="u", kind="turn", text=t, id=f"r{i}", thread_id="t")
            for i, t in enumerate(texts)
        ]
    )
    try:
        hits = Recaller(arch, emb, k=5, touch=False).recall("Is Oyelaran well?", user_id="u")
        assert "r17" in [h.record.id for h in hits]
    finally:
        arch.close()


def turn(text: str, index: int, *, session: object = 1, thread: str = "t") -> MemoryRecord:
    return MemoryRecord.new(
        user_id="u",
        thread_id=thread,
        kind="turn",
        text=text,
        id=f"{thread}:{index}",
        created_at=NOW - timedelta(hours=10 - index),
        metadata={"turn_index": index, "session": session},
    )


def test_a_short_reply_borrows_the_score_of_the_question_it_answers() -> None:
    question = turn("Nate: Is that your third screenplay?", 4)
    answer = turn("Joanna: Yep! It's about loss, identity and connection.", 5)
    other = turn("Joanna: I had pasta for lunch today.", 8)
    cands = [Candidate(question, 0.80), Candidate(answer, 0.40), Candidate(other, 0.45)]
    assert borrow_from_previous(cands, 0.3) == pytest.approx([0.80, 0.52, 0.45])
    assert borrow_from_previous(cands, 0.0) == [0.80, 0.40, 0.45]
    only_dense = RecallWeights(
        keyword=0.0, recency=0.0, importance=0.0, speaker=0.0, session=0.0, time=0.0
    )
    ranked = score_candidates(cands, now=NOW, weights=only_dense)
    assert [s.record for s in ranked] == [question, answer, other]
    no_borrow = replace(only_dense, neighbour=0.0)
    assert [s.record for s in score_candidates(cands, now=NOW, weights=no_borrow)][1] is other


def test_borrowing_stays_within_a_thread_and_session() -> None:
    q = turn("Is that your third one?", 4, session=1)
    next_session = turn("Yep!", 5, session=2)
    other_thread = turn("Yep!!", 5, thread="t2")
    cands = [Candidate(q, 0.8), Candidate(next_session, 0.3), Candidate(other_thread, 0.3)]
    assert borrow_from_previous(cands, 0.5) == [0.8, 0.3, 0.3]
    with pytest.raises(ValueError, match="neighbour"):
        RecallWeights(neighbour=1.5)


def test_a_date_in_the_query_lifts_what_was_said_then() -> None:
    july = MemoryRecord.new(
        user_id="u",
        kind="turn",
        text="We painted a sunset with the kids",
        created_at=datetime(2023, 7, 15, tzinfo=timezone.utc),
    )
    may = MemoryRecord.new(
        user_id="u",
        kind="turn",
        text="We painted a lake with the kids",
        created_at=datetime(2023, 5, 2, tzinfo=timezone.utc),
    )
    unrelated = MemoryRecord.new(
        user_id="u",
        kind="turn",
        text="The car needs new tyres",
        created_at=datetime(2023, 7, 20, tzinfo=timezone.utc),
    )
    cands = [Candidate(may, 0.80), Candidate(july, 0.75), Candidate(unrelated, 0.20)]
    now = datetime(2023, 9, 1, tzinfo=timezone.utc)
    query = "What did Mel and her kids paint in July 2023?"
    ranked = score_candidates(cands, now=now, query=query)
    assert [s.record for s in ranked] == [july, may, unrelated]
    assert ranked[0].parts["time"] == pytest.approx(ranked[0].parts["relevance"])  # inside
    assert 0 < ranked[1].parts["time"] < 0.1  # told in May: far outside
    assert ranked[2].parts["time"] == 0.0  # inside July, but it matches nothing
    undated = score_candidates(cands, now=now, query="What did Mel and her kids paint?")
    assert undated[0].record is may and undated[0].parts["time"] == 0.0
    off = score_candidates(cands, now=now, query=query, time_window=None)
    assert off[0].record is may


def test_near_duplicates_merge_into_the_best_copy() -> None:
    long = rec("user: I'm allergic to peanuts, so never order satay for me", id="a")
    long = replace(long, sources=("turn:3",))
    short = replace(rec("I'm allergic to peanuts, so never satay", id="b"), sources=("turn:9",))
    other = replace(rec("My dog is called Max", id="c"), sources=("turn:4",))
    cands = [Candidate(long, 0.9), Candidate(short, 0.85), Candidate(other, 0.5)]
    ranked = score_candidates(cands, now=NOW, weights=ONLY_RELEVANCE)
    assert [s.record.id for s in ranked] == ["a", "c"]
    assert ranked[0].record.sources == ("turn:3", "turn:9")
    # the other way round both stay: the longer one says more than the kept one
    flipped = [Candidate(short, 0.9), Candidate(long, 0.85), Candidate(other, 0.5)]
    assert [s.record.id for s in score_candidates(flipped, now=NOW, weights=ONLY_RELEVANCE)] == [
        "b",
        "a",
        "c",
    ]
    assert merge_near_duplicates([]) == []


def test_texts_that_differ_in_a_number_are_not_merged() -> None:
    five = rec("I ran 5 km with Max this morning", id="five")
    ten = rec("I ran 10 km with Max this morning", id="ten")
    ranked = score_candidates([Candidate(five, 0.9), Candidate(ten, 0.8)], now=NOW)
    assert [s.record.id for s in ranked] == ["five", "ten"]


# ------------------------------------------------ issue 16: superseded facts and their turns


def _quadratic_merge(ranked, k=None, threshold=0.9):
    """The merge as it was before prefix filtering: every text against every kept one."""

    def near(a, b):
        if len(a) < 4 or len(b) < 4:
            return False
        if any(any(ch.isdigit() for ch in word) for word in a ^ b):
            return False
        shared = len(a & b)
        return shared / len(a | b) >= threshold or shared / len(a) >= 0.95

    unique, keys, word_sets = [], {}, []
    for item in ranked:
        key = dedupe_key(item.record.text)
        words = set(key.split())
        into = keys.get(key)
        if into is None:
            into = next((i for i, w in enumerate(word_sets) if near(words, w)), None)
        if into is not None:
            kept = unique[into]
            extra = tuple(s for s in item.record.sources if s not in kept.record.sources)
            if extra:
                unique[into] = ScoredRecord(
                    replace(kept.record, sources=kept.record.sources + extra), kept.score
                )
            continue
        if k is not None and len(unique) >= k:
            break
        keys[key] = len(unique)
        word_sets.append(words)
        unique.append(item)
    return unique


_VOCAB = [*"abcdefghijklmnopqrst", "5", "10km", "peanut", "max"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=30).map(" ".join),
        max_size=40,
    ),
    k=st.one_of(st.none(), st.integers(min_value=1, max_value=40)),
    threshold=st.sampled_from([0.5, 0.75, 0.9, 1.0]),
)
# a text holding a kept one plus as many words again: only the words it shares find it
@example(texts=["a b c d e", "a b c d e f g h i j"], k=None, threshold=0.5)
@example(
    texts=["a b c d e f g h i j k l m n o p q r s t", "b c d e f g h i j k l m n o p q r s t"],
    k=None,
    threshold=0.9,
)
def test_near_duplicate_merge_equals_the_all_pairs_merge(texts, k, threshold) -> None:
    ranked = [
        ScoredRecord(
            MemoryRecord.new(user_id="u", kind="turn", text=t, id=f"r{i}", sources=(f"s{i}",)),
            float(-i),
        )
        for i, t in enumerate(texts)
    ]
    fast = merge_near_duplicates(ranked, k=k, threshold=threshold)
    slow = _quadratic_merge(ranked, k=k, threshold=threshold)
    assert [(h.record.id, h.record.sources) for h in fast] == [
        (h.record.id, h.record.sources) for h in slow
    ]


def test_near_duplicate_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="threshold"):
        merge_near_duplicates([], threshold=0.0)


def _fact(text: str, fact_id: str, source: str, **metadata: object) -> MemoryRecord:
    return MemoryRecord.new(
        user_id="ana",
        kind="fact",
        text=text,
        id=f"ana:fact:{fact_id}",
        sources=(source,),
        metadata={"thread_id": "t1", "subject": "home_city", **metadata},
    )


@pytest.fixture
def moved(tmp_path):
    """Ana said she lives in Paris (turn 3), later that she moved to Berlin (turn 40), then
    Munich (turn 70); the facts taken from those turns supersede each other."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    emb = DeterministicFakeEmbedding(size=16)  # dense is noise: keyword finds "live"
    arch = SQLiteArchive(tmp_path / "a.sqlite", embeddings=emb)
    turns = {
        3: "user: I live in Paris, near the canal.\nassistant: Lovely!",
        40: "user: Big news: I moved to Berlin.\nassistant: Exciting!",
        70: "user: We relocated again, to Munich this time.\nassistant: Wow.",
    }
    for i in range(80):
        turns.setdefault(i, f"user: question {i} about cooking pasta\nassistant: answer {i}")
    arch.add(
        [
            MemoryRecord.new(
                user_id="ana",
                thread_id="t1",
                kind="turn",
                text=text,
                id=f"ana:t1:turn:{i}",
                sources=(f"turn:{i}",),
                created_at=NOW - timedelta(hours=100 - i),
                metadata={"turn_index": i},
            )
            for i, text in sorted(turns.items())
        ]
        + [
            _fact("home_city: lives in Paris", "p", "turn:3", superseded=True, superseded_by="b"),
            _fact("home_city: moved to Berlin", "b", "turn:40", superseded=True, superseded_by="m"),
            _fact("home_city: relocated to Munich", "m", "turn:70"),
        ]
    )
    yield arch, emb
    arch.close()


def test_a_turn_of_a_superseded_fact_ranks_below_the_current_fact(moved) -> None:
    arch, emb = moved
    hits = Recaller(arch, emb, k=5, touch=False).recall("Where do I live now?", user_id="ana")
    ids = [h.record.id for h in hits]
    assert "ana:t1:turn:3" in ids  # the old turn is still recalled ...
    assert ids.index("ana:fact:m") < ids.index("ana:t1:turn:3")  # ... below Munich
    assert "ana:fact:p" not in ids and "ana:fact:b" not in ids  # superseded facts are out
    old = hits[ids.index("ana:t1:turn:3")]
    assert old.record.metadata["outdated_by"] == "ana:fact:m"
    memory = to_recalled_memories([old])[0]
    assert memory.source == "turn turn:3 (outdated: a newer fact replaced it)"
    assert arch.get(["ana:t1:turn:3"])[0].metadata.get("outdated_by") is None  # not stored


def test_supersession_can_be_turned_off(moved) -> None:
    arch, emb = moved
    recaller = Recaller(arch, emb, k=5, touch=False, supersession=False)
    ids = [h.record.id for h in recaller.recall("Where do I live now?", user_id="ana")]
    assert "ana:fact:m" not in ids and "ana:fact:p" in ids


def test_stale_turns_match_thread_and_source() -> None:
    old = _fact("home_city: lives in Paris", "p", "turn:3", superseded=True)
    current = _fact("home_city: moved to Berlin", "b", "turn:40")
    here = ScoredRecord(turn("user: I live in Paris", 3, thread="t1"), 1.0)
    here = ScoredRecord(replace(here.record, sources=("turn:3",)), 1.0)
    elsewhere = ScoredRecord(replace(here.record, id="x", thread_id="t2"), 0.9)
    assert stale_turns([here, elsewhere], [old, current]) == {here.record.id: old}
    assert stale_turns([here], [current]) == {}


def test_the_replacing_fact_moves_up_once() -> None:
    paris = ScoredRecord(turn("user: I live in Paris", 3), 2.0)
    paris2 = ScoredRecord(turn("user: Paris is home", 9), 1.5)
    berlin = ScoredRecord(_fact("home_city: moved to Berlin", "b", "turn:40"), 1.0)
    other = ScoredRecord(turn("user: I like pasta", 12), 0.5)
    out = rank_below_replacements(
        [paris, paris2, other, berlin],
        {paris.record.id: berlin.record, paris2.record.id: berlin.record},
    )
    assert [h.record.id for h in out] == [
        berlin.record.id,
        paris.record.id,
        paris2.record.id,
        other.record.id,
    ]
    assert out[0].score == 2.0 and out[0].parts["replaces"] == 1.0


def test_tiered_memory_recall_puts_the_new_home_above_the_old_turn(tmp_path) -> None:
    """The issue's example end to end: "I live in Paris" ... "I moved to Berlin"."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.store import MemoryStore
    from langchain_tiered_memory.tiers.core import CoreFact

    class NoExtraction:
        def extract(self, turns: object) -> list[object]:
            return []

    store = MemoryStore(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=16))
    memory = TieredMemory(
        context_window=1024, store=store, user_id="ana", thread_id="t1", extractor=NoExtraction()
    )

    def say(user: str, reply: str) -> int:
        memory.add_messages([HumanMessage(user), AIMessage(reply)])
        return memory.state.turns[-1].index

    paris = say("I live in Paris, near the canal.", "Lovely city!")
    memory.write_fact(CoreFact.new("home_city", "lives in Paris", source_turn=paris))
    for i in range(25):
        say(f"Tell me about pasta shape {i}.", f"Shape {i} is a long story " * 4)
    berlin = say("I moved to Berlin last month.", "Exciting!")
    memory.write_fact(CoreFact.new("home_city", "moved to Berlin", source_turn=berlin))
    for i in range(25):
        say(f"Explain sauce {i} please.", f"Sauce {i} needs tomatoes and time " * 4)
    try:
        recalled = memory.recall("Where do I live now?")
        texts = [r.text for r in recalled]
        # the turn that said it (a session summary may quote it too, ranked anywhere)
        old = next(
            i
            for i, r in enumerate(recalled)
            if r.source.startswith("turn") and "I live in Paris" in r.text
        )
        assert texts.index("home_city: moved to Berlin") < old
        assert "outdated" in recalled[old].source
    finally:
        store.close()
