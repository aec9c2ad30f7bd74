"""Facts an unsure link moved out of the current facts, shown as earlier ones (pure).

When the linker is unsure whether a new statement replaces a current fact,
the older fact is retired with a reason starting ``earlier:`` and shown in
core memory's prompt beside the newer one as ``earlier (date)``, never alone
as current. A fact retired for room (``archived`` with another reason) is not
shown here.

Example:
    >>> from dataclasses import replace
    >>> from langchain_tiered_memory.tiers.core import CoreFact
    >>> old = CoreFact.new("work", "works at Deloitte")
    >>> old = replace(old, status="archived", reason="earlier: possibly replaced by turn 9")
    >>> [f.content[:9] for f in earlier_view([old])]
    ['earlier (']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from langchain_tiered_memory.tiers.core import CoreFact

__all__ = ["EARLIER", "earlier_view"]

#: The reason prefix of a fact an unsure link moved out.
EARLIER = "earlier:"


def earlier_view(history: Iterable[CoreFact], *, limit: int = 8) -> list[CoreFact]:
    """The newest ``limit`` facts moved out by an unsure link, their content
    prefixed with ``earlier (YYYY-MM-DD):`` and lowered in importance, so they
    render after the current facts."""
    moved = [
        f
        for f in history
        if f.status == "archived" and f.reason is not None and f.reason.startswith(EARLIER)
    ]
    moved.sort(key=lambda f: f.created_at, reverse=True)
    return [
        replace(
            f,
            subject=f"{f.subject} (earlier)",
            content=f"earlier ({f.created_at.date().isoformat()}): {f.content}",
            importance=0.0,
        )
        for f in moved[:limit]
    ]
