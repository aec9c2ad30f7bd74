"""What keeps a clause from becoming a fact: the words of non-facts (English and Chinese).

Questions, hypotheticals, role-play and fiction frames, sarcasm, hedges,
wishes, plans rejected; and the negations a message's merge prefers the
positive statement over.

Example:
    >>> is_question("Should I move to Berlin?"), is_question("Can you reply in Spanish")
    (True, False)
    >>> bool(HYPOTHETICAL.search("If I were allergic to nuts"))
    True
"""

from __future__ import annotations

import re

__all__ = [
    "DESIRE",
    "FRAME",
    "HEDGE",
    "HYPOTHETICAL",
    "NEGATED",
    "REJECTED",
    "REPORTED",
    "SARCASM",
    "ZH_QUESTION",
    "is_question",
    "not_the_users",
    "other_subject",
    "reported_from",
]

FRAME = re.compile(
    r"\bimagine (?:you(?:'re| are)|I(?:'m| am))\b|\bact as (?:a|an|my|if|though)\b|"
    r"\byou are (?:a|an|my) (?:[\w-]+ ){0,3}(?:assistant|expert|writer|consultant|coach|"
    r"teacher|tutor|character|bot)\b|\b(?:let'?s |we could )?role[- ]?play|\bpretend (?:that |"
    r"to be |you|I|we)|"
    r"\blet'?s pretend\b|\bplay a game where\b|\bin character\b|\bact as (?:if|though)\b|"
    r"\bmy character\b|\bthe (?:narrator|protagonist|main character|hero|heroine)\b|"
    r"\bin my (?:novel|story|book|script|screenplay|game|campaign)\b|角色扮演|假装|扮演|"
    # a story, a pitch or a text given to edit: what follows is its content, not the user's
    r"\b(?:story|plot|novel|book|film|movie|game|screenplay|script|sketch|comic|poem|song|"
    r"writing|character) (?:idea|premise|prompt|pitch|concept|outline|draft|bio)s?\b|"
    r"^\s*(?:premise|plot|logline|synopsis|blurb|caption|bio|character)\s*[:：]|"
    r"\b(?:translate|proofread|edit|rewrite|reword|polish|shorten|paraphrase|improve)\b[^.:：]{0,40}[:：]|"
    r"(?:故事|小说|剧本|剧情|游戏)(?:设定|大纲|构思|点子|开头|简介)|(?:翻译|润色|校对|改写|修改)[^。：:]{0,12}[:：]",
    re.I,
)
SARCASM = re.compile(
    r"^(?:oh,? )?(?:sure|yeah,? right|right),|\byeah,? right\b|\bas if\b|\bjust kidding\b|"
    r"\bjk\b|\bkidding\b|/s\b|开玩笑",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|but|also|anyway|now|well|hey|hi|quick question|first "
    r"(?:question|thing)|one more thing|question),?:?\s+)*(?:what|what's|whats|when|where|"
    r"which|who|whom|whose|why|how|do|does|did|is|are|was|were|am|isn't|aren't|can(?!'t)|"
    r"could|should|shall|would|will|may|might|have(?! to\b)|has(?! to\b)|had(?! to\b)|any)\b",
    re.I,
)
_POLITE_REQUEST = re.compile(
    r"^(?:please,? )?(?:can|could|would|will) you (?:please )?(?:always |only |just |now )?"
    r"(?:reply|respond|answer|write|speak|talk|use|keep|stick|switch|stop|remember|note|format|"
    r"give me (?:your |the )?(?:answers|replies|responses))\b",
    re.I,
)
HYPOTHETICAL = re.compile(
    r"\b(?:(?:even )?if|unless) (?:I|I'm|I'd|I've|I was|I were|we|we're|we'd|my|our)\b|"
    r"^(?:if|unless)\b|\b(?:suppose|supposing|imagine|imagining|hypothetically|what if|"
    r"in theory|let's say|assuming|wish|were I)\b|\bI(?:'d| would) (?:be|have|live|move|go|"
    r"get|need|probably|definitely)\b|如果|假如|假设|要是|万一|想象",
    re.I,
)
HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|not sure|i think|i guess|i suppose|"
    r"thought about|thinking about|thinking of|considered|considering|toying with|"
    r"was going to|were going to|wanted to|planned to|was planning to|were planning to|"
    r"hoping to|hope to|wondering|almost|nearly|decided against|changed my mind)\b|"
    r"也许|可能|大概|或许|本来想|原本想|想过|考虑过|算了|打算",
    re.I,
)
DESIRE = re.compile(
    r"\b(?:want to|wanna|would love to|'d love to|would like to|'d like to|dream of|dreaming of|"
    r"someday|one day|aspire to|hope to|hoping to)\b|想要|希望|梦想",
    re.I,
)
REJECTED = re.compile(r"\b(?:nah|decided against|changed my mind|fell through)\b|算了", re.I)
ZH_QUESTION = re.compile(
    r"[吗呢]$|什么|怎么|哪|多少|为什么|是否|要不要|可不可以|能不能|有没有|几点|几个|几天"
)


def is_question(clause: str) -> bool:
    """A question (a polite request such as "Can you reply in Spanish" is not one)."""
    if _POLITE_REQUEST.search(clause):
        return False
    stripped = clause.rstrip(" .!")
    if stripped.endswith(("?", "？")):
        return True
    if re.search(r"[\u4e00-\u9fff]", clause) and ZH_QUESTION.search(stripped):
        return True
    return bool(_QUESTION_START.search(clause))


NEGATED = re.compile(r"^(?:no longer|not|dislikes|不再|不)\b", re.I)


