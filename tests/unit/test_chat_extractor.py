"""``tiered-memory chat --model X`` writes facts with the model extractor (the production
path, batched off the turn), ``--extractor rules+links``, ``rules`` and ``learned`` opt
out, and the echo or no model keeps the offline default, the rules with links (issues 30
and 31). The chat model is scripted: a fake chat model whose structured output (the
extractor's answer) follows a list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from langchain_tiered_memory import models
from langchain_tiered_memory.cli.app import USER_ERROR_EXIT, app
from langchain_tiered_memory.cli.common import extractor_for_model
from langchain_tiered_memory.models.echo import EchoChatModel
from langchain_tiered_memory.testing import ScriptedExtractionModel
from langchain_tiered_memory.write.model_extractor import ModelExtractor

#: Said in a way the rules do not read: only the model can find it.
LEFT_HANDED = "Fun fact: left-handedness runs in the family and I'm no exception."
LEFT = {
    "action": "add",
    "subject": "handedness",
    "content": "is left-handed",
    "source_turn": 0,
    "reason": "the user said so",
}
PEANUTS = "I'm allergic to peanuts."


def chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Any, *options: str, lines: str
) -> Any:
    """Run ``tiered-memory chat`` as a user would, ``--model`` resolving to ``model``; the
    output's lines are joined (the console wraps them)."""
    monkeypatch.setattr(models, "resolve_chat_model", lambda spec, **kw: model)
    result = CliRunner().invoke(
        app,
        ["chat", "--data-dir", str(tmp_path / "mem"), "--model", "scripted", *options],
        input=lines,
    )
    result.said = " ".join(result.output.split())  # type: ignore[attr-defined]
    return result


def test_chat_with_a_model_writes_facts_with_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedExtractionModel(script=[[LEFT]])
    result = chat(tmp_path, monkeypatch, model, lines=f"{LEFT_HANDED}\n/core\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "facts written by the model (ScriptedExtractionModel, every 8 turns)" in result.said
    assert model.calls == 1  # /core extracted the pending turn first
    assert "handedness: is left-handed" in result.said
    assert LEFT_HANDED in str(model.prompts[0][-1].content)  # the user's words, as said


@pytest.mark.parametrize(
    ("choice", "name"),
    [("rules+links", "the rules+links -"), ("rules", "the rules -"), ("learned", "the learned")],
)
def test_an_offline_extractor_opts_out_of_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: str, name: str
) -> None:
    model = ScriptedExtractionModel(script=[[LEFT]])
    result = chat(
        tmp_path,
        monkeypatch,
        model,
        "--extractor",
        choice,
        lines=f"{LEFT_HANDED}\n{PEANUTS}\n/core\n/quit\n",
    )
    assert result.exit_code == 0, result.output
    assert f"facts written by {name}" in result.said
    assert model.calls == 0  # the model answered the turns, and wrote no fact
    assert "allergic to peanuts" in result.said and "left-handed" not in result.said


def test_the_default_local_model_answers_and_the_rules_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedExtractionModel(script=[[LEFT]])  # stands in for SmolLM2
    result = chat(
        tmp_path, monkeypatch, model, "--model", "local", lines=f"{PEANUTS}\n/core\n/quit\n"
    )
    assert result.exit_code == 0, result.output
    assert "facts written by the rules+links -" in result.said and model.calls == 0
    assert "allergic to peanuts" in result.said
    (tmp_path / "forced").mkdir()
    forced = chat(
        tmp_path / "forced", monkeypatch, model, "--model", "local", "--extractor", "model",
        lines=f"{LEFT_HANDED}\n/core\n/quit\n",
    )  # fmt: skip
    assert "facts written by the model" in forced.said and model.calls == 1
    assert "handedness: is left-handed" in forced.said


def test_the_echo_model_keeps_the_offline_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = chat(tmp_path, monkeypatch, EchoChatModel(), lines=f"{PEANUTS}\n/core\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "facts written by the rules+links -" in result.said
    assert "allergy:peanuts: allergic to peanuts" in result.said


def test_a_bad_extractor_is_refused_before_the_model_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(models, "resolve_chat_model", never)
    result = CliRunner().invoke(
        app, ["chat", "--data-dir", str(tmp_path / "mem"), "--extractor", "llm"], input="/quit\n"
    )
    assert result.exit_code == USER_ERROR_EXIT
    assert "use one of auto, model, rules+links, rules, learned, got 'llm'" in " ".join(
        result.output.split()
    )
    assert not (tmp_path / "mem").exists()  # nothing was opened


def test_extractor_for_model() -> None:
    scripted = ScriptedExtractionModel()
    for choice in ("auto", "model"):
        chosen = extractor_for_model(choice, scripted, "openai:gpt-4o-mini")
        assert isinstance(chosen, ModelExtractor) and chosen.model is scripted
    # the tiny offline model writes no fact (benchmarks/README.md): auto keeps the offline
    # default
    assert extractor_for_model("auto", scripted, "local") == "rules+links"
    assert isinstance(extractor_for_model("model", scripted, "local"), ModelExtractor)
    assert extractor_for_model("auto", EchoChatModel()) == "rules+links"
    assert extractor_for_model("auto", None) == "rules+links"
    assert extractor_for_model("model", None) == "rules+links"
    assert extractor_for_model("rules+links", scripted) == "rules+links"
    assert extractor_for_model("Rules", scripted) == "rules"
    assert extractor_for_model("learned", scripted) == "learned"
