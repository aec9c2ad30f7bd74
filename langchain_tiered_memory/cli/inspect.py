"""Read back what the memory holds and did, for one user.

:func:`inspect_user` gathers a user's threads (buffer and running summary),
core memory (active facts and their history), archived records and the audit
log (page-ins, page-outs, compressions with tokens before and after,
retrievals with scores and gate reasons) as JSON-ready data;
:func:`render_inspection` prints it with rich.

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> _ = store.memory("ana", "t1").add_messages([HumanMessage("I live in Porto.")])
    >>> data = inspect_user(store, "ana")
    >>> sorted(data), [f["content"] for f in data["core_memory"]["active"]]
    (['audit', 'core_memory', 'records', 'threads', 'user_id'], ['lives in Porto'])
    >>> store.close()
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from langchain_tiered_memory.cli.output import literal
from langchain_tiered_memory.records import RecordKind
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.codec import record_to_dict
from langchain_tiered_memory.store import MemoryStore

__all__ = ["inspect_user", "render_inspection", "turn_spans"]


def inspect_user(
    store: MemoryStore, user_id: str, *, limit: int = 200, kinds: list[RecordKind] | None = None
) -> dict[str, Any]:
    """Everything the store holds about ``user_id`` (newest audit events last).

    Args:
        store: The data directory's store.
        user_id: Whose memory.
        limit: Most records and audit events to include.
        kinds: Only these record kinds (``turn``, ``summary``, ``fact``, ``observation``).
    """
    threads = {}
    for thread_id in store.threads(user_id):
        state = store.memory(user_id, thread_id).state
        threads[thread_id] = {
            "buffered_turns": [t.index for t in state.turns],
            "buffer_tokens": state.tokens,
            "summary": state.summary,
            "summarized_through": state.summarized_through,
            "next_turn": state.next_index,
            "pending_summary_turns": [t.index for t in state.unsummarized],
        }
    core = store.core(user_id)
    records = store.archive.records(RecordFilter(user_id, kinds=kinds))
    events = store.audit.events(user_id, limit=limit)
    return {
        "user_id": user_id,
        "threads": threads,
        "core_memory": {
            "active": [f.to_dict() for f in core.active()],
            "history": [f.to_dict() for f in core.history()],
        },
        "records": [record_to_dict(r) for r in records[-limit:]],
        "audit": [e.to_dict() for e in events],
    }


def render_inspection(data: dict[str, Any], console: Console) -> None:
    """Print an inspection as tables."""
    console.rule(f"memory of {escape(str(data['user_id']))}")
    for thread_id, thread in data["threads"].items():
        console.print(
            f"[bold]thread {escape(str(thread_id))}[/]: {turn_spans(thread['buffered_turns'])} "
            f"in buffer ({thread['buffer_tokens']} tokens), next turn {thread['next_turn']}"
        )
        if thread["summary"]:
            console.print("[dim]running summary:[/]")
            console.print(thread["summary"], markup=False)
    table = Table(title="core memory (active)")
    for column in ("subject", "content", "source", "turn", "importance"):
        table.add_column(column)
    for fact in data["core_memory"]["active"]:
        table.add_row(
            literal(fact["subject"]),
            literal(fact["content"]),
            "stated" if fact["stated"] else "inferred",
            str(fact["source_turn"]),
            f"{fact['importance']:g}",
        )
    console.print(table)
    history = [f for f in data["core_memory"]["history"] if f["status"] != "active"]
    if history:
        old = Table(title="core memory history")
        for column in ("subject", "content", "status", "written", "reason"):
            old.add_column(column)
        for fact in history:
            old.add_row(
                literal(fact["subject"]),
                literal(fact["content"]),
                fact["status"],
                fact["created_at"][:19],
                literal(fact["reason"] or ""),
            )
        console.print(old)
    records = Table(title=f"archive ({len(data['records'])} records)")
    for column in ("kind", "created", "sources", "text"):
        records.add_column(column)
    for record in data["records"][-20:]:
        records.add_row(
            record["kind"],
            str(record["created_at"])[:19],
            literal(",".join(record["sources"][:3])),
            literal(record["text"][:70].replace("\n", " ")),
        )
    console.print(records)
    audit = Table(title=f"audit log (last {min(30, len(data['audit']))})")
    for column in ("at", "kind", "thread", "details"):
        audit.add_column(column)
    for event in data["audit"][-30:]:
        payload = {k: v for k, v in event["payload"].items() if v not in (None, [], {})}
        audit.add_row(
            str(event["at"])[:19],
            event["kind"],
            literal(event["thread_id"] or ""),
            literal(_short(payload)),
        )
    console.print(audit)


def turn_spans(turns: list[int]) -> str:
    """Turn numbers as a reader says them, runs of consecutive turns as ranges.

    Example:
        >>> turn_spans([1, 3, 4, 5, 6, 8, 9, 10])
        'turns 1, 3-6, 8-10'
        >>> turn_spans([0]), turn_spans([])
        ('turn 0', 'no turn')
    """
    spans: list[list[int]] = []
    for turn in sorted(set(turns)):
        if spans and turn == spans[-1][1] + 1:
            spans[-1][1] = turn
        else:
            spans.append([turn, turn])
    if not spans:
        return "no turn"
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    return f"turn {text}" if len(turns) == 1 else f"turns {text}"


def _short(payload: dict[str, Any], width: int = 90) -> str:
    text = ", ".join(f"{k}={v}" for k, v in payload.items())
    return text if len(text) <= width else text[: width - 1] + "…"
