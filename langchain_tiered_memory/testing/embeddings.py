"""Fake embedders: deterministic, instant, no weights - for tests, examples and benches.

* :class:`StemAxisEmbeddings` - one axis per word stem (plus a constant one), so
  texts sharing a stem are similar and others are not: dense search whose
  answers a test can predict.
* :class:`HashEmbeddings` - a unit vector seeded by the text's hash: the same
  text always gives the same vector, in every process, and any two texts are
  unrelated. For measuring everything but the embedder.

LangChain's own :class:`~langchain_core.embeddings.DeterministicFakeEmbedding`
is the third kind (a vector per text, of any size).

Example:
    >>> emb = StemAxisEmbeddings(["peanut", "cat"])
    >>> emb.embed_query("Peanuts again") == emb.embed_documents(["peanut butter"])[0]
    True
    >>> emb.queries
    ['Peanuts again']
    >>> len(HashEmbeddings(dim=8).embed_query("hi"))
    8
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = ["HashEmbeddings", "StemAxisEmbeddings"]


class StemAxisEmbeddings(Embeddings):
    """One axis per word stem (plus a constant one): a fast, predictable stand-in model.

    A text's vector counts the words starting with each stem, so texts sharing
    a topic stem are similar and others are not.

    Attributes:
        stems: The stems, one axis each.
        queries: Every :meth:`embed_query` text, in order (what recall asked).
    """

    def __init__(self, stems: Sequence[str]) -> None:
        self.stems = tuple(stems)
        self.queries: list[str] = []

    def _vector(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        raw = [float(sum(w.startswith(s) for w in words)) for s in self.stems] + [0.1]
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector (and the query is kept in :attr:`queries`)."""
        self.queries.append(text)
        return self._vector(text)


class HashEmbeddings(Embeddings):
    """Deterministic unit vectors seeded by a text's hash (fast, meaningless)."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return (vector / np.linalg.norm(vector)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return self._vector(text)
