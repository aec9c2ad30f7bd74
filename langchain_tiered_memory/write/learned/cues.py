"""Word cues beside the embeddings: small language-aware signals the logistic
models weigh (pure; English and Chinese).

A cue is a 0/1 flag: whose words these are (``I``/``我``, a friend, a sister),
whether the clause is hypothetical, a request, quoted, a story or game, a
negation, a rejected plan, a joke; for a pair, whether the later statement
says something changed and what the two share. The weights come from the
labelled data, not from here.

Example:
    >>> clause_cues("If I won the lottery I'd buy a boat")[CLAUSE_CUES.index("hypothetical")]
    1.0
    >>> clause_cues("我朋友是空姐")[CLAUSE_CUES.index("other_person")]
    1.0
"""

from __future__ import annotations

import re

__all__ = ["CLAUSE_CUES", "PAIR_CUES", "clause_cues", "is_ending", "pair_cues"]

_PATTERNS: dict[str, re.Pattern[str]] = {
    "first_person": re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|my|me|mine|we|we're|our|us)\b|我"),
    "own_family": re.compile(
        r"\b(?:my|our) (?:wife|husband|partner|son|daughter|kids?|children|boyfriend|girlfriend|"
        r"fianc[ée]e?|baby|twins|dog|cat|puppy|eldest|youngest)\b|"
        r"我(?:老婆|老公|爱人|儿子|女儿|孩子|男朋友|女朋友|家)"
    ),
    "other_person": re.compile(
        r"\b(?:my|our|a|the) (?:friend|sister|brother|mum|mom|mother|dad|father|cousin|"
        r"neighbou?r|colleague|co-?worker|boss|flatmate|roommate|uncle|aunt|nephew|niece|"
        r"grandma|grandad|grandpa|grandmother|grandfather|brother-in-law|sister-in-law|"
        r"doctor|therapist|trainer|teacher|guy|girl|woman|man)\b|\b(?:someone|somebody|he|she|"
        r"they|his|her)\b|我(?:朋友|同事|表哥|表姐|表弟|表妹|邻居|妈|爸|姐姐|哥哥|弟弟|妹妹|"
        r"闺蜜|老板|同学)|有人|他|她"
    ),
    "hypothetical": re.compile(
        r"\b(?:if|would|imagine|suppose|supposing|pretend|assuming|could|might|maybe|"
        r"perhaps|someday|one day|what if|wish)\b|如果|要是|假如|假设|的话|假装|也许|可能"
    ),
    "request": re.compile(
        r"^(?:please |can you |could you |would you )?(?:write|give|help|tell|explain|"
        r"translate|proofread|draft|recommend|suggest|list|make|summari[sz]e|convert|fix|"
        r"let's|lets|plan)\b|^(?:请|帮我|给我|写|推荐|翻译|解释|我们来|帮)"
    ),
    "quoted": re.compile(r"['\"“”‘’「」『』]\s*\w|:\s*['\"“‘]|说[:：]|[:：]\s*['\"“‘]"),
    "story_game": re.compile(
        r"\b(?:story|novel|character|game|role-?play|screenplay|poem|limerick|campaign|"
        r"fiction|pretend|scene)\b|小说|故事|角色|游戏|扮演|剧本|诗"
    ),
    "negation": re.compile(
        r"\b(?:not|no|never|isn't|aren't|wasn't|don't|didn't|doesn't|nope|nah)\b|不是|没有|没|不会"
    ),
    "rejected": re.compile(
        r"\b(?:decided against|but no|not for me|thought about|considered|gave up on)\b|"
        r"算了|本来想|才不"
    ),
    "joke": re.compile(r"\b(?:lol|haha+|lmao|obviously|basically|clearly|sure)\b|哈哈|开玩笑"),
    "number": re.compile(r"\d"),
    "says": re.compile(r"\b(?:says?|said|told|tells|keeps saying|reckons)\b|说|告诉"),
}

CLAUSE_CUES: tuple[str, ...] = tuple(_PATTERNS)

_CHANGE = re.compile(
    r"\b(?:now|new|switched|moved|instead|from now on|these days|any ?more|finally|just got|"
    r"since|started|became|made me|promoted|changed|turned|officially)\b|"
    r"现在|新|换|改|搬|已经|开始|升"
)
_TOKEN = re.compile(r"[a-z0-9@.]+|[\u4e00-\u9fff]")
_STOP = {
    "i",
    "my",
    "me",
    "the",
    "a",
    "an",
    "is",
    "to",
    "in",
    "at",
    "of",
    "and",
    "we",
    "our",
    "我",
    "的",
    "了",
    "是",
    "在",
}

