from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.write.extraction import RuleBasedExtractor
from tiered_memory_bench.facts import (
    METRICS,
    FactItem,
    load_facts,
    load_filler,
    run_facts_bench,
)

FIXTURES = Path(__file__).parents[2] / "tests" / "fixtures"

TINY: list[dict[str, Any]] = [
    {
        "id": "t-fact",
        "kind": "fact",
        "lang": "en",
        "turns": [
            {
                "user": "Quick one: I'm allergic to kiwi. How do I ripen a mango?",
                "assistant": "Keep it in a paper bag at room temperature.",
            }
        ],
        "question": "Suggest a fruit salad for the picnic.",
        "expect": ["kiwi"],
    },
    {
        "id": "t-update",
        "kind": "update",
        "lang": "en",
        "turns": [
            {"user": "I live in Cardiff, near the bay.", "assistant": "Lovely spot."},
            {"user": "We moved to Bath last month!", "assistant": "Congratulations!"},
        ],
        "question": "What's worth doing around here on Sunday?",
        "expect": ["bath"],
        "stale": ["cardiff"],
    },
    {
        "id": "t-zh",
        "kind": "fact",
        "lang": "zh",
        "turns": [{"user": "我儿子叫豆豆，今年三岁。", "assistant": "好可爱的名字。"}],
        "question": "帮我写一段生日祝福。",
        "expect": ["豆豆"],
    },
    {
        "id": "t-non-fact",
        "kind": "non_fact",
        "lang": "en",
        "turns": [
            {
                "user": "If I lived in Oslo, would I need winter tyres?",
                "assistant": "Yes, studded or studless winter tyres.",
            }
        ],
        "question": "Plan a day out for Saturday.",
        "expect": [],
        "forbid": ["oslo"],
    },
    {
        # said in a way the offline extractor does not read: an honest miss
        "id": "t-missed",
        "kind": "fact",
        "lang": "en",
        "turns": [
            {
                "user": "Fun fact: left-handedness runs in the family and I'm no exception.",
                "assistant": "Handy to know!",
            }
        ],
        "question": "Which scissors should I buy?",
        "expect": ["left-hand"],
    },
]


def write_items(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"version": 1, "items": items}), encoding="utf-8")
    return path


def test_facts_bench_scores_each_kind(tmp_path: Path) -> None:
    items = load_facts(write_items(tmp_path, TINY))
    result = run_facts_bench(
        items,
        embeddings=DeterministicFakeEmbedding(size=32),
        context_window=2048,
        filler_turns=30,
    )
    assert result["statements_evicted"] == 1.0  # the filler pushed every statement out
    assert result["core_hit"] == 0.75  # 3 of the 4 items that need a fact
    assert result["context_hit"] == 1.0  # the missed one still reached the prompt (summary)
    assert result["stale_as_current"] == 0.0 and result["false_facts"] == 0.0
    assert set(result["by_kind"]) == {"fact", "update", "non_fact"}
    assert set(result["by_lang"]) == {"en", "zh"}
    for group in (*result["by_kind"].values(), *result["by_lang"].values()):
        assert set(METRICS) <= set(group)
    assert result["by_kind"]["non_fact"]["core_hit"] is None  # nothing to expect there
    (miss,) = result["misses"]
    assert miss["id"] == "t-missed" and miss["missing_in_core"] == ["left-hand"]
    assert miss["missing_in_context"] == []
    assert isinstance(miss["core_memory"], list) and miss["gate"]


def test_stale_and_false_facts_are_counted(tmp_path: Path) -> None:
    items = [
        # the update is said in a way the extractor cannot read: the old city stays current
        FactItem(
            "s",
            "update",
            "en",
            (("I live in York.", "Nice."), ("Ended up in Hull, new flat and all.", "Good luck!")),
            "Where's good for a walk this weekend?",
            ("hull",),
            stale=("york",),
        ),
        # a fact the user did state, checked as if it were forbidden: counted as false
        FactItem(
            "f", "non_fact", "en", (("I'm vegan.", "Noted."),), "Dinner ideas?", forbid=("vegan",)
        ),
    ]
    result = run_facts_bench(
        items,
        embeddings=DeterministicFakeEmbedding(size=32),
        context_window=2048,
        filler_turns=30,
        extractor_factory=RuleBasedExtractor,  # the plain rules: no rule reads "ended up in"
    )
    assert result["stale_as_current"] == 1.0 and result["false_facts"] == 1.0
    assert {m["id"] for m in result["misses"]} == {"s", "f"}
    # the default, the rules with links, links the move to the old city by meaning
    linked = run_facts_bench(
        items[:1],
        embeddings=DeterministicFakeEmbedding(size=32),
        context_window=2048,
        filler_turns=30,
    )
    assert linked["stale_as_current"] == 0.0, linked["misses"]


