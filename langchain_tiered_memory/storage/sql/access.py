"""Access times noted by recall, written in the background (recall's recency signal).

Recall marks the records it returns as accessed. Writing that on the query's
path would add a write transaction - and row locks shared by every worker -
to each recall, so :class:`AccessTimes` keeps the noted times in memory and
a background thread writes them in one statement about once a second. Until
then they are applied to every record the store returns. A crash loses at
most the last second or so of access times, never a record.

Example:
    >>> written = []
    >>> times = AccessTimes(lambda rows: written.extend(rows) or len(rows), interval=60)
    >>> times.note(["r1", "r2"], "ana", 1_000)
    >>> times.pending("r1")
    ('ana', 1000)
    >>> times.flush(), sorted(written)
    (2, [('r1', 'ana', 1000), ('r2', 'ana', 1000)])
    >>> times.close()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

__all__ = ["AccessTimes"]

logger = logging.getLogger(__name__)

#: ``(record id, user id, micros)`` rows to write; returns how many records changed.
Writer = Callable[[Sequence[tuple[str, str, int]]], int]


class AccessTimes:
    """Noted access times and the thread that writes them.

    Args:
        write: Writes ``(record id, user id, micros)`` rows (only the user's
            own records may change); returns how many changed.
        interval: Seconds between background writes.
    """

    def __init__(self, write: Writer, *, interval: float = 1.0) -> None:
        self._write = write
        self.interval = interval
        self._noted: dict[str, tuple[str, int]] = {}
        self._writing: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()  # guards the two dicts and the thread
        self._flush_lock = threading.Lock()  # one write at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def note(self, ids: Iterable[str], user_id: str, micros: int) -> None:
        """Note that ``user_id``'s records ``ids`` were accessed at ``micros``."""
        with self._lock:
            if self._stop.is_set():
                raise ValueError("the record store is closed")
            for record_id in ids:
                self._noted[record_id] = (user_id, micros)
            if self._thread is None or not self._thread.is_alive():  # or after a fork
                self._thread = threading.Thread(
                    target=self._loop, name="records-access", daemon=True
                )
                self._thread.start()

    def pending(self, record_id: str) -> tuple[str, int] | None:
        """The ``(user id, micros)`` noted for a record and not written yet."""
        if not self._noted and not self._writing:
            return None
        return self._noted.get(record_id) or self._writing.get(record_id)

    @property
    def any_pending(self) -> bool:
        """True while some noted time is not written yet."""
        return bool(self._noted or self._writing)

    def drop(self, user_id: str, ids: Iterable[str] | None = None) -> None:
        """Forget noted times of deleted records (all of the user's when ``ids`` is None)."""
        with self._flush_lock, self._lock:
            if ids is None:
                self._noted = {k: v for k, v in self._noted.items() if v[0] != user_id}
            else:
                for record_id in ids:
                    self._noted.pop(record_id, None)

    def flush(self) -> int:
        """Write the noted times now; returns how many records changed.

        On failure the times are kept for the next attempt.
        """
        with self._flush_lock:
            with self._lock:
                batch, self._noted = self._noted, {}
                self._writing = batch
            if not batch:
                return 0
            try:
                return self._write([(i, u, at) for i, (u, at) in batch.items()])
            except BaseException:
                with self._lock:  # keep them, unless noted again meanwhile
                    for record_id, noted in batch.items():
                        self._noted.setdefault(record_id, noted)
                raise
            finally:
                with self._lock:
                    self._writing = {}

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - kept and retried on the next round
                logger.warning("writing access times failed (%r); will retry", exc)

    def close(self, *, write: bool = True) -> None:
        """Stop the thread and write what is noted (idempotent).

        ``write=False`` drops what is noted instead (the database is gone).
        """
        with self._lock:
            self._stop.set()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        if not write:
            with self._flush_lock, self._lock:
                self._noted = {}
            return
        try:
            self.flush()
        except Exception:
            logger.exception("could not write the last access times")
