"""Exact per-user dense scoring against a user's HNSW index, by the user's archive size.

Run on the single-user database that ``tiered-memory bench overhead --store URL``
builds (``tm_bench_single_user_<size>``, whose user ``user0`` has an HNSW
index after the bench's warm-up): the user's first N records are scored
exactly through the covering vector index, for growing N, and the HNSW
index answers over all of them. What sets ``ann_min_records``
(``langchain_tiered_memory/storage/postgres/ann.py``)::

    python -m tiered_memory_bench.postgres_exact_vs_hnsw \\
        'postgresql://postgres:@/tm_bench_single_user_100000?host=/tmp/pgplay/data'
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import psycopg
from pgvector.psycopg import register_vector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the bench's single-user database")
    parser.add_argument("--queries", type=int, default=15)
    parser.add_argument("--sizes", default="1000,5000,10000,20000,50000,100000")
    args = parser.parse_args()
    rng = np.random.default_rng(5)

    def vector() -> np.ndarray:
        v = rng.standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)

    def timed(sql: str, params: tuple[object, ...]) -> tuple[float, float]:
        times = []
        for _ in range(args.queries):
            started = time.perf_counter()
            conn.execute(sql, (*params, vector())).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        return round(times[len(times) // 2], 1), round(times[int(0.95 * (len(times) - 1))], 1)

    out: dict[str, tuple[float, float]] = {}
    with psycopg.connect(args.url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("SET hnsw.ef_search = 200")
        first = conn.execute("SELECT min(rid) FROM records").fetchone()
        assert first is not None
        for n in (int(x) for x in args.sizes.split(",")):
            out[f"exact {n:,}"] = timed(
                "SELECT v.rid FROM records v WHERE v.user_id = 'user0' AND "
                "octet_length(v.user_id) <= 512 AND v.rid < %s AND v.embedding IS NOT NULL "
                "ORDER BY v.embedding <#> %s LIMIT 200",
                (first[0] + n,),
            )
        out["hnsw, ef_search 200"] = timed(
            "SELECT r.rid FROM records r WHERE r.user_id = 'user0' ORDER BY "
            "(r.embedding::vector(384)) <#> %s::vector(384) LIMIT 200",
            (),
        )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
