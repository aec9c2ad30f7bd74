"""Fuzzing the public entry points with hostile inputs (hypothesis).

Entry points: ``TieredMemory.add_messages``, ``build_context``, ``recall``,
``write_fact``, ``TieredChatMessageHistory.add_messages`` and the
``retrieve_memory`` tool. Inputs: non-text content (image blocks, dict and
``None`` content built with ``model_construct``), enormous text, lone UTF-16
surrogates, NUL and control characters, tool calls without ids or with
non-JSON arguments, ``invalid_tool_calls`` with broken JSON, tool results
without their call, tool calls that never get a result, empty strings, and
objects that are not messages at all.

Each input must be handled, or rejected with a ``ValueError``/``TypeError``
whose message is a sentence (never ``UnicodeEncodeError``, ``AttributeError``
and the like) - and a rejected call must store nothing. After every example
the store must still work: the thread reloads from disk and takes a normal
turn; enough normal turns page the fuzzed turns out to the archive without
an archive or summary failure; the assembled prompt fits the budget; the
archive takes a new record and recall finds it; the SQLite files pass
``PRAGMA integrity_check`` and the vector index holds exactly the records.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_tiered_memory.integrations.history import TieredChatMessageHistory
from langchain_tiered_memory.integrations.tools import create_retrieve_memory_tool
from langchain_tiered_memory.memory import ABANDONED_TOOL_RESULT, TieredMemory
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.core import BLOCKS, CoreFact

WINDOW = 1024
FILLERS = 4  # normal turns added after each example: enough to page everything before out
USER = "fuzz"
# no shrinking: each example runs the store, so shrinking could take minutes; a
# failure is reported with the example as drawn (and replayed from .hypothesis/)
FUZZ = settings(
    max_examples=40,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_ids = itertools.count()

# -- strategies ---------------------------------------------------------------------------

_SPECIAL = [
    "",
    " ",
    "\ud800",
    "a\udfffb",
    "\ud83d\ude00",  # a surrogate *pair* written as two code points
    "\ud83d",
    "\x00nul",
    "\r\n\t\x0b",
    "\u202eevil rtl",
    "</memory>",
    "花生过敏",
    "I'm allergic to peanuts.",
    "🥜" * 5,
    '{"broken": json',
]
_chars = st.one_of(
    st.characters(exclude_categories=()),
    st.characters(categories=["Cs"]),  # lone surrogates (excluded by default)
)
small_text = st.one_of(
    st.text(alphabet=_chars, max_size=40),
    st.sampled_from(_SPECIAL),
    st.lists(st.sampled_from(_SPECIAL), max_size=5).map("".join),
)
huge_text = st.integers(min_value=20_000, max_value=120_000).map(
    lambda n: ("数据 word \ud800 " * (n // 10 + 1))[:n]
)
text = st.one_of(small_text, small_text, small_text, huge_text)

blocks = st.one_of(
    small_text,
    small_text.map(lambda t: {"type": "text", "text": t}),
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
    st.just({"type": "image", "url": "https://example.com/cat.png"}),
    st.just({"type": "text", "text": None}),
    st.just({"foo": "bar"}),
)
content = st.one_of(text, st.lists(blocks, max_size=4))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), small_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(small_text, inner)),
    max_leaves=6,
)
call_ids = st.one_of(st.none(), st.just(""), st.text(alphabet="abc123", min_size=1, max_size=4))


@st.composite
def messages(draw: Callable[[st.SearchStrategy[Any]], Any]) -> list[Any]:
    """0-5 messages or non-messages, in any order."""
    out: list[Any] = []
    last_ids: list[str] = []
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        kind = draw(
            st.sampled_from(
                [
                    "human",
                    "human",
                    "ai",
                    "ai_tools",
                    "ai_tools",
                    "ai_bad_args",
                    "ai_invalid",
                    "tool",
                    "tool_orphan",
                    "system",
                    "constructed",
                    "junk",
                ]
            )
        )
        if kind == "human":
            out.append(HumanMessage(content=draw(content)))
        elif kind == "ai":
            out.append(AIMessage(content=draw(content)))
        elif kind == "ai_tools":
            calls: list[dict[str, Any]] = [
                {
                    "name": draw(small_text),
                    "args": draw(st.dictionaries(small_text, json_values)),
                    "id": draw(call_ids),
                }
                for _ in range(draw(st.integers(min_value=1, max_value=2)))
            ]
            out.append(AIMessage(content=draw(small_text), tool_calls=calls))
            last_ids = [str(c["id"]) for c in calls if c["id"] is not None]
            if last_ids and draw(st.booleans()):  # answer them (or leave them dangling)
                out.extend(ToolMessage(draw(content), tool_call_id=i) for i in last_ids)
        elif kind == "ai_bad_args":
            call = {"name": "lookup", "args": {"when": object()}, "id": "bad1"}
            out.append(AIMessage(content="", tool_calls=[call]))
        elif kind == "ai_invalid":
            invalid = {
                "type": "invalid_tool_call",
                "name": draw(st.one_of(st.none(), small_text)),
                "args": draw(st.one_of(st.none(), small_text)),
                "id": draw(call_ids),
                "error": draw(st.one_of(st.none(), small_text)),
            }
            out.append(AIMessage(content=draw(small_text), invalid_tool_calls=[invalid]))
        elif kind == "tool":
            call_id = draw(st.sampled_from(last_ids)) if last_ids else draw(small_text)
            out.append(ToolMessage(draw(content), tool_call_id=call_id))
        elif kind == "tool_orphan":
            out.append(ToolMessage(draw(content), tool_call_id="no-such-call"))
        elif kind == "system":
            out.append(SystemMessage(content=draw(text)))
        elif kind == "constructed":  # skips pydantic validation, as some callers do
            bad = draw(st.sampled_from([None, {"t": 1}, 42]))
            if draw(st.booleans()):
                out.append(HumanMessage.model_construct(content=bad))
            else:
                out.append(AIMessage.model_construct(content=bad))
        else:
            out.append(draw(st.sampled_from(["plain text", None, 42, {"role": "user"}])))
    return out


# -- the checks ---------------------------------------------------------------------------


def expect_clear_error(call: Callable[[], Any]) -> Any:
    """Run ``call``: a result, or a ValueError/TypeError that says what is wrong."""
    try:
        return call()
    except (ValueError, TypeError) as exc:
        assert not isinstance(exc, UnicodeError), f"unclear error: {exc!r}"
        assert len(str(exc)) >= 20 and " " in str(exc), f"unclear message: {exc!r}"
        return exc


def integrity(path: Path) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path
    finally:
        conn.close()


def check_healthy(store: MemoryStore, thread: str) -> None:
    """The fuzzed thread, the user's archive and the files still work."""
    memory = store.memory(USER, thread, context_window=WINDOW)  # reloaded from disk
    start = memory.state.next_index
    buffered_before = [t.index for t in memory.state.turns]
    for i in range(FILLERS):  # ~200 tokens each: the fuzzed turns must page out
        memory.add_messages(
            [HumanMessage(f"filler {i}: " + "we talked about trains " * 40), AIMessage("ok")]
        )
    failures = [e for e in memory.events if e.kind != "compression"]
    assert not failures, failures
    archived = {
        r.metadata.get("turn_index")
        for r in store.archive.records(RecordFilter(USER, thread_id=thread))
    }
    still = {t.index for t in memory.state.turns}
    assert set(buffered_before) <= archived  # paged out, and nothing lost on the way
    assert still and max(still) == start + FILLERS - 1
    assert memory.state.next_index == start + FILLERS
    context = memory.build_context(query="trains", recall=True)
    assert context.total_tokens <= context.input_budget
    note = f"the healthmark{next(_ids)} lamp cost 12 euros"
    store.archive.add([MemoryRecord.new(user_id=USER, kind="fact", text=note, importance=10)])
    assert note in [r.text for r in memory.recall(note, k=3)]  # same words, same vector
    ids = store.archive.index.ids()
    assert ids is not None and len(ids) == store.archive.count()
    integrity(store.path / "archive.sqlite")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryStore]:
    with MemoryStore(
        tmp_path_factory.mktemp("fuzz"), embeddings=DeterministicFakeEmbedding(size=16)
    ) as store:
        seed = store.memory(USER, "seed", context_window=WINDOW)
        for i in range(30):
            seed.add_messages([HumanMessage(f"note {i}: the seed lamp {i}"), AIMessage("ok")])
        yield store