# A later statement that ends something: general verbs and phrases of ending,
# leaving, dying, splitting up and cancelling ("cancelled", "passed away", "分手",
# "走了"), not one sentence at a time.
_ENDING = re.compile(
    r"\b(?:cancell?(?:ed|ing)|quit(?:ting)?|stopped|stopping|had to (?:stop|give up)|"
    r"no longer|not any ?more|no more(?! than)|gave up|given up|giving up|left|sold|ended|"
    r"broke up|broken up|"
    r"split(?:ting)? up|split with|separated|called it (?:off|quits)|dumped|handed in|"
    r"moved out|over now|died|passed away|passed on|put (?:him|her|them|it|\w+) "
    r"(?:down|to sleep)|rehomed|re-homed|gave (?:\w+ )?away|got rid of|written off|scrapped|"
    r"resigned|retired|laid off|made redundant|dropped out|packed in|came off|"
    r"(?:took|taken) (?:me )?off|unsubscribed|closed my|withdrew|didn'?t renew|lapsed?)\b|"
    r"不再|取消|退了|辞职|离职|分手|分了|分开|甩了|卖了|卖掉|到期|没续|走了|去世|过世|死了|"
    r"没了|送人|送走|停了|戒了|退订|注销|裁了|裁员|"
    r"不(?:吃|用|去|做|干|玩|练|上|跑|养)[^，。,.!！?？]{0,6}了"
)

PAIR_CUES: tuple[str, ...] = ("change_word", "shared_words", "both_numbers", "ending_word")


def clause_cues(text: str) -> list[float]:
    """The :data:`CLAUSE_CUES` flags of ``text``."""
    lowered = text.lower().strip()
    return [1.0 if p.search(lowered) else 0.0 for p in _PATTERNS.values()]


def pair_cues(current: str, later: str) -> list[float]:
    """The :data:`PAIR_CUES` of a current fact and a later statement.

    Example:
        >>> pair_cues("home_city: lives in Leeds", "moved to York now")
        [1.0, 0.0, 0.0, 0.0]
        >>> pair_cues("pet:hamster: hamster is called Nibbles", "the hamster passed away")
        [0.0, 0.333, 0.0, 1.0]
    """
    a = {t for t in _TOKEN.findall(current.lower()) if t not in _STOP}
    b = {t for t in _TOKEN.findall(later.lower()) if t not in _STOP}
    shared = len(a & b) / max(1, min(len(a), len(b)))
    return [
        1.0 if _CHANGE.search(later.lower()) else 0.0,
        round(shared, 3),
        1.0 if re.search(r"\d", current) and re.search(r"\d", later) else 0.0,
        1.0 if _ENDING.search(later.lower()) else 0.0,
    ]


def says_change(text: str) -> bool:
    """Whether ``text`` says something changed or ended (a change or ending word).

    Example:
        >>> says_change("Airline moved me to the 5th"), says_change("My dentist is tomorrow")
        (True, False)
    """
    lowered = text.lower()
    return bool(_CHANGE.search(lowered) or _ENDING.search(lowered))


def is_ending(text: str) -> bool:
    """Whether ``text`` only says something ended ("Cancelled PureGym", "健身卡到期了"):
    an ending word, and no change word or number that would make it a new value
    ("辞职了，现在自己开了家咖啡店" states the new one).

    Example:
        >>> is_ending("Cancelled PureGym"), is_ending("Joined PureGym")
        (True, False)
        >>> is_ending("quit the bank, I run a cafe now")
        False
        >>> [is_ending(t) for t in ("we broke up last week", "the hamster passed away",
        ...     "had to stop volunteering", "we rehomed the rabbit", "came off sertraline")]
        [True, True, True, True, True]
        >>> [is_ending(t) for t in ("我们分手了", "猫走了", "药停了", "不去健身房了", "搬到临港了")]
        [True, True, True, True, False]
        >>> is_ending("gone vegan this year"), is_ending("no more than two coffees a day")
        (False, False)
    """
    lowered = text.lower()
    return (
        bool(_ENDING.search(lowered))
        and not _CHANGE.search(lowered)
        and not re.search(r"\d", lowered)
    )
