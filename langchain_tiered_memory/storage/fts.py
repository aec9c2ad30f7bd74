"""Keyword-index text: what goes into the full-text index and what a query becomes.

Shared by every backend (SQLite FTS5 and Postgres ``tsvector``), so both
handle Chinese, Japanese and Korean the same way: runs of CJK characters
(written without spaces) become overlapping character bigrams plus the last
character of each run (the Lucene CJKAnalyzer scheme); other text is left to
the engine's tokenizer. Queries are quoted terms ORed together, so no user
text can be read as query syntax.

Example:
    >>> fts_document("我对花生过敏, peanuts!")
    '我对 对花 花生 生过 过敏 敏 , peanuts!'
    >>> fts_terms("Where is the café?")
    ['"café"']
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = [
    "FTS_SCHEME",
    "FTS_TOKENIZE",
    "fts_document",
    "fts_query",
    "fts_shard",
    "fts_table",
    "fts_terms",
    "fts_tokens",
    "owner_token",
    "query_words",
]

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
FTS_SCHEME = "porter-unicode61-rd2+cjk-bigram+owner-v2+user-shards"
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
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


def fts_tokens(text: str) -> list[str]:
    """The index terms of ``text`` for engines that take words, not FTS5 text (Postgres).

    The same split as :func:`fts_document` and :func:`fts_terms`: separators
    (punctuation, symbols, spaces) dropped, CJK runs as overlapping bigrams
    plus their last character, other runs as they are (after NFKC).

    Example:
        >>> fts_tokens("我对花生过敏, peanuts! e-mail")
        ['我对', '对花', '花生', '生过', '过敏', '敏', 'peanuts', 'e', 'mail']
    """
    tokens: list[str] = []
    for cjk, run in _runs(text):
        if cjk:
            tokens.extend([*_bigrams(run), run[-1]])
        else:
            tokens.append(run)
    return tokens


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


def query_words(text: str) -> list[str]:
    """The unquoted words of a keyword query (:func:`fts_terms` without the quoting).

    What engines without FTS5's syntax (Postgres ``tsquery``) search for.

    Example:
        >>> query_words('What did I say about "peanuts"? 花生')
        ['say', 'peanuts', '花生']
    """
    words: list[str] = []
    for term in fts_terms(text):
        word = term[1:-1] if term.endswith('"') else term[1:-2]
        words.append(word.replace('""', '"'))
    return words