def fresh(store: MemoryStore) -> TieredMemory:
    return store.memory(USER, f"t{next(_ids)}", context_window=WINDOW, gate="always")


# -- the entry points ---------------------------------------------------------------------


@pytest.mark.slow
@FUZZ
@given(batch=messages())
def test_add_messages(store: MemoryStore, batch: list[Any]) -> None:
    memory = fresh(store)
    memory.add_messages([HumanMessage("hello"), AIMessage("hi")])
    before = store.memory(USER, memory.thread_id).state
    outcome = expect_clear_error(lambda: memory.add_messages(batch))
    saved = store.memory(USER, memory.thread_id).state  # a new view: what the store holds
    if isinstance(outcome, Exception):  # rejected: nothing stored
        assert saved.turns == before.turns and saved.next_index == before.next_index
    else:  # accepted: what the memory holds is what is on disk
        assert [t.index for t in saved.turns] == [t.index for t in memory.state.turns]
        expect_clear_error(lambda: memory.build_context())
    check_healthy(store, memory.thread_id)


@pytest.mark.slow
@FUZZ
@given(
    query=st.one_of(text, st.none(), st.sampled_from([42, b"bytes", ["list"]])),
    recall=st.sampled_from([None, True, False]),
    k=st.one_of(st.none(), st.integers(min_value=-3, max_value=40)),
)
def test_build_context_and_recall(
    store: MemoryStore, query: Any, recall: bool | None, k: int | None
) -> None:
    memory = fresh(store)
    memory.add_messages([HumanMessage("what did I say about the seed lamp?"), AIMessage("...")])
    context = expect_clear_error(lambda: memory.build_context(query=query, recall=recall))
    if not isinstance(context, Exception):
        assert context.total_tokens <= context.input_budget
    found = expect_clear_error(lambda: memory.recall(query, k=k))
    if isinstance(query, str) and (k is None or k >= 1):
        assert isinstance(found, list)  # any string is a valid query
        assert len(found) <= (k or memory.recall_k)
    check_healthy(store, memory.thread_id)


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-5, max_value=20),
    st.sampled_from(["high", None]),
)


