"""When a fact holds, read from the words that state it (pure).

"Moved to Lisbon last month", said on 2026-12-04, holds from 2026-11-01;
"until June" ends at the start of June; "my flight is on Saturday" holds on
that Saturday. :func:`fact_time` reads one clause, relative to when it was
said, and returns a :class:`FactTime` (``valid_from`` / ``valid_until``, as
:class:`~langchain_tiered_memory.tiers.core.CoreFact` keeps them), or ``None``
when the clause names no time. :func:`clause_time` finds the clause of a
message that states a given fact and reads that.

What is read (English and Chinese, case-insensitive):

* days: ``yesterday``, ``today``, ``tomorrow``, ``the day after tomorrow``,
  ``[on|last|this|next] <weekday>``, dates (``3 June``, ``June 3rd, 2026``,
  ``2026-06-03``), ``N days|weeks|months|years ago``, ``in N days|weeks``;
  昨天, 今天, 明天, 后天, 前天, 下周六, 上星期三, 周五, 5月3日, 三天前, 两周后;
* periods: ``last|this|next week|weekend|month|year``, ``[last|next]
  <season>``, ``<month> [year]``, ``<year>``; 上个月, 这周, 下个月, 去年,
  明年, 九月, 2023年, 2023年5月;
* markers: ``since|from|as of|starting <time>`` sets ``valid_from``;
  ``until|till|through|up to <time>`` sets ``valid_until`` (the end of a day,
  the start of a longer period - "until June" ends when June begins -, the end
  of it after ``through``); 从/自 <time> (起|开始|以来), <time> 以来; 到/直到 <time>.

Without a marker, a time in the past (or now) is when the fact began
(``valid_from``); a day ahead is when it holds (both ends: an appointment);
a longer period ahead is when it starts. A month, season or year without a
marker counts only in a clause that says something starts, ends or moves
("starts school in September"), since "my birthday is in May" does not hold
from May. Recurring times ("every Saturday", birthdays) give nothing.

A weekday, month or date without a year points back when the clause is in the
past tense ("moved here in March") and forward otherwise ("starts in
September"). Months, weekdays and counts come from
:mod:`langchain_tiered_memory.recall.time_expressions` (the one list).

Example:
    >>> from datetime import datetime, timezone
    >>> said = datetime(2026, 12, 4, 15, 0, tzinfo=timezone.utc)  # a Friday
    >>> fact_time("I moved to Lisbon last month", said).valid_from.date().isoformat()
    '2026-11-01'
    >>> t = fact_time("my flight is on Saturday", said)
    >>> t.valid_from.date().isoformat(), t.valid_until.date().isoformat()
    ('2026-12-05', '2026-12-06')
    >>> fact_time("我住在上海", said) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from langchain_tiered_memory.expiry import utc
from langchain_tiered_memory.recall.time_expressions import (
    COUNT_PATTERN,
    MONTH_PATTERN,
    MONTHS,
    WEEKDAYS,
    add_months,
    parse_count,
)

__all__ = ["FactTime", "clause_time", "fact_time"]

Lean = Literal["past", "future"]
Unit = Literal["day", "week", "month", "season", "year"]


@dataclass(frozen=True)
class FactTime:
    """When a fact holds, as its words say.

    Attributes:
        valid_from: When it starts to hold (``None``: not said).
        valid_until: When it stops holding (``None``: not said).
        expression: The words it was read from.
    """

    valid_from: datetime | None
    valid_until: datetime | None
    expression: str


@dataclass(frozen=True)
class _Span:
    """A half-open stretch of time ``[start, end)`` an expression names."""

    start: datetime
    end: datetime
    unit: Unit
    relative: bool  # anchored to when it was said ("last month", "tomorrow")


# --- reading one expression ------------------------------------------------------------

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
_ZH_DIGITS.update({"八": 8, "九": 9})
_ZH_NUM = r"(?:\d{1,4}|[一二两三四五六七八九十]{1,3})"
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_WEEKDAY = "(?:" + "|".join(WEEKDAYS) + ")"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"


def _zh_number(text: str) -> int:
    """A number written in digits or Chinese numerals up to 99 (十二 -> 12, 两 -> 2)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0)
    return _ZH_DIGITS[text]


