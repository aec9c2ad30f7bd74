"""Facts with time, written by the model extractor (issue 30, items 2-4, "Done when"): a
supersession and its undo, a plan whose date passes, and the history query - each with a
scripted chat model (its structured output follows a list), through a real store. The
rules never run here: every fact is the model's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage, ToolCall

from langchain_tiered_memory import MemoryStore, TieredMemory
from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool
from langchain_tiered_memory.testing import ScriptedExtractionModel


def decision(action: str, subject: str, content: str, turn: int, **extra: Any) -> dict[str, Any]:
    return {
        "action": action,
        "subject": subject,
        "content": content,
        "source_turn": turn,
        "reason": f"{action} from turn {turn}",
        **extra,
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", embeddings=DeterministicFakeEmbedding(size=16))
    yield s
    s.close()


def said(memory: TieredMemory, text: str, at: datetime | None = None) -> None:
    """One exchange, then the model's batch (one turn) written."""
    memory.add_messages([HumanMessage(text), AIMessage("Noted.")], at=at)
    assert memory.flush_extraction(timeout=60)


def memory_with(store: MemoryStore, model: ScriptedExtractionModel) -> TieredMemory:
    memory = store.memory("ana", "t1", context_window=8192, extractor=model, extract_every=1)
    assert memory.model_extractor is not None  # the model path, not the rules
    return memory


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


def test_a_models_supersession_ends_the_old_value_and_can_be_undone(store: MemoryStore) -> None:
    model = ScriptedExtractionModel(
        script=[
            [decision("add", "home_city", "lives in Lisbon", 0)],
            [decision("update", "", "moved to Porto", 1, fact_id="f1")],
        ]
    )
    memory = memory_with(store, model)
    said(memory, "I live in Lisbon.")
    said(memory, "Update: we moved again, to Porto.")
    assert "[f1] home_city: lives in Lisbon" in str(model.prompts[1][-1].content)
    assert memory.core.get("home_city").content == "moved to Porto"
    lisbon, porto = memory.core.history("home_city")
    assert (lisbon.status, porto.status) == ("superseded", "active")
    assert lisbon.valid_until is not None  # the time it stopped holding

    update = memory.undo_supersession(lisbon.id)
    assert update.superseded is not None and update.superseded.content == "moved to Porto"
    assert memory.core.get("home_city").content == "lives in Lisbon"
    assert [(f.content, f.status) for f in memory.core.history("home_city")] == [
        ("lives in Lisbon", "superseded"),
        ("moved to Porto", "superseded"),
        ("lives in Lisbon", "active"),
    ]


def test_a_plan_the_model_wrote_is_shown_as_past_once_its_date_passes(store: MemoryStore) -> None:
    now = datetime.now(timezone.utc)
    model = ScriptedExtractionModel(
        script=[
            [
                decision(
                    "add", "plan:flight", "flight to Kyoto tomorrow at 9:40", 0, category="plan"
                )
            ],
            [decision("add", "plan:dentist", "dentist appointment tomorrow", 1, category="plan")],
        ]
    )
    memory = memory_with(store, model)
    said(memory, "My flight to Kyoto is tomorrow at 9:40.", at=now - timedelta(days=10))
    said(memory, "My dentist appointment is tomorrow.", at=now)
    flown = (now - timedelta(days=9)).date().isoformat()
    ahead = (now + timedelta(days=1)).date().isoformat()
    flight = memory.core.get("plan:flight")
    assert flight is not None and flight.valid_from is not None
    assert flight.valid_from.date().isoformat() == flown  # read from the user's clause
    shown = memory.core.render()
    assert f"(past, {flown}; stated" in shown and f"(on {ahead}; stated" in shown
    prompt = "\n".join(str(m.content) for m in memory.build_context().messages)
    assert f"past, {flown}" in prompt
    # the day before its date, the same flight was shown as ahead
    assert f"(on {flown};" in flight.render(now=now - timedelta(days=9, hours=12))


def test_where_did_i_live_in_2023_answers_from_the_models_history(store: MemoryStore) -> None:
    model = ScriptedExtractionModel(
        script=[
            [decision("add", "home_city", "lives in Paris", 0)],
            [decision("update", "home_city", "moved to Berlin in March 2024", 1, fact_id="f1")],
        ]
    )
    memory = memory_with(store, model)
    said(memory, "I live in Paris.", at=_at("2021-01-01"))
    said(memory, "We moved to Berlin in March 2024.", at=_at("2024-03-20"))
    tool = create_retrieve_memory_tool(store)
    call = ToolCall(
        name=tool.name, args={"query": "Where did I live in 2023?"}, id="c1", type="tool_call"
    )
    message = tool.invoke(call, config={"configurable": {"user_id": "ana", "thread_id": "t1"}})
    assert "home_city: lives in Paris (held 2021 to Mar 2024; superseded)" in message.content
    assert [f.content for f in memory.facts_at(_at("2023-06-01"))] == ["lives in Paris"]
    assert [f.content for f in memory.facts_at(_at("2024-06-01"))] == [
        "moved to Berlin in March 2024"
    ]
