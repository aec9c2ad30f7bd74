"""Where evicted turns go: the archive tier.

The buffer hands every evicted turn to an *archive hook* - any callable taking
a sequence of :class:`~langchain_tiered_memory.turns.Turn` - before the turn
leaves the buffer. If the hook raises, the turn stays in the buffer.

:class:`InMemoryTurnArchive` is the simplest hook: a list, idempotent by turn
index (a retried compression does not store a turn twice).

:class:`SQLiteArchive` is the durable archive: every turn, summary and fact as
a :class:`~langchain_tiered_memory.records.MemoryRecord` in SQLite (with an
FTS5 keyword index and an audit log in the same file) and a FAISS vector index
next to it. ``archive.hook(user_id, thread_id)`` is the buffer's hook; the raw
candidate searches (:meth:`~BaseSQLiteArchive.dense_search`,
:meth:`~BaseSQLiteArchive.keyword_search`) feed recall's fused scoring. The
SQLite half is shared with
:class:`~langchain_tiered_memory.vectorstore_archive.VectorStoreArchive`, which
keeps its vectors in any LangChain ``VectorStore``; the vector half is a small
:class:`VectorIndex` strategy.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.turns import Turn
    >>> archive = InMemoryTurnArchive()
    >>> archive([Turn(0, (HumanMessage("hi"),))])
    >>> archive([Turn(0, (HumanMessage("hi"),))])
    >>> len(archive.turns)
    1
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar, cast, get_args

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.audit import (
    AuditLog,
    SQLiteDatabase,
    from_micros,
    to_micros,
    validate_db_path,
)
from langchain_tiered_memory.ivf import InvertedLists, top_k
from langchain_tiered_memory.records import MemoryRecord, RecordKind
from langchain_tiered_memory.turns import Turn

__all__ = [
    "RECORD_KINDS",
    "ArchiveTurnHook",
    "BaseSQLiteArchive",
    "DenseQuery",
    "FaissIndex",
    "InMemoryTurnArchive",
    "RecordFilter",
    "SQLiteArchive",
    "VectorEntry",
    "VectorIndex",
    "VectorKey",
    "fts_document",
    "fts_query",
    "fts_shard",
    "fts_table",
    "fts_terms",
    "owner_token",
    "record_from_dict",
    "record_to_dict",
    "stored_embeddings_id",
    "turn_record",
    "turn_record_id",
    "turn_session",
    "turn_speaker",
]

logger = logging.getLogger(__name__)

RECORD_KINDS: frozenset[str] = frozenset(get_args(RecordKind))
_SCHEMA_VERSION = 1
_CHUNK = 500


class InMemoryTurnArchive:
    """Archive hook that keeps evicted turns in a list, oldest first."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self, turns: Sequence[Turn]) -> None:
        """Store the turns not stored yet."""
        with self._lock:
            for turn in turns:
                if turn.index not in self._seen:
                    self._seen.add(turn.index)
                    self.turns.append(turn)


# --------------------------------------------------------------------------- records


def _check_user(user_id: object) -> str:
    if not isinstance(user_id, str) or not user_id:
        raise ValueError(
            f"user_id must be a non-empty string (every archive query is per user), got {user_id!r}"
        )
    return user_id


