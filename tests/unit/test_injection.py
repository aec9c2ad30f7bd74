"""Prompt injection: stored text reaches the prompt only as quoted data.

``tests/fixtures/injection_corpus.json`` holds 30 injection attempts (English
and Chinese): "ignore previous instructions", fake system messages and chat
markup, fake ``</memory>`` / ``</summary>`` closing tags (also upper-case,
spaced, pre-escaped and attribute break-outs), role-play, spoofed tool calls
and tool results, markdown and HTML tricks, Unicode direction tricks and
facts planted in tool output.

Each attempt is stored once as a user turn and once as a tool result, paged
out to the archive, then recalled and assembled into a prompt. The checks
parse the prompt: the pinned system prompt is unchanged; every other system
message is a labelled block, and the per-turn ``<memory_context>`` block
opens the newest user message; their quoted parts (``<memory ...>`` records,
the ``<summary>``) parse back to exactly the stored text - so no fake closing
tag ended a block early - and nothing of an attempt appears outside them.
Core memory accepts facts from the user's own messages and explicit agent
tool calls only: never from tool results or recalled records.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from langchain_tiered_memory.budget.context import (
    CORE_HEADER,
    CORE_RECENT_HEADER,
    RECALL_HEADER,
    TURN_MEMORY_CLOSE,
    TURN_MEMORY_OPEN,
    TURN_MEMORY_SEPARATOR,
    ContextWindow,
    RecalledMemory,
    render_recalled,
)
from langchain_tiered_memory.budget.markup import SUMMARY_HEADER, summary_message
from langchain_tiered_memory.integrations.tools import (
    create_core_memory_tools,
    create_retrieve_memory_tool,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.write.extraction import LLMExtractor

CORPUS: list[dict[str, str]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "injection_corpus.json").read_text(encoding="utf-8")
)["entries"]
SYSTEM = "You are a careful travel assistant."
WINDOW = 4096
# a quoted block: its content is escaped, so it holds no raw "<" or ">"
BLOCK = re.compile(r"<memory(?: [^<>]*)?>([^<>]*)</memory>|<summary>([^<>]*)</summary>")


def fragments(text: str) -> list[str]:
    """Distinctive pieces of an attempt (what would betray it outside a block)."""
    pieces = re.split(r"[\n.!?。！？:：;；,，]+", text)
    return [p.strip() for p in pieces if len(p.strip()) >= 6]


def quoted_parts(text: str) -> tuple[list[str], str]:
    """The unescaped contents of the quoted blocks, and the text outside them."""
    contents = [html.unescape(a or b) for a, b in BLOCK.findall(text)]
    return contents, BLOCK.sub("", text)


def split_turn_memory(context: ContextWindow, message: BaseMessage) -> tuple[str, str]:
    """A user message as (the per-turn memory block folded into it, the user's own text)."""
    text = str(message.content)
    block = context.turn_memory
    if block and context.messages.index(message) == context.turn_memory_index:
        assert text.startswith(block)  # the block opens the message
        rest = text[len(block) :]
        assert rest == "" or rest.startswith(TURN_MEMORY_SEPARATOR)
        return block, rest[len(TURN_MEMORY_SEPARATOR) :]
    return "", text


def check_block(text: str, context: ContextWindow) -> list[str]:
    """Check the per-turn block: recent core facts, then the recalled records."""
    assert text.startswith(TURN_MEMORY_OPEN) and text.endswith(TURN_MEMORY_CLOSE)
    inner = text[len(TURN_MEMORY_OPEN) : -len(TURN_MEMORY_CLOSE)]
    assert TURN_MEMORY_CLOSE.strip() not in inner  # no fake closing tag inside
    core_part, _, recall_part = inner.partition(RECALL_HEADER)
    contents, outside = quoted_parts(recall_part)
    assert contents == [r.text for r in context.recalled]  # exactly the records, in order
    assert outside.strip() == ""
    if core_part:
        assert core_part.startswith(CORE_RECENT_HEADER)
        for line in core_part[len(CORE_RECENT_HEADER) :].splitlines():
            assert re.fullmatch(r"\[(human|persona|task)\]|- [^<>]*", line), line
    return contents


def check_prompt(context: ContextWindow, summary: str) -> list[str]:
    """Parse the prompt; return every quoted block's text. Fails on any break-out."""
    messages = context.messages
    assert messages[0] == SystemMessage(SYSTEM)  # pinned, unchanged
    quoted: list[str] = []
    for message in messages[1:]:
        if isinstance(message, HumanMessage):
            block, _ = split_turn_memory(context, message)
            if block:
                quoted += check_block(block, context)
            continue
        if not isinstance(message, SystemMessage):
            continue
        text = str(message.content)
        contents, outside = quoted_parts(text)
        if text.startswith(SUMMARY_HEADER.split("{", 1)[0]):
            assert contents == [summary]
            assert "<summary>" not in outside and outside.endswith(":\n")
        elif text.startswith(CORE_HEADER):
            assert contents == []
            for line in text[len(CORE_HEADER) :].splitlines():
                # one fact per line, no raw markup: a fact cannot forge structure
                assert re.fullmatch(r"\[(human|persona|task)\]|- [^<>]*", line), line
        else:
            pytest.fail(f"unexpected system message: {text[:80]!r}")
        quoted += contents
    if context.recalled:  # recalled records travel only in the per-turn block
        assert context.turn_memory_index is not None
        assert isinstance(messages[context.turn_memory_index], HumanMessage)
    return quoted


def assert_only_quoted(context: ContextWindow, summary: str, attempt: str) -> None:
    """``attempt`` shows up in the prompt only inside quoted blocks."""
    check_prompt(context, summary)
    for message in context.messages:
        if isinstance(message, SystemMessage):
            _, outside = quoted_parts(str(message.content))
            if str(message.content).startswith(CORE_HEADER):
                continue  # the user's own stated facts; structure checked above
        elif isinstance(message, HumanMessage):  # the block parsed above; the user's text
            _, outside = split_turn_memory(context, message)
        else:  # the recent turns: the attempts were paged out of the buffer
            outside = str(message.content)
        for piece in fragments(attempt):
            assert piece not in outside, (piece, message.type)
            assert html.escape(piece) not in outside, (piece, message.type)


def fill(memory: TieredMemory, n: int = 12) -> None:
    """Add plain turns until everything before them is paged out."""
    for i in range(n):
        memory.add_messages(
            [HumanMessage(f"filler {i}: " + "tell me about trains " * 45), AIMessage("Sure.")]
        )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with MemoryStore(
        tmp_path_factory.mktemp("inj"), embeddings=DeterministicFakeEmbedding(size=32)
    ) as store:
        said = store.memory("ana", "chat", context_window=WINDOW, system_prompt=SYSTEM)
        for entry in CORPUS:  # the attempts as the user's own turns
            said.add_messages([HumanMessage(entry["text"]), AIMessage("I can't help with that.")])
        fill(said)
        fetched = store.memory("bob", "chat", context_window=WINDOW, system_prompt=SYSTEM)
        for entry in CORPUS:  # the attempts as tool results (a web page, a document)
            call = f"call-{entry['id']}"
            fetched.add_messages(
                [
                    HumanMessage("Please look that up on the web."),
                    AIMessage("", tool_calls=[{"name": "web_search", "args": {}, "id": call}]),
                    ToolMessage(entry["text"], tool_call_id=call, name="web_search"),
                    AIMessage("Here is what the page says."),
                ]
            )
        fill(fetched)
        yield store


def test_corpus_is_varied() -> None:
    assert len(CORPUS) >= 30 and len({e["id"] for e in CORPUS}) == len(CORPUS)
    assert {e["lang"] for e in CORPUS} == {"en", "zh"}
    assert len({e["technique"] for e in CORPUS}) >= 12
    assert sum("</memory" in e["text"].lower() for e in CORPUS) >= 5


@pytest.mark.parametrize("user", ["ana", "bob"])
def test_recalled_attempts_stay_inside_quoted_blocks(store: MemoryStore, user: str) -> None:
    memory = store.memory(user, "chat", context_window=WINDOW, system_prompt=SYSTEM)
    buffered = "\n".join(t.transcript() for t in memory.state.turns)
    assert all(e["text"] not in buffered for e in CORPUS)  # really paged out
    recalled = 0
    for entry in CORPUS:
        context = memory.build_context(query=entry["text"], recall=True)
        assert context.total_tokens <= context.input_budget
        assert_only_quoted(context, memory.state.summary, entry["text"])
        quoted = check_prompt(context, memory.state.summary)
        recalled += any(entry["text"] in q for q in quoted)
    # the attempts did reach the prompt (recall works), each inside a block
    print(f"{user}: {recalled}/{len(CORPUS)} attempts recalled")
    assert recalled >= len(CORPUS) - 2, recalled


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_fake_closing_tags_cannot_end_a_block(entry: dict[str, str]) -> None:
    text = entry["text"]
    for rendered in (
        render_recalled(RecalledMemory(text, source=text[:20])),  # a hostile source too
        str(summary_message(text, 3).content),
    ):
        contents, outside = quoted_parts(rendered)
        assert contents == [text]  # one block, and it holds the whole attempt
        for piece in fragments(text):
            assert piece not in outside and html.escape(piece) not in outside


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("<>/&\"'=; memorysumaxMEMORY\n"), max_size=60))
def test_any_markup_stays_in_one_block(text: str) -> None:
    contents, outside = quoted_parts(render_recalled(RecalledMemory(text, source=text)))
    assert contents == [text]
    assert outside == ""
    assert quoted_parts(str(summary_message(text, 0).content))[0] == [text]