def test_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_facts(tmp_path / "missing.json")
    bad = [{**TINY[0], "kind": "rumour"}]
    with pytest.raises(ValueError, match="kind"):
        load_facts(write_items(tmp_path, bad))
    with pytest.raises(ValueError, match="expect"):
        load_facts(write_items(tmp_path, [{**TINY[0], "expect": []}]))
    with pytest.raises(ValueError, match="filler_turns"):
        run_facts_bench([], filler_turns=-1)


def test_filler_is_generic() -> None:
    filler = load_filler()
    assert len(filler["en"]) >= 60 and len(filler["zh"]) >= 60
    for lang, pairs in filler.items():
        for user, _ in pairs:
            # questions about the world, never statements about the user
            assert user.rstrip().endswith(("?", "？")), (lang, user)


@pytest.mark.slow
def test_held_out_set(tmp_path: Path) -> None:
    """Our own held-out items (worded apart from the dev file) reach the goals."""
    items = load_facts(FIXTURES / "facts_heldout.json")
    assert len(items) >= 100
    result = run_facts_bench(
        items,
        embeddings=DeterministicFakeEmbedding(size=32),
        context_window=2048,
        filler_turns=30,
    )
    assert result["statements_evicted"] == 1.0
    assert result["core_hit"] >= 0.85, result["misses"]
    assert result["context_hit"] >= 0.95, result["misses"]
    assert result["stale_as_current"] <= 0.05, result["misses"]
    assert result["false_facts"] <= 0.02, result["misses"]


@pytest.mark.slow
def test_bench_facts_cli(tmp_path: Path) -> None:
    out = tmp_path / "facts.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "facts",
            "--data",
            str(write_items(tmp_path, TINY[:2])),
            "--filler-turns",
            "30",
            "--context-window",
            "2048",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "facts bench" in result.output and "by kind and language" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    for key in (
        "context_hit",
        "core_hit",
        "stale_as_current",
        "false_facts",
        "gate_fired",
        "by_kind",
        "by_lang",
        "misses",
    ):
        assert key in report
    assert report["core_hit"] == 1.0


def test_each_offline_extractor_value_builds_its_extractor() -> None:
    """``--extractor`` of the facts bench: each offline value builds its extractor, with no
    model resolved (the learned models load lazily, on the first extraction)."""
    from langchain_tiered_memory.write.learned import LearnedExtractor, LinkedRulesExtractor
    from tiered_memory_bench.cli import OFFLINE_EXTRACTORS, _model_extractor_factory

    built = {value: _model_extractor_factory(value)() for value in OFFLINE_EXTRACTORS}
    assert type(built["rules"]) is RuleBasedExtractor  # the plain rules, no links
    assert type(built["rules+links"]) is LinkedRulesExtractor
    assert type(built["learned"]) is LearnedExtractor and not built["learned"].own_words
    assert built["learned+own-words"].own_words


#: The blind files' items by (kind, language), as benchmarks/README.md gives them.
_ROUND = {
    ("fact", "en"): 35,
    ("update", "en"): 27,
    ("non_fact", "en"): 38,
    ("fact", "zh"): 25,
    ("update", "zh"): 18,
    ("non_fact", "zh"): 27,
}
BLIND_FILES = {
    "r3": {**_ROUND, ("fact", "en"): 36, ("update", "en"): 25, ("non_fact", "en"): 36,
           ("fact", "zh"): 24, ("update", "zh"): 16, ("non_fact", "zh"): 24},
    "r4": {**_ROUND, ("fact", "en"): 37, ("non_fact", "en"): 37, ("non_fact", "zh"): 26},
    "r5": _ROUND,
    "r6": _ROUND,
    "r7": _ROUND,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BLIND_FILES))
def test_a_blind_file_loads_with_the_counts_the_readme_gives(name: str) -> None:
    """A blind file loads and has the kinds and languages benchmarks/README.md states.

    Only its shape is checked here (no extractor runs on it): a new one stays unrun until
    the lead's run.
    """
    from collections import Counter

    path = Path(__file__).parents[1] / "tiered_memory_bench" / "data" / f"facts_blind_{name}.json"
    items = load_facts(path)
    counts = BLIND_FILES[name]
    assert len(items) == len({item.id for item in items}) == sum(counts.values())
    assert Counter((item.kind, item.lang) for item in items) == counts
    for item in items:
        said = " ".join(user for user, _ in item.turns).lower()
        # every update names the old value, every non-fact what must not be stored
        assert item.stale if item.kind == "update" else True, item.id
        assert item.forbid if item.kind == "non_fact" else True, item.id
        # what is checked was said in the turns (r3: not checked; r4: expect and stale);
        # the question carries no check string
        said_checks = {"r3": (), "r4": (*item.expect, *item.stale)}.get(name, item.checks())
        assert all(s.lower() in said for s in said_checks), item.id
        assert not any(s in item.question.lower() for s in item.checks()), item.id
    filler = load_filler()
    for item in items:  # the filler leaves turns to use for every item
        pool = filler[item.lang]
        assert any(not any(c in f"{q} {a}".lower() for c in item.checks()) for q, a in pool)
