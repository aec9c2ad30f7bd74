from __future__ import annotations

import pytest

from langchain_tiered_memory import TieredMemory, TokenBudget, context_window_for_model


def test_default_caps_follow_the_ratios() -> None:
    budget = TokenBudget(context_window=10_000)
    assert budget.caps == {
        "system": 1000,
        "core": 1000,
        "buffer": 5000,
        "recall": 1500,
        "output": 1500,
    }
    assert budget.input_budget == 8500
    assert sum(budget.caps.values()) == 10_000


def test_caps_never_exceed_the_window_with_rounding() -> None:
    for window in (256, 1001, 4096, 8191, 128_000):
        budget = TokenBudget(context_window=window)
        assert sum(budget.caps.values()) == window
        assert budget.caps["output"] >= int(window * 0.15)


@pytest.mark.parametrize(
    ("ratios", "fragment"),
    [
        ({"buffer": -0.1, "recall": 0.75}, ">= 0"),
        ({"buffer": 0.6}, "sum to 1"),
        ({"memory": 0.1}, "Unknown budget section"),
        ({"output": 0.0, "buffer": 0.65}, "'output' ratio must be > 0"),
        ({"buffer": 0.0, "recall": 0.65}, "'buffer' ratio must be > 0"),
        ({"buffer": float("nan")}, ">= 0"),
    ],
)
def test_bad_ratios_name_the_fix(ratios: dict[str, float], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        TokenBudget(context_window=4096, ratios=ratios)


def test_bad_windows() -> None:
    with pytest.raises(ValueError, match="at least 256"):
        TokenBudget(context_window=100)
    with pytest.raises(ValueError, match="int"):
        TokenBudget(context_window=4096.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lend_order"):
        TokenBudget(context_window=4096, lend_order=("output",))  # type: ignore[arg-type]


def test_custom_ratios_for_a_support_bot() -> None:
    budget = TokenBudget(
        context_window=8192,
        ratios={"system": 0.1, "core": 0.05, "buffer": 0.6, "recall": 0.1, "output": 0.15},
    )
    assert budget.caps["buffer"] == int(8192 * 0.6)


def test_model_lookup() -> None:
    assert context_window_for_model("gpt-4") == 8192
    assert context_window_for_model("openai:gpt-4o-mini-2024-07-18") == 128_000
    assert TokenBudget.for_model("gpt-4o", context_window=4096).context_window == 4096
    with pytest.raises(ValueError, match="context_window="):
        context_window_for_model("mystery-model")


def test_lending_order_and_output_reserved() -> None:
    budget = TokenBudget(context_window=1000)
    # nothing recalled, no core: the buffer borrows their spare tokens
    granted = budget.allocate({"system": 30, "buffer": 2000})
    assert granted["buffer"] == budget.input_budget - 30
    assert sum(granted.values()) <= budget.input_budget
    # recall over its cap borrows only after the buffer is served
    granted = budget.allocate({"system": 30, "buffer": 600, "recall": 400})
    assert granted["buffer"] == 600
    assert granted["recall"] == budget.input_budget - 30 - 600
    # lend order can favour recall (e.g. a legal assistant)
    legal = TokenBudget(context_window=1000, lend_order=("recall", "buffer", "core"))
    granted = legal.allocate({"system": 30, "buffer": 600, "recall": 400})
    assert granted["buffer"] == 500  # its own cap, nothing borrowed
    assert granted["recall"] == legal.input_budget - 30 - 500


def test_system_prompt_too_large_for_its_section() -> None:
    with pytest.raises(ValueError, match="raise ratios\\['system'\\]"):
        TieredMemory(context_window=1024, system_prompt="rules " * 400)
    memory = TieredMemory(context_window=1024)
    with pytest.raises(ValueError, match="system section"):
        memory.system_prompt = "rules " * 400
    assert memory.system_prompt == ""


def test_tool_schemas_count_against_the_system_section() -> None:
    with pytest.raises(ValueError, match="tool schemas"):
        TieredMemory(context_window=1024, system_prompt="Be brief.", tools_tokens=200)