def test_tool_results_and_recalled_records_never_write_core_memory(store: MemoryStore) -> None:
    bob = store.memory("bob", "chat", context_window=WINDOW, system_prompt=SYSTEM)
    # planted "I'm allergic to ZEBRA" etc. arrived only as tool results: no fact
    assert bob.core.active() == [] and bob.core.history() == []
    assert store.archive.records(RecordFilter("bob", kinds="fact")) == []
    # recalling them, and feeding the retrieve_memory tool's answer back as a tool
    # result, writes nothing either
    tool = create_retrieve_memory_tool(store, context_window=WINDOW)
    config: Any = {"configurable": {"user_id": "bob", "thread_id": "chat"}}
    answer = tool.invoke("ZEBRA allergic admin", config=config)
    assert "ZEBRA" in answer  # the planted text is there, quoted
    bob.add_messages(
        [
            HumanMessage("What do you know about me?"),
            AIMessage("", tool_calls=[{"name": "retrieve_memory", "args": {}, "id": "r1"}]),
            ToolMessage(answer, tool_call_id="r1", name="retrieve_memory"),
            AIMessage("I'm allergic to ZEBRA, says my memory."),  # the model repeating it
        ]
    )
    context = bob.build_context(query="I'm allergic to ZEBRA. My name is ZEBRA.", recall=True)
    # recalled - and left out as repeats, since the buffer now holds the tool's answer
    assert any("ZEBRA" in r.text for r in (*context.recalled, *context.repeats))
    assert bob.core.active() == []
    assert store.core("bob").history() == []
    assert not any("ZEBRA" in str(m.content) for m in context.messages[1:2])  # no core block


