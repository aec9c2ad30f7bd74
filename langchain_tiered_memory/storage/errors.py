"""What a storage failure says: which file or database, what really failed, what to do.

Every backend raises these (chained from the driver's own exception), so an
application can tell a full disk from a damaged file without parsing
messages, and a log line names the file and the fix.

Example:
    >>> err = StorageFullError("writing to /data/archive.sqlite failed: database or disk is full")
    >>> isinstance(err, StorageError), str(err).endswith("full")
    (True, True)
"""

from __future__ import annotations

__all__ = [
    "StorageDamagedError",
    "StorageError",
    "StorageFullError",
    "StorageLockedError",
    "StorageReadOnlyError",
    "StorageUnavailableError",
]


class StorageError(RuntimeError):
    """A storage backend failed; nothing of the failed operation was written."""


class StorageFullError(StorageError):
    """The disk (or the database's size limit) is full."""


class StorageReadOnlyError(StorageError):
    """The file or database cannot be written (permissions, read-only mount)."""


class StorageLockedError(StorageError):
    """Another connection held a lock for longer than the busy timeout."""


class StorageDamagedError(StorageError):
    """A file is not a valid database (or is corrupt); the message says how to recover."""


class StorageUnavailableError(StorageError):
    """The database server cannot be reached (connection refused or dropped)."""