def _day(at: datetime, offset: int = 0) -> _Span:
    start = at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=offset)
    return _Span(start, start + timedelta(days=1), "day", True)


def _week(now: datetime, offset: int) -> _Span:
    monday = _day(now).start - timedelta(days=now.weekday()) + timedelta(weeks=offset)
    return _Span(monday, monday + timedelta(weeks=1), "week", True)


def _month(year: int, month: int, *, relative: bool = False) -> _Span:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    return _Span(start, add_months(start, 1), "month", relative)


def _year(year: int, *, relative: bool = False) -> _Span:
    start = datetime(year, 1, 1, tzinfo=timezone.utc)
    return _Span(start, start.replace(year=year + 1), "year", relative)


def _weekday(now: datetime, weekday: int, which: str, lean: Lean) -> _Span:
    """The ``weekday`` that ``which`` ("last", "this", "next", "") points to from ``now``."""
    today = now.weekday()
    if which == "last" or (not which and lean == "past"):
        return _day(now, -((today - weekday) % 7 or 7))
    if which == "this":
        return _day(now, (weekday - today) % 7)
    return _day(now, (weekday - today) % 7 or 7)  # the next one after today


def _week_of(now: datetime, offset: int, weekday: int) -> _Span:
    """That ``weekday`` of the week ``offset`` weeks from now's (下周六: next week's Saturday)."""
    return _day(_week(now, offset).start + timedelta(days=weekday))


def _shifted(now: datetime, n: int, unit: str, sign: int) -> _Span:
    unit = unit.rstrip("s")
    if unit in ("day", "天", "日"):
        return _day(now, sign * n)
    if unit in ("week", "周", "星期", "礼拜", "个星期", "个礼拜"):
        return _day(now, sign * 7 * n)
    months = n * (12 if unit in ("year", "年") else 1)
    return _day(add_months(_day(now).start, sign * months))


def _month_lean(month: int, now: datetime, lean: Lean) -> _Span:
    """``month`` without a year: the latest begun (past) or the next not over (future)."""
    if lean == "past":
        return _month(now.year if month <= now.month else now.year - 1, month)
    return _month(now.year if month >= now.month else now.year + 1, month)


def _date_lean(month: int, day: int, now: datetime, lean: Lean) -> _Span | None:
    """A day without a year: the latest not after today (past) or the next not before it."""
    today = _day(now).start
    try:
        candidate = datetime(today.year, month, day, tzinfo=timezone.utc)
        if lean == "past" and candidate > today:
            candidate = candidate.replace(year=today.year - 1)
        elif lean == "future" and candidate < today:
            candidate = candidate.replace(year=today.year + 1)
    except ValueError:  # 30 February, or 29 February in another year
        return None
    return _day(candidate)


def _full_date(year: int, month: int, day: int) -> _Span | None:
    try:
        return _day(datetime(year, month, day, tzinfo=timezone.utc))
    except ValueError:
        return None


def _season(name: str, which: str, now: datetime, lean: Lean) -> _Span:
    first = _SEASONS[name.lower()]
    start = datetime(now.year, first, 1, tzinfo=timezone.utc)
    if which == "last" or (not which and lean == "past"):
        while add_months(start, 3) > now:
            start = start.replace(year=start.year - 1)
    elif which == "next" or not which:
        while start <= now:
            start = start.replace(year=start.year + 1)
    elif add_months(start, 3) <= now:  # "this winter": the one not over yet
        start = start.replace(year=start.year + 1)
    return _Span(start, add_months(start, 3), "season", bool(which))


_OFFSETS = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}
_ZH_OFFSETS = {"上": -1, "这": 0, "本": 0, "今": 0, "下": 1}
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0, "今晚": 0}
_ZH_DAYS.update({"明天": 1, "明日": 1, "后天": 2, "大后天": 3})
_EN_DAYS = {
    "the day before yesterday": -2,
    "yesterday": -1,
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "the day after tomorrow": 2,
}


