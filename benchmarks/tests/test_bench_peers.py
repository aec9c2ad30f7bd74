"""The tokens bench's peers: full history, trim_messages, LangMem, classic summary buffer."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from typer.testing import CliRunner

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.datasets import load_locomo
from tiered_memory_bench.peers import PEERS, ExtractiveChatModel, MemoCounter
from tiered_memory_bench.tokens import run_tokens_bench

# langchain-classic and langmem are dev dependencies (and the 'peers' extra), so every
# peer runs in CI.
AVAILABLE = PEERS

KEYS = {
    "settings",
    "max_prompt_tokens",
    "mean_prompt_tokens",
    "violations",
    "prefix_reuse_mean",
    "final_prompt_tokens_mean",
    "summarizer_calls",
    "summarizer_calls_per_turn",
}


@pytest.fixture(scope="module")
def report(locomo_fixture):
    return run_tokens_bench(load_locomo(locomo_fixture), context_window=1024, peers=AVAILABLE)


def test_every_peer_is_reported_with_the_same_keys(report) -> None:
    peers = report["peers"]
    assert list(peers["strategies"]) == ["tiered_memory", *AVAILABLE]
    for row in peers["strategies"].values():
        assert set(row) == KEYS
    assert peers["token_counter"] == "tiktoken:gpt-4o-mini"
    assert peers["input_budget_tokens"] == report["budget_input_tokens"]
    assert "ExtractiveChatModel" in peers["summarizer"]


def test_ours_matches_the_plain_run_and_full_history_costs_more(report, locomo_fixture) -> None:
    plain = run_tokens_bench(load_locomo(locomo_fixture), context_window=1024)
    side = report["peers"]["strategies"]
    ours, full = side["tiered_memory"], side["full_history"]
    # replaying peers alongside changes nothing of ours
    for key in ("max_prompt_tokens", "mean_prompt_tokens", "violations", "summaries"):
        assert report[key] == plain[key]
    assert ours["max_prompt_tokens"] == report["max_prompt_tokens"]
    assert ours["final_prompt_tokens_mean"] == report["final_prompt_tokens_mean"]
    assert ours["summarizer_calls"] == report["summaries"] > 0
    # the peer's full history is the bench's own full-history count, and costs more
    assert full["final_prompt_tokens_mean"] == report["full_history_final_tokens"]
    assert full["final_prompt_tokens_mean"] > ours["final_prompt_tokens_mean"]
    assert full["violations"] > 0 and full["summarizer_calls"] == 0
    # prefix reuse: the full history only appends, so each prompt opens with the last one
    assert ours["prefix_reuse_mean"] == report["prefix_reuse_mean"] > 0.5
    assert full["prefix_reuse_mean"] > 0.9


def test_trim_messages_never_exceeds_its_budget(report) -> None:
    trim = report["peers"]["strategies"]["trim_messages"]
    assert trim["violations"] == 0
    assert trim["max_prompt_tokens"] <= report["budget_input_tokens"]
    assert trim["summarizer_calls"] == 0
    assert f"max_tokens={report['budget_input_tokens']}," in trim["settings"]


def test_classic_summary_buffer_calls_the_shared_summariser(report) -> None:
    side = report["peers"]["strategies"]
    classic = side["classic_summary_buffer"]
    assert classic["summarizer_calls"] > 0
    # the classic memory prunes (and summarises) on nearly every message once full
    assert classic["summarizer_calls_per_turn"] > side["tiered_memory"]["summarizer_calls_per_turn"]
    assert classic["final_prompt_tokens_mean"] < side["full_history"]["final_prompt_tokens_mean"]


def test_langmem_calls_the_shared_summariser(report) -> None:
    langmem = report["peers"]["strategies"]["langmem_summarization_node"]
    assert langmem["summarizer_calls"] > 0
    assert (
        langmem["max_prompt_tokens"]
        < report["peers"]["strategies"]["full_history"]["max_prompt_tokens"]
    )


def test_a_given_summariser_model_drives_the_peers(locomo_fixture) -> None:
    counter = OpenAITokenCounter("gpt-4o-mini")
    model = ExtractiveChatModel(counter=counter, max_tokens=60)
    report = run_tokens_bench(
        load_locomo(locomo_fixture),
        context_window=1024,
        peers=("langmem_summarization_node",),
        peer_model=model,
    )
    peers = report["peers"]
    assert "same chat model (ExtractiveChatModel)" in peers["summarizer"]
    assert peers["strategies"]["langmem_summarization_node"]["summarizer_calls"] > 0
    assert model.callbacks is None  # the counting callback went on a copy


def test_unknown_peer_is_refused(locomo_fixture) -> None:
    with pytest.raises(ValueError, match="unknown peer 'mem0'"):
        run_tokens_bench(load_locomo(locomo_fixture), peers=("mem0",))


def test_extractive_chat_model_reads_both_prompt_formats() -> None:
    counter = OpenAITokenCounter("gpt-4o-mini")
    fake = ExtractiveChatModel(counter=counter, max_tokens=200)
    langmem = fake.invoke(
        [
            HumanMessage("We fly to Lisbon on 12 May.", name="Ana"),
            HumanMessage(
                "This is summary of the conversation so far: [t0] Ana: I have a dog, Max."
                "\n\nExtend this summary by taking into account the new messages above:"
            ),
        ]
    ).content
    assert langmem.splitlines() == [
        "[t0] Ana: I have a dog, Max.",
        "[t0] Ana: We fly to Lisbon on 12 May.",
    ]
    classic = fake.invoke(
        "EXAMPLE\nCurrent summary:\nignored\n\nNew lines of conversation:\nHuman: x\n\n"
        "New summary:\nignored\nEND OF EXAMPLE\n\nCurrent summary:\n[t0] user: Max.\n\n"
        "New lines of conversation:\nHuman: My sister Clara marries on 14 June.\n"
        "AI: Congratulations!\n\nNew summary:"
    ).content
    assert classic.splitlines()[0] == "[t0] user: Max."
    assert "[t1] user: My sister Clara marries on 14 June." in classic
    with pytest.raises(ValueError, match="does not recognise"):
        fake.invoke("Summarise this, please.")
    assert fake.get_num_tokens_from_messages([AIMessage("hi")]) == counter.count_messages(
        [AIMessage("hi")]
    )


def test_memo_counter_is_exact() -> None:
    counter = OpenAITokenCounter("gpt-4o-mini")
    memo = MemoCounter(counter)
    messages = [SystemMessage("Be brief."), HumanMessage("hi", name="Ana"), AIMessage("hello")]
    assert memo(messages) == counter.count_messages(messages)
    assert memo(messages[1:]) == counter.count_messages(messages[1:])
    assert memo([]) == counter.count_messages([])


def test_cli_peers_flag(locomo_fixture, tmp_path) -> None:
    out = tmp_path / "tokens.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "tokens",
            "--data",
            str(locomo_fixture),
            "--context-window",
            "1024",
            "--peers",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "side by side" in result.output
    assert set(json.loads(out.read_text())["peers"]["strategies"]) == {"tiered_memory", *PEERS}
