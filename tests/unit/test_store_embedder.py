"""A data directory keeps the local embedder it was built with."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from langchain_tiered_memory.embeddings import DEFAULT_EMBEDDER, EMBEDDERS, embedder_name
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.sqlite.meta import stored_embeddings_id
from langchain_tiered_memory.store import MemoryStore


def test_reopening_without_embeddings_uses_the_one_it_was_built_with(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = "e5" if DEFAULT_EMBEDDER != "e5" else "minilm"  # not the default
    with MemoryStore(tmp_path / "data", embeddings=other) as store:
        store.archive.add(
            [MemoryRecord.new(user_id="ana", kind="fact", text="Ana is allergic to peanuts")]
        )
    built = stored_embeddings_id(tmp_path / "data" / "archive.sqlite")
    assert embedder_name(built) == other
    with caplog.at_level(logging.INFO), MemoryStore(tmp_path / "data") as store:
        assert isinstance(store.embeddings, EMBEDDERS[other])
        assert f"built with the {other!r} embedder" in caplog.text
        hits = store.memory("ana").recall("peanut allergy")
        assert hits and "peanuts" in hits[0].text
    with MemoryStore(tmp_path / "fresh") as store:  # a new directory: the default
        assert isinstance(store.embeddings, EMBEDDERS[DEFAULT_EMBEDDER])


def test_stored_id_of_missing_or_foreign_files_is_none(tmp_path: Path) -> None:
    assert stored_embeddings_id(tmp_path / "nope.sqlite") is None
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all")
    assert stored_embeddings_id(tmp_path / "junk.sqlite") is None
    assert embedder_name(None) is None
