"""The recall gate: is recall needed before answering this message?

Searching the archive on every turn wastes time and pollutes the prompt with
noise ("what's 17 x 23" needs no memories). The gate decides, and a
:class:`GateDecision` says why. Modes (:data:`GateMode`, ``TieredMemory(gate=...)``):

* ``"auto"``: the rule gate, :func:`decide_recall` (patterns and a keyword
  lookup of known names, no model; :mod:`.gate_rules`);
* ``"learned"``: the rules, then a small logistic model over the prompt's
  embedding for requests a stored fact could change
  (:class:`~langchain_tiered_memory.recall.learned_gate.LearnedGate`);
* an :class:`LLMGate`: a chat model asks, the rules as its fallback;
* ``"always"`` / ``"never"``.

:func:`should_recall` is the one-line LangGraph router on top.

Example:
    >>> decide_recall("What's 17 * 23?").recall
    False
    >>> d = decide_recall("What did I tell you about my sister last time?")
    >>> d.recall, d.reason
    (True, "refers back in time ('last time')")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from pydantic import BaseModel, Field

from langchain_tiered_memory.models import require_chat_model as _resolve
from langchain_tiered_memory.recall.gate_rules import (
    EntityLookup,
    GateConfig,
    TermIndex,
    candidate_entities,
    decide_recall,
)
from langchain_tiered_memory.recall.learned_gate import LearnedGate, fits_weights
from langchain_tiered_memory.values import GateDecision

__all__ = [
    "EntityLookup",
    "GateConfig",
    "GateDecision",
    "GateMode",
    "LLMGate",
    "LearnedGate",
    "TermIndex",
    "candidate_entities",
    "decide_recall",
    "gate_decision",
    "gate_from",
    "should_recall",
]


def should_recall(state: Mapping[str, Any]) -> Literal["recall", "answer"]:
    """LangGraph router: ``"recall"`` if the gate said so, else ``"answer"``.

    Reads ``state["gate"]`` (a :class:`GateDecision` or its dict form).

    Example:
        >>> should_recall({"gate": {"recall": True, "reason": "x"}})
        'recall'
    """
    gate = state.get("gate")
    if isinstance(gate, GateDecision):
        return "recall" if gate.recall else "answer"
    return "recall" if isinstance(gate, Mapping) and gate.get("recall") else "answer"


class _GateAnswer(BaseModel):
    recall: bool = Field(description="true if memories of past conversations would help")
    reason: str = Field(description="one short sentence")


LLM_GATE_PROMPT = """Decide whether answering the user's latest message needs \
memories of earlier conversations with this user (their facts, preferences, \
plans, or what was said before). Self-contained requests (maths, translation, \
general knowledge, creative writing) do not.

Message: {message}"""


class LLMGate:
    """An optional LLM classifier with the heuristic as its fallback.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> gate = LLMGate(GenericFakeChatModel(messages=iter([])))  # will fail
        >>> gate.decide("What did I say last time?").signal  # heuristic fallback
        'back_reference'
    """

    def __init__(self, model: BaseChatModel | str, *, prompt: str = LLM_GATE_PROMPT) -> None:
        self.model = _resolve(model, what="gate")
        self.prompt = prompt
        self.calls = 0
        self.failures = 0

    def decide(self, message: str, **heuristic_kwargs: Any) -> GateDecision:
        """Ask the model; on any failure use :func:`decide_recall`."""
        started = time.perf_counter()
        self.calls += 1
        try:
            runnable = self.model.with_structured_output(_GateAnswer)
            answer = runnable.invoke([SystemMessage(self.prompt.format(message=message))])
            if not isinstance(answer, _GateAnswer):
                raise ValueError(f"malformed gate answer: {answer!r}")
        except Exception as exc:  # noqa: BLE001 - the heuristic always answers
            self.failures += 1
            logging.getLogger(__name__).warning("LLM gate failed (%r); using heuristics", exc)
            return decide_recall(message, **heuristic_kwargs)
        elapsed = (time.perf_counter() - started) * 1000
        return GateDecision(answer.recall, answer.reason, "llm", {}, elapsed)


#: ``"auto"`` (the rule gate), ``"always"``, ``"never"``, a :class:`LearnedGate` (the
#: rules plus a small model; ``"learned"`` builds one) or an :class:`LLMGate`.
GateMode = Literal["auto", "learned", "always", "never"] | LearnedGate | LLMGate


def gate_from(spec: Any, *, embeddings: Embeddings | None = None) -> GateMode:
    """The recall gate for ``gate=``: ``"auto"``, ``"always"``, ``"never"``,
    ``"learned"`` (a :class:`LearnedGate`), a :class:`LearnedGate` or
    :class:`~langchain_tiered_memory.recall.gate.LLMGate`, or a model spec (an LLM gate).

    Args:
        spec: One of the above.
        embeddings: The memory's embedder; ``"learned"`` shares it when the gate's
            model was fitted on it (MiniLM at 64 tokens), so recall reuses the
            prompt's cached vector; otherwise the gate loads its own MiniLM.

    Raises:
        TypeError: for something that is neither.

    Example:
        >>> gate_from("auto"), type(gate_from("echo")).__name__
        ('auto', 'LLMGate')
        >>> type(gate_from("learned")).__name__
        'LearnedGate'
    """
    if spec == "auto" or spec == "always" or spec == "never":
        return cast('Literal["auto", "always", "never"]', spec)
    if spec == "learned":
        shared = embeddings if embeddings is not None and fits_weights(embeddings) else None
        return LearnedGate(shared)
    if isinstance(spec, LLMGate | LearnedGate):
        return spec
    if isinstance(spec, str | BaseChatModel):
        try:
            return LLMGate(spec)
        except ValueError as exc:
            raise ValueError(
                "gate must be 'auto', 'learned', 'always', 'never', an LLMGate or a chat "
                f"model: {exc}"
            ) from exc
    raise TypeError(
        "gate must be 'auto', 'learned', 'always', 'never', a LearnedGate, an LLMGate, or a "
        f"chat model / init_chat_model string for an LLM gate; got {type(spec).__name__}"
    )


_learned: LearnedGate | None = None


def _shared_learned_gate() -> LearnedGate:
    global _learned
    if _learned is None:
        _learned = LearnedGate()
    return _learned


def gate_decision(
    gate: GateMode,
    message: str,
    *,
    entities: EntityLookup | None = None,
    config: GateConfig | None = None,
) -> GateDecision:
    """Whether ``message`` needs recall, as ``gate`` decides (a :data:`GateMode`).

    ``"always"`` and ``"never"`` decide without reading the message; an
    :class:`LLMGate` asks its model; a :class:`LearnedGate` asks the rules, then its
    model; ``"auto"`` is :func:`decide_recall`.

    Example:
        >>> gate_decision("never", "What did I say about my sister?").recall
        False
        >>> gate_decision("auto", "What did I say about my sister?").recall
        True
    """
    if gate == "always":
        return GateDecision(True, "recall is always on", "always")
    if gate == "never":
        return GateDecision(False, "recall is off", "off")
    if gate == "learned":
        gate = _shared_learned_gate()
    if isinstance(gate, LLMGate | LearnedGate):
        return gate.decide(message, entities=entities, config=config)
    return decide_recall(message, entities=entities, config=config)
