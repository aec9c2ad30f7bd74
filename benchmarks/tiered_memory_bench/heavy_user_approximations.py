"""What the heavy-user approximations cost in recall, measured on LoCoMo.

A user with more than ``keyword_exact_limit`` records (5,000) gets a bounded
keyword pass, and one with more than ``FaissIndex.ann_min_vectors`` (50,000) an
approximate per-user vector index. LoCoMo conversations (~600 turns) are far
below both, so this bench forces them on for every conversation and runs the
LoCoMo retrieval bench (``tiered-memory bench retrieval``) once per setting:

* ``exact``: the defaults (what these conversations really get);
* ``bounded:CAP``: keyword pass bounded at ``CAP`` newest matches per term;
* ``ann:ROWS``: approximate dense search scoring about ``ROWS`` vectors, the
  index built before the conversation's questions.

Usage::

    python -m tiered_memory_bench.heavy_user_approximations \\
        --data ../shared/data/locomo/locomo_dev.json --embedder e5 \\
        --settings exact,bounded:20,bounded:60,ann:200,ann:300 --out heavy.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.faiss.index import FaissIndex
from langchain_tiered_memory.storage.sqlite.archive import BaseSQLiteArchive
from tiered_memory_bench.datasets import LocomoConversation, load_locomo
from tiered_memory_bench.retrieval import run_retrieval_bench

REPORTED = ("recall@1", "recall@5", "recall@10", "ndcg@10", "recall@614tok", "recall@1228tok")


@contextlib.contextmanager
def forced(setting: str) -> Iterator[None]:
    """Force one approximation on every archive while the block runs (then restore)."""
    kind, _, value = setting.partition(":")
    saved = (
        BaseSQLiteArchive.keyword_exact_limit,
        BaseSQLiteArchive.keyword_term_cap,
        FaissIndex.ann_min_vectors,
        FaissIndex.ann_probe_rows,
        BaseSQLiteArchive.dense_search,
    )
    try:
        if kind == "bounded":
            BaseSQLiteArchive.keyword_exact_limit = 0
            BaseSQLiteArchive.keyword_term_cap = int(value)
        elif kind == "ann":
            FaissIndex.ann_min_vectors = 1
            FaissIndex.ann_probe_rows = int(value)
            real_search = saved[4]
            warmed: set[tuple[int, str]] = set()

            def dense_search(self: BaseSQLiteArchive, query: Any, where: Any, **kwargs: Any) -> Any:
                user = RecordFilter.of(where).user_id
                if (id(self), user) not in warmed:  # build the index before the first question
                    warmed.add((id(self), user))
                    self.warm_up(user)
                return real_search(self, query, where, **kwargs)

            BaseSQLiteArchive.dense_search = dense_search  # type: ignore[method-assign]
        elif kind != "exact":
            raise ValueError(f"unknown setting {setting!r}: use exact, bounded:CAP or ann:ROWS")
        yield
    finally:
        (
            BaseSQLiteArchive.keyword_exact_limit,
            BaseSQLiteArchive.keyword_term_cap,
            FaissIndex.ann_min_vectors,
            FaissIndex.ann_probe_rows,
            BaseSQLiteArchive.dense_search,  # type: ignore[method-assign]
        ) = saved


def run_settings(
    conversations: Sequence[LocomoConversation],
    embeddings: Embeddings,
    settings: Sequence[str],
) -> list[dict[str, Any]]:
    """The retrieval bench's headline numbers under each setting."""
    rows = []
    for setting in settings:
        with forced(setting):
            result = run_retrieval_bench(conversations, embeddings=embeddings)
        rows.append({"setting": setting, **{k: result[k] for k in REPORTED}})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from langchain_tiered_memory.embeddings import default_embeddings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="LoCoMo-format JSON file (benchmarks/README.md)"
    )
    parser.add_argument("--embedder", default=None, help="minilm, e5 or wordllama")
    parser.add_argument("--embed-cache", type=Path, help="SQLite vector cache (reruns are fast)")
    parser.add_argument("--settings", default="exact,bounded:20,bounded:60,ann:200,ann:300")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    embeddings = default_embeddings(args.embedder, cache_path=args.embed_cache)
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    rows = run_settings(load_locomo(args.data), embeddings, settings)
    for row in rows:
        print(row["setting"].ljust(12), " ".join(f"{k} {row[k]:.3f}" for k in REPORTED))
    if args.out:
        args.out.write_text(json.dumps({"data": str(args.data), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
