"""What one prompt recalls: the best records not already in it, and the audit event saying so.

A view recalls for the newest user message with a
:class:`~langchain_tiered_memory.recall.hybrid.Recaller`, then leaves out what
the prompt carries anyway - the records of turns still in this thread's buffer
(verbatim there) and superseded fact versions - and keeps the best ``k``. The
``recall`` audit event records the query, the gate's decision and each
result's id, score and score parts (never a record's text).

Example:
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> from langchain_tiered_memory.storage import open_backend
    >>> backend = open_backend(None, embeddings=None)
    >>> backend.records.add([
    ...     MemoryRecord.new(user_id="ana", kind="fact", text="allergic to peanuts", id="f1"),
    ...     MemoryRecord.new(user_id="ana", kind="turn", text="user: peanuts? no!", id="t0",
    ...                      thread_id="t1", sources=("turn:0",)),
    ... ])
    >>> recalled, event = recall_for_prompt(
    ...     backend.records, None, "peanuts", user_id="ana", thread_id="t1", buffered=[0], k=3)
    >>> [r.record_id for r in recalled], [h["id"] for h in event["results"]]
    (['f1'], ['f1'])
    >>> backend.close()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.recall.hybrid import Recaller, to_recalled_memories
from langchain_tiered_memory.records import ScoredRecord
from langchain_tiered_memory.values import GateDecision, RecalledMemory

__all__ = ["recall_event", "recall_for_prompt"]

#: Candidates fetched beyond ``k``, so ``k`` remain once the buffer's turns are left out.
SPARE = 4


def recall_for_prompt(
    archive: Any,
    embeddings: Embeddings | None,
    query: str,
    *,
    user_id: str,
    thread_id: str,
    buffered: Iterable[int],
    k: int,
    gate: GateDecision | None = None,
    min_score: float | Literal["default"] | None = "default",
) -> tuple[list[RecalledMemory], dict[str, Any]]:
    """The best ``k`` records of ``user_id`` for a (cleaned) ``query`` that the prompt
    does not carry already, and the payload of their ``recall`` audit event.

    Args:
        archive: The store's record store.
        embeddings: What the query is embedded with (``None``: the archive embeds the text).
        query: The query text, already cleaned.
        user_id: Whose records.
        thread_id: The thread the prompt is for.
        buffered: The indices of the turns in that thread's buffer.
        k: How many to return.
        gate: The gate's decision, recorded in the event.
        min_score: The relevance floor (a calibrated score, ``"default"`` or
            ``None``), see :class:`~langchain_tiered_memory.recall.hybrid.Recaller`.
    """
    recaller = Recaller(archive, embeddings, k=k, min_score=min_score)
    hits = recaller.recall(query, user_id=user_id, k=k + SPARE)
    in_buffer = {f"turn:{index}" for index in buffered}
    kept = [
        hit
        for hit in hits
        if not (hit.record.thread_id == thread_id and set(hit.record.sources) & in_buffer)
        and not hit.record.metadata.get("superseded")
    ][:k]
    return to_recalled_memories(kept), recall_event(query, gate, kept)


def recall_event(
    query: str, gate: GateDecision | None, hits: Iterable[ScoredRecord]
) -> dict[str, Any]:
    """The ``recall`` audit event's payload: the query, the gate, each hit's id and score.

    Example:
        >>> from langchain_tiered_memory.records import MemoryRecord
        >>> hit = ScoredRecord(MemoryRecord.new(user_id="u", kind="fact", text="t", id="f1"),
        ...                    0.81234, {"keyword": 0.5})
        >>> recall_event("tea?", None, [hit])
        {'query': 'tea?', 'gate': None, 'results': [{'id': 'f1', 'score': 0.8123, 'parts': {'keyword': 0.5}}]}
    """  # noqa: E501
    return {
        "query": query,
        "gate": gate.to_dict() if gate else None,
        "results": [
            {
                "id": h.record.id,
                "score": round(h.score, 4),
                "parts": {p: round(v, 4) for p, v in h.parts.items()},
            }
            for h in hits
        ],
    }
