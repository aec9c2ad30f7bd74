"""Shared fixtures. Tests never need ../shared: they use tests/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_tiered_memory.tokens import OpenAITokenCounter

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def counter() -> OpenAITokenCounter:
    return OpenAITokenCounter("gpt-4o-mini")


@pytest.fixture(scope="session")
def locomo_fixture() -> Path:
    # a small synthetic conversation in LoCoMo format, written for these tests
    return FIXTURES / "synthetic_conversation.json"