def _period(now: datetime, unit: str, offset: int) -> _Span:
    if unit == "week":
        return _week(now, offset)
    if unit == "weekend":
        saturday = _week(now, offset).start + timedelta(days=5)
        return _Span(saturday, saturday + timedelta(days=2), "week", True)
    if unit == "month":
        start = add_months(datetime(now.year, now.month, 1, tzinfo=timezone.utc), offset)
        return _month(start.year, start.month, relative=True)
    return _year(now.year + offset, relative=True)


@dataclass(frozen=True)
class _Expression:
    """One kind of time expression: its pattern, how to read it, and (``guard``) whether a
    match counts where no marker stands before it."""

    pattern: re.Pattern[str]
    read: Callable[[re.Match[str], datetime, Lean], _Span | None]
    guard: Callable[[re.Match[str], str], bool] | None = None


#: Words before a bare month or year that make it a time ("in May", not "may").
_CUE = re.compile(
    r"\b(?:in|since|until|till|by|from|of|through|during|before|after|early|mid|late)\s+$", re.I
)


def _named_month_guard(m: re.Match[str], before: str) -> bool:
    return bool(m["w"] or m["p"] or m["y"] or _CUE.search(before))


def _year_guard(m: re.Match[str], before: str) -> bool:
    return bool(_CUE.search(before))


def _calendar_day(m: re.Match[str], now: datetime, lean: Lean) -> _Span | None:
    month = MONTHS[(m["m1"] or m["m2"]).lower().rstrip(".")]
    day = int(re.sub(r"\D", "", m["d1"] or m["d2"]))
    if m["y"]:
        return _full_date(int(m["y"]), month, day)
    return _date_lean(month, day, now, lean)


def _named_month(m: re.Match[str], now: datetime, lean: Lean) -> _Span | None:
    month = MONTHS[m["m"].lower().rstrip(".")]
    if m["y"]:
        return _month(int(m["y"]), month)
    which = (m["w"] or "").lower()
    if which == "last":
        return _month(now.year if month < now.month else now.year - 1, month, relative=True)
    if which == "next":
        return _month(now.year if month > now.month else now.year + 1, month, relative=True)
    if which == "this":
        return _month(now.year, month, relative=True)
    return _month_lean(month, now, lean)


def _zh_calendar(m: re.Match[str], now: datetime, lean: Lean) -> _Span | None:
    month = _zh_number(m["m"])
    if not 1 <= month <= 12:
        return None
    day = _zh_number(m["d"]) if m["d"] else None
    if m["y"]:
        year = int(m["y"])
        return _full_date(year, month, day) if day else _month(year, month)
    return _date_lean(month, day, now, lean) if day else _month_lean(month, now, lean)


def _which(word: str | None) -> str:
    word = (word or "").lower()
    return "next" if word == "coming" else word


