"""SQL shared by the SQLite and Postgres backends: the turn log, core facts, the audit log,
and what their record stores check alike (:mod:`.records`).

The logic lives here once; each backend supplies only its dialect: a
:class:`Database` whose transactions are :class:`Tx` objects. Statements use
``?`` placeholders and SQL both dialects accept (``INSERT ... ON CONFLICT``,
no ``RETURNING``: :meth:`Tx.insert` returns the new row's key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from langchain_tiered_memory.ids import id_part

__all__ = [
    "Cursor",
    "Database",
    "LoggedDatabase",
    "Tx",
    "create_tables",
    "facts_key",
    "run_script",
    "thread_key",
    "user_key",
]


class Cursor(Protocol):
    """The part of a DB-API cursor the shared SQL uses."""

    @property
    def rowcount(self) -> int:
        """Rows changed by the last statement."""
        ...

    def fetchone(self) -> Any:
        """The next row, or ``None``."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        ...


class Tx(Protocol):
    """One open transaction (or read snapshot) of a :class:`Database`."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (``?`` placeholders)."""
        ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters."""
        ...

    def insert(self, sql: str, params: Sequence[Any] = (), *, key: str = "rowid") -> int:
        """Run an ``INSERT`` and return the new row's integer key (column ``key``)."""
        ...


class Database(Protocol):
    """Transactions over one database (a SQLite file or a Postgres database)."""

    #: Where it lives, for error messages (a path or a URL without the password).
    where: str

    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction, committed on success and rolled back on any error.

        Re-entrant on one thread: a nested ``write()`` joins the outer one, so
        several stores' writes commit together.
        """
        ...

    def read(self) -> AbstractContextManager[Tx]:
        """A consistent read-only snapshot (inside a write on this thread: that transaction)."""
        ...

    def lock_key(self, tx: Tx, key: str, *, shared: bool = False) -> None:
        """Hold a lock on ``key`` until ``tx`` ends (a no-op where writes are serial).

        The shared SQL locks ``user:<id>`` (shared by every write of the user,
        exclusive for a forget), then ``thread:<user>:<thread>`` or
        ``facts:<user>`` exclusively - always in that order.
        """
        ...


@runtime_checkable
class LoggedDatabase(Protocol):
    """A :class:`Database` with a write-ahead log that keeps deleted rows' bytes until it
    is checkpointed (SQLite's WAL): a forget checkpoints and truncates it."""

    def checkpoint(self) -> bool:
        """Fold the log into the database file and truncate it; True if it was."""
        ...


def user_key(user_id: str) -> str:
    """The :meth:`Database.lock_key` key of a user."""
    return f"user:{id_part(user_id)}"


def thread_key(user_id: str, thread_id: str) -> str:
    """The :meth:`Database.lock_key` key of a thread."""
    return f"thread:{id_part(user_id)}:{id_part(thread_id)}"


def facts_key(user_id: str) -> str:
    """The :meth:`Database.lock_key` key of a user's core facts."""
    return f"facts:{id_part(user_id)}"


def run_script(execute: Callable[[str], Any], script: str) -> None:
    """Run each ``;``-separated statement of ``script``."""
    for statement in script.split(";"):
        if statement.strip():
            execute(statement)


def create_tables(execute: Callable[[str], Any], script: str, *, newest: int, where: str) -> int:
    """Run a schema's ``CREATE ... IF NOT EXISTS`` ``script`` and return the schema version
    the ``meta`` table records (0: a new database).

    Raises:
        ValueError: if a newer version of the package (a schema above ``newest``) wrote it.
    """
    run_script(execute, script)
    row = execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    found = int(row[0]) if row else 0
    if found > newest:
        raise ValueError(
            f"{where} was written by a newer version (schema {found}); upgrade "
            "langchain-tiered-memory"
        )
    return found
