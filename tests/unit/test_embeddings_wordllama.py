"""Tests of the WordLlama embedder (the real bundled weights, fully offline).

Skipped (via ``pytest.importorskip``) when the optional ``wordllama`` package
is not installed.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import numpy as np
import pytest
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_tiered_memory.embeddings import WordLlamaEmbeddings, default_embeddings
from langchain_tiered_memory.embeddings import wordllama as wordllama_module

# Importing wordllama calls logging.basicConfig(level=INFO); undo that here.
_root = logging.getLogger()
_handlers, _level = list(_root.handlers), _root.level
wordllama = pytest.importorskip("wordllama")
_root.handlers[:] = _handlers
_root.setLevel(_level)


@pytest.fixture(scope="module")
def emb() -> WordLlamaEmbeddings:
    return WordLlamaEmbeddings()


def test_loads_offline_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("WordLlamaEmbeddings tried to use the network")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(wordllama_module, "_static_models", {})  # force a fresh load
    made = default_embeddings("wordllama", cache_size=0)
    assert isinstance(made, WordLlamaEmbeddings)
    assert made.embed_array(["offline"]).shape == (1, 256)


def test_relevant_passage_ranks_first(emb: WordLlamaEmbeddings) -> None:
    query = emb.embed_query("When did Caroline go to the LGBTQ support group?")
    docs = emb.embed_documents(
        [
            "The quarterly sales report is due on Friday and the printer is broken.",
            "Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
            "Melanie bought new running shoes for her marathon training.",
        ]
    )
    scores = [float(np.dot(query, d)) for d in docs]
    assert int(np.argmax(scores)) == 1
    assert scores[1] > scores[0] + 0.1


def test_dims_types_and_normalisation(emb: WordLlamaEmbeddings) -> None:
    docs = emb.embed_documents(["Hello there.", "A much longer text. " * 200, "你好，世界。"])
    query = emb.embed_query("How are you?")
    assert emb.dimensions == 256
    for vector in [*docs, query]:
        assert len(vector) == 256
        assert all(isinstance(x, float) for x in vector)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    array = emb.embed_array(["Hello there."])
    assert array.dtype == np.float32 and array.shape == (1, 256)
    assert not np.any(emb.embed_array([""]))  # no tokens: the zero vector


def test_matryoshka_dims_are_a_prefix(emb: WordLlamaEmbeddings) -> None:
    small = WordLlamaEmbeddings(dims=128)
    assert small.dimensions == 128 and small.cache_namespace != emb.cache_namespace
    text = "Caroline painted a sunset over the lake."
    full = emb.embed_array([text])[0]
    expected = full[:128] / np.linalg.norm(full[:128])
    np.testing.assert_allclose(small.embed_array([text])[0], expected, atol=1e-5)


def test_matches_wordllama_itself(emb: WordLlamaEmbeddings) -> None:
    """Same vectors as wordllama's own loader (given the bundled files' directory)."""
    root = Path(wordllama.__file__).parent
    reference = wordllama.WordLlama.load(
        "l2_supercat", dim=256, cache_dir=root, disable_download=True
    )
    texts = ["Caroline painted a sunset over the lake.", "Short.", "A longer text. " * 50]
    expected = reference.embed(texts, norm=True)
    np.testing.assert_allclose(emb.embed_array(texts), expected, atol=1e-5)


def test_batching_and_max_length() -> None:
    texts = [f"turn number {i} about topic {i % 7}" for i in range(50)]
    one_by_one = np.vstack([WordLlamaEmbeddings(batch_size=1).embed_array([t]) for t in texts[:5]])
    batched = WordLlamaEmbeddings(batch_size=16).embed_array(texts)
    np.testing.assert_allclose(batched[:5], one_by_one, atol=1e-6)
    cut = WordLlamaEmbeddings(max_length=3)
    np.testing.assert_allclose(
        cut.embed_array(["alpha beta gamma delta epsilon"]),
        cut.embed_array(["alpha beta gamma"]),
        atol=1e-6,
    )


def test_bundled_weights_are_the_reviewed_file(emb: WordLlamaEmbeddings) -> None:
    assert emb._model.sha256 == wordllama_module.WORDLLAMA_WEIGHTS_SHA256


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="dims"):
        WordLlamaEmbeddings(dims=300)
    with pytest.raises(ValueError, match="max_length"):
        WordLlamaEmbeddings(max_length=0)


class TestWordLlamaStandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[WordLlamaEmbeddings]:
        return WordLlamaEmbeddings


class TestWordLlamaStandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[WordLlamaEmbeddings]:
        return WordLlamaEmbeddings