#: Every expression :func:`fact_time` reads.
_EXPRESSIONS: tuple[_Expression, ...] = (
    _Expression(
        re.compile(r"\b(?:the day (?:before|after) )?(?:yesterday|today|tonight|tomorrow)\b", re.I),
        lambda m, now, lean: _day(now, _EN_DAYS[" ".join(m.group(0).lower().split())]),
    ),
    _Expression(
        re.compile(rf"\b(?P<n>{COUNT_PATTERN})\s+(?P<u>day|week|month|year)s?\s+ago\b", re.I),
        lambda m, now, lean: _shifted(now, parse_count(m["n"]), m["u"].lower(), -1),
    ),
    _Expression(
        re.compile(rf"\bin\s+(?P<n>{COUNT_PATTERN})\s+(?P<u>day|week|month|year)s?\b", re.I),
        lambda m, now, lean: _shifted(now, parse_count(m["n"]), m["u"].lower(), 1),
    ),
    _Expression(
        re.compile(
            r"\b(?P<w>last|past|previous|this|next|coming)\s+(?P<u>week(?:end)?|month|year)\b",
            re.I,
        ),
        lambda m, now, lean: _period(now, m["u"].lower(), _OFFSETS[m["w"].lower()]),
    ),
    _Expression(
        re.compile(rf"\b(?:(?P<w>last|this|next|coming)\s+)?(?P<d>{_WEEKDAY})\b(?!s)", re.I),
        lambda m, now, lean: _weekday(now, WEEKDAYS[m["d"].lower()], _which(m["w"]), lean),
    ),
    _Expression(
        re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
        lambda m, now, lean: _full_date(int(m["y"]), int(m["m"]), int(m["d"])),
    ),
    _Expression(
        re.compile(
            rf"\b(?:(?P<m1>{MONTH_PATTERN})\s+(?P<d1>{_DAY})|(?P<d2>{_DAY})\s+(?:of\s+)?"
            rf"(?P<m2>{MONTH_PATTERN}))\b(?:,?\s+(?P<y>{_YEAR})\b)?",
            re.I,
        ),
        _calendar_day,
    ),
    _Expression(
        re.compile(
            r"\b(?:(?P<w>last|this|next)\s+)?(?P<s>spring|summer|autumn|fall|winter)\b", re.I
        ),
        lambda m, now, lean: _season(m["s"], _which(m["w"]), now, lean),
    ),
    _Expression(
        re.compile(
            rf"\b(?:(?P<w>last|this|next)\s+|(?P<p>early|mid|late)[\s-]+)?(?P<m>{MONTH_PATTERN})"
            rf"(?:,?\s+(?P<y>{_YEAR}))?\b",
            re.I,
        ),
        _named_month,
        _named_month_guard,
    ),
    _Expression(
        re.compile(rf"\b(?P<y>{_YEAR})\b"), lambda m, now, lean: _year(int(m["y"])), _year_guard
    ),
    # Chinese
    _Expression(
        re.compile("|".join(sorted(_ZH_DAYS, key=len, reverse=True))),
        lambda m, now, lean: _day(now, _ZH_DAYS[m.group(0)]),
    ),
    _Expression(
        re.compile(
            rf"(?P<n>{_ZH_NUM})\s*(?P<u>天|日|周|个星期|星期|个礼拜|礼拜|个月|年)"
            r"(?P<d>以前|之前|前|以后|之后|后)"
        ),
        lambda m, now, lean: _shifted(now, _zh_number(m["n"]), m["u"], -1 if "前" in m["d"] else 1),
    ),
    _Expression(
        re.compile(r"(?P<w>[上这本下])个?(?:周|星期|礼拜)(?P<d>[一二三四五六日天])"),
        lambda m, now, lean: _week_of(now, _ZH_OFFSETS[m["w"]], _ZH_WEEKDAY[m["d"]]),
    ),
    _Expression(
        re.compile(r"(?:周|星期|礼拜)(?P<d>[一二三四五六日天])"),
        lambda m, now, lean: _weekday(now, _ZH_WEEKDAY[m["d"]], "", lean),
    ),
    _Expression(
        re.compile(r"(?P<w>[上这本下])个?(?P<u>周末|周|星期|礼拜|月)"),
        lambda m, now, lean: _period(
            now, {"周末": "weekend", "月": "month"}.get(m["u"], "week"), _ZH_OFFSETS[m["w"]]
        ),
    ),
    _Expression(
        re.compile("|".join(_ZH_YEARS)),
        lambda m, now, lean: _year(now.year + _ZH_YEARS[m.group(0)], relative=True),
    ),
    _Expression(
        re.compile(
            rf"(?:(?P<y>\d{{4}})\s*年\s*)?(?P<m>{_ZH_NUM})\s*月(?:\s*(?P<d>{_ZH_NUM})\s*[日号])?"
        ),
        _zh_calendar,
    ),
    _Expression(re.compile(r"(?P<y>\d{4})\s*年"), lambda m, now, lean: _year(int(m["y"]))),
)


