"""Consolidation (optional, off by default): reflections.

Generative Agents' reflection: when the importance of the records written
since the last reflection passes a threshold, a model derives a few
higher-level observations from them, each citing the records it rests on;
the observations are archived as ``observation`` records whose ``sources``
are those citations.

Example:
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.runnables import RunnableLambda
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> class Fake(GenericFakeChatModel):
    ...     def with_structured_output(self, schema, **kw):
    ...         return RunnableLambda(lambda _: schema(observations=[
    ...             {"text": "Maya plans travel around her allergy", "cites": [1, 2]}]))
    >>> records = [MemoryRecord.new(user_id="maya", kind="fact", text=t, importance=9, id=i)
    ...            for i, t in [("a", "allergic to peanuts"), ("b", "flies to Kyoto in April")]]
    >>> reflector = Reflector(Fake(messages=iter([])), threshold=15)
    >>> [(o.kind, o.text, o.sources) for o in reflector.observe(records)]
    [('observation', 'Maya plans travel around her allergy', ('a', 'b'))]
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from pydantic import BaseModel, Field

from langchain_tiered_memory.records import MemoryRecord

logger = logging.getLogger(__name__)

__all__ = ["REFLECTION_PROMPT", "Reflector"]


class _Observation(BaseModel):
    text: str = Field(description="a higher-level insight about the user")
    cites: list[int] = Field(description="numbers of the memories it rests on")


class _Reflection(BaseModel):
    observations: list[_Observation]


REFLECTION_PROMPT = """Here are recent memories about a user, numbered. What are \
up to {max_observations} high-level insights you can infer from them? Cite the \
numbers of the memories each insight rests on. Do not invent facts.

{memories}"""


class Reflector:
    """Derive cited observations once enough importance has accumulated.

    Args:
        model: A chat model with structured output.
        threshold: Sum of importance (1-10 each) that triggers a reflection
            (Generative Agents used 150).
        max_observations: Observations per reflection.
    """

    def __init__(
        self, model: BaseChatModel, *, threshold: float = 150.0, max_observations: int = 3
    ) -> None:
        if threshold <= 0:
            raise ValueError("threshold must be > 0")
        self.model = model
        self.threshold = threshold
        self.max_observations = max_observations
        self.pending: list[MemoryRecord] = []
        self.calls = 0

    @property
    def accumulated(self) -> float:
        """Importance written since the last reflection."""
        return sum(r.importance for r in self.pending)

    def observe(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Note new records; reflect when the threshold is passed.

        Returns the new observation records (to archive), or ``[]``. A failed
        model call keeps the records pending for the next attempt.
        """
        self.pending.extend(r for r in records if r.kind != "observation")
        if self.accumulated < self.threshold or not self.pending:
            return []
        batch = list(self.pending)
        numbered = "\n".join(f"{i}. {r.text}" for i, r in enumerate(batch, 1))
        prompt = REFLECTION_PROMPT.format(max_observations=self.max_observations, memories=numbered)
        self.calls += 1
        try:
            result = self.model.with_structured_output(_Reflection).invoke([SystemMessage(prompt)])
            if not isinstance(result, _Reflection):
                raise ValueError(f"malformed reflection: {type(result).__name__}")
        except Exception as exc:  # noqa: BLE001 - retried at the next observe
            logger.warning("reflection failed (%r); %d records stay pending", exc, len(batch))
            return []
        self.pending = []
        user = batch[0].user_id
        observations = []
        for item in result.observations[: self.max_observations]:
            cited = [batch[i - 1] for i in item.cites if 1 <= i <= len(batch)]
            if not cited or not item.text.strip():
                continue  # an observation must rest on real memories
            observations.append(
                MemoryRecord.new(
                    user_id=user,
                    kind="observation",
                    text=item.text.strip(),
                    sources=tuple(r.id for r in cited),
                    importance=max(r.importance for r in cited),
                    metadata={"reflection": True, "stated": False, "possibly": True},
                )
            )
        return observations
