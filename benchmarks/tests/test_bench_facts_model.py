"""``bench facts --extractor MODEL``: the production model path (batched, off the add) and
its cost per 100 turns - model calls, prompt and completion tokens, wall time and parse
failures - in the result and the printout. The model is scripted (a fake chat model whose
structured output follows a list), so the counts are known."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from typer.testing import CliRunner

from langchain_tiered_memory import models
from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.testing import ScriptedExtractionModel
from langchain_tiered_memory.write.model_extractor import ModelExtractor
from tiered_memory_bench.facts import FactItem, run_facts_bench

#: Said in a way the rules do not read, so only the model can find it.
ITEM = FactItem(
    "m-fact",
    "fact",
    "en",
    (("Fun fact: left-handedness runs in the family and I'm no exception.", "Handy!"),),
    "Which guitar should I buy?",
    ("left-hand",),
)
LEFT = {
    "action": "add",
    "subject": "handedness",
    "content": "is left-handed",
    "source_turn": 0,
    "reason": "the user said so",
}
#: Four filler turns: an item's six turns are fewer than a batch (8), so the one call is the
#: flush before the question, and the question leaves fewer than 8 pending: no other call.
FILLER = 4


def test_the_model_path_reports_its_cost_per_100_turns() -> None:
    model = ScriptedExtractionModel(
        script=[[LEFT], "{not json"], usage={"input_tokens": 500, "output_tokens": 40}
    )
    extractor = ModelExtractor(model)
    second = dataclasses.replace(ITEM, id="m-second")
    report = run_facts_bench(
        [ITEM, second],
        embeddings=DeterministicFakeEmbedding(size=16),
        filler_turns=FILLER,
        extractor_factory=lambda: extractor,
    )
    # one call per item: the first answers the fact, the second's answer does not parse
    # (nothing written: the item misses it)
    assert model.calls == 2
    assert report["core_hit"] == 0.5
    assert [m["id"] for m in report["misses"]] == ["m-second"]
    cost = report["extraction"]
    assert cost["turns"] == 12  # per item: the statement, 4 filler turns, the question
    totals = cost["totals"]
    assert (totals["model_calls"], totals["parse_failures"]) == (2, 1)
    assert totals["model_decisions"] == 1
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (1000, 80)  # the provider's
    assert extractor.seconds > 0  # the calls are timed
    assert totals["model_seconds"] == round(extractor.seconds, 2) <= totals["wall_seconds"]
    per_100 = cost["per_100_turns"]
    assert per_100["model_calls"] == pytest.approx(2 * 100 / 12, abs=0.01)
    assert per_100["prompt_tokens"] == pytest.approx(1000 * 100 / 12, abs=0.01)
    assert per_100["completion_tokens"] == pytest.approx(80 * 100 / 12, abs=0.01)
    assert per_100["parse_failures"] == pytest.approx(100 / 12, abs=0.01)
    assert per_100["wall_seconds"] == pytest.approx(totals["wall_seconds"] * 100 / 12, abs=0.01)


def test_the_rules_make_no_model_call_and_miss_what_only_the_model_reads() -> None:
    report = run_facts_bench(
        [ITEM], embeddings=DeterministicFakeEmbedding(size=16), filler_turns=FILLER
    )
    assert report["core_hit"] == 0.0
    totals = report["extraction"]["totals"]
    assert (totals["model_calls"], totals["prompt_tokens"], totals["parse_failures"]) == (0, 0, 0)


def test_bench_facts_cli_prints_and_writes_the_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedExtractionModel(script=[[LEFT]])
    monkeypatch.setattr(models, "require_chat_model", lambda spec, **kw: model)
    data = tmp_path / "facts.json"
    item = {
        "id": ITEM.id,
        "kind": "fact",
        "lang": "en",
        "turns": [{"user": ITEM.turns[0][0], "assistant": ITEM.turns[0][1]}],
        "question": ITEM.question,
        "expect": list(ITEM.expect),
    }
    data.write_text(json.dumps({"items": [item, {**item, "id": "second"}]}), encoding="utf-8")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        [
            "bench", "facts", "--data", str(data), "--extractor", "scripted:model",
            "--filler-turns", str(FILLER), "--limit", "1", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "extraction per 100 turns" in result.output
    shown = dict(re.findall(r"│ ([a-z_ ]+?) +│ +([\d.]+) │", result.output))
    assert shown["turns replayed"] == "6"
    assert shown["model_calls"] == "16.67"  # one call in 6 turns
    for metric in ("prompt_tokens", "completion_tokens", "parse_failures", "wall_seconds"):
        assert metric in shown
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["items"] == 1 and saved["limit"] == 1  # --limit: the first item only
    assert saved["core_hit"] == 1.0
    assert saved["extraction"]["totals"]["model_calls"] == model.calls == 1
    assert saved["extraction"]["totals"]["prompt_tokens"] > 0  # counted: no provider usage


def test_a_model_without_structured_output_is_refused_before_the_replay(tmp_path: Path) -> None:
    data = tmp_path / "facts.json"
    data.write_text("[]", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "facts", "--data", str(data), "--extractor", "echo"])
    assert result.exit_code == 2
    assert "gives no structured output" in result.output
