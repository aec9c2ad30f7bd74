"""The SQLite archive's vector index kept in step with its records.

SQLite is the source of truth. Every write commits there first - the
record, its vector as a blob, and (for an index outside the process, e.g. a
vector store) an outbox entry - and then the index is updated:

* an in-process index (FAISS, an
  :class:`~langchain_tiered_memory.storage.vectors.InProcessIndex`) catches up
  from SQLite itself (:meth:`VectorIndexSync.sync`): the rows added since it last looked,
  and the ``deleted_vectors`` log - other processes' writes too; its file is
  written under a lock shared by processes;
* another index gets the update, and its outbox entries are cleared once it
  succeeded; entries left by a crash are replayed before the next write.

On open the index is checked against the records, caught up when it merely
lags (a file written every so many adds), and rebuilt from the stored
vectors when it differs more. The archive holds one :class:`VectorIndexSync`
(``archive.index_sync``) and runs every index update through it.

Example:
    >>> import tempfile, os
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.records import MemoryRecord
    >>> from langchain_tiered_memory.storage.sqlite.archive import SQLiteArchive
    >>> path = os.path.join(tempfile.mkdtemp(), "a.sqlite")
    >>> with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=8)) as archive:
    ...     archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="likes tea")])
    ...     archive.index_sync.rebuild()
    ...     len(archive.index.ids()), [e.record.text for e in archive.index_sync.entries()]
    (1, ['likes tea'])
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory.storage.sql.audit import AuditLog
from langchain_tiered_memory.storage.sql.records import COLUMNS, row_record
from langchain_tiered_memory.storage.sqlite.db import SQLiteDatabase
from langchain_tiered_memory.storage.sqlite.rows import id_chunks, marks
from langchain_tiered_memory.storage.vectors import (
    InProcessIndex,
    VectorEntry,
    VectorIndex,
    VectorKey,
)

try:  # serialises index-file writes across processes (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["VectorIndexSync"]

logger = logging.getLogger(__name__)


class VectorIndexSync:
    """Keeps one archive's vector index in step with its records in SQLite.

    Args:
        db: The archive's database.
        index: The archive's vector index.
        audit: Where an index failure after a commit is recorded.
        lock_path: The file whose lock serialises index-file writes across
            processes (``None``: in memory, nothing to serialise).
        vector_size: The stored vectors' dimension (``None`` until known).
        fill_vectors: Embeds and stores the vectors of entries that lack one
            (returns the entries with their vectors), for :meth:`rebuild`.
    """

    def __init__(
        self,
        db: SQLiteDatabase,
        index: VectorIndex,
        *,
        audit: AuditLog,
        lock_path: Path | None,
        vector_size: Callable[[], int | None],
        fill_vectors: Callable[[list[VectorEntry]], list[VectorEntry]],
    ) -> None:
        self.db = db
        self.index = index
        self.audit = audit
        self.lock_path = lock_path
        self._vector_size = vector_size
        self._fill_vectors = fill_vectors
        # this process's own copy of the vectors (FAISS), caught up from SQLite; else None
        self._own: InProcessIndex | None = index if isinstance(index, InProcessIndex) else None
        self.outbox_pending = False
        self.broken = False
        # how far this process's in-process vector index has caught up with the
        # records (its own writes and other processes'): the newest row id added
        # and the newest entry of the deletion log applied
        self._seen_rid = 0
        self._seen_delete = 0
        self._lock = threading.Lock()

    def entries(self, where: str = "1", params: Sequence[Any] = ()) -> list[VectorEntry]:
        """The records matching ``where`` (SQL over ``records``) with their stored vectors."""
        rows = self.db.query(
            f"SELECT {COLUMNS}, vector FROM records WHERE {where} ORDER BY rid", params
        )
        dim = self._vector_size()
        entries = []
        for row in rows:
            blob = row[12]
            vector = None
            if blob is not None and (dim is None or len(blob) == 4 * dim):
                vector = np.frombuffer(blob, dtype=np.float32)
            entries.append(VectorEntry(int(row[0]), row_record(row), vector))
        return entries

    def open(self) -> None:
        """Check the index against the records: replay the outbox, catch up a lagging
        file, rebuild an index that differs more."""
        self.outbox_pending = bool(self.db.query("SELECT 1 FROM vector_outbox LIMIT 1"))
        if self.outbox_pending:
            self.replay_outbox()
        with self.db.read() as tx:
            expected = dict(tx.execute("SELECT rid, id FROM records").fetchall())
            last_delete = tx.execute("SELECT max(seq) FROM deleted_vectors").fetchone()[0]
        sample: list[VectorEntry] = []
        if expected and self.index.needs_vectors:
            rids = sorted(expected)
            picks = set(rids[:4] + rids[-4:] + random.sample(rids, min(8, len(rids))))
            sample = self.entries(f"rid IN ({marks(len(picks))})", sorted(picks))
        self._catch_up(expected)
        reason = self.index.check(expected, sample)
        if reason is not None:
            logger.warning(
                "vector index of %s does not match its records (%s); rebuilding it from the "
                "records",
                self.db.where,
                reason,
            )
            self.rebuild()
        else:
            self._seen_rid = max(expected, default=0)
            self._seen_delete = int(last_delete or 0)

    def _catch_up(self, expected: Mapping[int, str]) -> None:
        """Bring an index file that lags the records up to date without a full rebuild.

        The FAISS file is written every so many adds (see
        :attr:`FaissIndex.save_every`), so after a crash it misses the newest
        records (and may still hold records deleted since). Their vectors are
        in SQLite: the missing ones are added and the extra ones removed. An
        index that differs more than that (unreadable, most ids unknown) is
        left to :meth:`rebuild`, and so is one whose sampled vectors
        then differ from the stored ones.
        """
        if not self.index.needs_vectors or not expected:
            return
        indexed = self.index.ids()
        if not indexed:
            return
        missing = sorted(set(expected) - indexed)
        extra = sorted(indexed - set(expected))
        if (not missing and not extra) or 2 * len(extra) > len(indexed):
            return  # in step, or mostly unknown ids: not a file that merely lags
        entries: list[VectorEntry] = []
        for chunk in id_chunks(missing):
            entries.extend(self.entries(f"rid IN ({marks(len(chunk))})", chunk))
        if any(e.vector is None for e in entries):
            return  # some must be embedded again: a rebuild does that
        self.index.delete([VectorKey(rid, "") for rid in extra])
        self.index.add(entries)
        self.index.flush(force=True)
        logger.info(
            "vector index of %s caught up with its records: %d added, %d removed",
            self.db.where,
            len(entries),
            len(extra),
        )

    def rebuild(self) -> None:
        """Rebuild the vector index from the records in SQLite.

        Vectors stored in SQLite are reused; records without one (or with a
        vector of the wrong size) are embedded again.
        """
        with self.db.lock, self._lock:
            with self.db.read() as tx:
                last_delete = tx.execute("SELECT max(seq) FROM deleted_vectors").fetchone()[0]
            entries = self.entries()
            if self.index.needs_vectors and any(e.vector is None for e in entries):
                entries = self._fill_vectors(entries)
            if self.index.needs_outbox:
                stale = self.db.query("SELECT rid, record_id FROM vector_outbox WHERE op='delete'")
                self.index.delete([VectorKey(int(r), str(i)) for r, i in stale])
            self.index.rebuild(entries)
            self.index.flush(force=True)
            if self.index.needs_outbox:
                with self.db.write() as conn:
                    conn.execute("DELETE FROM vector_outbox")
                self.outbox_pending = False
            self._seen_rid = max((e.rowid for e in entries), default=0)
            self._seen_delete = int(last_delete or 0)
            self.broken = False
            logger.info("rebuilt the vector index of %s (%d records)", self.db.where, len(entries))

    def replay_outbox(self) -> None:
        """Apply index writes that SQLite committed but the index did not confirm."""
        with self.db.lock:
            rows = self.db.query("SELECT rid, record_id, op FROM vector_outbox ORDER BY rid")
            deletes = [VectorKey(int(r), str(i)) for r, i, op in rows if op == "delete"]
            adds = [int(r) for r, _i, op in rows if op == "add"]
            if deletes:
                self.index.delete(deletes)
            for chunk in id_chunks(adds):
                entries = self.entries(f"rid IN ({marks(len(chunk))})", chunk)
                self.index.add(entries)
            self.index.flush()
            with self.db.write() as conn:
                conn.execute("DELETE FROM vector_outbox")
            self.outbox_pending = False
            if rows:
                logger.info("replayed %d pending vector index writes", len(rows))

    def before_write(self) -> None:
        """Repair what a failed index update left (a rebuild, or the outbox replayed)."""
        if self.broken:
            self.rebuild()
        elif self.outbox_pending:
            try:
                self.replay_outbox()
            except Exception as exc:
                logger.error(
                    "replaying the vector outbox failed (%r); will retry", exc, exc_info=True
                )

    def sync(self) -> None:
        """Catch this process's vector index up with the records (any process's writes).

        An in-process index (FAISS) is one process's copy: before each dense
        search, and before the index file is written, it takes the records
        added since it last looked (their vectors are in SQLite: nothing is
        embedded) and drops the ones deleted since (from the ``deleted_vectors``
        log). One small query when nothing changed. Indexes kept outside the
        process (a vector store) need no catching up.
        """
        index = self._own
        if index is None:
            return
        with self._lock:
            with self.db.read() as tx:
                newest_rid, newest_delete, pruned = tx.execute(
                    "SELECT (SELECT max(rid) FROM records), (SELECT max(seq) FROM "
                    "deleted_vectors), (SELECT value FROM meta WHERE key='vectors_pruned_through')"
                ).fetchone()
                newest_rid, newest_delete = int(newest_rid or 0), int(newest_delete or 0)
                if self._seen_delete < int(pruned or 0):
                    stale = True  # missed deletions that the log no longer holds
                else:
                    stale = False
                    deleted = (
                        tx.execute(
                            "SELECT seq, rid FROM deleted_vectors WHERE seq>? ORDER BY seq",
                            (self._seen_delete,),
                        ).fetchall()
                        if newest_delete > self._seen_delete
                        else []
                    )
                    added = (
                        tx.execute(
                            "SELECT rid, user_id, vector FROM records WHERE rid>? ORDER BY rid",
                            (self._seen_rid,),
                        ).fetchall()
                        if newest_rid > self._seen_rid
                        else []
                    )
            if stale:
                self.broken = True
            else:
                if deleted:
                    index.delete([VectorKey(int(rid), "") for _seq, rid in deleted])
                    self._seen_delete = int(deleted[-1][0])
                if added:
                    dim = self._vector_size()
                    usable = [
                        r
                        for r in added
                        if r[2] is not None and (dim is None or len(r[2]) == 4 * dim)
                    ]
                    if len(usable) < len(added):
                        self.broken = True  # records without a vector: embed them again
                    if usable:
                        index.add_vectors(
                            np.fromiter((int(r[0]) for r in usable), np.int64, len(usable)),
                            [str(r[1]) for r in usable],
                            np.stack([np.frombuffer(r[2], dtype=np.float32) for r in usable]),
                        )
                    self._seen_rid = int(added[-1][0])
        if self.broken:
            self.rebuild()

    def write_file(self, *, force: bool = False) -> None:
        """Catch the index up and write its file (under a file lock shared by processes)."""
        with self.file_lock():
            self.sync()
            self.index.flush(force=force)

    @contextmanager
    def file_lock(self) -> Iterator[None]:
        """Serialise index-file writes across processes: each writes its state after
        catching up, so no process can write back vectors another has deleted."""
        if self.lock_path is None or fcntl is None or self._own is None:
            yield
            return
        with open(self.lock_path, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def after_commit(
        self,
        rowids: Sequence[int],
        users: Iterable[str],
        action: Callable[[], None],
        *,
        force: bool = False,
    ) -> None:
        """Update the vector index after a SQLite commit; keep the two consistent on failure.

        An in-process index catches up from SQLite (:meth:`sync`), the same
        way it takes other processes' writes; another index gets ``action``
        (its outbox entries are cleared once it succeeded).
        """
        if self._own is not None:
            try:
                self.write_file(force=force)
            except Exception as exc:
                self.broken = True
                logger.error("vector index update failed after commit (%r); will repair", exc)
                raise
            return
        self._apply(rowids, users, action)

    def _apply(
        self, rowids: Sequence[int], users: Iterable[str], action: Callable[[], None]
    ) -> None:
        """Run an index update after a SQLite commit; keep the two consistent on failure."""
        try:
            action()
        except Exception as exc:
            if self.index.needs_outbox:
                self.outbox_pending = True
            else:
                self.broken = True
            logger.error("vector index update failed after commit (%r); will repair", exc)
            try:
                with self.db.write() as conn:
                    for user in sorted(set(users)):
                        self.audit.insert(
                            conn,
                            "error",
                            user_id=user,
                            payload={"op": "vector_index", "error": type(exc).__name__},
                        )
            except Exception:  # pragma: no cover - best effort
                logger.exception("could not record the error event")
            raise
        if self.index.needs_outbox and rowids:
            with self.db.write() as conn:
                for chunk in id_chunks(list(rowids)):
                    conn.execute(
                        f"DELETE FROM vector_outbox WHERE rid IN ({marks(len(chunk))})", chunk
                    )
