"""Measure the recall levers issue 20 tried beside the learned ranker, cross-validated.

Every lever is measured as :mod:`tiered_memory_bench.train_ranker` validates the
shipped ranker: the same candidates, the same six folds (one LoCoMo
conversation and a sixth of the LongMemEval questions held out each), the
same metrics, and a linear model refitted per fold with the lever's extra
features. ``baseline`` is the shipped recipe; each other lever changes one
thing:

* ``digest-signal``: one **session digest** per session archived beside the
  turns (an extractive SumBasic summary of the session's own sentences, 48
  words, linked to the turns its sentences came from); digests are not
  ranked, each turn gets its session digest's scaled dense and keyword
  scores as two more features;
* ``digest-expanded``: the digests ranked beside the turns (a feature says
  which is which), each one standing in the ranking for its best-scored
  linked turn (a turn already placed is not placed twice);
* ``session-packing``: the recall section packed for coverage: candidates
  taken greedily by score minus ``0.1`` (``-0.3``) standard deviations for
  each record already taken from the same session;
* ``wider-pool``: 300 dense and 100 keyword candidates instead of 200 / 50;
* ``entities``: two more features - the share of the question's entities
  (capitalised words and numbers, not the speakers it names) in the text,
  and, for a question naming two speakers or more (*"Which city have both
  Jean and John visited?"*, the compound questions of LoCoMo), whether one
  of them spoke the record (the question split by speaker);
* ``prf``: **pseudo-relevance feedback** for evidence spread over sessions:
  the words of the three best candidates of a first pass (the hand-set
  weights) that the question does not hold become a second query; two more
  features - the share of those words in the text, and the same for a text
  from a session none of the three is from (the second hop of a multi-hop
  question is often in another session);
* ``entity-links``: **entity links across sessions**, the same two features
  with the entities (capitalised words and numbers, not the speakers) of
  the three best first-pass candidates the question does not name, instead
  of all their words: a turn linked to the first hop by a person, place or
  thing it names;
* ``mlp``: a one-hidden-layer network (16 tanh units) over the features and
  seven traits of the question instead of the linear model.

Usage::

    python -m tiered_memory_bench.recall_levers \\
        --locomo ../shared/data/locomo/locomo_dev.json \\
        --longmemeval ../shared/data/longmemeval/longmemeval_s_dev.json.gz \\
        --embed-cache vectors.sqlite --out levers.json [--levers baseline,entities]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.embeddings import default_embeddings
from langchain_tiered_memory.recall.dedupe import merge_near_duplicates
from langchain_tiered_memory.recall.hybrid import score_candidates
from langchain_tiered_memory.recall.ranker import (
    FEATURES,
    LinearRanker,
    candidate_features,
)
from langchain_tiered_memory.recall.signals import (
    keyword_scale,
    min_max,
    named_speakers,
    speaker_of,
    text_words,
)
from langchain_tiered_memory.records import MemoryRecord, ScoredRecord
from tiered_memory_bench import train_ranker as tr

LEVERS = (
    "baseline",
    "digest-signal",
    "digest-expanded",
    "session-packing",
    "wider-pool",
    "entities",
    "prf",
    "entity-links",
    "mlp",
)
SETTINGS: dict[str, Any] = {
    "lme_weight": 0.3,
    "l2": 1e-3,
    "iterations": 400,
    "rate": 0.05,
    "session_share": 0.5,
}

# -- session digests -----------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SPEAKER = re.compile(r"^\s*([^:\n]{1,40}):\s+")
_STOPWORDS = frozenset(
    """
    about above after again all also am an and any are around as at be because been before
    being both but by can could did do does doing done down during each even ever every few
    for from get got had has have having he her here hers him his how i if in into is it its
    just let like made make many may me might more most much must my no nor not now of off on
    once one only or other our out over own really said same say see she should since so some
    still such than that the their them then there these they thing things this those though
    through to too under until up us very want was way we well were what when where which while
    who whom why will with would yeah yes yet you your oh ok okay hey hi thanks thank great
    good nice cool awesome wow sure lot lots going gonna
    """.split()  # noqa: SIM905 - a list of 170 words reads better as text
)


def extract_digest(texts: Sequence[str], *, max_words: int = 48) -> tuple[str, list[int]]:
    """A SumBasic digest of a session's turns: its text and, per sentence, the turn index.

    Sentences with three content words or more (speakers' names left out)
    score the mean in-session frequency of their words over the square root
    of their length; the best is taken and its words' frequencies squared,
    until ``max_words`` words are taken.

    Example:
        >>> extract_digest(["Mel: We went camping at the beach. The kids loved it!",
        ...                 "Ana: I am painting a sunset for the art show."], max_words=10)
        ('Ana: I am painting a sunset for the art show.', [1])
    """
    names: set[str] = set()
    pool: list[tuple[int, str, list[str]]] = []
    split: list[tuple[int, str, str]] = []
    for index, text in enumerate(texts):
        speaker, body = "", text
        match = _SPEAKER.match(text)
        if match:
            speaker, body = match.group(1).strip(), text[match.end() :]
            names.update(text_words(speaker))
        split.append((index, speaker, body))
    for index, speaker, body in split:
        for sentence in (s.strip() for s in _SENTENCE_END.split(body)):
            words = [
                w
                for w in dict.fromkeys(text_words(sentence))
                if w not in _STOPWORDS and w not in names and (len(w) >= 3 or w.isdigit())
            ]
            if len(words) >= 3:
                pool.append((index, f"{speaker}: {sentence}" if speaker else sentence, words))
    counts: dict[str, float] = {}
    for _, _, words in pool:
        for w in words:
            counts[w] = counts.get(w, 0.0) + 1.0
    total = sum(counts.values()) or 1.0
    p = {w: c / total for w, c in counts.items()}
    chosen: list[int] = []
    used = 0
    left = set(range(len(pool)))
    while left and used < max_words:
        best = max(left, key=lambda i: (sum(p[w] for w in pool[i][2]) / len(pool[i][2]) ** 0.5, -i))
        left.discard(best)
        length = len(pool[best][1].split())
        if used and used + length > max_words:
            continue
        chosen.append(best)
        used += length
        for w in pool[best][2]:
            p[w] *= p[w]
    return " ".join(pool[i][1] for i in chosen), [pool[i][0] for i in chosen]


def session_digests(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """One digest record per (thread, session), linked to the turns it quotes."""
    sessions: dict[tuple[Any, Any], list[MemoryRecord]] = {}
    for record in records:
        sessions.setdefault((record.thread_id, record.metadata.get("session")), []).append(record)
    digests = []
    for (thread, session), turns in sessions.items():
        texts = [
            t.text if ": " in t.text[:42] else f"{speaker_of(t) or 'someone'}: {t.text}"
            for t in turns
        ]
        text, picked = extract_digest(texts)
        if not text:
            continue
        linked = [turns[i] for i in dict.fromkeys(picked)]
        digests.append(
            MemoryRecord.new(
                id=f"{turns[0].user_id}:digest:{thread}:{session}",
                user_id=turns[0].user_id,
                thread_id=thread,
                kind="observation",
                text=text,
                created_at=turns[0].created_at,
                sources=tuple(s for t in linked for s in t.sources),
                metadata={"session": session, "digest": True, "turns": [t.id for t in linked]},
            )
        )
    return digests


def _is_digest(record: MemoryRecord) -> bool:
    return bool(record.metadata.get("digest"))


# -- levers as extra feature columns -------------------------------------------------------


def _turns_only(q: tr.Query) -> tr.Query:
    keep = [i for i, c in enumerate(q.candidates) if not _is_digest(c.record)]
    candidates = [q.candidates[i] for i in keep]
    return replace(
        q,
        candidates=candidates,
        features=candidate_features(candidates, query=q.text, now=q.now),
        relevant=q.relevant[keep],
    )


def digest_signal(q: tr.Query) -> tuple[tr.Query, np.ndarray]:
    """Turn-only candidates, plus their session digest's scaled dense and keyword scores."""
    dense = min_max([c.dense for c in q.candidates])
    keyword = keyword_scale([c.keyword for c in q.candidates])
    by_session = {
        (c.record.thread_id, c.record.metadata.get("session")): (d, k)
        for c, d, k in zip(q.candidates, dense, keyword, strict=True)
        if _is_digest(c.record)
    }
    turns = _turns_only(q)
    extra = np.array(
        [
            by_session.get((c.record.thread_id, c.record.metadata.get("session")), (0.0, 0.0))
            for c in turns.candidates
        ]
    ).reshape(-1, 2)
    return turns, extra


def digest_flag(q: tr.Query) -> tuple[tr.Query, np.ndarray]:
    """All candidates; one more feature: 1 for a digest."""
    return q, np.array([[float(_is_digest(c.record))] for c in q.candidates]).reshape(-1, 1)


_ENTITY = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'’-]+|\d+")


def entities(q: tr.Query) -> tuple[tr.Query, np.ndarray]:
    """The share of the question's entities in the text; spoken by one of 2+ named speakers."""
    speakers = {s for c in q.candidates if (s := speaker_of(c.record))}
    named = named_speakers(q.text, speakers)
    name_words = {w for n in named for w in text_words(n)}
    wanted = {w.casefold() for w in _ENTITY.findall(q.text)} - name_words
    rows = []
    for c in q.candidates:
        words = set(text_words(c.record.text))
        share = len(wanted & words) / len(wanted) if wanted else 0.0
        rows.append((share, float(len(named) > 1 and speaker_of(c.record) in named)))
    return q, np.array(rows).reshape(-1, 2)


_FEEDBACK_FROM = 3  # first-pass candidates the feedback words come from
_FEEDBACK_WORDS = 12  # the most frequent of their words the question does not hold


def feedback(q: tr.Query, *, entities_only: bool = False) -> tuple[tr.Query, np.ndarray]:
    """Overlap with the words of the first pass's best candidates, overall and across sessions.

    ``entities_only``: only the entities those candidates name (the ``entity-links`` lever).
    """
    first = score_candidates(q.candidates, now=q.now, query=q.text, k=_FEEDBACK_FROM, ranker=None)
    speakers = {s for c in q.candidates if (s := speaker_of(c.record))}
    asked = set(text_words(q.text)) | {w for s in speakers for w in text_words(s)}
    counts: dict[str, int] = {}
    for hit in first:
        text = hit.record.text.partition(": ")[2] or hit.record.text
        found = (
            {w.casefold() for w in _ENTITY.findall(text)}
            if entities_only
            else {w for w in text_words(text) if len(w) > 3}
        )
        for word in found - asked:
            counts[word] = counts.get(word, 0) + 1
    words = set(sorted(counts, key=lambda w: (-counts[w], w))[:_FEEDBACK_WORDS])
    seen = {(h.record.thread_id, h.record.metadata.get("session")) for h in first}
    rows = []
    for c in q.candidates:
        share = len(words & set(text_words(c.record.text))) / len(words) if words else 0.0
        elsewhere = (c.record.thread_id, c.record.metadata.get("session")) not in seen
        rows.append((share, share * float(elsewhere)))
    return q, np.array(rows).reshape(-1, 2)


# -- fitting and ranking with extra columns ------------------------------------------------


@dataclass
class Variant:
    """A lever: how queries change, how a fold model is fitted, and how it ranks."""

    prepare: Callable[[tr.Query], tuple[tr.Query, np.ndarray]] | None = None
    model: str = "linear"  # or "mlp"
    packing: float = 0.0  # session-packing penalty (standard deviations per record taken)
    digests_stand_for_turns: bool = False


def _question_traits(q: tr.Query) -> np.ndarray:
    text = q.text.casefold()
    return np.array(
        [
            np.log1p(len(text.split())),
            float(bool(re.search(r"\b(last|ago|in \d{4}|yesterday|week|month|year)\b", text))),
            float(bool(re.search(r"\b[A-Z][a-z]+", q.text[1:]))),
            float(bool(re.search(r"\b(i|my|me)\b", text))),
            float(bool(re.search(r"\b(what|which)\s+\w+s\b", text))),
            float(text.startswith("when")),
            float(bool(re.search(r"\b(would|likely|might|could)\b", text))),
        ]
    )


@dataclass
class MLP:
    """``w . x + v . tanh(W [x, traits] + b)``, fitted with the listwise loss."""

    linear: LinearRanker
    hidden: np.ndarray
    bias: np.ndarray
    out: np.ndarray

    def score(self, x: np.ndarray, traits: np.ndarray) -> np.ndarray:
        z = (x - np.array(self.linear.mean)) / np.array(self.linear.scale)
        h = np.tanh(np.column_stack([z, np.tile(traits, (len(z), 1))]) @ self.hidden + self.bias)
        return np.asarray(z @ np.array(self.linear.weights) + h @ self.out)


def fit_mlp(queries: Sequence[tr.Query], hidden: int = 16, iterations: int = 400) -> MLP:
    """The network of the ``mlp`` lever (Adam, L2 1e-3, seeded)."""
    rng = np.random.default_rng(0)
    used = [q for q in queries if q.relevant.any()]
    stacked = np.concatenate([q.features for q in used])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (stacked - mean) / scale
    sizes = np.array([len(q.candidates) for q in used])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    segment = np.repeat(np.arange(len(used)), sizes)
    traits = np.stack([_question_traits(q) for q in used])[segment]
    inputs = np.column_stack([z, traits])
    target = np.concatenate([q.relevant / q.relevant.sum() for q in used])
    locomo = sum(1 for q in used if q.dataset == "locomo")
    lme = len(used) - locomo
    each = SETTINGS["lme_weight"] * locomo / lme if lme and locomo else 1.0
    weight = np.array([1.0 if q.dataset == "locomo" else each for q in used])
    weight = (weight / weight.sum())[segment]
    params = {
        "w": np.zeros(z.shape[1]),
        "W": rng.normal(0, 0.1, (inputs.shape[1], hidden)),
        "b": np.zeros(hidden),
        "v": rng.normal(0, 0.1, hidden),
    }
    m = {k: np.zeros_like(a) for k, a in params.items()}
    s2 = {k: np.zeros_like(a) for k, a in params.items()}
    for t in range(1, iterations + 1):
        h = np.tanh(inputs @ params["W"] + params["b"])
        score = z @ params["w"] + h @ params["v"]
        e = np.exp(score - np.maximum.reduceat(score, starts)[segment])
        g = (e / np.add.reduceat(e, starts)[segment] - target) * weight
        gh = np.outer(g, params["v"]) * (1 - h * h)
        grads = {
            "w": z.T @ g + 1e-3 * params["w"],
            "W": inputs.T @ gh + 1e-3 * params["W"],
            "b": gh.sum(axis=0),
            "v": h.T @ g + 1e-3 * params["v"],
        }
        for k, grad in grads.items():
            m[k] = 0.9 * m[k] + 0.1 * grad
            s2[k] = 0.999 * s2[k] + 0.001 * grad * grad
            step = (m[k] / (1 - 0.9**t)) / (np.sqrt(s2[k] / (1 - 0.999**t)) + 1e-8)
            params[k] = params[k] - SETTINGS["rate"] * step
    names = tuple(f"f{i}" for i in range(z.shape[1]))
    linear = LinearRanker(
        names, tuple(mean.tolist()), tuple(scale.tolist()), tuple(params["w"].tolist())
    )
    return MLP(linear, params["W"], params["b"], params["v"])


def _pack(scores: np.ndarray, q: tr.Query, penalty: float) -> np.ndarray:
    """Scores re-ordered greedily: minus ``penalty`` std per record taken from the session."""
    if not penalty or len(scores) < 2:
        return scores
    z = (scores - scores.mean()) / (scores.std() or 1.0)
    session = [(c.record.thread_id, c.record.metadata.get("session")) for c in q.candidates]
    taken: dict[Any, int] = {}
    left = list(np.argsort(-z, kind="stable"))
    out = np.empty(len(z))
    for place in range(len(z)):
        window = left[:60]
        best = max(window, key=lambda i: z[i] - penalty * taken.get(session[i], 0))
        left.remove(best)
        out[best] = -place
        taken[session[best]] = taken.get(session[best], 0) + 1
    return out


def _ranking(q: tr.Query, scores: np.ndarray, depth: int, expand: bool) -> list[ScoredRecord]:
    """The candidates in score order, merged as recall merges them (digests expanded)."""
    order = np.argsort(-scores, kind="stable")
    ranked = []
    by_id = {c.record.id: i for i, c in enumerate(q.candidates)}
    placed: set[str] = set()
    for i in order:
        record = q.candidates[i].record
        if expand and _is_digest(record):
            linked = [by_id[t] for t in record.metadata["turns"] if t in by_id]
            if linked:
                record = q.candidates[max(linked, key=lambda j: scores[j])].record
            else:
                continue
        if record.id in placed:
            continue
        placed.add(record.id)
        ranked.append(ScoredRecord(record, float(scores[i])))
    return merge_near_duplicates(ranked, k=depth)


def measure(variant: Variant, queries: Sequence[tr.Query]) -> dict[str, Any]:
    """Cross-validated and in-sample figures of one lever."""
    prepared = []
    extra_names: list[str] = []
    for q in queries:
        if variant.prepare is not None:
            q, extra = variant.prepare(q)
            extra_names = [f"extra_{i}" for i in range(extra.shape[1])]
            if variant.digests_stand_for_turns:  # a digest is relevant if a linked turn is
                relevant = [
                    float(bool(set(c.record.sources) & set(q.gold)))
                    if q.dataset == "locomo"
                    else float(
                        bool(set(c.record.metadata.get("turns", [c.record.id])) & set(q.gold))
                    )
                    for c in q.candidates
                ]
                q = replace(q, relevant=np.array(relevant))
            q = replace(q, features=np.column_stack([q.features, extra]))
        prepared.append(q)
    names = (*FEATURES, *extra_names)
    folds = sorted({q.fold for q in prepared})

    def fitted(subset: Sequence[tr.Query]) -> Any:
        if variant.model == "mlp":
            return fit_mlp(subset)
        return tr.fit(subset, features=names, **SETTINGS)

    def scorer(models: dict[int, Any]) -> tr.Rank:
        def rank(q: tr.Query, depth: int) -> Sequence[ScoredRecord]:
            model = models[q.fold]
            if variant.model == "mlp":
                scores = model.score(q.features, _question_traits(q))
            else:
                scores = model.score(q.features)
            scores = _pack(np.asarray(scores), q, variant.packing)
            return _ranking(q, scores, depth, variant.digests_stand_for_turns)

        return rank

    per_fold = {f: fitted([q for q in prepared if q.fold != f]) for f in folds}
    everything = fitted(prepared)
    return {
        "cross_validated": tr.evaluate(prepared, scorer(per_fold)),
        "in_sample": tr.evaluate(prepared, scorer(dict.fromkeys(folds, everything))),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path)
    parser.add_argument("--embed-cache", type=Path)
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    chosen = [x.strip() for x in args.levers.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in LEVERS]
    if unknown:
        parser.error(f"unknown lever(s) {unknown}; choose from {', '.join(LEVERS)}")
    embeddings = default_embeddings(cache_path=args.embed_cache)
    started = time.perf_counter()
    pools: dict[str, list[tr.Query]] = {}

    def pool(name: str, **options: Any) -> list[tr.Query]:
        if name not in pools:
            with tempfile.TemporaryDirectory() as tmp:
                queries = tr.locomo_queries(args.locomo, embeddings, Path(tmp), **options)
                if args.longmemeval is not None:
                    queries += tr.longmemeval_queries(
                        args.longmemeval, embeddings, Path(tmp), **options
                    )
            pools[name] = queries
        return pools[name]

    plans: dict[str, tuple[Callable[[], list[tr.Query]], Variant]] = {
        "baseline": (lambda: pool("plain"), Variant()),
        "digest-signal": (
            lambda: pool("digests", extra_records=session_digests),
            Variant(prepare=digest_signal),
        ),
        "digest-expanded": (
            lambda: pool("digests", extra_records=session_digests),
            Variant(prepare=digest_flag, digests_stand_for_turns=True),
        ),
        "session-packing": (lambda: pool("plain"), Variant(packing=0.1)),
        "wider-pool": (lambda: pool("wide", dense=300, keyword=100), Variant()),
        "entities": (lambda: pool("plain"), Variant(prepare=entities)),
        "prf": (lambda: pool("plain"), Variant(prepare=feedback)),
        "entity-links": (
            lambda: pool("plain"),
            Variant(prepare=lambda q: feedback(q, entities_only=True)),
        ),
        "mlp": (lambda: pool("plain"), Variant(model="mlp")),
    }
    report: dict[str, Any] = {"settings": SETTINGS, "levers": {}}
    for name in chosen:
        queries, variant = plans[name][0](), plans[name][1]
        result = measure(variant, queries)
        report["levers"][name] = {k: tr.headline(v) for k, v in result.items()}
        print(f"{name}: {json.dumps(report['levers'][name]['cross_validated'])}", flush=True)
        if name == "session-packing":
            stronger = measure(Variant(packing=0.3), queries)
            report["levers"]["session-packing-0.3"] = {
                k: tr.headline(v) for k, v in stronger.items()
            }
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