# Whose words a clause reports: someone else's ("my mum says", "everyone at work thinks",
# 我婆婆说), up to the reporting verb.
_OTHERS = (
    r"friends?|colleagues?|co-?workers?|boss|manager|neighbou?rs?|flatmates?|roommates?|"
    r"housemates?|cousins?|sisters?|brothers?|mum|mom|mother|dad|father|parents|uncle|aunt|"
    r"auntie|nephew|niece|grandma|gran|granny|nan|grandad|grandpa|grandmother|grandfather|"
    r"in-laws|mother-in-law|father-in-law|sister-in-law|brother-in-law|wife|husband|partner|"
    r"boyfriend|girlfriend|fianc[ée]e?|son|daughter|kids?|teacher|coach|trainer|landlord|"
    r"doctor|gp|dentist|nurse|physio|consultant|specialist|therapist|optician|vet"
)
_PROFESSIONAL = re.compile(
    r"\b(?:doctor|gp|dentist|nurse|physio|consultant|specialist|therapist|optician)\b|医生|大夫",
    re.I,
)
REPORTED = re.compile(
    rf"(?:\b(?:my|our|his|her|their|the|a) (?:[\w-]+ ){{0,2}}?(?:{_OTHERS})(?-i: [A-Z][a-z]+)?|"
    r"\b(?:he|she|everyone|everybody|people|nobody|no one|someone)(?: (?:at|in) [\w ]{1,20}?)?)"
    r"\s+(?:(?:always|still|just|keeps?|kept) )?(?:says?|said|saying|thinks?|thought|reckons?|"
    r"tells? me|told me|insists?|insisted|suggests?|suggested|claims?|claimed|swears|assumes?|"
    r"believes?|wants? (?:me|us) to)\b|"
    r"(?:我(?:的)?|他(?:的)?|她(?:的)?)?(?:朋友|同事|婆婆|公公|岳母|岳父|丈母娘|老丈人|妈妈?|爸爸?|"
    r"老板|领导|姐姐?|哥哥?|弟弟?|妹妹?|闺蜜|邻居|同学|老师|表哥|表姐|表弟|表妹|堂哥|堂姐|"
    r"老婆|老公|爱人|儿子|女儿|奶奶|爷爷|外婆|姥姥|医生|大夫|大家|别人|他|她)(?:们)?"
    r"(?:总|一直|老|非|还|都)?(?:说|觉得|认为|建议|以为|劝我|让我|要我)",
    re.I,
)
_JOKE = re.compile(
    r"[\U0001f602\U0001f923\U0001f606\U0001f61c]|\b(?:lol|lmao|haha+|jk)\b|哈哈", re.I
)


def reported_from(sentence: str, message: str = "") -> int | None:
    """Where someone else's words begin in ``sentence`` (the start of "my mum says..."),
    or ``None``. A doctor's word about the user's health stays the user's fact, unless
    told as a joke (a laugh in the sentence or its whole ``message``).

    Example:
        >>> s = "I love Leeds but my mum says we should move to York"
        >>> s[reported_from(s):]
        'my mum says we should move to York'
        >>> reported_from("my doctor says I have asthma") is None
        True
        >>> reported_from("my doctor says I'm allergic to Mondays \U0001f602")
        0
        >>> reported_from("我婆婆说我们全家应该搬到三亚")
        0
    """
    match = REPORTED.search(sentence)
    if match is None:
        return None
    if _PROFESSIONAL.search(match.group(0)) and not _JOKE.search(f"{sentence} {message}"):
        return None
    return match.start()


_OTHER_SUBJECT = re.compile(
    rf"^(?:(?:and|but|so|also|btw|oh|well|plus),?\s+)*(?:my|our) (?:[\w-]+ )?"
    rf"(?P<who>{_OTHERS})(?:'s)?(?-i: [A-Z][a-z]+)?\b(?!\s*(?:and|&|,) (?:I|me|we)\b)"
    # a doctor who "says I have asthma" reports the user's fact (see reported_from)
    r"(?!\s+(?:says?|said|told|tells|thinks?|reckons?|confirmed|diagnosed)\b)|"
    r"^(?:he|she)\b|"
    r"^(?:我|我的)?(?P<zh>朋友|同事|婆婆|公公|妈妈?|爸爸?|老板|姐姐|哥哥|弟弟|妹妹|闺蜜|邻居|同学|"
    r"表哥|表姐|表弟|表妹|儿子|女儿|老婆|老公)(?!和我|跟我)|^(?:他|她)(?!们)",
    re.I,
)


def other_subject(clause: str) -> str | None:
    """The person a clause is about when it is not the user ("My friend Tamsin got a
    job at NASA": ``friend``), or ``None`` ("My partner and I moved": the user too).

    Example:
        >>> other_subject("My friend Tamsin just got a job at NASA")
        'friend'
        >>> other_subject("My partner and I moved to Leeds") is None
        True
        >>> other_subject("She works at Google"), other_subject("我朋友在银行上班")
        ('she', '朋友')
    """
    match = _OTHER_SUBJECT.match(clause.strip())
    if match is None:
        return None
    return (match.group("who") or match.group("zh") or match.group(0)).lower()


def not_the_users(subject: str, content: str, person: str) -> bool:
    """Whether a fact read from a clause about ``person`` (:func:`other_subject`) is
    not the user's: it neither names that person nor is about them ("works at NASA"
    from "My friend got a job at NASA"; "daughter is called Mia" names the daughter).

    Example:
        >>> not_the_users("work", "works at NASA", "friend")
        True
        >>> not_the_users("family:daughter", "daughter is called Mia", "daughter")
        False
    """
    return person.rstrip("s") not in f"{subject} {content}".lower()
