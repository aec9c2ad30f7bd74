"""The keyword side of recall on Postgres: what goes into ``tsvector`` and what a query becomes.

Both sides use the shared split of :mod:`langchain_tiered_memory.storage.fts`
(the one SQLite's FTS5 index uses), so the two backends find the same words:

* a document is its :func:`~langchain_tiered_memory.storage.fts.fts_tokens`
  - CJK runs as overlapping character bigrams plus their last character,
  other runs as they are - lower-cased and with diacritics removed in Python
  (as FTS5's ``remove_diacritics 2``; Postgres' ``unaccent`` is an extension
  that may be missing, and Python's folding does not depend on the
  database's locale), joined by spaces and given to ``to_tsvector`` with the
  ``tm_english`` configuration (English Snowball stemming, no stopword list);
* a query is :func:`~langchain_tiered_memory.storage.fts.fts_terms` (stopwords
  dropped unless nothing else is left, at most 64 terms), each term its own
  ``tsquery`` (a single CJK character is a prefix query), ORed.

Scores are BM25 (``k1`` 1.2, ``b`` 0.75, as FTS5) with each matched term
counted once per record, computed in SQL (see
:func:`bm25_sql`; a very large user's search is bounded, :func:`bounded_matches`):
IDFs come from the user's own records, so another user's vocabulary never
changes a user's ranking.

Example:
    >>> document_text("Café CRÈME, 我对花生过敏!")
    'cafe creme 我对 对花 花生 生过 过敏 敏'
    >>> [(t.text, t.prefix) for t in query_terms("Where is the café? 猫")]
    [('cafe', False), ('猫', True)]
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.storage.fts import fts_terms, fts_tokens
from langchain_tiered_memory.storage.postgres.schema import TS_CONFIG

__all__ = [
    "BM25_B",
    "BM25_K1",
    "QueryTerm",
    "bm25_sql",
    "bounded_idf",
    "bounded_matches",
    "document_text",
    "fold",
    "or_query",
    "query_terms",
    "term_sql",
]

BM25_K1 = 1.2
BM25_B = 0.75


def _fold_char(ch: str) -> str:
    if unicodedata.category(ch) == "Mn":
        return ""  # a lone combining mark
    parts = unicodedata.normalize("NFD", ch)
    if len(parts) > 1 and all(unicodedata.category(p) == "Mn" for p in parts[1:]):
        return parts[0]  # a letter with diacritics: the letter (Hangul syllables stay whole)
    return ch


def fold(word: str) -> str:
    """``word`` lower-cased, without diacritics.

    Example:
        >>> fold("Straße"), fold("NAÏVE"), fold("한국어")
        ('straße', 'naive', '한국어')
    """
    return "".join(_fold_char(ch) for ch in word.lower())


def document_text(text: str) -> str:
    """The text given to ``to_tsvector`` for a record's ``text``."""
    return " ".join(f for token in fts_tokens(text) if (f := fold(token)))


@dataclass(frozen=True)
class QueryTerm:
    """One term of a keyword query: its text, and whether it is a prefix (a lone CJK char)."""

    text: str
    prefix: bool = False


def query_terms(text: str) -> list[QueryTerm]:
    """The terms of free user text (see :func:`~langchain_tiered_memory.storage.fts.fts_terms`)."""
    terms: list[QueryTerm] = []
    for quoted in fts_terms(text):
        prefix = quoted.endswith("*")
        word = fold((quoted[1:-2] if prefix else quoted[1:-1]).replace('""', '"'))
        if word and QueryTerm(word, prefix) not in terms:
            terms.append(QueryTerm(word, prefix))
    return terms


def term_sql(term: QueryTerm) -> tuple[str, str]:
    """A SQL ``tsquery`` expression for ``term`` and its parameter (``?`` placeholder).

    Example:
        >>> term_sql(QueryTerm("peanuts"))
        ("plainto_tsquery('tm_english', ?)", 'peanuts')
        >>> term_sql(QueryTerm("猫", prefix=True))
        ("to_tsquery('tm_english', ?)", "'猫':*")
    """
    if term.prefix:
        quoted = term.text.replace("\\", "\\\\").replace("'", "''")
        return f"to_tsquery('{TS_CONFIG}', ?)", f"'{quoted}':*"
    return f"plainto_tsquery('{TS_CONFIG}', ?)", term.text