@pytest.mark.slow
@FUZZ
@given(
    subject=st.one_of(small_text, st.none()),
    content=st.one_of(text, st.none()),
    block=st.sampled_from([*BLOCKS, "secret", ""]),
    importance=numbers,
    confidence=numbers,
    source_turn=st.one_of(st.none(), st.integers(min_value=-2, max_value=99), st.just("3")),
)
def test_write_fact(
    store: MemoryStore,
    subject: Any,
    content: Any,
    block: str,
    importance: Any,
    confidence: Any,
    source_turn: Any,
) -> None:
    memory = fresh(store)

    def write() -> Any:
        fact = CoreFact.new(
            subject,
            content,
            block=block,
            importance=importance,
            confidence=confidence,
            source_turn=source_turn,
        )
        return memory.write_fact(fact)

    before = [f.to_dict() for f in memory.core.history()]
    outcome = expect_clear_error(write)
    if isinstance(outcome, Exception):  # rejected: core memory untouched
        assert [f.to_dict() for f in memory.core.history()] == before
    saved = store.core(USER)  # a new view: what the store holds
    assert [f.id for f in saved.history()] == [f.id for f in memory.core.history()]
    context = memory.build_context()
    assert context.total_tokens <= context.input_budget
    check_healthy(store, memory.thread_id)


@pytest.mark.slow
@FUZZ
@given(batch=messages())
def test_chat_history_add_messages(store: MemoryStore, batch: list[Any]) -> None:
    history = TieredChatMessageHistory(fresh(store))
    expect_clear_error(lambda: history.add_messages(batch))
    view = expect_clear_error(lambda: history.messages)
    if isinstance(view, list):
        assert all(isinstance(m, BaseMessage) for m in view)
    check_healthy(store, history.memory.thread_id)


