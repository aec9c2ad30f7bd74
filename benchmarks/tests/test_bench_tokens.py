from __future__ import annotations

import json

from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from tiered_memory_bench.datasets import load_locomo
from tiered_memory_bench.tokens import run_tokens_bench

REQUIRED = {
    "turns",
    "budget_input_tokens",
    "max_prompt_tokens",
    "mean_prompt_tokens",
    "violations",
    "prefix_reuse_mean",
    "full_history_final_tokens",
    "summaries",
    "llm_calls_per_turn",
}


def test_cli_writes_json_with_the_required_keys(locomo_fixture, tmp_path) -> None:
    out = tmp_path / "tokens.json"
    plot = tmp_path / "tokens.png"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "tokens",
            "--data",
            str(locomo_fixture),
            "--context-window",
            "1024",
            "--out",
            str(out),
            "--plot",
            str(plot),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert set(report) >= REQUIRED
    assert report["turns"] == 86
    assert report["violations"] == 0
    assert report["max_prompt_tokens"] <= report["budget_input_tokens"]
    assert report["summaries"] > 0
    assert 0.5 < report["prefix_reuse_mean"] <= 1
    assert report["per_conversation"][0]["prefix_reuse_mean"] == report["prefix_reuse_mean"]
    assert report["llm_calls_per_turn"] == 0.0
    assert (
        report["full_history_final_tokens"] > report["per_conversation"][0]["final_prompt_tokens"]
    )
    assert plot.stat().st_size > 10_000
    assert "prompt_tokens" not in report["per_conversation"][0]  # series only for the plot


def test_counts_llm_calls_per_turn(locomo_fixture) -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langchain_tiered_memory.tiers.summarize import LLMSummarizer

    def factory(counter):
        model = GenericFakeChatModel(messages=iter([AIMessage("Ana: peanuts allergy [t0]")] * 500))
        return LLMSummarizer(model, counter=counter)

    report = run_tokens_bench(
        load_locomo(locomo_fixture), context_window=1024, summarizer_factory=factory
    )
    assert report["llm_calls"] == report["summaries"] > 0
    assert report["llm_calls_per_turn"] == round(report["llm_calls"] / 86, 4)
    assert report["violations"] == 0


def test_missing_data_says_where_to_point(tmp_path) -> None:
    result = CliRunner().invoke(app, ["bench", "tokens", "--data", str(tmp_path / "nope.json")])
    assert result.exit_code != 0
    assert "--data" in result.output and "Traceback" not in result.output


def test_llm_upkeep_stays_under_a_quarter_call_per_turn(locomo_fixture) -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableLambda

    from langchain_tiered_memory.tiers.summarize import LLMSummarizer
    from langchain_tiered_memory.write.extraction import LLMExtractor

    class FakeExtractorModel(GenericFakeChatModel):
        def with_structured_output(self, schema, **kwargs):  # type: ignore[no-untyped-def]
            return RunnableLambda(lambda _: schema(facts=[]))

    def summarizer(counter):
        model = GenericFakeChatModel(messages=iter([AIMessage("Ana: peanuts [t0]")] * 500))
        return LLMSummarizer(model, counter=counter)

    report = run_tokens_bench(
        load_locomo(locomo_fixture),
        context_window=4096,
        summarizer_factory=summarizer,
        extractor_factory=lambda: LLMExtractor(FakeExtractorModel(messages=iter([]))),
        extract_every=8,
    )
    assert report["extraction_llm_calls"] > 0
    assert report["llm_calls"] == report["summary_llm_calls"] + report["extraction_llm_calls"]
    assert report["llm_calls_per_turn"] <= 0.25


def test_dense_recall_replay_keeps_the_prefix(locomo_fixture) -> None:
    report = run_tokens_bench(load_locomo(locomo_fixture), context_window=2048, dense_recall=True)
    assert report["dense_recall"] and report["prompts_with_recall"] > 0
    assert report["violations"] == 0
    assert report["prefix_reuse_mean"] > 0.75
