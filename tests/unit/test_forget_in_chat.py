"""Forgetting as a chat user sees it: ``/forget WORDS`` and a spoken request, with and
without a model (issue 33 items 1-5)."""

from __future__ import annotations

from pathlib import Path

from langchain_tiered_memory.cli.chat import ChatSession
from langchain_tiered_memory.store import MemoryStore


def session(tmp_path: Path) -> tuple[MemoryStore, ChatSession]:
    store = MemoryStore(tmp_path / "data")
    return store, ChatSession(store.memory("ana", "chat", context_window=2048))


def test_slash_forget_matches_the_words_of_subject_or_content(tmp_path: Path) -> None:
    store, chat = session(tmp_path)
    chat.handle("My daughter Mia starts school in September.")
    chat.handle("I moved to Lisbon last month.")
    subjects = {f.subject for f in chat.memory.core.active()}
    assert any(s.endswith("daughter") for s in subjects) and "home_city" in subjects
    out = chat.handle("/forget daughter")
    assert out.startswith("forgot ") and "fact" in out
    assert not any("daughter" in f.subject for f in chat.memory.core.history())
    assert not any("Mia" in str(m.content) for m in chat.memory.messages)
    out = chat.handle("/forget Lisbon")
    assert out.startswith("forgot ")
    assert chat.memory.core.get("home_city") is None
    assert "Lisbon" not in repr(store.export_user("ana"))
    store.close()


def test_slash_forget_lists_what_there_is_when_nothing_matches(tmp_path: Path) -> None:
    store, chat = session(tmp_path)
    chat.handle("I'm allergic to peanuts.")
    out = chat.handle("/forget Madrid")
    assert "nothing in memory matches 'Madrid'" in out
    assert "allergy:peanuts (allergic to peanuts)" in out  # what there is
    assert chat.memory.core.get("allergy:peanuts") is not None
    assert chat.handle("/forget allergy:peanuts").startswith("forgot 1 version")  # a subject
    assert "nothing to match" in chat.handle("/forget the")
    store.close()


def test_a_spoken_forget_without_a_model_shows_what_was_done(tmp_path: Path) -> None:
    store, chat = session(tmp_path)
    chat.handle("I moved to Lisbon last month.")
    chat.handle("Actually we moved again, to Porto.")
    out = chat.handle("Forget what I said about Porto.")
    # "moved again, to Porto" is a home fact now (issue 30): the fact, its record and the turn
    assert out.startswith("(forget request carried out: forgot 1 fact, 1 archived record and 1")
    assert "1 conversation turn" in out
    assert "Porto" not in repr(chat.memory.build_context().messages)
    out = chat.handle("Forget what I said about Madrid.")
    assert out.startswith("(forget request carried out: nothing matched)")
    assert chat.handle("Where do I live?").startswith("(no model:")  # no forget: no note
    store.close()


def test_inspect_json_keeps_no_forgotten_word_in_the_audit_log(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from langchain_tiered_memory.cli.app import app

    store, chat = session(tmp_path)
    chat.handle("I moved to Lisbon last month.")
    chat.handle("Actually we moved again, to Porto")
    chat.memory.build_context(query="Actually we moved again, to Porto", recall=True)
    args = ["inspect", "--data-dir", str(tmp_path / "data"), "--user", "ana", "--json"]
    store.close()
    before = CliRunner().invoke(app, args)
    assert before.exit_code == 0 and '"query": "Actually we moved again, to Porto"' in before.output
    store, chat = session(tmp_path)
    chat.handle("Forget what I said about Porto")
    store.close()
    after = CliRunner().invoke(app, args)
    assert after.exit_code == 0, after.output
    assert "Porto" not in after.output
    assert '"query": "[forgotten]"' in after.output  # the event stays, without the words
    assert '"forgotten": true' in after.output  # and one says something was forgotten
    assert "Lisbon" in after.output
