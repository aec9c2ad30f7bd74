from __future__ import annotations

from datetime import datetime, timezone

import pytest

from langchain_tiered_memory.recall.time_expressions import TimeWindow, query_window, time_match

# a Sunday afternoon
NOW = datetime(2023, 8, 20, 15, 30, tzinfo=timezone.utc)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I buy on 3 June, 2023?", "2023-06-03", "2023-06-04"),
        ("What happened on May 3rd?", "2023-05-03", "2023-05-04"),
        ("Any news from October 13, 2022?", "2022-10-13", "2022-10-14"),
        ("What did we decide on 2023-02-28?", "2023-02-28", "2023-03-01"),
        ("Who did Maria meet on the 3rd of June 2023?", "2023-06-03", "2023-06-04"),
        ("What did Mel paint in July 2023?", "2023-07-01", "2023-08-01"),
        ("Where did we go in May?", "2023-05-01", "2023-06-01"),
        ("What did I plan in December?", "2022-12-01", "2023-01-01"),  # latest December
        ("What did I read in early March 2022?", "2022-03-01", "2022-04-01"),
        ("How often did I swim in 2022?", "2022-01-01", "2023-01-01"),
        ("What did I cook yesterday?", "2023-08-19", "2023-08-20"),
        ("What did I say last week?", "2023-08-07", "2023-08-14"),
        ("Where was I last weekend?", "2023-08-11", "2023-08-14"),
        ("What did I buy last month?", "2023-07-01", "2023-08-01"),
        ("Where did I travel last year?", "2022-01-01", "2023-01-01"),
        ("What did I eat last Friday?", "2023-08-18", "2023-08-19"),
        ("What did I eat last Sunday?", "2023-08-13", "2023-08-14"),
        ("Where did we go last summer?", "2022-06-01", "2022-09-01"),  # this one isn't over
        ("What did I do last May?", "2023-05-01", "2023-06-01"),
        ("What did I start three days ago?", "2023-08-16", "2023-08-19"),
        ("Which film did I see two weeks ago?", "2023-08-03", "2023-08-10"),
        ("What did I order a couple of months ago?", "2023-06-10", "2023-07-01"),
        ("What did I get two weeks before August 11, 2023?", "2023-07-24", "2023-08-12"),
        ("What happened the week before May 25, 2023?", "2023-05-18", "2023-05-26"),
        ("What did I do before April 10, 2023?", "2023-03-27", "2023-04-11"),
        ("What changed after 1 March 2023?", "2023-03-01", "2023-03-31"),
    ],
)
def test_query_windows(query: str, start: str, end: str) -> None:
    window = query_window(query, now=NOW)
    assert window is not None, query
    assert (window.start, window.end) == (day(start), day(end)), window.expression


@pytest.mark.parametrize(
    "query",
    [
        "What is my dog called?",
        "May I ask what my allergies are?",  # "may" the verb
        "Can you recommend a restaurant?",
        "How many days are in a week?",
        "Recommend a restaurant for tonight.",
        "What should I cook this weekend?",
        "What's on my plate today?",
        "What did I say about the march for climate?",
        "",
    ],
)
def test_queries_without_a_time_expression(query: str) -> None:
    assert query_window(query, now=NOW) is None


def test_a_naive_now_is_utc() -> None:
    window = query_window("what did I do yesterday?", now=datetime(2023, 8, 20, 9))
    assert window is not None and window.start == day("2023-08-19")


def test_time_match_is_one_inside_and_decays_outside() -> None:
    window = TimeWindow(day("2023-07-01"), day("2023-08-01"), "in July 2023")
    assert window.days == 31
    assert time_match(day("2023-07-31"), window) == 1.0
    assert time_match(day("2023-07-01"), window) == 1.0
    before = time_match(day("2023-06-15"), window)
    after = time_match(day("2023-08-16"), window)
    assert 0 < before < after < 1  # told after it happened is likelier than before
    assert time_match(day("2022-07-15"), window) < 0.01
    one_day = TimeWindow(day("2023-06-03"), day("2023-06-04"), "on 3 June")
    assert time_match(day("2023-06-04"), one_day) == pytest.approx(1.0)  # 0 days after
    assert time_match(day("2023-06-10"), one_day) == pytest.approx(0.5)  # 6 days: one half-life