@pytest.mark.slow
@FUZZ
@given(
    query=st.one_of(text, st.none(), st.just(42)),
    k=st.one_of(st.none(), st.integers(min_value=-5, max_value=100), st.just("many")),
    as_tool_call=st.booleans(),
)
def test_retrieve_memory_tool(store: MemoryStore, query: Any, k: Any, as_tool_call: bool) -> None:
    tool = create_retrieve_memory_tool(store, context_window=WINDOW)
    args: dict[str, Any] = {"query": query}
    if k is not None:
        args["k"] = k
    payload: dict[str, Any] = (
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": args}
        if as_tool_call
        else args
    )
    config: Any = {"configurable": {"user_id": USER, "thread_id": f"t{next(_ids)}"}}
    result = expect_clear_error(lambda: tool.invoke(payload, config=config))
    if isinstance(query, str) and (k is None or isinstance(k, int)):
        # a valid call always answers, with quoted records or "No memories found."
        body = result.content if isinstance(result, ToolMessage) else result
        assert isinstance(body, str)
        assert body == "No memories found." or body.startswith("Recalled memories")
    check_healthy(store, config["configurable"]["thread_id"])


# -- the bugs the fuzzing found, pinned as plain examples ------------------------------------


def test_lone_surrogates_are_replaced_not_fatal(store: MemoryStore) -> None:
    """A lone surrogate used to fail every later page-out of its thread (UTF-8 cannot hold it)."""
    memory = fresh(store)
    memory.add_messages([HumanMessage("bad \ud800 escape"), AIMessage("ok \udfff")])
    assert memory.state.turns[-1].messages[0].content == "bad \ufffd escape"
    check_healthy(store, memory.thread_id)
    (record,) = store.archive.records(RecordFilter(USER, thread_id=memory.thread_id, kinds="turn"))[
        :1
    ]
    assert "bad \ufffd escape" in record.text
    memory.write_fact(CoreFact.new("nick\ud83d", "Ana\udc00"))
    assert memory.core.get("nick\ufffd") is not None


def test_a_tool_call_without_result_does_not_hold_the_turn_open(store: MemoryStore) -> None:
    """It used to swallow every later message into one turn that could never be paged out."""
    memory = fresh(store)
    memory.add_messages(
        [
            HumanMessage("search"),
            AIMessage("", tool_calls=[{"name": "web", "args": {}, "id": "c1"}]),
        ]
    )
    memory.add_messages([HumanMessage("never mind"), AIMessage("ok")])
    first, second = memory.state.turns
    result = first.messages[-1]
    assert isinstance(result, ToolMessage) and result.tool_call_id == "c1"
    assert result.status == "error" and result.content == ABANDONED_TOOL_RESULT
    assert second.messages[0].content == "never mind"
    check_healthy(store, memory.thread_id)  # both turns page out


def test_a_message_json_cannot_store_is_rejected_and_changes_nothing(store: MemoryStore) -> None:
    """It used to enter the buffer, then fail every later save of the thread."""
    memory = fresh(store)
    memory.add_messages([HumanMessage("hello"), AIMessage("hi")])
    with pytest.raises(TypeError, match="JSON"):
        memory.add_messages([HumanMessage("x", additional_kwargs={"handle": object()})])
    with pytest.raises(TypeError, match="JSON"):
        memory.add_messages(
            [AIMessage("", tool_calls=[{"name": "f", "args": {"at": object()}, "id": "c"}])]
        )
    assert len(memory.state.turns) == 1
    memory.add_messages([HumanMessage("still fine"), AIMessage("yes")])
    check_healthy(store, memory.thread_id)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"importance": "high"}, TypeError),
        ({"importance": float("nan")}, ValueError),
        ({"confidence": 7.0}, ValueError),
        ({"source_turn": "3"}, TypeError),
    ],
)
def test_a_bad_fact_leaves_core_memory_untouched(
    store: MemoryStore, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    """A string importance used to enter core memory and break every later prompt."""
    memory = fresh(store)
    before = [f.id for f in memory.core.history()]
    with pytest.raises(error):
        memory.write_fact(CoreFact.new("hobby", "chess", **kwargs))
    assert [f.id for f in memory.core.history()] == before
    memory.add_messages([HumanMessage("hi")])
    assert memory.build_context().total_tokens <= memory.budget.input_budget
