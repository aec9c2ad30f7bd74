"""Live turns carry the speaker and session that recall's speaker and session signals use."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.budget.tokens import ApproximateTokenCounter
from langchain_tiered_memory.recall.hybrid import Recaller, RecallWeights
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.values.turns import Turn

DAY1 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
DAY2 = DAY1 + timedelta(days=1)
# keyword and session signals only: the fake embedder's similarities are noise
KEYWORD_ONLY = RecallWeights(relevance=0.0, recency=0.0, importance=0.0)


def test_turns_paged_out_by_a_live_memory_carry_speaker_and_session(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        memory = store.memory(
            "team",
            "standup",
            context_window=1024,
            token_counter=ApproximateTokenCounter(),
            gate="never",
        )
        speakers = ["Ana", "Ben"]
        for i in range(40):
            name = speakers[i % 2]
            memory.add_messages(
                [
                    HumanMessage(f"Update {i}: the budget line {i} is approved.", name=name),
                    AIMessage(f"Noted update {i}."),
                ]
            )
        turns = store.archive.records(RecordFilter("team", thread_id="standup", kinds=["turn"]))
        assert turns, "nothing was paged out"
        for record in turns:
            index = record.metadata["turn_index"]
            assert record.metadata["speaker"] == speakers[index % 2]
            assert record.metadata["session"] == record.created_at.date().isoformat()
            assert record.text.startswith(f"{speakers[index % 2]}: Update {index}")


def test_unnamed_live_turns_have_a_session_but_no_speaker(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "data", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        memory = store.memory(
            "ana", "t", context_window=1024, token_counter=ApproximateTokenCounter(), gate="never"
        )
        for i in range(40):
            memory.add_messages([HumanMessage(f"Note {i} about tea."), AIMessage("Noted.")])
        turns = store.archive.records(RecordFilter("ana", kinds=["turn"]))
        assert turns
        assert all("speaker" not in r.metadata and r.metadata["session"] for r in turns)


def test_recall_uses_the_speaker_and_session_of_live_turns(tmp_path: Path) -> None:
    archive = SQLiteArchive(tmp_path / "m.sqlite", embeddings=DeterministicFakeEmbedding(size=16))
    hook = archive.hook("team", "planning")  # what the buffer calls on page-out

    def turn(index: int, at: datetime, text: str, name: str) -> Turn:
        return Turn(index, (HumanMessage(text, name=name), AIMessage("Noted.")), created_at=at)

    hook(
        [
            turn(0, DAY1, "My sister lives in Lisbon.", "Ana"),
            turn(1, DAY1 + timedelta(minutes=5), "The dentist moved my appointment.", "Ben"),
            turn(2, DAY2, "I booked the flight to Lisbon for the offsite.", "Ben"),
            turn(3, DAY2 + timedelta(minutes=3), "The Lisbon hotel is near the river.", "Ana"),
            turn(4, DAY2 + timedelta(minutes=6), "We land in Lisbon at noon.", "Ben"),
        ]
    )
    recaller = Recaller(archive, archive.embeddings, k=5, weights=KEYWORD_ONLY, touch=False)

    hits = recaller.recall("Lisbon flight hotel offsite", user_id="team")
    parts = {h.record.metadata["turn_index"]: h.parts for h in hits}
    # the day-2 conversation matches the query as a whole: its turns share the session lift
    assert parts[2]["session"] == parts[3]["session"] == parts[4]["session"] == 1.0
    assert parts[0]["session"] < 1.0  # the day-1 mention of Lisbon does not get it
    assert hits[-1].record.metadata["turn_index"] in (0, 1)

    said = recaller.recall("What did Ben say about Lisbon?", user_id="team")
    by_turn = {h.record.metadata["turn_index"]: h for h in said}
    assert by_turn[2].parts["speaker"] == by_turn[4].parts["speaker"] == 1.0
    assert by_turn[0].parts["speaker"] == by_turn[3].parts["speaker"] == 0.0
    assert said[0].record.metadata["speaker"] == "Ben"
    archive.close()
