"""A backend defined in a test file of its own, outside this repository, runs the shipped
conformance suite: what the author of a third-party backend does."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_tiered_memory.testing.conformance import spec_tests

#: A user's test file: their own LangChain VectorStore (a dict, written here from
#: scratch) holding the vectors of a MemoryStore, checked by the suite.
USER_TEST_FILE = '''
from __future__ import annotations

import math

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

import langchain_tiered_memory.testing.conformance as conformance
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance import (
    Backend,
    BackendConformanceTests,
    Capability,
    files_under,
    stem_embeddings,
)


class DictVectorStore(VectorStore):
    """Vectors in a dict: the smallest VectorStore a MemoryStore can keep its vectors in."""

    def __init__(self, embedding):
        self.embedding = embedding
        self.rows = {}

    @property
    def embeddings(self):
        return self.embedding

    def add_texts(self, texts, metadatas=None, *, ids=None, **kwargs):
        texts = list(texts)
        vectors = self.embedding.embed_documents(texts)
        for i, (text, vector) in enumerate(zip(texts, vectors)):
            self.rows[ids[i]] = (Document(text, id=ids[i], metadata=dict(metadatas[i])), vector)
        return list(ids)

    def delete(self, ids=None, **kwargs):
        for key in ids or ():
            self.rows.pop(key, None)
        return True

    def get_by_ids(self, ids):
        return [self.rows[i][0] for i in ids if i in self.rows]

    def similarity_search_with_score(self, query, k=4, **kwargs):
        q = self.embedding.embed_query(query)
        def cosine(v):
            norm = math.sqrt(sum(x * x for x in v) * sum(x * x for x in q)) or 1.0
            return sum(a * b for a, b in zip(v, q)) / norm
        scored = sorted(((doc, cosine(v)) for doc, v in self.rows.values()), key=lambda p: -p[1])
        return scored[:k]

    def similarity_search(self, query, k=4, **kwargs):
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    @classmethod
    def from_texts(cls, texts, embedding, metadatas=None, **kwargs):
        store = cls(embedding)
        store.add_texts(texts, metadatas, **kwargs)
        return store


class TestDictVectorStoreBackend(BackendConformanceTests):
    def make_backend(self, request: pytest.FixtureRequest) -> Backend:
        tmp = request.getfixturevalue("tmp_path")
        vectors = DictVectorStore(stem_embeddings())  # lives as long as the test
        return Backend(
            "dict-vectors",
            lambda: MemoryStore(tmp / "data", vector_store=vectors),
            capabilities={Capability.DURABLE, Capability.FILES},
            files=files_under(tmp),
        )


def test_the_suite_comes_from_the_package():
    print("suite:", conformance.__file__)
'''


def suite_size() -> int:
    """How many tests the suite runs (a parametrized test counts once per case)."""
    total = 0
    for test in spec_tests().values():
        cases = 1
        for mark in getattr(test, "pytestmark", []):
            if mark.name == "parametrize":
                cases *= len(mark.args[1])
        total += cases
    return total


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_backend_defined_in_a_test_file_passes_the_shipped_suite(tmp_path: Path) -> None:
    project = tmp_path / "someone-elses-project"  # no conftest, no pyproject: only the package
    project.mkdir()
    (project / "test_my_backend.py").write_text(textwrap.dedent(USER_TEST_FILE))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-rs"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    suite = re.search(r"suite: (\S+)", done.stdout)
    assert suite and Path(suite.group(1)).parts[-3:] == (
        "testing",
        "conformance",
        "__init__.py",
    )
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) == suite_size() + 1, done.stdout[-2000:]
    assert "skipped" not in done.stdout and "failed" not in done.stdout


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_backend_that_breaks_the_contract_fails_the_suite(tmp_path: Path) -> None:
    # the same file, with a store whose similarity search finds nothing: the suite must
    # notice (it is not a suite that passes whatever the backend does)
    broken = USER_TEST_FILE.replace("        return scored[:k]\n", "        return []\n")
    assert broken != USER_TEST_FILE
    project = tmp_path / "broken"
    project.mkdir()
    (project / "test_my_backend.py").write_text(textwrap.dedent(broken))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "never_see or update_reindexes",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed" in done.stdout, done.stdout[-3000:]
