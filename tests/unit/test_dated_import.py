"""Importing an old conversation: turns keep the time they were said (``add_messages(at=)``)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryStore

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
JUNE = datetime(2023, 6, 20, 9, 0, tzinfo=timezone.utc)


def _chatter(n: int) -> list[list[HumanMessage | AIMessage]]:
    return [
        [HumanMessage(f"Filler message number {i} about the weather and trains."), AIMessage("OK.")]
        for i in range(n)
    ]


def test_imported_turns_are_archived_and_recalled_with_their_dates(tmp_path) -> None:
    with MemoryStore(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        memory = store.memory("ana", "import", context_window=1024)
        memory.add_messages(
            [HumanMessage("I am allergic to peanuts."), AIMessage("Noted, no peanuts.")], at=MAY
        )
        for turn in _chatter(40):  # enough to page the first turn out
            memory.add_messages(turn, at=JUNE)
        assert all(t.created_at == JUNE for t in memory.state.turns)  # the buffer: June only
        recalled = memory.recall("peanuts allergy")
        peanut = [r for r in recalled if "peanuts" in r.text]
        assert peanut, recalled
        assert peanut[0].created_at == MAY
        context = memory.build_context(query="Any peanut snacks for me?", recall=True)
        rendered = "\n".join(str(m.content) for m in context.messages)
        assert "2023-05-08" in rendered


def test_naive_time_is_refused_and_nothing_is_stored(tmp_path) -> None:
    with MemoryStore(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        memory = store.memory("ana", "import", context_window=1024)
        with pytest.raises(ValueError, match="timezone"):
            memory.add_messages([HumanMessage("hello")], at=datetime(2023, 5, 8))
        assert memory.state.turns == ()
        memory.add_messages([HumanMessage("hello")])  # still usable, dated now
        assert memory.state.turns[0].created_at.year >= 2026
