"""The scripted multi-session conversation the demo replays.

Early on the user states facts (a peanut allergy, a trip date, a food
preference that later changes); small talk and errands follow for dozens of
turns; the last session asks questions that need those facts.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LATE_QUESTIONS", "SESSIONS", "DemoTurn"]


@dataclass(frozen=True)
class DemoTurn:
    """A scripted user message and the scripted reply used while replaying."""

    user: str
    reply: str


_SMALL_TALK = [
    ("Morning! Coffee first, then emails.", "Good plan. Anything I can help with today?"),
    (
        "Can you draft a polite reply declining a meeting on Thursday?",
        "Sure: 'Thanks for the invite - I can't make Thursday, could we find another slot?'",
    ),
    ("What's a good name for a grey cat?", "Maybe Ash, Smokey or Pebble."),
    ("Remind me what a haiku's syllable pattern is.", "Five, seven, five syllables."),
    ("I finished the quarterly report, finally.", "Congratulations, that's a big one done."),
    ("Any tips for sleeping better?", "Keep a regular schedule and avoid screens before bed."),
    ("Translate 'good evening' into Italian.", "'Buonasera'."),
    ("I watched a documentary about octopuses last night.", "They are remarkable animals."),
    ("How many minutes are in a week?", "10,080 minutes."),
    (
        "Suggest a stretch for my back after sitting all day.",
        "Try a cat-cow stretch for a minute or two.",
    ),
    ("My colleague Priya got promoted today.", "Please pass on my congratulations to Priya."),
    ("What's the capital of Australia?", "Canberra."),
    (
        "I need a birthday card message for my uncle.",
        "'Happy birthday! Wishing you a year full of good surprises.'",
    ),
    ("Is it going to rain this weekend, do you think?", "I can't see forecasts, sorry."),
    ("Give me a quick pasta idea for tonight.", "Garlic, olive oil, chilli flakes and parsley."),
    ("I started reading a mystery novel set in Edinburgh.", "Nice - who is the author?"),
    (
        "Explain compound interest in one sentence.",
        "You earn interest on your interest as well as on the original amount.",
    ),
    ("My bike has a flat tyre again.", "Maybe it's time for puncture-resistant tyres."),
    ("What's 15% of 240?", "36."),
    ("Recommend a podcast about history.", "Try 'The Rest Is History'."),
    ("I cleaned the whole flat today.", "That must feel good."),
    ("How do I say thank you in Japanese?", "'Arigatou gozaimasu'."),
    (
        "Write a two-line poem about autumn.",
        "Leaves let go of summer's hand, / and gold comes down.",
    ),
    ("I'm thinking of learning to play the ukulele.", "It's a friendly first instrument."),
    (
        "Summarise the plot of Hamlet in one line.",
        "A prince avenges his father's murder and nearly everyone dies.",
    ),
]

SESSIONS: list[tuple[str, list[DemoTurn]]] = [
    (
        "Session 1 - Monday 3 March",
        [
            DemoTurn(
                "Hi! I'm Maya. I'm planning a trip and could use some help.",
                "Hi Maya, happy to help. Where are you going?",
            ),
            DemoTurn(
                "Important: I'm allergic to peanuts, so never suggest anything with peanuts.",
                "Understood - no peanuts, ever.",
            ),
            DemoTurn(
                "My trip to Kyoto is on 14 April; the flight leaves at 9:40 from Lisbon.",
                "Kyoto on 14 April, 9:40 from Lisbon. Noted.",
            ),
            DemoTurn(
                "I love really spicy food, the hotter the better.",
                "Great, I'll keep spicy options in mind.",
            ),
            DemoTurn("I'll be travelling with my brother Leo.", "Nice, travelling with Leo."),
            *[DemoTurn(u, r) for u, r in _SMALL_TALK[:10]],
        ],
    ),
    (
        "Session 2 - Saturday 15 March",
        [
            *[DemoTurn(u, r) for u, r in _SMALL_TALK[10:20]],
            DemoTurn(
                "Actually, I no longer like spicy food - mild dishes from now on, please.",
                "Got it: mild dishes from now on.",
            ),
            *[DemoTurn(u, r) for u, r in _SMALL_TALK[20:]],
            *[DemoTurn(u, r) for u, r in _SMALL_TALK[:10]],
        ],
    ),
    (
        "Session 3 - Tuesday 8 April",
        [DemoTurn(u, r) for u, r in _SMALL_TALK[5:25]],
    ),
]

#: Asked in the last session; each needs a fact from the first sessions.
LATE_QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Can you suggest a snack for my flight?", ("peanut",)),
    ("When is my trip again, and what time is the flight?", ("14 April", "9:40")),
    ("What kind of dishes should you recommend to me now?", ("mild",)),
]