def bounded_idf(found: int, total: int) -> float:
    """The IDF of a term with at least ``found`` matches among ``total`` records.

    Example:
        >>> round(bounded_idf(1, 1000), 3)
        6.503
    """
    return math.log(1.0 + (max(total, found) - found + 0.5) / (found + 0.5))


def or_query(parts: Sequence[str]) -> str:
    """The SQL of the OR of some ``tsquery`` expressions."""
    return "(" + " || ".join(parts) + ")"


#: A user's ``(rid, tsv, filter columns)``: the covering index's entries, and the long ones.
_USER_KEYWORDS = (
    "(SELECT rid, tsv, user_id, thread_id, kind, created_at FROM records WHERE user_id = ? "
    "AND tsv_small OFFSET 0) UNION ALL (SELECT rid, tsv, user_id, thread_id, kind, created_at "
    "FROM records WHERE user_id = ? AND NOT tsv_small OFFSET 0)"
)


def bm25_sql(
    parts: Sequence[tuple[str, str]], flt: RecordFilter, size: int, n: int, columns: str
) -> tuple[str, list[Any]]:
    """One statement: a user's keyword matches scored BM25, the best ``n`` passing ``flt``
    returned as rows of ``columns`` with their scores.

    The user's rows are read from the covering keyword index (see
    :mod:`.schema`; ``OFFSET 0`` keeps the planner from intersecting with the
    GIN index, whose posting lists of common words span every user), each
    term's matches counted among them for its IDF, and only then filtered
    and ranked.
    """
    where, filter_params = flt.sql("r")
    terms = [sql for sql, _ in parts]
    words = [word for _, word in parts]
    k = range(len(parts))
    matches = ", ".join(f"(r.tsv @@ {t})::int AS m{i}" for i, t in zip(k, terms, strict=True))
    counts = ", ".join(f"sum(m{i})::float8 AS df{i}" for i in k)
    total = "GREATEST(?, s.hits)"
    idf = " + ".join(f"h.m{i} * ln(1 + ({total} - s.df{i} + 0.5) / (s.df{i} + 0.5))" for i in k)
    norm = f"({BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * h.dl / s.avgdl)))"
    sql = (
        f"WITH h AS MATERIALIZED (SELECT r.rid, length(r.tsv)::float8 AS dl, ({where}) AS ok, "
        f"{matches} FROM ({_USER_KEYWORDS}) r WHERE r.tsv @@ {or_query(terms)}), "
        f"s AS (SELECT count(*)::float8 AS hits, avg(dl) AS avgdl, {counts} FROM h), "
        f"top AS (SELECT h.rid, ({idf}) * {norm} AS score FROM h, s WHERE h.ok "
        "ORDER BY score DESC, h.rid DESC LIMIT ?) "
        f"SELECT {columns}, top.score FROM top JOIN records r ON r.rid = top.rid "
        "ORDER BY top.score DESC, top.rid DESC"
    )
    params: list[Any] = [
        *filter_params,
        *words,
        flt.user_id,
        flt.user_id,
        *words,
        *([size] * len(parts)),
        n,
    ]
    return sql, params


def bounded_matches(
    db: Any, parts: Sequence[tuple[str, str]], user_id: str, size: int, cap: int
) -> tuple[np.ndarray, np.ndarray]:
    """A big user's bounded keyword search: each term's newest ``cap`` matches (of the
    user's ``size`` records), a record scoring the sum of :func:`bounded_idf` of the
    terms it contains. Returns row ids and scores, best first (newest first on ties)."""
    cap = max(1, int(cap))
    found: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for sql, param in parts:
        branch = (
            f"(SELECT r.rid FROM records r WHERE r.user_id = ? AND r.tsv_small = {{}} AND "
            f"r.tsv @@ {sql} ORDER BY r.rid DESC LIMIT ?)"
        )
        rows = db.query(
            f"SELECT rid FROM ({branch.format('true')} UNION ALL {branch.format('false')}) m "
            "ORDER BY rid DESC LIMIT ?",
            (user_id, param, cap + 1, user_id, param, cap + 1, cap + 1),
        )
        if not rows:
            continue
        rids = np.array([r[0] for r in rows], dtype=np.int64)
        found.append(rids[:cap])
        weights.append(np.full(min(cap, rids.size), bounded_idf(rids.size, size)))
    if not found:
        return np.empty(0, dtype=np.int64), np.empty(0)
    rids, where = np.unique(np.concatenate(found), return_inverse=True)
    scores = np.bincount(where, weights=np.concatenate(weights))
    order = np.lexsort((-rids, -scores))
    return rids[order], scores[order]
