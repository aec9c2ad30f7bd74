"""The walk of one prompt through ``recall/``: each module is entered once at most.

``build_context`` on a memory whose archive holds records runs the gate and the
recall; a profiler counts the calls into each module of ``recall/`` made from
outside it. Recall is entered through its front doors (the gate's decision and what
a prompt recalls) and works inside; a second entry means code outside ``recall/``
that does recall's work piecemeal.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.recall import signals, time_expressions
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.store import MemoryStore

RECALL = "langchain_tiered_memory.recall"


def _module(frame: FrameType | None) -> str:
    return str(frame.f_globals.get("__name__", "")) if frame is not None else ""


def _inside(module: str) -> bool:
    return module == RECALL or module.startswith(RECALL + ".")


@contextmanager
def entries_into_recall() -> Iterator[Counter[str]]:
    """Count the calls into each module of ``recall/`` from code outside it (this thread).

    A call counts when the called function's module is in ``recall/`` and its
    caller's is not (a generator resumed from outside counts again).
    """
    entered: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = _module(frame)
            if _inside(module) and not _inside(_module(frame.f_back)):
                entered[module.removeprefix(RECALL + ".")] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield entered
    finally:
        sys.setprofile(previous)


def _walk(tmp_path: Path, prompt: Callable[[Any], Any]) -> Counter[str]:
    """The entries into ``recall/`` while ``prompt(memory)`` runs over Ana's archive."""
    with MemoryStore(tmp_path, embeddings=DeterministicFakeEmbedding(size=16)) as store:
        store.archive.add(
            [
                MemoryRecord.new(
                    user_id="ana",
                    thread_id="old",
                    kind="turn",
                    text=text,
                    sources=(f"turn:{i}",),
                    metadata={"speaker": "user", "turn_index": i, "session": 1},
                )
                for i, text in enumerate(
                    [
                        "user: I'm allergic to peanuts, so no satay for me.",
                        "user: My daughter Lea starts school in September.",
                        "user: I fly to Lisbon on 12 May 2026 for the conference.",
                    ]
                )
            ]
        )
        memory = store.memory("ana", "new")
        memory.add_messages([HumanMessage("Last time, what did I say about my daughter Lea?")])
        with entries_into_recall() as entered:
            context = prompt(memory)
        assert context.gate is not None and context.gate.recall, context.gate
        assert any("Lea" in r.text for r in context.recalled), context.recalled
        return entered


def test_one_prompt_enters_each_recall_module_once(tmp_path: Path) -> None:
    entered = _walk(tmp_path, lambda memory: memory.build_context())
    assert entered, "the walk saw no entry into recall/"
    assert {"gate", "prompt"} <= set(entered), entered  # the gate decided, the prompt recalled
    assert {module: n for module, n in entered.items() if n > 1} == {}, entered


def test_a_second_entry_is_counted(tmp_path: Path) -> None:
    # the check on a walk that enters recall/ from outside again (it cannot pass vacuously)
    def twice(memory: Any) -> Any:
        signals.text_words("my daughter")
        time_expressions.parse_count("three")
        signals.text_words("Lea")
        return memory.build_context()

    entered = _walk(tmp_path, twice)
    assert entered["signals"] == 2 and entered["time_expressions"] == 1, entered
