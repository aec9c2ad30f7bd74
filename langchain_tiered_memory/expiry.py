"""When memory expires: the one test every tier and backend uses.

A record (:class:`~langchain_tiered_memory.records.MemoryRecord`) or a core
fact (:class:`~langchain_tiered_memory.tiers.core.CoreFact`) may carry an
``expires_at``. From that moment no read returns it (recall, ``get``,
``records``, core memory), and
:meth:`~langchain_tiered_memory.store.MemoryStore.sweep_expired` deletes it
as completely as a forget. Expiry is deletion; when a fact *holds* (valid
from / until) is another matter, kept on the fact itself.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    >>> is_expired(None, now), is_expired(now - timedelta(seconds=1), now), is_expired(now, now)
    (False, True, True)
    >>> expires_in(timedelta(days=1), now).isoformat()
    '2026-05-02T00:00:00+00:00'
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

__all__ = ["expires_in", "is_expired", "utc"]


def utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def is_expired(expires_at: datetime | None, now: datetime | None = None) -> bool:
    """Whether an expiry time has passed at ``now`` (default: the current time).

    ``None`` never expires; an expiry equal to ``now`` has passed.
    """
    if expires_at is None:
        return False
    return utc(expires_at) <= utc(now or datetime.now(timezone.utc))


def expires_in(ttl: timedelta, now: datetime | None = None) -> datetime:
    """The expiry of something kept for ``ttl`` from ``now`` (default: the current time).

    Raises:
        ValueError: for a ``ttl`` that is not positive.
    """
    if ttl <= timedelta(0):
        raise ValueError(f"a time to live must be positive, got {ttl}")
    return utc(now or datetime.now(timezone.utc)) + ttl
