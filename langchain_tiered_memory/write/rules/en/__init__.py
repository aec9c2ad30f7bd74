"""English: the rules by domain, in the order they run (:data:`ENGLISH`).

* :mod:`.health` - allergies, intolerances, conditions, medication, diets;
* :mod:`.people` - family and pets by name;
* :mod:`.identity` - name, age, birthday, nationality;
* :mod:`.home` - where the user lives, a completed move;
* :mod:`.work` - job and employer;
* :mod:`.answers` - how to answer (language, format, length, units, time zone);
* :mod:`.plans` - dated events, moves, trips, goals, budgets, sizes, contacts;
* :mod:`.likes` - likes and hobbies, then the fallbacks;
* :mod:`.endings` - what stops holding ("not ... any more"), a birth.

The word lists are in :mod:`.words`, the helpers that cut an object out of a
clause in :mod:`.objects`.

Example:
    >>> ENGLISH.name, ENGLISH.script is None, len(ENGLISH.rules) > 100
    ('en', True, True)
"""

from __future__ import annotations

from langchain_tiered_memory.write.rules.en import (
    answers,
    endings,
    health,
    home,
    identity,
    likes,
    people,
    plans,
    work,
)
from langchain_tiered_memory.write.rules.engine import Language

__all__ = ["ENGLISH"]

#: English, every rule in the order it runs (the completed move last).
ENGLISH = Language(
    "en",
    rules=(
        *health.RULES,
        *people.RULES,
        *identity.RULES,
        *home.RULES,
        *work.RULES,
        *answers.RULES,
        *plans.RULES,
        *likes.RULES,
        *endings.RULES,
        home.MOVED,
    ),
)