def _first(
    text: str, now: datetime, lean: Lean, *, at: int | None = None
) -> tuple[_Span, re.Match[str]] | None:
    """The first time expression in ``text`` (the longest of those starting together),
    or with ``at`` the one starting there (after a marker: no guard applies)."""
    found: list[tuple[int, int, _Span, re.Match[str]]] = []
    for expression in _EXPRESSIONS:
        match = (
            expression.pattern.match(text, at)
            if at is not None
            else expression.pattern.search(text)
        )
        if match is None:
            continue
        if at is None and expression.guard and not expression.guard(match, text[: match.start()]):
            continue
        span = expression.read(match, now, lean)
        if span is not None:
            found.append((match.start(), -len(match.group(0)), span, match))
    if not found:
        return None
    _, _, span, match = min(found, key=lambda f: (f[0], f[1]))
    return span, match


# --- one clause -------------------------------------------------------------------------

#: Markers before a time: "since" points back; the others follow the clause's tense.
_SINCE = re.compile(
    r"\b(?P<word>since|from|as of|starting|beginning|effective)\s+(?:(?:from|on|in|the)\s+)*"
    r"|(?P<zh>自从|从|自)\s*",
    re.I,
)
_UNTIL = re.compile(
    r"\b(?:until|till|til|up\s+until|up\s+to|(?P<through>through|thru))\s+"
    r"(?:(?P<end>the\s+end\s+of)\s+)?(?:(?:on|in|the)\s+)*|(?:直到|一直到|截止到|截至|到)\s*",
    re.I,
)
#: Chinese words after a time that make it a start (2023年以来) or an end (六月为止).
_ZH_SINCE_AFTER = re.compile(r"\s*(?:起|开始|以来)")
_ZH_UNTIL_AFTER = re.compile(r"\s*为止")
_PAST = re.compile(
    r"\b(?:was|were|had|did|got|began|left|went|came|became|bought|met|took|made|quit|sold|"
    r"found|built|ago|used to|have been|has been|\w{3,}ed)\b|了|过|已经|曾",
    re.I,
)
_FUTURE = re.compile(
    r"\b(?:will|going to|gonna|plan(?:ning)? to|about to|next|upcoming|soon|booked|"
    r"scheduled|planned)\b|'ll\b|要|将|会|打算|准备|计划|下个|下周|明年",
    re.I,
)
#: Words of a start, end or move: a month or year without a marker counts only with one.
_CHANGE = re.compile(
    r"\b(?:start|begin|began|begun|mov|relocat|join|left|leav|quit|retir|graduat|marr|divorc|"
    r"born|due|finish|end|switch|became|become|got|get|went|go|return|arriv|transfer|hired|"
    r"promot|engag|pregnan|adopt|open|clos|launch|sign|expir)\w*|搬|开始|入学|上学|毕业|结婚|"
    r"离婚|出生|入职|离职|辞职|退休|换|转|怀孕|开学|以来|起",
    re.I,
)
_RECURRING = re.compile(
    r"\b(?:every|each|birthdays?|anniversar(?:y|ies)|weekly|monthly|yearly|annually|usually|"
    r"always)\b|每|生日|纪念日",
    re.I,
)


def _lean(text: str) -> Lean:
    """Which way a time without a year points: back in a past-tense clause, else forward."""
    return "past" if _PAST.search(text) and not _FUTURE.search(text) else "future"


def _marked(
    marker: re.Pattern[str], text: str, now: datetime, lean: Lean
) -> tuple[_Span, re.Match[str], re.Match[str]] | None:
    """The first time right after a ``marker``: (its span, its match, the marker's match)."""
    for found in marker.finditer(text):
        since = found.groupdict().get("word", "") or ""
        toward: Lean = "past" if since.lower() == "since" or found.groupdict().get("zh") else lean
        hit = _first(text, now, toward, at=found.end())
        if hit is not None:
            return hit[0], hit[1], found
    return None


