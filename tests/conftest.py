"""Shared fixtures. Tests never need ../shared: they use tests/fixtures."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.tokens import OpenAITokenCounter

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def counter() -> OpenAITokenCounter:
    return OpenAITokenCounter("gpt-4o-mini")


@pytest.fixture(scope="session")
def locomo_fixture() -> Path:
    # a small synthetic conversation in LoCoMo format, written for these tests
    return FIXTURES / "synthetic_conversation.json"


class StemAxisEmbeddings(Embeddings):
    """One axis per word stem (plus a constant one): a fast, predictable stand-in model.

    A text's vector counts the words starting with each stem, so texts sharing
    a topic stem are similar and others are not.
    """

    def __init__(self, stems: Sequence[str]) -> None:
        self.stems = tuple(stems)
        self.queries: list[str] = []  # every embed_query text, in order

    def _vector(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        raw = [float(sum(w.startswith(s) for w in words)) for s in self.stems] + [0.1]
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self._vector(text)


@pytest.fixture(scope="session")
def stem_axis() -> type[StemAxisEmbeddings]:
    """The :class:`StemAxisEmbeddings` class (test modules cannot import conftest)."""
    return StemAxisEmbeddings
