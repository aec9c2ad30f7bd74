"""Time expressions in a query ("last May", "on 3 June, 2023", "two weeks ago") as a date window.

Recall uses the window as a soft signal: records written inside it score 1,
records outside score less the further away they are (:func:`time_match`), so
a question about "the trip in July 2023" lifts what was said in July 2023
without hiding the rest. Relative expressions ("last week", "three days
ago") are measured from ``now``, the time of the question; explicit dates
without a year take the latest such date not after ``now``.

Recognised (English, case-insensitive): ``yesterday``, ``the day before
yesterday``; ``last``/``past``/``previous`` ``week|weekend|month|year``, a
weekday or a season; ``last`` + a month; ``N days|weeks|months|years ago`` (digits or
words up to twelve, ``a``/``an``/``a couple of``/``a few``);
dates like ``May 3, 2023``, ``3 June 2023``, ``May 3rd``, ``2023-05-03``;
``in|during May [2023]``, ``in 2023``, ``early|mid|late May``; and a
window shifted around a date: ``before|after <date>``, ``the week before
<date>``, ``two weeks after <date>``.

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2023, 8, 20, 15, 0, tzinfo=timezone.utc)
    >>> w = query_window("What did Mel paint in July 2023?", now=now)
    >>> w.start.date().isoformat(), w.end.date().isoformat()
    ('2023-07-01', '2023-08-01')
    >>> w = query_window("Where did I go two weeks ago?", now=now)
    >>> w.start.date().isoformat(), w.end.date().isoformat()
    ('2023-08-03', '2023-08-10')
    >>> query_window("What is my dog called?", now=now) is None
    True
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = [
    "COUNT_PATTERN",
    "MONTHS",
    "MONTH_NAMES",
    "MONTH_PATTERN",
    "NUMBERS",
    "WEEKDAYS",
    "TimeWindow",
    "add_months",
    "parse_count",
    "query_window",
    "time_match",
]

_MONTH_WORDS = (
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sep", "sept"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
)
#: English month names and abbreviations -> month number (1-12): the one month list
#: (the write rules, the summariser and the ranker take their month words from here).
MONTHS = {name: i for i, names in enumerate(_MONTH_WORDS, start=1) for name in names}
#: The full month names, January first.
MONTH_NAMES: tuple[str, ...] = tuple(names[0] for names in _MONTH_WORDS)
#: Weekday names -> ``datetime.weekday()`` (Monday 0).
WEEKDAYS = {
    name: i
    for i, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
#: Counts written as words ("a couple of" -> 2), for "three weeks ago".
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}

#: A regex matching a month name (:data:`MONTHS`); ``COUNT_PATTERN`` a count.
MONTH_PATTERN = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
COUNT_PATTERN = r"(?:\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?:day|week|month|year)s?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"

# "May 3, 2023", "May 3rd", "3 June, 2023", "3rd of June 2023", "2023-05-03"
_DATE = (
    rf"(?:(?P<m1>{MONTH_PATTERN})\s+(?P<d1>{_DAY})(?:,?\s+(?P<y1>{_YEAR}))?"
    rf"|(?P<d2>{_DAY})\s+(?:of\s+)?(?P<m2>{MONTH_PATTERN}),?(?:\s+(?P<y2>{_YEAR}))?"
    rf"|(?P<y3>{_YEAR})-(?P<m3>\d{{1,2}})-(?P<d3>\d{{1,2}}))"
)
_DATE_RE = re.compile(rf"\b{_DATE}\b", re.IGNORECASE)
_SHIFT_RE = re.compile(
    rf"\b(?:(?:the\s+)?(?P<count>{COUNT_PATTERN})\s+(?P<unit>{_UNIT})\s+|the\s+(?P<unit1>day|week|"
    rf"weekend|month)\s+)?(?P<dir>before|after|prior\s+to|since)\s+{_DATE}\b",
    re.IGNORECASE,
)
_AGO_RE = re.compile(rf"\b(?P<count>{COUNT_PATTERN})\s+(?P<unit>{_UNIT})\s+ago\b", re.IGNORECASE)
_MONTH_YEAR_RE = re.compile(
    rf"\b(?:(?P<part>early|mid|late)[\s-]+)?(?P<m>{MONTH_PATTERN})(?:,?\s+(?P<y>{_YEAR}))?\b",
    re.IGNORECASE,
)
_IN_MONTH_RE = re.compile(
    rf"\b(?:in|during|since|of|by|last|this|early|mid|late|through)[\s-]+(?:(?:early|mid|late)"
    rf"[\s-]+)?(?P<m>{MONTH_PATTERN})\b(?:,?\s+(?P<y>{_YEAR}))?",
    re.IGNORECASE,
)
_YEAR_RE = re.compile(rf"\b(?:in|during|of|since|by)\s+(?P<y>{_YEAR})\b", re.IGNORECASE)
_LAST_RE = re.compile(
    r"\b(?:last|past|previous)\s+(?P<what>week(?:end)?|month|year|"
    + "|".join(WEEKDAYS)
    + "|"
    + "|".join(_SEASONS)
    + r")\b",
    re.IGNORECASE,
)
# Only expressions that point back: "this weekend", "today" or "tonight" in a
# request are mostly about plans ("a dinner for tonight"), and lifting what was
# said today would push older, relevant memories out; recency covers today.
_SIMPLE = {
    "the day before yesterday": (-2, 1),
    "yesterday": (-1, 1),
}
_SIMPLE_RE = re.compile(
    r"\b(" + "|".join(sorted(_SIMPLE, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


@dataclass(frozen=True)
class TimeWindow:
    """A half-open window ``[start, end)`` a query refers to.

    Attributes:
        start: Its first instant (UTC).
        end: The instant after its last one (UTC).
        expression: The words it was read from.
    """

    start: datetime
    end: datetime
    expression: str

    @property
    def days(self) -> float:
        """Its length in days."""
        return (self.end - self.start).total_seconds() / 86400.0


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)


def _day_start(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=timezone.utc)


def add_months(at: datetime, months: int) -> datetime:
    """``at`` moved by ``months`` calendar months (the day clipped to the month's length).

    Example:
        >>> add_months(datetime(2023, 1, 31, tzinfo=timezone.utc), 1).date().isoformat()
        '2023-02-28'
    """
    index = at.year * 12 + at.month - 1 + months
    year, month = divmod(index, 12)
    day = min(at.day, calendar.monthrange(year, month + 1)[1])
    return at.replace(year=year, month=month + 1, day=day)


def parse_count(text: str) -> int:
    """A count matched by :data:`COUNT_PATTERN` as a number.

    Example:
        >>> parse_count("a couple of"), parse_count("12")
        (2, 12)
    """
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else NUMBERS[text]


def _unit_delta(unit: str, n: int, at: datetime, sign: int) -> datetime:
    unit = unit.lower().rstrip("s")
    if unit == "day":
        return at + timedelta(days=sign * n)
    if unit == "week":
        return at + timedelta(weeks=sign * n)
    if unit == "month":
        return add_months(at, sign * n)
    return add_months(at, sign * 12 * n)


def _month_number(text: str) -> int:
    return MONTHS[text.lower().rstrip(".")]


def _latest_month(month: int, now: datetime) -> int:
    """The year of the latest ``month`` that has begun by ``now``."""
    return now.year if month <= now.month else now.year - 1


def _date_from(match: re.Match[str], now: datetime) -> datetime | None:
    g = match.groupdict()
    try:
        if g.get("m3"):
            return datetime(int(g["y3"]), int(g["m3"]), int(g["d3"]), tzinfo=timezone.utc)
        month_text, day_text, year_text = (
            (g["m1"], g["d1"], g["y1"]) if g.get("m1") else (g["m2"], g["d2"], g["y2"])
        )
        month = _month_number(month_text)
        day = int(re.sub(r"\D", "", day_text))
        if year_text:
            return datetime(int(year_text), month, day, tzinfo=timezone.utc)
        candidate = datetime(now.year, month, day, tzinfo=timezone.utc)
        return candidate if candidate <= now else candidate.replace(year=now.year - 1)
    except (KeyError, ValueError):
        return None


def _shifted(match: re.Match[str], now: datetime) -> TimeWindow | None:
    anchor = _date_from(match, now)
    if anchor is None:
        return None
    direction = match["dir"].lower()
    before = direction.startswith(("before", "prior"))
    if match["count"] and match["unit"]:
        # "two weeks before May 3": about that point, give or take a few days
        # "two weeks before May 3": from about then up to May 3 (it is often
        # told on the day named: "I got a puppy two weeks ago")
        n = parse_count(match["count"])
        point = _unit_delta(match["unit"], n, anchor, -1 if before else 1)
        slack = timedelta(days=max(1, round(0.25 * abs((point - anchor).days))))
        start, end = (
            (point - slack, anchor + timedelta(days=1))
            if before
            else (anchor, point + slack + timedelta(days=1))
        )
    elif match["unit1"]:
        span = {"day": 1, "week": 7, "weekend": 3, "month": 30}[match["unit1"].lower()]
        start, end = (
            (anchor - timedelta(days=span), anchor + timedelta(days=1))
            if before
            else (anchor, anchor + timedelta(days=span + 1))
        )
    elif before:
        start, end = anchor - timedelta(days=14), anchor + timedelta(days=1)
    else:
        start, end = anchor, anchor + timedelta(days=30)
    return TimeWindow(start, end, match.group(0))


def _last(what: str, now: datetime) -> tuple[datetime, datetime]:
    """The window of "last <what>" (a week, weekend, month, year, weekday or season)."""
    today = _day_start(now)
    what = what.lower()
    if what == "week":
        monday = today - timedelta(days=today.weekday())
        return monday - timedelta(days=7), monday
    if what == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if saturday + timedelta(days=2) > today:  # in this weekend: the one before
            saturday -= timedelta(days=7)
        return saturday - timedelta(days=1), saturday + timedelta(days=2)  # Friday to Sunday
    if what == "month":
        first = today.replace(day=1)
        return add_months(first, -1), first
    if what == "year":
        first = today.replace(month=1, day=1)
        return first.replace(year=first.year - 1), first
    if what in WEEKDAYS:
        back = (today.weekday() - WEEKDAYS[what]) % 7 or 7
        day = today - timedelta(days=back)
        return day, day + timedelta(days=1)
    month, length = _SEASONS[what]
    start = _month_start(now.year, month)
    while add_months(start, length) > today:  # the latest season that is over
        start = start.replace(year=start.year - 1)
    return start, add_months(start, length)


def query_window(query: str, *, now: datetime) -> TimeWindow | None:
    """The date window a query's time expression points to, or ``None``.

    The most specific expression wins: a date shifted by *before*/*after*,
    then a full date, *N units ago*, *last/this* + unit, *in <month> [year]*,
    *in <year>*, then *yesterday*. Words about now or the near future
    (*today*, *tonight*, *this weekend*) give no window: they are mostly plans.

    Example:
        >>> from datetime import datetime, timezone
        >>> now = datetime(2023, 6, 10, tzinfo=timezone.utc)
        >>> w = query_window("What did I buy on 3 June, 2023?", now=now)
        >>> w.start.isoformat(), w.days
        ('2023-06-03T00:00:00+00:00', 1.0)
        >>> query_window("What did we do last May?", now=now).start.date().isoformat()
        '2023-05-01'
        >>> query_window("What happened the week before May 25, 2023?", now=now).days
        8.0
    """
    now = _utc(now)
    if (m := _SHIFT_RE.search(query)) and (window := _shifted(m, now)):
        return window
    if m := _DATE_RE.search(query):
        day = _date_from(m, now)
        if day is not None:
            return TimeWindow(day, day + timedelta(days=1), m.group(0))
    if m := _AGO_RE.search(query):
        n = parse_count(m["count"])
        point = _day_start(_unit_delta(m["unit"], n, now, -1))
        unit = m["unit"].lower().rstrip("s")
        slack = {"day": 1, "week": 3, "month": 10, "year": 60}[unit]
        if unit == "day" and n <= 2:
            slack = 0
        return TimeWindow(
            point - timedelta(days=slack), point + timedelta(days=slack + 1), m.group(0)
        )
    if m := _LAST_RE.search(query):
        start, end = _last(m["what"], now)
        return TimeWindow(start, end, m.group(0))
    if m := _IN_MONTH_RE.search(query):
        month = _month_number(m["m"])
        year = int(m["y"]) if m["y"] else _latest_month(month, now)
        start = _month_start(year, month)
        return TimeWindow(start, add_months(start, 1), m.group(0))
    if m := _YEAR_RE.search(query):
        start = datetime(int(m["y"]), 1, 1, tzinfo=timezone.utc)
        return TimeWindow(start, start.replace(year=start.year + 1), m.group(0))
    # a month with its year; a bare month name ("may") is too often a verb
    if (m := _MONTH_YEAR_RE.search(query)) and m["y"]:
        start = _month_start(int(m["y"]), _month_number(m["m"]))
        return TimeWindow(start, add_months(start, 1), m.group(0))
    if m := _SIMPLE_RE.search(query):
        offset, length = _SIMPLE[m.group(1).lower()]
        start = _day_start(now) + timedelta(days=offset)
        return TimeWindow(start, start + timedelta(days=length), m.group(0))
    return None


def time_match(at: datetime, window: TimeWindow, *, after_days: float | None = None) -> float:
    """How well a record written at ``at`` matches ``window``: 1 inside, less outside.

    Outside the window the score halves every ``max(3, length / 2)`` days
    before it and every ``after_days`` (default twice that) after it: things
    are often told a little after they happened ("last week I ...").

    Example:
        >>> from datetime import datetime, timezone
        >>> w = TimeWindow(datetime(2023, 5, 1, tzinfo=timezone.utc),
        ...                datetime(2023, 6, 1, tzinfo=timezone.utc), "in May 2023")
        >>> time_match(datetime(2023, 5, 20, tzinfo=timezone.utc), w)
        1.0
        >>> round(time_match(datetime(2023, 6, 16, tzinfo=timezone.utc), w), 2)
        0.72
        >>> round(time_match(datetime(2023, 4, 16, tzinfo=timezone.utc), w), 2)
        0.51
    """
    at = _utc(at)
    if window.start <= at < window.end:
        return 1.0
    half = max(3.0, window.days / 2)
    if at < window.start:
        days, scale = (window.start - at).total_seconds() / 86400.0, half
    else:
        days = (at - window.end).total_seconds() / 86400.0
        scale = after_days if after_days is not None else 2 * half
    return float(math.pow(0.5, days / scale))
