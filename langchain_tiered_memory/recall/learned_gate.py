"""The learned recall gate: the rule gate, plus a small model for requests a stored fact
could change.

The rule gate (:func:`~langchain_tiered_memory.recall.gate.decide_recall`) fires on what
its patterns name: a reference back in time, a question about the user, a personal
request with "my", a known name. It misses requests that lean on the user's world
without saying so: "Draft a message reminding everyone about Thursday" (a group the
user runs), "What's the code for the garage?", "When should the timing belt be looked
at?" (their car), "Make a revision timetable" (their exams). :class:`LearnedGate` asks
the rules first; when they do not fire, a logistic model over the prompt's MiniLM
embedding gives P(a stored fact about the user could change the answer), and the gate
fires at ``threshold`` or above. The model is fitted on requests written by hand for
this purpose (``data/gate_requests.json``: personal-context requests of many kinds,
against self-contained ones), not on any benchmark file; run
``python -m langchain_tiered_memory.recall.learned_gate`` to refit
``data/gate_weights.json``.

Two kinds of prompt never reach the model, by construction: a transformation of text
given in the message ("Translate ...", "Proofread ...", "Summarise this: ...") is not
about the user, and a Chinese prompt keeps the rules' answer (MiniLM is an English
model; the rules already fire on most Chinese personal requests).

Cost: one embedding when the rules say no (a few milliseconds on a CPU; see
``bench gate`` in ``benchmarks/README.md``). Share the memory's own MiniLM embedder
(``TieredMemory`` does so when its embedder is MiniLM cut at 64 tokens) and the
vector is cached: when the gate fires, recall's search reuses it.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> import numpy as np
    >>> from langchain_tiered_memory.embeddings.logistic import Logistic
    >>> always = Logistic(np.zeros(8), 5.0, np.zeros(8), np.ones(8))  # p = 0.99 for any text
    >>> gate = LearnedGate(DeterministicFakeEmbedding(size=8), model=always)
    >>> d = gate.decide("Draft a message reminding everyone about Thursday.")
    >>> d.recall, d.signal
    (True, 'learned')
    >>> gate.decide("Translate 'good morning' into Spanish.").recall  # a transformation
    False
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.embeddings.logistic import Logistic, fit_logistic, predict_proba
from langchain_tiered_memory.recall.gate_rules import (
    EntityLookup,
    GateConfig,
    decide_recall,
    transforms_given_text,
)
from langchain_tiered_memory.values import GateDecision

__all__ = [
    "DEFAULT_THRESHOLD",
    "GateExamples",
    "LearnedGate",
    "fit_gate_model",
    "fits_weights",
    "gate_examples",
    "model_applies",
]

#: The probability at or above which the model fires (chosen on the hand-written
#: requests' held-out half and the self-contained bench; see ``benchmarks/README.md``).
DEFAULT_THRESHOLD = 0.7
#: The embedder the shipped weights were fitted on: MiniLM cut at this many tokens.
MINILM_MAX_LENGTH = 64
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@functools.lru_cache(maxsize=4)
def _load(name: str) -> Any:
    data = importlib.resources.files("langchain_tiered_memory.recall") / "data" / name
    return json.loads(data.read_text(encoding="utf-8"))


def model_applies(message: str) -> bool:
    """Whether the learned model reads ``message`` at all: not a transformation of
    given text, and not Chinese (at most one CJK character).

    Example:
        >>> model_applies("Plan a dinner menu for Saturday."), model_applies("帮我安排这周末")
        (True, False)
        >>> model_applies("Proofread this: their going to the park.")
        False
    """
    return not transforms_given_text(message) and len(_CJK.findall(message)) < 2


@dataclass(frozen=True)
class GateExamples:
    """Labelled requests: ``texts[i]`` is personal (1) or self-contained (0)."""

    texts: list[str]
    labels: list[int]


def gate_examples(
    *, languages: Sequence[str] = ("en",), part: str = "all", data: dict[str, Any] | None = None
) -> GateExamples:
    """The hand-labelled requests of ``data/gate_requests.json`` in ``languages``.

    Args:
        languages: Which languages' requests (the file has ``en`` and ``zh``).
        part: ``"all"``, or ``"even"`` / ``"odd"`` (alternate requests of each list,
            for a held-out check).
        data: The file's content (default: the shipped file).

    Raises:
        ValueError: for an unknown ``part``.

    Example:
        >>> ex = gate_examples()
        >>> len(ex.texts) == len(ex.labels), sorted(set(ex.labels))
        (True, [0, 1])
    """
    if part not in ("all", "even", "odd"):
        raise ValueError(f"part must be 'all', 'even' or 'odd', got {part!r}")
    data = data if data is not None else _load("gate_requests.json")
    texts: list[str] = []
    labels: list[int] = []
    for key, label in (("personal", 1), ("self_contained", 0)):
        for lang in languages:
            items = list(data[key].get(lang, []))
            if part != "all":
                items = items[0 if part == "even" else 1 :: 2]
            texts.extend(items)
            labels.extend([label] * len(items))
    return GateExamples(texts, labels)


def fit_gate_model(
    embeddings: Embeddings, examples: GateExamples, *, l2: float = 1.0, steps: int = 1500
) -> Logistic:
    """Fit the gate's logistic model over the examples' embeddings.

    Raises:
        ValueError: when the examples lack either label.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> ex = GateExamples(["plan my week", "what is 2+2"], [1, 0])
        >>> model = fit_gate_model(DeterministicFakeEmbedding(size=8), ex)
        >>> model.weights.shape
        (8,)
    """
    if set(examples.labels) != {0, 1}:
        raise ValueError("the examples need both personal (1) and self-contained (0) requests")
    x = np.asarray(embeddings.embed_documents(list(examples.texts)), dtype=np.float64)
    return fit_logistic(x, np.asarray(examples.labels), l2=l2, steps=steps)


_shared_embeddings: Embeddings | None = None
_lock = threading.Lock()


def _minilm() -> Embeddings:
    global _shared_embeddings
    with _lock:
        if _shared_embeddings is None:
            from langchain_tiered_memory.embeddings import MiniLMEmbeddings

            _shared_embeddings = MiniLMEmbeddings(max_length=MINILM_MAX_LENGTH)
        return _shared_embeddings


def fits_weights(embeddings: Embeddings) -> bool:
    """Whether ``embeddings`` is the embedder the shipped weights were fitted on
    (MiniLM cut at 64 tokens), so the gate can share it.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> fits_weights(DeterministicFakeEmbedding(size=384))
        False
    """
    from langchain_tiered_memory.embeddings import MiniLMEmbeddings

    return isinstance(embeddings, MiniLMEmbeddings) and embeddings.max_length == MINILM_MAX_LENGTH


class LearnedGate:
    """The rule gate, then a logistic model over the prompt's embedding.

    Args:
        embeddings: The embedder the model was fitted on (default: MiniLM at 64
            tokens, one per process, loaded on first use). Pass the memory's own
            MiniLM to share its vector cache.
        model: The fitted model (default: the shipped ``data/gate_weights.json``,
            fitted on MiniLM; pass ``embeddings`` that match it).
        threshold: Fire at this probability or above, in ``(0, 1]``.

    Raises:
        ValueError: for a threshold outside ``(0, 1]``.
    """

    def __init__(
        self,
        embeddings: Embeddings | None = None,
        *,
        model: Logistic | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self._embeddings = embeddings
        self.model = model if model is not None else Logistic.from_dict(_load("gate_weights.json"))
        self.threshold = threshold

    @property
    def embeddings(self) -> Embeddings:
        """The embedder (MiniLM is loaded here on first use)."""
        if self._embeddings is None:
            self._embeddings = _minilm()
        return self._embeddings

    def probability(self, message: str) -> float:
        """P(a stored fact about the user could change the answer to ``message``)."""
        vector = np.asarray([self.embeddings.embed_query(message)], dtype=np.float64)
        return float(predict_proba(self.model, vector)[0])

    def decide(
        self,
        message: str,
        *,
        entities: EntityLookup | None = None,
        config: GateConfig | None = None,
        **rule_kwargs: Any,
    ) -> GateDecision:
        """The rules' decision if they fire, else the model's (see the module doc)."""
        started = time.perf_counter()
        rules = decide_recall(message, entities=entities, config=config, **rule_kwargs)
        text = message.strip()
        if rules.recall or not text or not model_applies(text):
            return rules
        p = self.probability(text)
        elapsed = (time.perf_counter() - started) * 1000
        if p >= self.threshold:
            return GateDecision(
                True,
                f"a request a stored fact could change (learned, p={p:.2f})",
                "learned",
                {"p": round(p, 4)},
                elapsed,
            )
        details = {**rules.details, "p": round(p, 4)}
        return GateDecision(False, rules.reason, rules.signal, details, elapsed)


def main(argv: Sequence[str] | None = None) -> int:
    """Refit: report the held-out half, then fit on all and rewrite the weights."""
    argv = list(sys.argv[1:] if argv is None else argv)
    embeddings = _minilm()
    model = fit_gate_model(embeddings, gate_examples(part="even"))
    check = gate_examples(part="odd")
    x = np.asarray(embeddings.embed_documents(check.texts), dtype=np.float64)
    p = predict_proba(model, x)
    y = np.asarray(check.labels)
    for threshold in (0.5, DEFAULT_THRESHOLD, 0.9):
        fired = p >= threshold
        print(
            f"held-out half, threshold {threshold}: personal fired "
            f"{fired[y == 1].mean():.3f}, self-contained fired {fired[y == 0].mean():.3f}"
        )
    final = fit_gate_model(embeddings, gate_examples())
    out = Path(argv[0]) if argv else Path(__file__).parent / "data" / "gate_weights.json"
    out.write_text(json.dumps(final.to_dict()) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