def fact_time(text: str, said_at: datetime) -> FactTime | None:
    """When the fact one clause states holds, relative to when it was said (pure).

    Args:
        text: The clause (or a short message) stating the fact.
        said_at: When it was said (naive datetimes are taken as UTC).

    Returns:
        The times it names, or ``None`` when it names none.

    Raises:
        TypeError: when ``text`` is not a string or ``said_at`` not a datetime.

    Example:
        >>> from datetime import datetime, timezone
        >>> said = datetime(2026, 7, 10, tzinfo=timezone.utc)
        >>> fact_time("Mia starts school in September", said).valid_from.date().isoformat()
        '2026-09-01'
        >>> fact_time("I'm in Rome until June", said).valid_until.date().isoformat()
        '2027-06-01'
        >>> fact_time("我上个月搬到了里斯本", said).valid_from.date().isoformat()
        '2026-06-01'
        >>> fact_time("I've lived here since 2023", said).valid_from.year
        2023
    """
    if not isinstance(text, str):
        raise TypeError(f"fact_time reads text, got {type(text).__name__}")
    if not isinstance(said_at, datetime):
        raise TypeError(f"said_at must be a datetime, got {said_at!r}")
    if _RECURRING.search(text):
        return None
    now = utc(said_at)
    lean = _lean(text)
    start: datetime | None = None
    end: datetime | None = None
    words: list[str] = []
    if since := _marked(_SINCE, text, now, lean):
        span, match, marker = since
        start = span.start
        words.append(text[marker.start() : match.end()].strip())
    if until := _marked(_UNTIL, text, now, lean):
        span, match, marker = until
        through = bool(marker["through"] or marker["end"])
        end = span.end if through or span.unit == "day" else span.start
        words.append(text[marker.start() : match.end()].strip())
    if start is None and end is None:
        hit = _first(text, now, lean)
        if hit is None:
            return None
        span, match = hit
        after = text[match.end() :]
        words.append(match.group(0).strip())
        if _ZH_UNTIL_AFTER.match(after):  # 六月为止
            end = span.end if span.unit == "day" else span.start
        elif _ZH_SINCE_AFTER.match(after):  # 2023年以来
            start = span.start
        elif not span.relative and span.unit != "day" and not _CHANGE.search(text):
            return None  # "my favourite month is May": no start, end or move
        elif span.end <= _day(now).start or span.unit not in ("day", "week"):
            start = span.start  # the past, or a longer period: when it began or begins
        elif span.unit == "day" and span.start > now and _CHANGE.search(text):
            start = span.start  # "starts at Google on Monday": from then on
        else:
            start, end = span.start, span.end  # a day or week now or ahead: when it holds
    if start is not None and end is not None and end < start:
        end = start
    return FactTime(start, end, " ... ".join(words))


# --- a fact within its message --------------------------------------------------------

_CLAUSE_SPLIT = re.compile(
    r"(?<=[.!?;。！？；\n])\s*|,\s*(?:and|but|so)\s+|\s+(?:and|but)\s+(?=(?:I|we|my|our)\b)|"
    r"[，,]\s*(?=我)",
    re.I,
)
_WORD = re.compile(r"[A-Za-z]{3,}|[\u4e00-\u9fff]")


def _words_of(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def clause_time(message: str, content: str, said_at: datetime) -> FactTime | None:
    """When the fact ``content`` holds, read from the clause of ``message`` that states
    it (the clause sharing most words with it), or ``None``.

    A clause that is only a time ("Since 2023, I live in Lisbon") lends it to the next.

    Example:
        >>> from datetime import datetime, timezone
        >>> said = datetime(2026, 12, 4, tzinfo=timezone.utc)
        >>> msg = "I moved to Lisbon last month and I'm allergic to peanuts."
        >>> clause_time(msg, "moved to Lisbon", said).valid_from.date().isoformat()
        '2026-11-01'
        >>> clause_time(msg, "allergic to peanuts", said) is None
        True
    """
    clauses = [c for c in _CLAUSE_SPLIT.split(message) if c and c.strip()]
    wanted = _words_of(content)
    if not clauses or not wanted:
        return None
    best = max(range(len(clauses)), key=lambda i: (len(wanted & _words_of(clauses[i])), -i))
    if not wanted & _words_of(clauses[best]):
        return None
    found = fact_time(clauses[best], said_at)
    if found is None and best > 0:
        previous = clauses[best - 1]
        lent = fact_time(previous, said_at)
        if lent is not None and len(_words_of(previous) - _words_of(lent.expression)) <= 1:
            return lent
    return found