def _kinds_tuple(kinds: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    wanted = (kinds,) if isinstance(kinds, str) else tuple(dict.fromkeys(kinds))
    unknown = [k for k in wanted if k not in RECORD_KINDS]
    if unknown:
        raise ValueError(f"unknown record kind(s) {unknown}; use some of {sorted(RECORD_KINDS)}")
    return wanted


@dataclass(frozen=True)
class RecordFilter:
    """Which records a search may return. ``user_id`` is mandatory.

    ``since`` is inclusive and ``until`` exclusive (``since <= created_at <
    until``), so consecutive windows never overlap. Naive datetimes are UTC.

    Example:
        >>> RecordFilter("ana", kinds="fact").sql()
        ('r.user_id = ? AND r.kind IN (?)', ['ana', 'fact'])
    """

    user_id: str
    thread_id: str | None = None
    kinds: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        _check_user(self.user_id)
        object.__setattr__(self, "kinds", _kinds_tuple(self.kinds))

    def sql(self, alias: str = "r") -> tuple[str, list[Any]]:
        """A SQL condition over the ``records`` table aliased ``alias``, with its parameters."""
        where = [f"{alias}.user_id = ?"]
        params: list[Any] = [self.user_id]
        if self.thread_id is not None:
            where.append(f"{alias}.thread_id = ?")
            params.append(self.thread_id)
        if self.kinds is not None:
            where.append(f"{alias}.kind IN ({','.join('?' * len(self.kinds))})")
            params.extend(self.kinds)
        if self.since is not None:
            where.append(f"{alias}.created_at >= ?")
            params.append(to_micros(self.since))
        if self.until is not None:
            where.append(f"{alias}.created_at < ?")
            params.append(to_micros(self.until))
        return " AND ".join(where), params

    @property
    def user_only(self) -> bool:
        """True when the filter restricts nothing but the user.

        Example:
            >>> RecordFilter("ana").user_only, RecordFilter("ana", "t1").user_only
            (True, False)
        """
        return (
            self.thread_id is None
            and self.kinds is None
            and self.since is None
            and self.until is None
        )

    def matches(self, record: MemoryRecord) -> bool:
        """The same test in Python.

        Example:
            >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="x")
            >>> RecordFilter("ana").matches(r), RecordFilter("bob").matches(r)
            (True, False)
        """
        at = to_micros(record.created_at)
        return (
            record.user_id == self.user_id
            and (self.thread_id is None or record.thread_id == self.thread_id)
            and (self.kinds is None or record.kind in self.kinds)
            and (self.since is None or at >= to_micros(self.since))
            and (self.until is None or at < to_micros(self.until))
        )


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    """A JSON-ready dict of every field of ``record`` (datetimes as ISO 8601).

    Example:
        >>> r = MemoryRecord.new(user_id="ana", kind="fact", text="likes tea", id="f1")
        >>> record_from_dict(record_to_dict(r)) == r
        True
    """
    return {
        "id": record.id,
        "user_id": record.user_id,
        "thread_id": record.thread_id,
        "kind": record.kind,
        "text": record.text,
        "created_at": record.created_at.isoformat(),
        "last_accessed_at": (
            record.last_accessed_at.isoformat() if record.last_accessed_at else None
        ),
        "importance": record.importance,
        "sources": list(record.sources),
        "metadata": record.metadata,
    }


def record_from_dict(data: Mapping[str, Any]) -> MemoryRecord:
    """Inverse of :func:`record_to_dict`."""
    last = data.get("last_accessed_at")
    return MemoryRecord(
        id=data["id"],
        user_id=data["user_id"],
        thread_id=data.get("thread_id"),
        kind=data["kind"],
        text=data["text"],
        created_at=datetime.fromisoformat(data["created_at"]),
        last_accessed_at=datetime.fromisoformat(last) if last else None,
        importance=float(data.get("importance", 5.0)),
        sources=tuple(data.get("sources", ())),
        metadata=dict(data.get("metadata", {})),
    )


def _id_part(value: str) -> str:
    return value.replace("%", "%25").replace(":", "%3A")


def turn_record_id(user_id: str, thread_id: str, index: int) -> str:
    """The deterministic record id of a thread's turn (so archiving is idempotent).

    ``%`` and ``:`` inside the parts are escaped, so ids of different users or
    threads never collide.

    Example:
        >>> turn_record_id("ana", "t1", 3)
        'ana:t1:turn:3'
        >>> turn_record_id("a:b", "c", 1) != turn_record_id("a", "b:c", 1)
        True
    """
    return f"{_id_part(user_id)}:{_id_part(thread_id)}:turn:{index}"


def turn_speaker(turn: Turn) -> str | None:
    """Who opened the turn: the ``name`` of its first named human message, if any.

    Recall's speaker signal boosts the records of a person the query names
    ("what did Ben say about the budget?"), so it needs real names: an
    application that names its users (``HumanMessage(..., name="Ben")``, as
    in a group chat) gets it; unnamed turns carry no speaker.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> turn_speaker(Turn(0, (HumanMessage("hi", name="Ben"), AIMessage("hello"))))
        'Ben'
        >>> turn_speaker(Turn(1, (HumanMessage("hi"),))) is None
        True
    """
    for message in turn.messages:
        if isinstance(message, HumanMessage) and message.name:
            return str(message.name)
    return None


def turn_session(turn: Turn) -> str:
    """The turn's session for recall's session signal: the UTC day it started (``YYYY-MM-DD``).

    Recall groups records by thread and session, and lifts the turns of a
    conversation that matches the query well as a whole (a LoCoMo session is
    one dated conversation). A thread's turns of one day form one session.

    Example:
        >>> from datetime import datetime, timezone
        >>> turn_session(Turn(0, (), created_at=datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc)))
        '2026-03-01'
    """
    at = turn.created_at
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.astimezone(timezone.utc).date().isoformat()


def turn_record(turn: Turn, *, user_id: str, thread_id: str) -> MemoryRecord:
    """The archive record of an evicted turn (kind ``turn``, text = its transcript).

    Its metadata carries the turn index, tokens, whether it was clipped, the
    ``session`` (:func:`turn_session`) and, for a named speaker, the
    ``speaker`` (:func:`turn_speaker`), which recall's session and speaker
    signals use.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langchain_core.messages import AIMessage
        >>> at = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
        >>> t = Turn(4, (HumanMessage("I'm allergic to peanuts"), AIMessage("Noted.")),
        ...          created_at=at)
        >>> r = turn_record(t, user_id="ana", thread_id="t1")
        >>> r.id, r.kind, r.sources, r.text
        ('ana:t1:turn:4', 'turn', ('turn:4',), "user: I'm allergic to peanuts\\nassistant: Noted.")
        >>> r.metadata["session"], "speaker" in r.metadata
        ('2026-03-01', False)
        >>> named = Turn(5, (HumanMessage("I moved to Lisbon", name="Ana"),), created_at=at)
        >>> turn_record(named, user_id="ana", thread_id="t1").metadata["speaker"]
        'Ana'
    """
    metadata: dict[str, Any] = {
        "turn_index": turn.index,
        "tokens": turn.tokens,
        "clipped": turn.clipped,
        "session": turn_session(turn),
    }
    speaker = turn_speaker(turn)
    if speaker is not None:
        metadata["speaker"] = speaker
    return MemoryRecord(
        id=turn_record_id(user_id, thread_id, turn.index),
        user_id=user_id,
        thread_id=thread_id,
        kind="turn",
        text=turn.transcript(),
        created_at=turn.created_at,
        sources=(f"turn:{turn.index}",),
        metadata=metadata,
    )


# --------------------------------------------------------------------------- FTS text

# Han, kana, hangul: scripts written without spaces between words. They are
# indexed as overlapping character bigrams (plus the last character of each
# run as a unigram), the Lucene CJKAnalyzer scheme; other text goes to
# SQLite's unicode61 tokenizer (with the porter stemmer) unchanged.
_CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3005, 0x3005),
    (0x3040, 0x30FA),
    (0x30FC, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3FFFF),
)
_FTS_SCHEME = "porter-unicode61-rd2+cjk-bigram+owner-v2+user-shards"
_FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
_MAX_QUERY_TERMS = 64
_STOPWORD_TEXT = """
a about an and are as at be been but by did do does for from had has have he her him his how i if in
into is it its me my of on or our she so than that the their them then there these they this to
was we were what when where which who whom why will with you your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


_CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")


def _is_cjk(ch: str) -> bool:
    return _CJK_RUN.match(ch) is not None


def _is_separator(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PSZC"


def _runs(text: str) -> list[tuple[bool, str]]:
    """Split NFKC text into (is_cjk, run) pieces, dropping separators."""
    runs: list[tuple[bool, str]] = []
    current: list[str] = []
    current_cjk = False
    for ch in unicodedata.normalize("NFKC", text):
        if _is_separator(ch):
            if current:
                runs.append((current_cjk, "".join(current)))
                current = []
            continue
        cjk = _is_cjk(ch)
        if current and cjk != current_cjk:
            runs.append((current_cjk, "".join(current)))
            current = []
        current_cjk = cjk
        current.append(ch)
    if current:
        runs.append((current_cjk, "".join(current)))
    return runs


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def fts_document(text: str) -> str:
    """The text that goes into the FTS index for ``text``.

    Runs of CJK characters become overlapping bigrams plus their last
    character, so a two-character Chinese word (``花生``) is a token, and a
    prefix query on any single character finds it. Everything else is left to
    the unicode61 tokenizer (after NFKC normalisation).

    Example:
        >>> fts_document("我对花生过敏, peanuts!")
        '我对 对花 花生 生过 过敏 敏 , peanuts!'
    """

    def grams(match: re.Match[str]) -> str:
        run = match.group()
        return " " + " ".join([*_bigrams(run), run[-1]]) + " "

    return " ".join(_CJK_RUN.sub(grams, unicodedata.normalize("NFKC", text)).split())


def owner_token(user_id: str) -> str:
    """The FTS token that scopes a record to its user.

    Every indexed document carries it and every keyword query ANDs it in, so
    FTS5 intersects posting lists and ranks only the caller's records (other
    users of the same keyword shard, see :func:`fts_shard`, never match).

    Example:
        >>> owner_token("ana") == owner_token("ana") != owner_token("bob")
        True
    """
    return "zzowner" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:20]


def fts_shard(user_id: str, shards: int) -> int:
    """The keyword-index shard (``0 <= shard < shards``) that holds a user's records.

    FTS5's ``bm25()`` counts, for every query term, the documents of the
    whole table that contain it, and an ``owner AND terms`` query walks the
    terms' posting lists: both cost the *table's* document frequency, not the
    user's. Each user's records therefore live in one of ``shards`` FTS5
    tables chosen by a hash of the user id, so a keyword search reads about
    ``1 / shards`` of a multi-user archive. BM25 statistics (document count,
    average length, term document frequencies) are those of the shard; an
    archive with one user ranks exactly as a single table would.

    Example:
        >>> fts_shard("ana", 64) == fts_shard("ana", 64)
        True
        >>> all(0 <= fts_shard(f"user{i}", 8) < 8 for i in range(100))
        True
    """
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    digest = hashlib.sha1(user_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def fts_table(shard: int) -> str:
    """The name of keyword-index shard ``shard``'s FTS5 table.

    Example:
        >>> fts_table(7)
        'records_fts_s7'
    """
    return f"records_fts_s{int(shard)}"


def fts_terms(text: str) -> list[str]:
    """The quoted FTS5 terms of free user text (see :func:`fts_query`).

    Example:
        >>> fts_terms("Where is the café?")
        ['"café"']
    """
    terms: list[str] = []
    stop: list[str] = []
    for cjk, run in _runs(text):
        if cjk and len(run) > 1:
            terms.extend(f'"{g}"' for g in _bigrams(run))
        elif cjk:
            terms.append(f'"{run}"*')
        elif run.lower() in _STOPWORDS:
            stop.append(f'"{run.lower()}"')
        else:
            terms.append('"' + run.lower().replace('"', '""') + '"')
    return list(dict.fromkeys(terms or stop))[:_MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """A safe FTS5 ``MATCH`` expression for free user text (``None`` if it has no terms).

    Every term is double-quoted (so ``AND``, ``NEAR``, ``*``, ``:``, quotes and
    brackets in user text are just text) and the terms are ORed; bm25 ranks
    records matching more and rarer terms first. Common English stopwords are
    dropped unless nothing else remains. CJK runs become bigrams (a single
    character becomes a prefix query).

    Example:
        >>> fts_query('What did I say about "peanuts" AND NEAR(x)?')
        '"say" OR "peanuts" OR "near" OR "x"'
        >>> fts_query("花生过敏")
        '"花生" OR "生过" OR "过敏"'
        >>> fts_query("猫"), fts_query("?!")
        ('"猫"*', None)
    """
    chosen = fts_terms(text)
    return " OR ".join(chosen) if chosen else None


# --------------------------------------------------------------------------- vector index


class VectorKey(NamedTuple):
    """Identifies one stored vector: the SQLite row id and the record id."""

    rowid: int
    record_id: str


@dataclass(frozen=True)
class VectorEntry:
    """A record to index: its row id, the record, and its unit vector.

    ``vector`` is ``None`` for indexes that embed the text themselves
    (``VectorIndex.needs_vectors`` is False).
    """

    rowid: int
    record: MemoryRecord
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class DenseQuery:
    """A dense search request handed to a :class:`VectorIndex`.

    Attributes:
        filter: The records that may be returned.
        text: The query text, when the caller gave text.
        vector: The unit query vector, when known.
        candidates: Returns the row ids passing ``filter`` (a SQL query; only
            called by indexes that filter by id).
    """

    filter: RecordFilter
    text: str | None
    vector: np.ndarray | None
    candidates: Callable[[], np.ndarray]


class VectorIndex(Protocol):
    """The vector half of an archive (the SQLite half is shared).

    Row ids are SQLite's ``rid`` (``AUTOINCREMENT``: never reused, and a record
    whose text changes gets a new one), so "same id set" means "same vectors".

    Attributes:
        needs_vectors: The archive must embed texts and pass vectors.
        exact_filter: ``search`` returns only rows passing the filter (the
            best ``k`` of them); otherwise the archive over-fetches and filters.
        needs_outbox: Index writes can fail independently of SQLite (a remote
            store), so the archive keeps an outbox of pending adds/deletes and
            replays it.
    """

    needs_vectors: bool
    exact_filter: bool
    needs_outbox: bool

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """Index new entries (row ids not indexed yet)."""
        ...

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(rowid, score)`` pairs, best first, higher is better."""
        ...

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """Remove these vectors (unknown keys are ignored)."""
        ...

    def ids(self) -> set[int] | None:
        """The indexed row ids, or ``None`` if the index cannot list them."""
        ...

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """Why the index does not match the records (``None`` if it does)."""
        ...

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Replace the whole index with ``entries``."""
        ...

    def flush(self, *, force: bool = False) -> None:
        """Persist pending changes (``force``: now, whatever the save policy)."""
        ...

    def close(self) -> None:
        """Release resources (after a final flush)."""
        ...


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(vectors)):
        raise ValueError("the embeddings returned NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


class FaissIndex:
    """FAISS vector index: ``IndexIDMap2(IndexFlatIP)`` over unit float32 vectors.

    Inner product of unit vectors is cosine similarity. Ids are the SQLite row
    ids. The index is written in FAISS's own format (``faiss.serialize_index``;
    never pickled) to a temporary file that is fsynced and then
    ``os.replace``-d over ``path``, so the file on disk is always a complete
    index.

    Filtered search scores only the row ids that pass the SQL filter (user,
    thread, kinds, time): up to :attr:`direct_limit` of them directly from
    their stored vectors, more through
    ``SearchParameters(sel=IDSelectorBatch(ids))``. Both are exact: the true
    top ``k`` of the user's filtered records - no over-fetching, no "too few
    passed the filter" retries, and another user's vector can never be a
    result.

    A user with more than :attr:`ann_min_vectors` vectors gets an approximate
    index of their own (:class:`~langchain_tiered_memory.ivf.InvertedLists`,
    built in a background thread on their first search, or at once by
    :meth:`warm_user`): a search that filters by user only then scores about
    :attr:`ann_probe_rows` of their vectors, those in the k-means cells
    closest to the query. Until it is ready, and for searches with more
    filters, search stays exact.

    Args:
        path: The index file.
        dim: Expected dimension (``None`` until the first vectors arrive).
        save_every: Write the file after this many added vectors - or after
            ``ntotal // save_fraction`` of them, if that is more (deletes and
            :meth:`flush` ``(force=True)`` always write). Writing the file
            costs time in proportion to its size (about 5 s for a million
            384-dimension vectors), so a big index is written less often; a
            crash only leaves the file behind the records, and the next open
            adds the missing vectors from SQLite (no re-embedding).
    """

    needs_vectors = True
    exact_filter = True
    needs_outbox = False

    #: A big index is written after ``ntotal // save_fraction`` adds at least
    #: (see ``save_every``), so rewriting it costs at most a bounded share of
    #: the adds' time.
    save_fraction = 64

    #: A user with at least this many vectors gets an approximate index.
    ann_min_vectors = 50_000
    #: About this many of a big user's vectors are scored per search.
    ann_probe_rows = 16_384

    def __init__(self, path: Path, *, dim: int | None, save_every: int = 1) -> None:
        import faiss

        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self._faiss: Any = faiss
        self.path = path
        self.dim = dim
        self.save_every = save_every
        self._lock = threading.RLock()
        self._index: Any = None
        self._unsaved = 0
        self._load_error: str | None = None
        # per-user approximate indexes, and the builds under way (their log of
        # the adds and removes made meanwhile, replayed when the build ends)
        self._ivf: dict[str, InvertedLists] = {}
        self._ivf_jobs: dict[str, _IvfJob] = {}
        # file writes happen outside _lock, one at a time, never older over newer
        self._write_lock = threading.Lock()
        self._snapshots = 0  # states copied for writing
        self._written = 0  # the newest of them on disk
        if path.exists():
            self._load()

    def _load(self) -> None:
        try:
            index = self._faiss.read_index(str(self.path))
        except RuntimeError as exc:
            first = (str(exc).strip().splitlines() or ["unreadable"])[-1][:200]
            self._load_error = f"cannot read {self.path.name}: {first}"
            return
        if not isinstance(index, self._faiss.IndexIDMap2):
            self._load_error = f"{self.path.name} holds a {type(index).__name__}, not IndexIDMap2"
        elif self.dim is not None and index.d != self.dim:
            self._load_error = f"{self.path.name} has dim {index.d}, the archive {self.dim}"
        else:
            self._index = index
            self.dim = int(index.d)

    def _new(self, dim: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dim))

    @property
    def ntotal(self) -> int:
        """Number of indexed vectors."""
        with self._lock:
            return 0 if self._index is None else int(self._index.ntotal)

    def add(self, entries: Sequence[VectorEntry]) -> None:
        """Add entries (their vectors must be set)."""
        if not entries:
            return
        if any(e.vector is None for e in entries):
            raise ValueError("FaissIndex needs a vector for every entry")
        vectors = np.ascontiguousarray(
            np.stack([cast(np.ndarray, e.vector) for e in entries]), dtype=np.float32
        )
        ids = np.fromiter((e.rowid for e in entries), dtype=np.int64, count=len(entries))
        with self._lock:
            if self._index is None:
                self.dim = int(vectors.shape[1])
                self._index = self._new(self.dim)
            self._index.add_with_ids(vectors, ids)
            self._unsaved += len(entries)
            if self._ivf or self._ivf_jobs:
                self._ivf_add([e.record.user_id for e in entries], ids, vectors)

    def _ivf_add(self, users: Sequence[str], ids: np.ndarray, vectors: np.ndarray) -> None:
        """File new vectors in their users' approximate indexes (call under the lock)."""
        owners = np.asarray(users, dtype=object)
        for user in set(users) & (self._ivf.keys() | self._ivf_jobs.keys()):
            mask = owners == user
            if (job := self._ivf_jobs.get(user)) is not None:
                job.log.append((ids[mask], vectors[mask]))
            if (lists := self._ivf.get(user)) is not None:
                lists.add(ids[mask], vectors[mask])
                if len(lists) > 2 * lists.built_size and user not in self._ivf_jobs:
                    self._start_ivf_build(user, lists.ids())  # grown: re-cluster

    #: Up to this many candidates are scored directly from their stored vectors.
    direct_limit = 50_000
    #: FAISS's ``reconstruct_batch`` runs an OpenMP parallel loop above 1,000
    #: ids; on a busy machine waking its threads cost 8-12 ms per query
    #: (serially, 1,000 vectors take 0.1 ms), so vectors are fetched in
    #: chunks of at most this many.
    reconstruct_chunk = 1000

    def _reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids`` (row ids), one row each (call under the lock)."""
        step = self.reconstruct_chunk
        if ids.size <= step:
            return cast(np.ndarray, self._index.reconstruct_batch(ids))
        out = np.empty((ids.size, int(self._index.d)), dtype=np.float32)
        for start in range(0, ids.size, step):
            out[start : start + step] = self._index.reconstruct_batch(ids[start : start + step])
        return out

    def search(self, query: DenseQuery, k: int) -> list[tuple[int, float]]:
        """Top ``k`` among the query's candidate row ids (cosine, best first).

        Exact, except for a big user's search by user only once their
        approximate index is ready (see the class docstring).
        """
        if query.vector is None:
            raise ValueError("FaissIndex searches by vector; embed the query first")
        if self.ntotal == 0 or k <= 0:
            return []
        xq = np.ascontiguousarray(query.vector.reshape(1, -1), dtype=np.float32)
        user = query.filter.user_id
        if query.filter.user_only and user in self._ivf:
            approximate = self._search_ivf(user, xq[0], k)
            if approximate is not None:
                return approximate
        candidates = np.ascontiguousarray(query.candidates(), dtype=np.int64)
        if candidates.size == 0:
            return []
        if query.filter.user_only and candidates.size >= self.ann_min_vectors:
            with self._lock:
                if user not in self._ivf_jobs:
                    self._start_ivf_build(user, candidates)
        with self._lock:
            if self._index is None:
                return []
            if candidates.size <= self.direct_limit:
                # a user's own records: score just those vectors, not the whole index
                try:
                    vectors = self._reconstruct(candidates)
                except RuntimeError:  # an id missing from the index: fall back to a scan
                    vectors = None
                if vectors is not None:
                    scores = vectors @ xq[0]
                    top = top_k(scores, k)
                    return [(int(candidates[i]), float(scores[i])) for i in top]
            kk = int(min(k, candidates.size, self._index.ntotal))
            if candidates.size == self._index.ntotal:
                # one user owns every vector: a plain scan (the hits are SQL-checked anyway)
                scores, ids = self._index.search(xq, kk)
            else:
                selector = self._faiss.IDSelectorBatch(candidates)
                params = self._faiss.SearchParameters(sel=selector)
                scores, ids = self._index.search(xq, kk, params=params)
        return [(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def delete(self, keys: Sequence[VectorKey]) -> None:
        """Remove the vectors of these row ids."""
        if not keys:
            return
        ids = np.fromiter((key.rowid for key in keys), dtype=np.int64, count=len(keys))
        with self._lock:
            if self._index is not None:
                self._index.remove_ids(ids)
            self._unsaved += 1
            for lists in self._ivf.values():
                lists.remove(ids)
            for job in self._ivf_jobs.values():
                job.log.append((ids, None))

    # ---- per-user approximate indexes

    def _search_ivf(self, user: str, query: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """Top ``k`` of ``user``'s vectors in the cells nearest ``query`` (``None``: no index)."""
        with self._lock:
            lists = self._ivf.get(user)
            if lists is None or self._index is None:
                return None
            ids, scores = lists.search(query, k, self.ann_probe_rows)
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def _start_ivf_build(self, user: str, ids: np.ndarray) -> _IvfJob:
        """Build ``user``'s approximate index from ``ids`` in a thread (call under the lock)."""
        job = _IvfJob()
        self._ivf_jobs[user] = job
        job.thread = threading.Thread(
            target=self._build_ivf, args=(user, np.array(ids, dtype=np.int64), job), daemon=True
        )
        job.thread.start()
        return job

    def _build_ivf(self, user: str, ids: np.ndarray, job: _IvfJob) -> None:
        started = time.perf_counter()
        try:
            with self._lock:
                if self._index is None or self._ivf_jobs.get(user) is not job:
                    return
                vectors = self._reconstruct(ids)
            lists = InvertedLists.build(ids, vectors)
            with self._lock:
                if self._ivf_jobs.get(user) is not job:
                    return  # the index was rebuilt meanwhile
                for changed, new_vectors in job.log:
                    if new_vectors is None:
                        lists.remove(changed)
                    else:
                        lists.add(changed, new_vectors)
                self._ivf[user] = lists
            logger.info(
                "approximate vector index for a user with %d vectors built in %.1f s (%d cells)",
                len(lists),
                time.perf_counter() - started,
                lists.cells,
            )
        except Exception as exc:  # noqa: BLE001 - searches stay exact; the next big one retries
            logger.warning("building a user's approximate vector index failed: %r", exc)
        finally:
            with self._lock:
                if self._ivf_jobs.get(user) is job:
                    del self._ivf_jobs[user]

    def warm_user(self, user: str, candidates: Callable[[], np.ndarray]) -> bool:
        """Build ``user``'s approximate index now if they are big enough; True if they have one.

        ``candidates`` returns the user's row ids (called only when needed).
        """
        with self._lock:
            job = self._ivf_jobs.get(user)
            if job is None and user not in self._ivf:
                ids = np.asarray(candidates(), dtype=np.int64)
                if ids.size >= self.ann_min_vectors:
                    job = self._start_ivf_build(user, ids)
        if job is not None and job.thread is not None:
            job.thread.join()
        return user in self._ivf

    def _drop_ivf(self) -> None:
        """Forget every approximate index and build (call under the lock)."""
        self._ivf.clear()
        self._ivf_jobs.clear()

    def ids(self) -> set[int]:
        """The indexed row ids."""
        with self._lock:
            if self._index is None:
                return set()
            return set(self._faiss.vector_to_array(self._index.id_map).tolist())

    def check(self, expected: Mapping[int, str], sample: Sequence[VectorEntry]) -> str | None:
        """Compare with the records: readable file, same count, same id set, sample vectors."""
        if self._load_error is not None:
            return self._load_error
        with self._lock:
            if self._index is None:
                return f"{self.path.name} is missing" if expected else None
            if self._index.ntotal != len(expected):
                return f"{self._index.ntotal} vectors for {len(expected)} records"
            indexed = self.ids()
            if indexed != set(expected):
                return f"{len(indexed.symmetric_difference(expected))} ids differ"
            for entry in sample:
                if entry.vector is None:
                    return f"record {entry.record.id!r} has no stored vector"
                stored = self._index.reconstruct(entry.rowid)
                if not np.allclose(stored, entry.vector, atol=1e-5):
                    return f"the vector of record {entry.record.id!r} differs"
        return None

    def rebuild(self, entries: Sequence[VectorEntry]) -> None:
        """Replace the index with ``entries``."""
        with self._lock:
            self._drop_ivf()
            self._index = None
            self._load_error = None
            if entries:
                self.add(entries)
            elif self.dim is not None:
                self._index = self._new(self.dim)
            self._unsaved += 1

    def flush(self, *, force: bool = False) -> None:
        """Atomically write the index file if there are unsaved changes.

        The index is copied under the lock (``faiss.serialize_index``, at
        memory speed) and the copy is written to disk outside it, so searches
        and adds wait for the copy but not for the disk: about 0.5 s instead
        of 5 s for a million 384-dimension vectors. When this returns, the
        file holds this state or a newer one.
        """
        with self._lock:
            due = max(self.save_every, self.ntotal // self.save_fraction)
            if self._unsaved == 0 or (not force and self._unsaved < due):
                return
            pending, self._unsaved = self._unsaved, 0
            self._snapshots += 1
            snapshot = self._snapshots
            data = None if self._index is None else self._faiss.serialize_index(self._index)
        try:
            with self._write_lock:
                if snapshot < self._written:
                    return  # a newer state is on disk already
                if data is None:
                    if self.path.exists():
                        os.remove(self.path)
                else:
                    self._write(data)
                self._written = snapshot
        except BaseException:
            with self._lock:
                self._unsaved += pending  # written by a later flush
            raise

    def _write(self, data: np.ndarray) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data.data)  # serialize_index: one contiguous uint8 array
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if tmp.exists():
                tmp.unlink()
            raise
        try:
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError:  # pragma: no cover - platforms without directory fds
            return
        try:
            os.fsync(dir_fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        """Write pending changes (after any approximate-index build has ended)."""
        with self._lock:
            threads = [job.thread for job in self._ivf_jobs.values() if job.thread is not None]
        for thread in threads:
            thread.join()
        self.flush(force=True)


@dataclass
class _IvfJob:
    """A per-user approximate-index build under way.

    ``log`` holds the adds ``(ids, vectors)`` and removes ``(ids, None)``
    made while it runs, replayed in order when it ends.
    """

    log: list[tuple[np.ndarray, np.ndarray | None]] = field(default_factory=list)
    thread: threading.Thread | None = None


# --------------------------------------------------------------------------- archive

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    thread_id TEXT,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_accessed_at INTEGER,
    importance REAL NOT NULL,
    sources TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS records_user_thread
    ON records (user_id, thread_id, kind, created_at);
CREATE INDEX IF NOT EXISTS records_user_created ON records (user_id, created_at);
CREATE TABLE IF NOT EXISTS vector_outbox (
    rid INTEGER PRIMARY KEY,
    record_id TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('add', 'delete'))
)
"""
_FTS_SHARD_NAME = re.compile(r"records_fts_s(\d+)")

# Statements that look records up by id also check their user with ``+user_id``:
# the unary plus keeps SQLite's planner off the (user_id, ...) indexes, which it
# otherwise picks and then walks every record of the user - a second per
# statement for a user with a million records - instead of the id index.

_COLS = (
    "rid, id, user_id, thread_id, kind, text, created_at, last_accessed_at, importance, "
    "sources, metadata"
)
_R_COLS = ", ".join(f"r.{c.strip()}" for c in _COLS.split(","))


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _row_record(row: Sequence[Any]) -> MemoryRecord:
    # recall hydrates a few hundred rows per query: positional arguments (in field
    # order, checked by the round-trip tests) and no JSON parser for empty values
    sources, metadata = row[9], row[10]
    return MemoryRecord(
        row[1],  # id
        row[2],  # user_id
        row[3],  # thread_id
        row[4],  # kind
        row[5],  # text
        from_micros(row[6]),  # created_at
        from_micros(row[7]) if row[7] is not None else None,  # last_accessed_at
        float(row[8]),  # importance
        () if sources == "[]" else tuple(json.loads(sources)),
        {} if metadata == "{}" else json.loads(metadata),
    )


def _validate(record: MemoryRecord) -> tuple[str, str]:
    """Check a record; return its JSON ``sources`` and ``metadata``."""
    if not isinstance(record, MemoryRecord):
        raise TypeError(f"expected MemoryRecord, got {type(record).__name__}")
    if not isinstance(record.id, str) or not record.id:
        raise ValueError(f"record id must be a non-empty string, got {record.id!r}")
    _check_user(record.user_id)
    if record.kind not in RECORD_KINDS:
        raise ValueError(
            f"record {record.id!r} has unknown kind {record.kind!r}; use one of "
            f"{sorted(RECORD_KINDS)}"
        )
    if not isinstance(record.text, str):
        raise ValueError(f"record {record.id!r} text must be a string")
    if not math.isfinite(record.importance):
        raise ValueError(f"record {record.id!r} importance must be finite")
    try:
        sources = json.dumps([str(s) for s in record.sources], ensure_ascii=False)
        metadata = json.dumps(record.metadata, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record {record.id!r} metadata must be JSON-serialisable: {exc}") from exc
    return sources, metadata


_ArchiveT = TypeVar("_ArchiveT", bound="BaseSQLiteArchive")


class BaseSQLiteArchive:
    """The SQLite half of an archive: records, FTS5 keyword index, audit log, forgetting.

    Subclasses supply the vector half as a :class:`VectorIndex`
    (:meth:`_make_index`) and, when it ``needs_vectors``, the embedding
    (:meth:`_embed_documents`, :meth:`embed_query`).

    Crash safety: every change commits to SQLite first (records, FTS rows,
    stored vectors, audit event, outbox entries in one transaction), then the
    vector index is updated. SQLite is the source of truth; on open the index
    is checked against it and rebuilt from it when they differ.

    Keyword search uses FTS5 with ``porter unicode61 remove_diacritics 2`` and
    CJK text indexed as character bigrams (see :func:`fts_document`). The
    ``trigram`` tokenizer was rejected: it cannot match terms shorter than
    three characters, i.e. most Chinese words (``花生``) and short numbers and
    names (``42``, ``NY``) - exactly what keyword search is for.

    Search cost follows the user's records, not the archive's: the keyword
    index is split into :attr:`fts_shards` FTS5 tables by user
    (:func:`fts_shard`), dense search scores only the user's vectors, and
    only the returned hits are read back from SQLite (by row id). Recall
    marks what it returns as accessed with :meth:`note_access`, which writes
    in the background instead of on the query's path.
    """

    index: VectorIndex
    overfetch: int = 4
    #: Keyword-index shards of a new archive (see :func:`fts_shard`); an
    #: existing archive keeps the number it was built with. Each shard that
    #: holds records is one FTS5 table (five SQLite tables), parsed by every
    #: new connection, so more shards make connections slower to open.
    fts_shards: int = 128
    #: Access times noted by :meth:`note_access` are written by a background
    #: thread at most about this many seconds later.
    access_flush_seconds: float = 1.0
    #: Keyword search ranks a user's matches exactly (FTS5 ``bm25``) up to this
    #: many records; a bigger user's search is bounded (see :meth:`keyword_search`).
    keyword_exact_limit: int = 5_000
    #: In a bounded keyword search, at most this many matches are read per term.
    keyword_term_cap: int = 500

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        dim: int | None = None,
        embeddings_id: str | None = None,
    ) -> None:
        self.path = validate_db_path(path)
        self._db = SQLiteDatabase(self.path)
        self._outbox_pending = False
        self._index_broken = False
        self._fts_count = 1
        self._fts_known: set[int] = set()  # shard tables known to be committed
        self._fts_created: set[int] = set()  # shard tables this process created
        self._user_sizes: dict[str, int] = {}  # records per user, counted once, kept current
        # access times noted but not written yet: record id -> (user id, micros)
        self._accessed: dict[str, tuple[str, int]] = {}
        self._flushing: dict[str, tuple[str, int]] = {}
        self._access_lock = threading.Lock()  # guards the two dicts and the thread
        self._flush_lock = threading.Lock()  # one flush at a time
        self._access_stop = threading.Event()
        self._access_thread: threading.Thread | None = None
        try:
            self.audit = AuditLog(self._db)
            self._create_schema()
            self._dim = self._init_dim(dim)
            self._check_embeddings_id(embeddings_id)
            self.index = self._make_index()
            self._check_fts()
            self._outbox_pending = bool(self._db.query("SELECT 1 FROM vector_outbox LIMIT 1"))
            self._open_index()
        except BaseException:
            self._db.close()
            raise

    # ---- to override

    def _make_index(self) -> VectorIndex:
        raise NotImplementedError

    def _embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} does not embed documents")

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector for ``text``."""
        raise NotImplementedError(f"{type(self).__name__} cannot embed queries")

    # ---- schema and meta

    def _create_schema(self) -> None:
        with self._db.write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(_SCHEMA_VERSION),))
            elif int(row[0]) > _SCHEMA_VERSION:
                raise ValueError(
                    f"{self.path} was written by a newer version (schema {row[0]}); upgrade "
                    "langchain-tiered-memory"
                )

    def _meta(self, key: str) -> str | None:
        rows = self._db.query("SELECT value FROM meta WHERE key=?", [key])
        return rows[0][0] if rows else None

    @staticmethod
    def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _init_dim(self, dim: int | None) -> int | None:
        stored = self._meta("dim")
        if dim is not None and dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if stored is not None:
            if dim is not None and dim != int(stored):
                raise self._dim_error(int(stored), dim)
            return int(stored)
        if dim is not None:
            with self._db.write() as conn:
                self._set_meta(conn, "dim", str(dim))
        return dim

    def _dim_error(self, built: int, got: int) -> ValueError:
        return ValueError(
            f"this archive was built with dim {built}, got {got} — use the same embeddings "
            f"or a new path ({self.path})"
        )

    def _check_embeddings_id(self, embeddings_id: str | None) -> None:
        if embeddings_id is None:
            return
        stored = self._meta("embeddings")
        if stored is None:
            with self._db.write() as conn:
                self._set_meta(conn, "embeddings", embeddings_id)
        elif stored != embeddings_id:
            logger.warning(
                "%s was built with embeddings %s, now opened with %s; dense search compares "
                "vectors of different models unless you call rebuild_index()",
                self.path,
                stored,
                embeddings_id,
            )

    def _check_fts(self) -> None:
        stored = self._meta("fts_shards")
        if self._meta("fts_scheme") == _FTS_SCHEME and stored is not None:
            self._fts_count = int(stored)
            with self._db.read() as conn:
                self._fts_known.update(self._fts_tables(conn))
            return
        shards = int(self.fts_shards)
        if shards < 1:
            raise ValueError(f"fts_shards must be >= 1, got {shards}")
        with self._db.write() as conn:
            conn.execute("DROP TABLE IF EXISTS records_fts")  # the single table of older schemes
            for shard in self._fts_tables(conn):
                conn.execute(f"DROP TABLE {fts_table(shard)}")
            self._fts_count = shards
            rows = conn.execute("SELECT rid, text, user_id FROM records").fetchall()
            by_shard: dict[int, list[tuple[int, str, str]]] = {}
            for rid, text, user in rows:
                by_shard.setdefault(fts_shard(user, shards), []).append(
                    (rid, fts_document(text), owner_token(user))
                )
            for shard, items in sorted(by_shard.items()):
                self._ensure_fts(conn, shard)
                conn.executemany(
                    f"INSERT INTO {fts_table(shard)} (rowid, text, owner) VALUES (?, ?, ?)", items
                )
            self._set_meta(conn, "fts_shards", str(shards))
            self._set_meta(conn, "fts_scheme", _FTS_SCHEME)
        self._fts_known.update(by_shard)  # committed now
        if rows:
            logger.warning("rebuilt the keyword index of %s (%d records)", self.path, len(rows))

    @staticmethod
    def _fts_tables(conn: sqlite3.Connection) -> list[int]:
        """The keyword shards that have a table (as seen by ``conn``)."""
        names = conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'records_fts_s%'"
        ).fetchall()
        return sorted(int(m.group(1)) for (n,) in names if (m := _FTS_SHARD_NAME.fullmatch(n)))

    def _ensure_fts(self, conn: sqlite3.Connection, shard: int) -> None:
        """Create shard ``shard``'s FTS5 table if needed (inside ``conn``'s write transaction).

        Shard tables are created on first use, so a small archive holds only
        the shards its users hash to. A table is marked known once it was
        found committed; one created by the current transaction is not (a
        rollback would take it away again).
        """
        if shard in self._fts_known:
            return
        name = fts_table(shard)
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        if found is None:
            conn.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5(text, owner, content='', "
                f"tokenize='{_FTS_TOKENIZE}')"
            )
            self._fts_created.add(shard)
        elif shard not in self._fts_created:
            self._fts_known.add(shard)

    def _fts_ready(self, shard: int) -> bool:
        """Whether shard ``shard``'s table exists (committed) - else nobody there has records."""
        if shard in self._fts_known:
            return True
        found = self._db.query(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [fts_table(shard)]
        )
        if found and shard not in self._fts_created:  # made by another process: committed
            self._fts_known.add(shard)
        return bool(found)

    def _user_fts(self, user_id: str) -> str:
        """The FTS5 table of ``user_id``'s shard."""
        return fts_table(fts_shard(user_id, self._fts_count))

    # ---- vector index consistency

    def _entries(self, where: str = "1", params: Sequence[Any] = ()) -> list[VectorEntry]:
        rows = self._db.query(
            f"SELECT {_COLS}, vector FROM records WHERE {where} ORDER BY rid", params
        )
        dim = self._dim
        entries = []
        for row in rows:
            blob = row[11]
            vector = None
            if blob is not None and (dim is None or len(blob) == 4 * dim):
                vector = np.frombuffer(blob, dtype=np.float32)
            entries.append(VectorEntry(int(row[0]), _row_record(row), vector))
        return entries

    def _open_index(self) -> None:
        if self._outbox_pending:
            self._replay_outbox()
        expected = dict(self._db.query("SELECT rid, id FROM records"))
        sample: list[VectorEntry] = []
        if expected and self.index.needs_vectors:
            rids = sorted(expected)
            picks = set(rids[:4] + rids[-4:] + random.sample(rids, min(8, len(rids))))
            sample = self._entries(f"rid IN ({_marks(len(picks))})", sorted(picks))
        self._catch_up_index(expected)
        reason = self.index.check(expected, sample)
        if reason is not None:
            logger.warning(
                "vector index of %s does not match its records (%s); rebuilding it from the "
                "records",
                self.path,
                reason,
            )
            self.rebuild_index()

    def _catch_up_index(self, expected: Mapping[int, str]) -> None:
        """Bring an index file that lags the records up to date without a full rebuild.

        The FAISS file is written every so many adds (see
        :attr:`FaissIndex.save_every`), so after a crash it misses the newest
        records (and may still hold records deleted since). Their vectors are
        in SQLite: the missing ones are added and the extra ones removed. An
        index that differs more than that (unreadable, most ids unknown) is
        left to :meth:`rebuild_index`, and so is one whose sampled vectors
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
        for chunk in _chunks(missing):
            entries.extend(self._entries(f"rid IN ({_marks(len(chunk))})", chunk))
        if any(e.vector is None for e in entries):
            return  # some must be embedded again: a rebuild does that
        self.index.delete([VectorKey(rid, "") for rid in extra])
        self.index.add(entries)
        self.index.flush(force=True)
        logger.info(
            "vector index of %s caught up with its records: %d added, %d removed",
            self.path,
            len(entries),
            len(extra),
        )

    def rebuild_index(self) -> None:
        """Rebuild the vector index from the records in SQLite.

        Vectors stored in SQLite are reused; records without one (or with a
        vector of the wrong size) are embedded again.
        """
        with self._db.lock:
            entries = self._entries()
            if self.index.needs_vectors:
                missing = [i for i, e in enumerate(entries) if e.vector is None]
                if missing:
                    vectors = self._embed_documents([entries[i].record.text for i in missing])
                    with self._db.write() as conn:
                        for i, vector in zip(missing, vectors, strict=True):
                            conn.execute(
                                "UPDATE records SET vector=? WHERE rid=?",
                                (vector.tobytes(), entries[i].rowid),
                            )
                            entries[i] = VectorEntry(entries[i].rowid, entries[i].record, vector)
                        if self._dim is None:
                            self._set_meta(conn, "dim", str(vectors.shape[1]))
                    self._dim = self._dim or int(vectors.shape[1])
            if self.index.needs_outbox:
                stale = self._db.query("SELECT rid, record_id FROM vector_outbox WHERE op='delete'")
                self.index.delete([VectorKey(int(r), str(i)) for r, i in stale])
            self.index.rebuild(entries)
            self.index.flush(force=True)
            if self.index.needs_outbox:
                with self._db.write() as conn:
                    conn.execute("DELETE FROM vector_outbox")
                self._outbox_pending = False
            self._index_broken = False
            logger.info("rebuilt the vector index of %s (%d records)", self.path, len(entries))

    def _replay_outbox(self) -> None:
        """Apply index writes that SQLite committed but the index did not confirm."""
        with self._db.lock:
            rows = self._db.query("SELECT rid, record_id, op FROM vector_outbox ORDER BY rid")
            deletes = [VectorKey(int(r), str(i)) for r, i, op in rows if op == "delete"]
            adds = [int(r) for r, _i, op in rows if op == "add"]
            if deletes:
                self.index.delete(deletes)
            for chunk in _chunks(adds):
                entries = self._entries(f"rid IN ({_marks(len(chunk))})", chunk)
                self.index.add(entries)
            self.index.flush()
            with self._db.write() as conn:
                conn.execute("DELETE FROM vector_outbox")
            self._outbox_pending = False
            if rows:
                logger.info("replayed %d pending vector index writes", len(rows))

    def _before_write(self) -> None:
        if self._index_broken:
            self.rebuild_index()
        elif self._outbox_pending:
            try:
                self._replay_outbox()
            except Exception as exc:
                logger.error(
                    "replaying the vector outbox failed (%r); will retry", exc, exc_info=True
                )

    def _apply_to_index(
        self, rowids: Sequence[int], users: Iterable[str], action: Callable[[], None]
    ) -> None:
        """Run an index update after a SQLite commit; keep the two consistent on failure."""
        try:
            action()
        except Exception as exc:
            if self.index.needs_outbox:
                self._outbox_pending = True
            else:
                self._index_broken = True
            logger.error("vector index update failed after commit (%r); will repair", exc)
            try:
                with self._db.write() as conn:
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
            with self._db.write() as conn:
                for chunk in _chunks(list(rowids)):
                    conn.execute(
                        f"DELETE FROM vector_outbox WHERE rid IN ({_marks(len(chunk))})", chunk
                    )

    # ---- writing

    def _owners(self, ids: Sequence[str], conn: sqlite3.Connection | None = None) -> dict[str, str]:
        owners: dict[str, str] = {}
        for chunk in _chunks(list(ids)):
            sql = f"SELECT id, user_id FROM records WHERE id IN ({_marks(len(chunk))})"
            rows = conn.execute(sql, chunk).fetchall() if conn else self._db.query(sql, chunk)
            owners.update(rows)
        return owners

    @staticmethod
    def _check_owners(records: Sequence[MemoryRecord], owners: Mapping[str, str]) -> None:
        for record in records:
            owner = owners.get(record.id)
            if owner is not None and owner != record.user_id:
                raise ValueError(
                    f"record id {record.id!r} is already used by another user's record; record "
                    "ids must be unique across the archive"
                )

    def _insert(
        self,
        conn: sqlite3.Connection,
        record: MemoryRecord,
        encoded: tuple[str, str],
        vector: np.ndarray | None,
    ) -> int:
        cur = conn.execute(
            "INSERT INTO records (id, user_id, thread_id, kind, text, created_at, "
            "last_accessed_at, importance, sources, metadata, vector) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?)",
            (
                record.id,
                record.user_id,
                record.thread_id,
                record.kind,
                record.text,
                to_micros(record.created_at),
                to_micros(record.last_accessed_at) if record.last_accessed_at else None,
                float(record.importance),
                encoded[0],
                encoded[1],
                vector.tobytes() if vector is not None else None,
            ),
        )
        rid = int(cur.lastrowid or 0)
        shard = fts_shard(record.user_id, self._fts_count)
        self._ensure_fts(conn, shard)
        conn.execute(
            f"INSERT INTO {fts_table(shard)} (rowid, text, owner) VALUES (?, ?, ?)",
            (rid, fts_document(record.text), owner_token(record.user_id)),
        )
        if self.index.needs_outbox:
            conn.execute(
                "INSERT OR REPLACE INTO vector_outbox (rid, record_id, op) VALUES (?, ?, 'add')",
                (rid, record.id),
            )
        return rid

    def _remove_rows(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> set[str]:
        """Delete ``(rid, id, text)`` rows with their FTS entries (inside ``conn``'s tx).

        Returns the FTS tables they were removed from.
        """
        owners: dict[int, str] = {}
        for chunk in _chunks([r[0] for r in rows]):
            owners.update(
                conn.execute(
                    f"SELECT rid, user_id FROM records WHERE rid IN ({_marks(len(chunk))})", chunk
                ).fetchall()
            )
        by_table: dict[str, list[tuple[int, str, str]]] = {}
        for rid, _id, text in rows:
            owner = owners[rid]
            by_table.setdefault(self._user_fts(owner), []).append(
                (rid, fts_document(text), owner_token(owner))
            )
        for table, items in by_table.items():
            conn.executemany(
                f"INSERT INTO {table} ({table}, rowid, text, owner) VALUES ('delete', ?, ?, ?)",
                items,
            )
        for chunk in _chunks([r[0] for r in rows]):
            conn.execute(f"DELETE FROM records WHERE rid IN ({_marks(len(chunk))})", chunk)
        if self.index.needs_outbox:
            conn.executemany(
                "INSERT OR REPLACE INTO vector_outbox (rid, record_id, op) VALUES (?, ?, 'delete')",
                ((rid, rec_id) for rid, rec_id, _t in rows),
            )
        return set(by_table)

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Store records (idempotent by id) and index them for both searches.

        Texts of new records are embedded in one ``embed_documents`` batch;
        records, FTS rows, vectors and a ``write`` audit event commit in one
        SQLite transaction, then the vector index is updated. A record whose id
        is already stored is skipped (use :meth:`update_record` to change it).

        Raises:
            ValueError: for an invalid record, an id owned by another user, or
                embeddings of the wrong dimension.
        """
        self._add(records, page_out=False)

    def _add(self, records: Sequence[MemoryRecord], *, page_out: bool) -> list[MemoryRecord]:
        batch: dict[str, tuple[MemoryRecord, tuple[str, str]]] = {}
        for record in records:
            encoded = _validate(record)
            batch.setdefault(record.id, (record, encoded))
        if not batch:
            return []
        self._before_write()
        owners = self._owners(list(batch))
        self._check_owners([r for r, _ in batch.values()], owners)
        new = [item for key, item in batch.items() if key not in owners]
        if not new:
            return []
        vectors = None
        if self.index.needs_vectors:
            vectors = self._embed_documents([r.text for r, _ in new])
        with self._db.lock:
            with self._db.write() as conn:
                owners = self._owners([r.id for r, _ in new], conn)
                self._check_owners([r for r, _ in new], owners)
                if vectors is not None and self._dim is None:
                    self._set_meta(conn, "dim", str(vectors.shape[1]))
                entries = []
                for i, (record, encoded) in enumerate(new):
                    if record.id in owners:
                        continue
                    vector = vectors[i] if vectors is not None else None
                    entries.append(
                        VectorEntry(self._insert(conn, record, encoded, vector), record, vector)
                    )
                self._audit_added(conn, [e.record for e in entries], page_out=page_out)
            if vectors is not None and self._dim is None:
                self._dim = int(vectors.shape[1])
            for entry in entries:
                if entry.record.user_id in self._user_sizes:
                    self._user_sizes[entry.record.user_id] += 1

            def update() -> None:
                self.index.add(entries)
                self.index.flush()

            self._apply_to_index(
                [e.rowid for e in entries], [e.record.user_id for e in entries], update
            )
        return [e.record for e in entries]

    def _audit_added(
        self, conn: sqlite3.Connection, records: Sequence[MemoryRecord], *, page_out: bool
    ) -> None:
        groups: dict[tuple[str, str | None], list[MemoryRecord]] = {}
        for record in records:
            groups.setdefault(record.namespace, []).append(record)
        for (user_id, thread_id), group in groups.items():
            if page_out:
                payload: dict[str, Any] = {
                    "turns": [int(r.metadata.get("turn_index", -1)) for r in group],
                    "ids": [r.id for r in group],
                }
                self.audit.insert(
                    conn, "page_out", user_id=user_id, thread_id=thread_id, payload=payload
                )
            else:
                kinds: dict[str, int] = {}
                for r in group:
                    kinds[r.kind] = kinds.get(r.kind, 0) + 1
                payload = {"op": "add", "ids": [r.id for r in group], "kinds": kinds}
                self.audit.insert(
                    conn, "write", user_id=user_id, thread_id=thread_id, payload=payload
                )

    def archive_turns(
        self, turns: Sequence[Turn], *, user_id: str, thread_id: str
    ) -> list[MemoryRecord]:
        """Archive evicted turns as ``turn`` records; returns the newly stored ones.

        Idempotent: record ids are :func:`turn_record_id` ``(user_id,
        thread_id, turn.index)``, so a retried compression stores nothing twice.
        Writes one ``page_out`` audit event with the new turn indices.
        """
        _check_user(user_id)
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
        records = [turn_record(t, user_id=user_id, thread_id=thread_id) for t in turns]
        return self._add(records, page_out=True)

    def hook(self, user_id: str, thread_id: str) -> ArchiveTurnHook:
        """The buffer's archive hook for one user's thread.

        Pass it as ``archive=`` to :func:`~langchain_tiered_memory.buffer.compress`
        (or to ``TieredMemory``); see the :class:`SQLiteArchive` example.
        """
        _check_user(user_id)
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
        return ArchiveTurnHook(self, user_id, thread_id)

    def update_record(self, record: MemoryRecord) -> MemoryRecord:
        """Replace a stored record (same id, same user) with ``record``.

        When the text changes, the record is re-embedded and gets a new row id
        (so a stale vector index is always detectable on open); other fields
        are updated in place. Writes a ``write`` audit event.

        Raises:
            KeyError: if no record has this id.
            ValueError: if the stored record belongs to another user.
        """
        encoded = _validate(record)
        self._before_write()
        current = self.get([record.id])
        if not current:
            raise KeyError(f"no record with id {record.id!r}; add() it first")
        if current[0].user_id != record.user_id:
            raise ValueError(f"record {record.id!r} belongs to another user")
        changed = current[0].text != record.text
        vector = None
        if changed and self.index.needs_vectors:
            vector = self._embed_documents([record.text])[0]
        with self._db.lock:
            with self._db.write() as conn:
                row = conn.execute(
                    "SELECT rid, id, text FROM records WHERE id=?", (record.id,)
                ).fetchone()
                if row is None:
                    raise KeyError(f"record {record.id!r} was deleted meanwhile")
                changed = row[2] != record.text
                if changed and vector is None and self.index.needs_vectors:
                    vector = self._embed_documents([record.text])[0]  # changed meanwhile
                if changed:
                    self._remove_rows(conn, [row])
                    rid = self._insert(conn, record, encoded, vector)
                else:
                    rid = int(row[0])
                    conn.execute(
                        "UPDATE records SET thread_id=?, kind=?, created_at=?, "
                        "last_accessed_at=?, importance=?, sources=?, metadata=? WHERE rid=?",
                        (
                            record.thread_id,
                            record.kind,
                            to_micros(record.created_at),
                            to_micros(record.last_accessed_at) if record.last_accessed_at else None,
                            float(record.importance),
                            encoded[0],
                            encoded[1],
                            rid,
                        ),
                    )
                self.audit.insert(
                    conn,
                    "write",
                    user_id=record.user_id,
                    thread_id=record.thread_id,
                    payload={"op": "update", "ids": [record.id], "text_changed": changed},
                )
            if changed:
                old = VectorKey(int(row[0]), record.id)

                def update() -> None:
                    self.index.delete([old])
                    self.index.add([VectorEntry(rid, record, vector)])
                    self.index.flush()

                self._apply_to_index([old.rowid, rid], [record.user_id], update)
        return record

    def touch(
        self, ids: Sequence[str], at: datetime | None = None, *, user_id: str | None = None
    ) -> int:
        """Set ``last_accessed_at`` (default: now) on these records; returns how many.

        Written before returning; see :meth:`note_access` for the batched form
        recall uses.
        """
        when = to_micros(at or datetime.now(timezone.utc))
        ids = list(dict.fromkeys(ids))
        done = 0
        with self._flush_lock, self._access_lock:
            for record_id in ids:  # this later, explicit time wins over a noted one
                self._accessed.pop(record_id, None)
        with self._db.write() as conn:
            for chunk in _chunks(ids):
                sql = f"UPDATE records SET last_accessed_at=? WHERE id IN ({_marks(len(chunk))})"
                params: list[Any] = [when, *chunk]
                if user_id is not None:
                    sql += " AND +user_id=?"  # +: see the note above _COLS
                    params.append(user_id)
                done += conn.execute(sql, params).rowcount
        return done

    def note_access(self, ids: Sequence[str], at: datetime | None = None, *, user_id: str) -> None:
        """Mark ``user_id``'s records as accessed at ``at`` (default: now), without waiting.

        What recall calls for the records it returns. Unlike :meth:`touch`, the
        caller does not wait for a write transaction: the access times are
        kept in memory, written in one batch by a background thread within
        about :attr:`access_flush_seconds`, and applied meanwhile to every
        record this archive returns (searches, :meth:`get`, :meth:`records`).
        Access times only drive recall's recency signal; a crash loses at
        most the last second or so of them, never a record. Ids of other users
        are ignored when written.

        Raises:
            ValueError: for an empty ``user_id`` or a closed archive.
        """
        _check_user(user_id)
        when = to_micros(at or datetime.now(timezone.utc))
        with self._access_lock:
            if self.closed or self._access_stop.is_set():
                raise ValueError(f"the archive {self.path} is closed")
            for record_id in ids:
                self._accessed[record_id] = (user_id, when)
            if self._access_thread is None or not self._access_thread.is_alive():  # or forked
                self._access_thread = threading.Thread(
                    target=self._access_loop, name=f"archive-access-{self.path.name}", daemon=True
                )
                self._access_thread.start()

    def _access_loop(self) -> None:
        while not self._access_stop.wait(self.access_flush_seconds):
            try:
                self.flush_access()
            except Exception as exc:  # noqa: BLE001 - kept and retried on the next round
                logger.warning("writing access times failed (%r); will retry", exc)

    def flush_access(self) -> int:
        """Write the access times noted by :meth:`note_access` now; returns how many rows.

        On failure the noted times are kept for the next attempt.
        """
        with self._flush_lock:
            with self._access_lock:
                pending, self._accessed = self._accessed, {}
                self._flushing = pending
            if not pending:
                return 0
            groups: dict[tuple[str, int], list[str]] = {}
            for record_id, (user, when) in pending.items():
                groups.setdefault((user, when), []).append(record_id)
            done = 0
            try:
                with self._db.write() as conn:
                    for (user, when), ids in groups.items():
                        for chunk in _chunks(ids):
                            done += conn.execute(
                                f"UPDATE records SET last_accessed_at=? WHERE +user_id=? AND id "
                                f"IN ({_marks(len(chunk))})",
                                [when, user, *chunk],
                            ).rowcount
            except BaseException:
                with self._access_lock:  # keep them, unless noted again meanwhile
                    for record_id, noted in pending.items():
                        self._accessed.setdefault(record_id, noted)
                raise
            finally:
                with self._access_lock:
                    self._flushing = {}
            return done

    def _forget_access(self, user_id: str, ids: Iterable[str] | None = None) -> None:
        """Drop noted access times of forgotten records (all of the user's if ``ids`` is None)."""
        with self._flush_lock, self._access_lock:
            if ids is None:
                self._accessed = {k: v for k, v in self._accessed.items() if v[0] != user_id}
            else:
                for record_id in ids:
                    self._accessed.pop(record_id, None)

    def _hydrate(self, row: Sequence[Any]) -> MemoryRecord:
        """The record of a ``records`` row, with any access time noted but not written yet."""
        record = _row_record(row)
        if self._accessed or self._flushing:
            noted = self._accessed.get(record.id) or self._flushing.get(record.id)
            if noted is not None and noted[0] == record.user_id:
                record = replace(record, last_accessed_at=from_micros(noted[1]))
        return record

    # ---- forgetting

    def delete(self, ids: Sequence[str], *, user_id: str) -> int:
        """Forget these records of ``user_id`` (ids of other users are ignored).

        Removes the rows, their FTS entries (the FTS index is then merged so
        no segment keeps the old terms), their stored vectors and their index
        entries; with ``secure_delete`` the freed bytes are zeroed, the WAL is
        checkpointed and truncated, and the index file is rewritten. Writes a
        ``delete`` audit event with the ids only. Returns how many were deleted.
        """
        _check_user(user_id)
        ids = list(dict.fromkeys(ids))
        if not ids:
            return 0

        def select(conn: sqlite3.Connection) -> list[Sequence[Any]]:
            rows: list[Sequence[Any]] = []
            for chunk in _chunks(ids):
                rows += conn.execute(
                    f"SELECT rid, id, text FROM records WHERE +user_id=? AND id IN "
                    f"({_marks(len(chunk))})",
                    [user_id, *chunk],
                ).fetchall()
            return rows

        return self._forget(user_id, select, whole_user=False)

    def delete_user(self, user_id: str) -> int:
        """Forget everything about ``user_id``: records, vectors, FTS entries, audit events.

        Other users' data is untouched. Leaves one ``delete`` audit event that
        says the user was forgotten (a count, no ids, no text). Returns how many
        records were deleted.
        """
        _check_user(user_id)

        def select(conn: sqlite3.Connection) -> list[Sequence[Any]]:
            return conn.execute(
                "SELECT rid, id, text FROM records WHERE user_id=?", (user_id,)
            ).fetchall()

        return self._forget(user_id, select, whole_user=True)

    def _forget(
        self,
        user_id: str,
        select: Callable[[sqlite3.Connection], list[Sequence[Any]]],
        *,
        whole_user: bool,
    ) -> int:
        self._before_write()
        with self._db.lock:
            self._user_sizes.pop(user_id, None)
            with self._db.write() as conn:
                rows = select(conn)
                if rows:
                    # merge the shard's segments so none keeps the forgotten terms
                    for table in sorted(self._remove_rows(conn, rows)):
                        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                if whole_user:
                    self.audit.delete_user(conn, user_id)
                    payload: dict[str, Any] = {"forgotten": True, "records": len(rows)}
                    self.audit.insert(conn, "delete", user_id=user_id, payload=payload)
                elif rows:
                    payload = {"ids": [r[1] for r in rows]}
                    self.audit.insert(conn, "delete", user_id=user_id, payload=payload)
            keys = [VectorKey(int(r[0]), str(r[1])) for r in rows]

            def update() -> None:
                self.index.delete(keys)
                self.index.flush(force=True)

            try:
                if keys:
                    self._apply_to_index([k.rowid for k in keys], [user_id], update)
            finally:
                if rows or whole_user:
                    self._db.checkpoint()
        self._forget_access(user_id, None if whole_user else [str(r[1]) for r in rows])
        logger.info("deleted %d records of user %s", len(rows), user_id)
        return len(rows)

    # ---- reading

    def get(self, ids: Sequence[str], *, user_id: str | None = None) -> list[MemoryRecord]:
        """The stored records with these ids, in the given order (missing ids skipped)."""
        found: dict[str, MemoryRecord] = {}
        for chunk in _chunks(list(dict.fromkeys(ids))):
            sql = f"SELECT {_COLS} FROM records WHERE id IN ({_marks(len(chunk))})"
            params: list[Any] = list(chunk)
            if user_id is not None:
                sql += " AND +user_id=?"  # +: see the note above _COLS
                params.append(user_id)
            for row in self._db.query(sql, params):
                found[row[1]] = self._hydrate(row)
        return [found[i] for i in ids if i in found]

    def records(
        self,
        user_id: str,
        *,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | RecordKind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[MemoryRecord]:
        """A user's records, oldest first (optionally of one thread, some kinds, a window)."""
        flt = RecordFilter(user_id, thread_id, cast(Any, kinds), since, until)
        where, params = flt.sql("r")
        rows = self._db.query(
            f"SELECT {_R_COLS} FROM records r WHERE {where} ORDER BY r.created_at, r.rid", params
        )
        return [self._hydrate(row) for row in rows]

    def count(self, user_id: str | None = None) -> int:
        """Number of records (of one user, or all)."""
        if user_id is None:
            return int(self._db.query("SELECT COUNT(*) FROM records")[0][0])
        return int(self._db.query("SELECT COUNT(*) FROM records WHERE user_id=?", [user_id])[0][0])

    def keyword_search(
        self,
        query: str,
        *,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | RecordKind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        n: int = 50,
    ) -> list[tuple[MemoryRecord, float]]:
        """BM25 keyword search over a user's records; ``(record, score)``, best first.

        The score is FTS5's ``bm25()`` negated (higher is better). Any user
        text is safe: it is turned into quoted terms ORed together
        (:func:`fts_query`); text without terms returns ``[]``.

        FTS5 ranks the user's matches inside the user's shard and returns the
        best ``n`` row ids; only those records are read. Thread, kind and time
        filters are applied to the ranked ids (over-fetching ``overfetch``
        times, then fourfold, until ``n`` pass or the matches run out), so
        the result is the exact best ``n`` that pass the filter.

        A user with more than :attr:`keyword_exact_limit` records gets a
        bounded search instead, since exact BM25 must score every match (a
        word in a quarter of a million records costs a quarter of a second):
        each term's matches are read newest first, at most
        :attr:`keyword_term_cap` of them, and a record scores the sum of the
        BM25 IDFs of the terms it contains. A term with no more matches than
        the cap (a name, a number, a rare word: what keyword search is for)
        is searched completely; a commoner one only among its newest matches,
        and weighs little anyway. Term frequency and record length are
        ignored there.
        """
        flt = RecordFilter(user_id, thread_id, cast(Any, kinds), since, until)
        terms = fts_terms(query)
        if not terms or n <= 0:
            return []
        shard = fts_shard(user_id, self._fts_count)
        if not self._fts_ready(shard):
            return []  # nobody in this shard has records yet
        table = fts_table(shard)
        if self._user_size(user_id) > self.keyword_exact_limit:
            rids, scores = self._bounded_keyword_hits(table, user_id, terms)
            found: list[tuple[MemoryRecord, float]] = []
            step = int(n) if flt.user_only else int(n) * max(1, self.overfetch)
            for start in range(0, rids.size, step):
                part = slice(start, start + step)
                chunk = zip(rids[part].tolist(), scores[part].tolist(), strict=True)
                found += self._resolve(list(chunk), flt)
                if len(found) >= n:
                    break
            return found[:n]
        match = f'owner : "{owner_token(user_id)}" AND text : ({" OR ".join(terms)})'
        sql = (
            f"SELECT rowid, bm25({table}, 1.0, 0.0) AS score FROM {table} "
            f"WHERE {table} MATCH ? ORDER BY score, rowid LIMIT ?"
        )
        limit = int(n) if flt.user_only else int(n) * max(1, self.overfetch)
        while True:
            hits = self._db.query(sql, [match, limit])
            found = self._resolve([(int(rid), -float(rank)) for rid, rank in hits], flt)
            if len(found) >= n or len(hits) < limit:
                return found[:n]
            limit *= 4

    def _user_size(self, user_id: str) -> int:
        """How many records ``user_id`` has (counted once, then kept current by writes)."""
        size = self._user_sizes.get(user_id)
        if size is None:
            size = self.count(user_id)
            self._user_sizes[user_id] = size
        return size

    def _bounded_keyword_hits(
        self, table: str, user_id: str, terms: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and scores of a big user's keyword matches, best first (see keyword_search)."""
        cap = max(1, int(self.keyword_term_cap))
        total = max(1, self._user_size(user_id))
        owner = owner_token(user_id)
        # one comma-separated string per term (as in _candidates), newest matches first
        sql = (
            f"SELECT group_concat(rowid) FROM (SELECT rowid FROM {table} WHERE {table} "
            "MATCH ? ORDER BY rowid DESC LIMIT ?)"
        )
        found: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for term in terms:
            text = self._db.query(sql, [f'owner : "{owner}" AND text : {term}', cap + 1])[0][0]
            if not text:
                continue
            rids = np.fromstring(text, dtype=np.int64, sep=",")
            # len(rids) is a lower bound of the term's matches once it reached cap + 1
            idf = math.log(1.0 + (total - rids.size + 0.5) / (rids.size + 0.5))
            found.append(rids[:cap])
            weights.append(np.full(min(cap, rids.size), idf))
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        rids, where = np.unique(np.concatenate(found), return_inverse=True)
        scores = np.bincount(where, weights=np.concatenate(weights))
        order = np.lexsort((-rids, -scores))  # best score first, then newest
        return rids[order], scores[order]

    def _query_vector(self, query: Sequence[float] | np.ndarray) -> np.ndarray:
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        if self._dim is not None and vector.size != self._dim:
            raise self._dim_error(self._dim, int(vector.size))
        return _unit_rows(vector.reshape(1, -1))[0]

    def _candidates(self, flt: RecordFilter) -> np.ndarray:
        where, params = flt.sql("r")
        # one comma-separated string instead of a Python tuple per row (3x faster; the
        # rows come in the same order, that of the index the filter uses)
        rows = self._db.query(f"SELECT group_concat(r.rid) FROM records r WHERE {where}", params)
        text = rows[0][0] if rows else None
        if not text:
            return np.empty(0, dtype=np.int64)
        return np.fromstring(text, dtype=np.int64, sep=",")

    def _resolve(
        self, hits: Sequence[tuple[int, float]], flt: RecordFilter
    ) -> list[tuple[MemoryRecord, float]]:
        """Records for ``(rowid, score)`` hits that pass ``flt`` (SQL-checked), in hit order."""
        best: dict[int, float] = {}
        for rid, score in hits:
            best.setdefault(rid, score)
        found: dict[int, MemoryRecord] = {}
        where, params = flt.sql("r")
        hydrate = self._hydrate if self._accessed or self._flushing else _row_record
        for chunk in _chunks(list(best)):
            # NOT INDEXED: look the hits up by row id; left to itself the planner walks
            # the user's whole (user_id, ...) index and reads every one of their rows
            rows = self._db.query(
                f"SELECT {_R_COLS} FROM records r NOT INDEXED "
                f"WHERE r.rid IN ({_marks(len(chunk))}) AND {where}",
                [*chunk, *params],
            )
            found.update((int(row[0]), hydrate(row)) for row in rows)
        return [(found[rid], score) for rid, score in best.items() if rid in found]

    def dense_search(
        self,
        query: str | Sequence[float] | np.ndarray,
        *,
        user_id: str,
        thread_id: str | None = None,
        kinds: Iterable[RecordKind] | RecordKind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        n: int = 50,
    ) -> list[tuple[MemoryRecord, float]]:
        """Vector search over a user's records; ``(record, score)``, best first.

        Exact, except for a user with more records than the index's
        ``ann_min_vectors`` (FAISS: 50,000): their searches by user only use
        an approximate per-user index once it is built (see :meth:`warm_up`).

        ``query`` is a query vector (e.g. from :meth:`embed_query`, so recall
        embeds once) or text. Only records passing the filter are returned:
        indexes with ``exact_filter`` (FAISS) search just the filtered row ids;
        others are asked for ``n * overfetch`` hits, growing fourfold until
        ``n`` pass the filter or the index has no more. Either way every hit is
        re-checked against the records in SQL, so another user's record can
        never come back.
        """
        flt = RecordFilter(user_id, thread_id, cast(Any, kinds), since, until)
        if n <= 0:
            return []
        if isinstance(query, str):
            text: str | None = query
            vector = self.embed_query(query) if self.index.needs_vectors else None
        else:
            text, vector = None, self._query_vector(query)
        if self._index_broken:
            self.rebuild_index()
        dense = DenseQuery(flt, text, vector, lambda: self._candidates(flt))
        if self.index.exact_filter:
            return self._resolve(self.index.search(dense, n), flt)[:n]
        total = self.count()
        k = max(n * self.overfetch, n)
        while True:
            hits = self.index.search(dense, k)
            found = self._resolve(hits, flt)
            if len(found) >= n or len(hits) < k or k >= total:
                return found[:n]
            k = min(k * 4, max(total, n))

    def warm_up(self, user_id: str) -> bool:
        """Prepare fast recall for ``user_id`` now; True if an approximate index was built.

        A user with a very large archive (see :meth:`dense_search` and
        :meth:`keyword_search`) is otherwise prepared on their first recall:
        their record count is read then, and their approximate vector index
        is built in a background thread while searches stay exact (and slow)
        meanwhile. A server can call this at start-up for its heaviest users.
        """
        self._user_size(user_id)
        warm = getattr(self.index, "warm_user", None)
        if warm is None:
            return False
        flt = RecordFilter(user_id)
        return bool(warm(user_id, lambda: self._candidates(flt)))

    # ---- export, lifecycle

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about ``user_id``, JSON-ready: records and audit events.

        Returns ``{"user_id", "exported_at", "records": [record_to_dict(...)],
        "audit_events": [AuditEvent.to_dict()]}`` (vectors are not included).
        """
        _check_user(user_id)
        return {
            "user_id": user_id,
            "exported_at": datetime.now(timezone.utc).isoformat(),
            "records": [record_to_dict(r) for r in self.records(user_id)],
            "audit_events": [e.to_dict() for e in self.audit.events(user_id)],
        }

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._db.closed

    def close(self) -> None:
        """Write pending access times and the vector index, close the database (idempotent)."""
        with self._access_lock:
            self._access_stop.set()
            thread, self._access_thread = self._access_thread, None
        if thread is not None:
            thread.join()
        if not self._db.closed:
            try:  # before taking the database lock: a flush takes its own lock first
                self.flush_access()
            except Exception:
                logger.exception("could not write the last access times of %s", self.path)
        with self._db.lock:
            if self._db.closed:
                return
            try:
                self.index.close()
            finally:
                self._db.close()

    def __enter__(self: _ArchiveT) -> _ArchiveT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


@dataclass(frozen=True)
class ArchiveTurnHook:
    """The buffer's archive hook bound to one user's thread (see :meth:`BaseSQLiteArchive.hook`).

    Idempotent: turns already archived are skipped, so a retried compression
    may pass the same turn twice.
    """

    archive: BaseSQLiteArchive
    user_id: str
    thread_id: str

    def __call__(self, turns: Sequence[Turn]) -> None:
        """Archive ``turns`` before they leave the buffer."""
        self.archive.archive_turns(turns, user_id=self.user_id, thread_id=self.thread_id)


def stored_embeddings_id(path: str | os.PathLike[str]) -> str | None:
    """The embeddings id an archive file records it was built with (``None``: none yet).

    Reads the file without changing it; a missing file or table gives ``None``.
    """
    file = Path(path)
    if not file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='embeddings'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def _embeddings_id(embeddings: Embeddings) -> str:
    kind = type(embeddings)
    name = f"{kind.__module__}.{kind.__qualname__}"
    for attr in ("model", "model_name", "deployment", "size"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"{name}:{attr}={value}"
    return name


class SQLiteArchive(BaseSQLiteArchive):
    """The durable archive: records, keyword index and audit log in SQLite, vectors in FAISS.

    Args:
        path: The SQLite file (its directory must exist). The FAISS index is
            ``<path>.faiss`` next to it.
        embeddings: Any LangChain ``Embeddings``; documents are embedded in
            one ``embed_documents`` batch per :meth:`add`.
        dim: The embedding dimension, if known (checked against an existing
            archive; otherwise learnt from the first batch).
        save_every: Write the FAISS file after this many added vectors
            (default 1: after every add). Deletes always write it at once.

    Raises:
        ValueError: for a path whose directory does not exist, or a ``dim``
            that differs from the one the archive was built with.

    Note:
        Each record's unit vector is also stored in SQLite, so the FAISS file
        is a cache: if it is missing, unreadable or does not hold exactly the
        records' ids (say after a crash between the SQLite commit and the file
        write), it is rebuilt on open from SQLite, without re-embedding.

        Safe for many threads; use one process per archive file (the FAISS
        index lives in the process's memory, so another process's writes
        reach it only when it reopens the archive).

    Example:
        >>> import tempfile, pathlib
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = pathlib.Path(tmp.name) / "memory.sqlite"
        >>> archive = SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32))
        >>> archive.add([
        ...     MemoryRecord.new(user_id="ana", kind="fact", text="Ana is allergic to peanuts",
        ...                      id="f1"),
        ...     MemoryRecord.new(user_id="bob", kind="fact", text="Bob is allergic to cats",
        ...                      id="f2"),
        ... ])
        >>> [(r.id, s > 0) for r, s in archive.keyword_search("allergic", user_id="ana")]
        [('f1', True)]
        >>> [r.id for r, _ in archive.dense_search("Bob is allergic to cats", user_id="bob", n=1)]
        ['f2']
        >>> from langchain_core.messages import HumanMessage
        >>> hook = archive.hook("bob", "t1")  # the buffer's archive hook
        >>> hook([Turn(0, (HumanMessage("I adopted a cat"),))])
        >>> hook([Turn(0, (HumanMessage("I adopted a cat"),))])  # a retry stores nothing twice
        >>> [(r.id, r.kind, r.text) for r in archive.records("bob", kinds=["turn"])]
        [('bob:t1:turn:0', 'turn', 'user: I adopted a cat')]
        >>> [e.kind for e in archive.audit.events("bob")]
        ['write', 'page_out']
        >>> sorted(archive.export_user("bob"))
        ['audit_events', 'exported_at', 'records', 'user_id']
        >>> archive.delete_user("ana"), archive.count()
        (1, 2)
        >>> archive.close()
        >>> with SQLiteArchive(path, embeddings=DeterministicFakeEmbedding(size=32)) as again:
        ...     [r.text for r in again.records("bob", kinds="fact")]
        ['Bob is allergic to cats']
        >>> tmp.cleanup()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embeddings: Embeddings,
        dim: int | None = None,
        save_every: int = 1,
    ) -> None:
        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self.embeddings = embeddings
        self._save_every = save_every
        super().__init__(path, dim=dim, embeddings_id=_embeddings_id(embeddings))

    @property
    def index_path(self) -> Path:
        """The FAISS index file (``<path>.faiss``)."""
        return self.path.with_name(self.path.name + ".faiss")

    def _make_index(self) -> FaissIndex:
        return FaissIndex(self.index_path, dim=self._dim, save_every=self._save_every)

    def _check_vectors(self, vectors: np.ndarray, expected: int) -> np.ndarray:
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ValueError(
                f"the embeddings returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {expected} texts"
            )
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise self._dim_error(self._dim, int(vectors.shape[1]))
        return _unit_rows(vectors)

    def _embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raw = self.embeddings.embed_documents(list(texts))
        return self._check_vectors(np.asarray(raw, dtype=np.float32), len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector for ``text`` (``embeddings.embed_query``).

        Embed once, then search with the vector (recall also needs it for scoring).

        Example:
            >>> import tempfile, pathlib
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> tmp = tempfile.TemporaryDirectory()
            >>> with SQLiteArchive(pathlib.Path(tmp.name) / "m.sqlite",
            ...                    embeddings=DeterministicFakeEmbedding(size=8)) as archive:
            ...     archive.add([MemoryRecord.new(user_id="ana", kind="fact", text="tea", id="f1")])
            ...     v = archive.embed_query("tea")
            ...     [(r.id, round(s, 3)) for r, s in archive.dense_search(v, user_id="ana")]
            [('f1', 1.0)]
            >>> tmp.cleanup()
        """
        raw = self.embeddings.embed_query(text)
        return self._check_vectors(np.asarray(raw, dtype=np.float32).reshape(1, -1), 1)[0]
