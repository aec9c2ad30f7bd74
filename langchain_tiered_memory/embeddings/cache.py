"""The embedders' disk cache: vectors in SQLite, keyed by model and the text's SHA-256.

Example:
    >>> import tempfile, numpy as np
    >>> cache = VectorCache(tempfile.mkdtemp() + "/c.sqlite")
    >>> cache.put_many("m", [(text_key("hi"), np.ones(2, dtype=np.float32))])
    >>> cache.get_many("m", [text_key("hi")])[text_key("hi")].tolist()
    [1.0, 1.0]
    >>> cache.forget([text_key("hi")]), cache.get_many("m", [text_key("hi")])
    (1, {})
    >>> cache.close()
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["VectorCache", "file_sha256", "text_key"]


def text_key(text: str) -> str:
    """The key a text's vector is cached under: its SHA-256 (surrogates kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file (a model's weights), read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class VectorCache:
    """Vectors on disk, keyed by (namespace, sha256 of the text).

    ``namespace`` names the model and every setting that changes its vectors,
    so one file can hold the vectors of several embedders. It is a cache:
    a damaged file is replaced by an empty one (with a warning), and a
    failing read or write is logged and skipped - the vectors are computed
    again. ``secure_delete`` is on, so :meth:`forget` overwrites what it
    deletes.
    """

    _CHUNK = 500  # bound on SQL parameters per statement

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            logger.warning(
                "the embedding cache %s is damaged (%s); starting an empty one (vectors are "
                "computed again)",
                self.path,
                exc,
            )
            for suffix in ("", "-wal", "-shm"):
                part = self.path.with_name(self.path.name + suffix)
                if part.exists():
                    part.unlink()
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " namespace TEXT NOT NULL,"
                " text_sha256 TEXT NOT NULL,"
                " dim INTEGER NOT NULL,"
                " vector BLOB NOT NULL,"
                " PRIMARY KEY (namespace, text_sha256)) WITHOUT ROWID"
            )
            conn.execute("SELECT count(*) FROM embeddings WHERE 0").fetchall()
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def get_many(self, namespace: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        try:
            for start in range(0, len(digests), self._CHUNK):
                chunk = list(digests[start : start + self._CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    "SELECT text_sha256, dim, vector FROM embeddings"
                    f" WHERE namespace = ? AND text_sha256 IN ({marks})",
                    [namespace, *chunk],
                )
                for digest, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype="<f4")
                    if vector.shape == (dim,):
                        found[digest] = vector.astype(np.float32)
        except sqlite3.Error as exc:
            logger.warning("reading the embedding cache %s failed (%s); skipped", self.path, exc)
        return found

    def put_many(self, namespace: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [
            (namespace, digest, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
            for digest, v in items
        ]
        if not rows:
            return
        try:
            with self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (namespace, text_sha256, dim, vector)"
                    " VALUES (?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            logger.warning("writing the embedding cache %s failed (%s); skipped", self.path, exc)

    def forget(self, digests: Sequence[str]) -> int:
        """Delete these texts' vectors in every namespace, overwriting them on disk.

        Raises:
            sqlite3.Error: if the cache cannot be written (a forget must not
                pass silently).
        """
        deleted = 0
        with self._conn:
            for start in range(0, len(digests), self._CHUNK):
                chunk = list(digests[start : start + self._CHUNK])
                marks = ",".join("?" * len(chunk))
                deleted += self._conn.execute(
                    f"DELETE FROM embeddings WHERE text_sha256 IN ({marks})", chunk
                ).rowcount
        if deleted:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        return deleted

    def close(self) -> None:
        self._conn.close()
