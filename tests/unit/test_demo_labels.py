"""What the demo prints of a recalled record's source."""

from __future__ import annotations

from langchain_tiered_memory.cli.demo import recall_label


def test_recalled_sources_read_as_turns_not_turn_turn() -> None:
    assert recall_label("turn turn:1") == "turn 1"
    assert recall_label("turn turn:14, turn:40, turn:45") == "turns 14, 40, 45"
    assert recall_label("summary turn:12, turn:13, turn:14, ...") == "summary of turns 12-14, ..."
    assert recall_label("turn turn:3 (outdated: a newer fact replaced it)") == (
        "turn 3 (outdated: a newer fact replaced it)"
    )