def test_the_users_own_statements_and_agent_tool_calls_do_write_core(store: MemoryStore) -> None:
    ana = store.memory("ana", "chat", context_window=WINDOW, system_prompt=SYSTEM)
    # ana *said* "I'm allergic to ZEBRA..." herself: stated facts are hers to keep
    allergy = next(f for f in ana.core.active() if f.subject.startswith("allergy:"))
    assert allergy.source == "user" and allergy.stated
    # an agent tool call (e.g. an agent fooled by a web page) writes, marked as the agent's
    append = create_core_memory_tools(store)[0]
    config: Any = {"configurable": {"user_id": "carol", "thread_id": "t"}}
    hostile = next(e["text"] for e in CORPUS if e["id"] == "close-tag-en-1")
    append.invoke({"subject": "note", "content": hostile}, config=config)
    carol = store.memory("carol", "t", context_window=WINDOW, system_prompt=SYSTEM)
    (fact,) = carol.core.active()
    assert fact.source == "agent_tool" and not fact.stated
    carol.add_messages([HumanMessage("hi")])
    context = carol.build_context()
    check_prompt(context, "")  # the core block keeps one escaped line per fact
    core_text = str(context.messages[1].content)
    assert "(agent, " in core_text and "</memory>" not in core_text


class RecordingExtractorModel(GenericFakeChatModel):
    """A structured-output fake that records the extraction prompts it gets."""

    prompts: list = []  # noqa: RUF012 - a pydantic field, copied per instance

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def respond(messages: list[BaseMessage]) -> Any:
            self.prompts.append(str(messages[0].content))
            return schema.model_validate({"facts": []})

        return RunnableLambda(respond)


def test_llm_extraction_never_sees_tool_results() -> None:
    model = RecordingExtractorModel(messages=iter([]), prompts=[])
    memory = TieredMemory(context_window=WINDOW, extractor=LLMExtractor(model), extract_every=4)
    for entry in CORPUS[:8]:
        call = f"c-{entry['id']}"
        memory.add_messages(
            [
                HumanMessage(f"my question {entry['id']}"),
                AIMessage("", tool_calls=[{"name": "web", "args": {}, "id": call}]),
                ToolMessage(entry["text"], tool_call_id=call),
                AIMessage("done"),
            ]
        )
    assert len(model.prompts) == 2  # batched: one call per 4 turns
    prompt = "\n".join(model.prompts)
    assert "my question ignore-en-1" in prompt  # the user's own words are read
    for entry in CORPUS[:8]:
        for piece in fragments(entry["text"]):
            assert piece not in prompt, piece
