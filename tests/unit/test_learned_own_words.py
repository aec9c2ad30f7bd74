"""The learned extractor's ``own_words`` option reads clauses from the same sentences
the rules read as the user's own (issue 31, round 6)."""

from __future__ import annotations

import pytest

from langchain_tiered_memory.write.learned.extractor import LearnedExtractor


class _Sure:
    """Models that call every clause a fact about the user (the filter is tested)."""

    def about_user(self, clauses: list[str]) -> list[float]:
        return [0.99] * len(clauses)


def _stated(text: str, own_words: bool) -> list[str]:
    ex = LearnedExtractor(models=_Sure(), own_words=own_words)  # type: ignore[arg-type]
    return [f.content for f in ex.extract_text(text) if f.stated and f.op == "add"]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("I was going to buy a Vespa this summer but I've gone right off the idea", "Vespa"),
        ("My mum says we should all move to Cornwall", "Cornwall"),
        ("Yeah right, I'm basically an Olympic rower", "rower"),
    ],
)
def test_own_words_keeps_others_words_and_doubt_out(text: str, word: str) -> None:
    assert any(word in c for c in _stated(text, own_words=False))
    assert not any(word in c for c in _stated(text, own_words=True))


def test_own_words_keeps_the_users_statement() -> None:
    assert any("Ghent" in c for c in _stated("I keep bees in Ghent.", own_words=True))
