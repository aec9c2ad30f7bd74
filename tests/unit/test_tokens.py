from __future__ import annotations

import hashlib
import os

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from langchain_tiered_memory.budget import tokens
from langchain_tiered_memory.budget.tokens import (
    ApproximateTokenCounter,
    CallableTokenCounter,
    ChatModelTokenCounter,
    OpenAITokenCounter,
    ensure_offline_encodings,
    resolve_token_counter,
)

CONVERSATION = [
    SystemMessage("You are a careful assistant."),
    HumanMessage("Hi! I'm allergic to peanuts 🥜 and I live in Lisbon.", name="ana"),
    AIMessage(
        "",
        tool_calls=[
            {
                "name": "search_restaurants",
                "args": {"city": "Lisbon", "avoid": ["peanuts"]},
                "id": "call_1",
            },
            {"name": "weather", "args": {"city": "Lisbon"}, "id": "call_2"},
        ],
    ),
    ToolMessage('[{"name": "Tasca", "rating": 4.5}]', tool_call_id="call_1"),
    ToolMessage("Sunny, 24°C", tool_call_id="call_2", name="weather"),
    AIMessage("Try Tasca; it is sunny today."),
    HumanMessage("我对花生过敏，请记住。我下周三去北京出差。"),
    HumanMessage(content=[{"type": "text", "text": "block one"}, {"type": "text", "text": "two"}]),
    AIMessage(""),
]


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4"])
def test_agrees_exactly_with_chat_openai(model: str) -> None:
    reference = ChatOpenAI(model=model, api_key="unused-offline")
    ours = OpenAITokenCounter(model)
    for end in range(len(CONVERSATION) + 1):
        prefix = CONVERSATION[:end]
        assert ours.count_messages(prefix) == reference.get_num_tokens_from_messages(prefix)


_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(list("花生过敏北京🥜😀 ")),
    ),
    max_size=200,
)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_text, min_size=0, max_size=6), with_tool=st.booleans())
def test_agreement_on_random_text(texts: list[str], with_tool: bool) -> None:
    messages: list = []
    for i, text in enumerate(texts):
        messages.append(HumanMessage(text) if i % 2 == 0 else AIMessage(text))
    if with_tool and texts:
        messages.append(
            AIMessage("", tool_calls=[{"name": "t", "args": {"q": texts[0]}, "id": "c9"}])
        )
        messages.append(ToolMessage(texts[-1], tool_call_id="c9"))
    for model in ("gpt-4o-mini", "gpt-4"):
        reference = ChatOpenAI(model=model, api_key="unused-offline")
        assert OpenAITokenCounter(model).count_messages(
            messages
        ) == reference.get_num_tokens_from_messages(messages)


def test_counter_is_additive(counter: OpenAITokenCounter) -> None:
    parts = [counter.message_tokens(m) for m in CONVERSATION]
    assert counter.count_messages(CONVERSATION) == sum(parts) + counter.reply_priming


def test_seeding_makes_tiktoken_work_without_download(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_seeded_dirs", set())

    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    assert ensure_offline_encodings() == str(tmp_path)
    for name, url in tokens._ENCODING_URLS.items():
        assert (tmp_path / hashlib.sha1(url.encode()).hexdigest()).exists()
        # load straight from the seeded cache (hash-checked by tiktoken)
        tiktoken.registry.ENCODINGS.pop(name, None)
        assert tiktoken.get_encoding(name).encode("hello world")
    assert sorted(os.listdir(tmp_path)) == sorted(
        hashlib.sha1(u.encode()).hexdigest() for u in tokens._ENCODING_URLS.values()
    )


def test_unknown_model_needs_an_explicit_counter() -> None:
    with pytest.raises(ValueError, match="token_counter="):
        resolve_token_counter(None, model="my-local-llama")
    with pytest.raises(ValueError, match="model="):
        resolve_token_counter(None)


def test_pluggable_counters() -> None:
    msgs = [HumanMessage("a b c"), AIMessage("d")]
    assert resolve_token_counter(lambda m: 7 * len(m)).count_messages(msgs) == 14
    fake = GenericFakeChatModel(messages=iter([]), custom_get_token_ids=lambda t: t.split())
    chat_counter = resolve_token_counter(fake)
    assert isinstance(chat_counter, ChatModelTokenCounter)
    assert chat_counter.count_messages(msgs) == fake.get_num_tokens_from_messages(msgs)
    ready = CallableTokenCounter(len, name="len")
    assert resolve_token_counter(ready) is ready
    with pytest.raises(TypeError):
        resolve_token_counter(42)  # type: ignore[arg-type]


def test_approximate_counter_is_opt_in_and_named() -> None:
    approx = ApproximateTokenCounter(chars_per_token=4)
    assert approx.name.startswith("approximate")
    assert approx.count_text("a" * 9) == 3
    assert not isinstance(resolve_token_counter(None, model="gpt-4o"), ApproximateTokenCounter)
    with pytest.raises(ValueError):
        ApproximateTokenCounter(chars_per_token=0)
