"""Work that runs off the caller's thread: the model extractor's batches.

:class:`BackgroundWorker` runs one job at a time on a daemon thread of its
own. :meth:`~BackgroundWorker.request` returns at once; requests made while
a run is queued coalesce into that run (the job reads what is due from the
store when it starts, so one run serves them all). The thread ends after a
few idle seconds and is started again by the next request, so an idle memory
holds no thread. :meth:`~BackgroundWorker.wait` blocks until nothing is
queued or running - for tests, shutdown and the CLI.

A job that raises is logged; its work stays due in the store (the
extraction watermark did not move) and is done by a later run.

Example:
    >>> done = []
    >>> worker = BackgroundWorker(lambda: done.append(1), name="demo")
    >>> worker.request()
    >>> worker.wait(timeout=5), done
    (True, [1])
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

__all__ = ["BackgroundWorker"]


class BackgroundWorker:
    """Run ``job`` off the caller's thread, one run at a time, requests coalesced.

    Args:
        job: What one run does.
        name: The thread's name (for logs and debuggers).
        idle_seconds: How long the thread waits for a request before it ends.
    """

    def __init__(self, job: Callable[[], None], *, name: str, idle_seconds: float = 5.0) -> None:
        self.job = job
        self.name = name
        self.idle_seconds = idle_seconds
        self._cond = threading.Condition()
        self._wanted = False
        self._running = False
        self._thread: threading.Thread | None = None
        self.runs = 0
        self.failures = 0

    def request(self) -> None:
        """Ask for a run (returns at once; a run already queued serves this request too)."""
        with self._cond:
            self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    @property
    def busy(self) -> bool:
        """Whether a run is queued or running."""
        with self._cond:
            return self._wanted or self._running

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no run is queued or running; False if ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: not (self._wanted or self._running), timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._wanted, self.idle_seconds):
                    self._thread = None  # idle: end; the next request starts a new thread
                    return
                self._wanted = False
                self._running = True
            try:
                self.job()
            except Exception:
                self.failures += 1
                logger.exception("%s: a background run failed; its work stays due", self.name)
            finally:
                with self._cond:
                    self.runs += 1
                    self._running = False
                    self._cond.notify_all()
