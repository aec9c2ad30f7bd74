"""The rule gate: is recall needed before answering this message? (patterns, no model)

Searching the archive on every turn wastes time and pollutes the prompt with
noise ("what's 17 x 23" needs no memories). :func:`decide_recall` is a cheap,
explainable decision - no model - returning a :class:`GateDecision`
with its reason. Signals, cheapest first:

1. a **reference back** in time ("last time", "I told you", "remember", "上次");
2. a **question about the user** ("when is my...", "what did I...", "我的...");
3. a **personal request** whose answer a known fact could change
   ("recommend", "suggest", "plan", "book" - the allergy before a restaurant);
4. **names and entities already in the archive** (a keyword-index lookup);
5. optionally, the **top archive similarity** above a threshold.

The gate modes (rules, learned, LLM, always, never) and the LangGraph router are
in :mod:`langchain_tiered_memory.recall.gate`, which re-exports these names.

Example:
    >>> decide_recall("What's 17 * 23?").recall
    False
    >>> d = decide_recall("What did I tell you about my sister last time?")
    >>> d.recall, d.reason
    (True, "refers back in time ('last time')")
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.text import strip_quoted
from langchain_tiered_memory.values import GateDecision

__all__ = [
    "EntityLookup",
    "GateConfig",
    "GateDecision",
    "TermIndex",
    "candidate_entities",
    "decide_recall",
    "transforms_given_text",
]

#: Returns the subset of ``terms`` the user's archive contains.
EntityLookup = Callable[[Sequence[str]], set[str]]

_BACK_REFERENCE = re.compile(
    r"\b(last time|earlier|before|previously|again|remember|remind me|recall|"
    r"i (?:told|said|mentioned|asked|shared|wrote)|you (?:said|told|suggested|recommended|"
    r"mentioned)|we (?:talked|discussed|spoke|chatted|said)|as usual|like always|"
    r"the other day|last (?:week|month|year|night|weekend|summer|winter|spring|fall|session)|"
    r"(?:a|two|few|couple of) (?:days|weeks|months|years) ago|ago|back then|"
    r"still|anymore|any more|used to|so far|lately|recently|how many times|"
    r"how long (?:have|did))\b|"
    r"上次|之前|以前|记得|我(?:说过|告诉过你|提到过)|你(?:说过|建议过)|还是|又|上周|上个月|去年",
    re.I,
)
_ABOUT_USER = re.compile(
    r"\b(?:my|mine|me|myself|i'm|i've|i'd|i'll|i|we|our|us)\b|我|咱们|我们",
    re.I,
)
_QUESTION = re.compile(
    r"\?|？|^\s*(?:what|when|where|which|who|whom|whose|why|how|do|does|did|is|are|was|were|"
    r"am|have|has|had|can|could|should|would|will)\b|吗|呢|什么|哪|几|多少|怎么",
    re.I,
)
_PERSONAL_REQUEST = re.compile(
    r"\b(recommend|suggest|advice|advise|ideas? for|plan|planning|book|schedule|"
    r"remind|gift|present|recipe|cook|eat|dinner|lunch|breakfast|snack|restaurant|menu|"
    r"trip|travel|hotel|flight|buy|shop|workout|routine|what should i|which .* should i|"
    r"help me (?:choose|pick|decide)|for me|for my|to me)\b|推荐|建议|计划|帮我(?:选|挑|决定)",
    re.I,
)
_HOW_TO = re.compile(r"^\s*how (?:do|can|could|should|would) i\b", re.I)
# Imperative, self-contained tasks: when one of these leads and nothing points
# back to the user, the message stands on its own.
_SELF_CONTAINED = re.compile(
    r"^\s*(?:please\s+)?(?:translate|convert|calculate|compute|solve|define|explain|"
    r"summari[sz]e|rewrite|paraphrase|proofread|correct|fix|format|write|compose|generate|"
    r"list|name|give me|tell me a|spell|count|sort|what(?:'s| is) \d)",
    re.I,
)
# The user's own situation, named without "me/my": "this weekend", "tonight",
# "nearby", "the kids", "a short bio", "Recommend three films".
_DEIXIS = re.compile(
    r"\b(?:tonight|today|tomorrow|this (?:morning|afternoon|evening|weekend|week|month|year|"
    r"spring|summer|autumn|fall|winter|sunday|monday|tuesday|wednesday|thursday|friday|"
    r"saturday)|next (?:week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|(?:for|over|at) the (?:weekend|week|holidays|summer|winter|spring|autumn)|"
    r"on (?:monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|the travel day|around (?:here|town)|near me|"
    r"nearby|close by|in town|the (?:next|coming) (?:few )?(?:days|weeks|months))\b|"
    r"今晚|今天|明天|后天|这周|本周|周末|下周|下个月|今年|附近|这边|那天|出发那天",
    re.I,
)
_SELF_PRESENTATION = re.compile(
    r"\b(?:bio|biography|cover letter|cv|r[ée]sum[ée]|profile|about me|self-introduction|"
    r"introduction|intro|out-of-office|out of office|signature|contact (?:details|line|field|"
    r"info|information)|headline|professional summary|personal statement)\b|"
    r"简历|自我介绍|个人简介|简介",
    re.I,
)
_MY_THINGS = re.compile(
    r"\b(?:the|our) (?:little one|kids|children|baby|twins|dog|dogs|cat|cats|kitten|puppy|pup|"
    r"pets?|car|wedding|party|trip|flight|family|wife|husband|partner|boyfriend|girlfriend|"
    r"in-laws|present|gift|anniversary|birthday|garden|flat|house|team|office|commute)\b|"
    r"\b(?:vet|pet-sitter|pet sitter|dog walker|dog-walker|kennel|cattery|babysitter|nanny)\b|"
    r"\b(?:for|to|with|about) (?:her|him)\b|孩子|宝宝|老婆|老公|家人",
    re.I,
)
_RECOMMEND = re.compile(
    r"^\s*(?:please\s+|(?:can|could|would|will) you\s+(?:please\s+)?)?(?:recommend|suggest|"
    r"plan|shortlist|short-list|find|put together|organi[sz]e|arrange|book|"
    r"schedule|help (?:me )?(?:plan|choose|pick|decide|draft|write|organi[sz]e|prepare|design|"
    r"make|put together|figure out|find)|give me (?:some |a few )?(?:ideas|suggestions|"
    r"recommendations)|give (?:me )?(?:a |an |some |a few )?(?:[\w-]+ ){0,2}(?:ideas?|recipes?|"
    r"menu|meal plan))\b|\b(?:would|do|can|could|should) you (?:recommend|suggest|shortlist)\b|"
    r"^\s*(?:帮我|帮忙|请帮我|给我推荐|推荐|建议)",
    re.I,
)
# A message that starts like a request ("Update my CV", "Could you check my plan").
_IMPERATIVE = re.compile(
    r"^\s*(?:please\s+|(?:can|could|would|will) you\s+(?:please\s+)?)?(?!(?:i|i'm|i've|i'd|"
    r"i'll|we|we're|we've|my|our|hi|hello|hey|thanks|thank|ok|okay|yes|no|the|a|an|this|that|"
    r"it|he|she|they|there|so|and|but|well|oh|just|also|btw)\b)[a-z]+\b",
    re.I,
)
# Transformations of text in the message: its words are not about the user.
_TRANSFORM_LEAD = re.compile(
    r"^\s*(?:please\s+)?(?:translate|convert|calculate|compute|solve|define|spell|count|sort|"
    r"summari[sz]e|rewrite|paraphrase|proofread|correct|fix|format|turn this|make this "
    r"(?:sentence|text|paragraph|email|message))\b|翻译|把.*翻译|^\s*(?:给我讲|讲个|写一首|解释|计算|"
    r"列出|用\w+写)",
    re.I,
)
_STOP_CAPS = {
    "I",
    "I'm",
    "I've",
    "I'd",
    "I'll",
    "The",
    "A",
    "An",
    "What",
    "When",
    "Where",
    "Which",
    "Who",
    "Why",
    "How",
    "Do",
    "Does",
    "Did",
    "Is",
    "Are",
    "Was",
    "Were",
    "Can",
    "Could",
    "Should",
    "Would",
    "Will",
    "Please",
    "Tell",
    "Give",
    "Write",
    "Translate",
    "Explain",
    "Hi",
    "Hello",
    "Hey",
    "Thanks",
    "Ok",
    "OK",
    "Yes",
    "No",
    "And",
    "But",
    "Or",
    "So",
    "It",
    "This",
    "That",
    "My",
    "Me",
    "You",
    "Your",
    "We",
    "Our",
    "They",
    "He",
    "She",
    "In",
    "On",
    "At",
    "For",
    "Of",
    "To",
    "With",
    "From",
    "By",
    "If",
    "Then",
    "Also",
    "Just",
    "Let",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+|[\u4e00-\u9fff]{2,}")


@dataclass(frozen=True)
class GateConfig:
    """Tunable parts of the gate.

    Args:
        personal_requests: Fire on "recommend/suggest/plan" style requests.
        entity_lookup: Fire when a name in the message is in the archive.
        min_similarity: Fire when the archive's best cosine similarity is at
            least this (only if a similarity function is given).
    """

    personal_requests: bool = True
    entity_lookup: bool = True
    min_similarity: float = 0.86


def candidate_entities(text: str) -> list[str]:
    """Names, places and other proper nouns worth looking up in the archive.

    Capitalised words that are not at the start of a sentence (unless
    possessive, like "Caroline's") and not common function words, plus CJK
    runs; lower-cased, possessive stripped, in order, without duplicates.
    All-caps words (acronyms like "SQL") are skipped.

    Example:
        >>> candidate_entities("How is Caroline doing in Lisbon? Melanie's kids are fine.")
        ['caroline', 'lisbon', 'melanie']
    """
    found: list[str] = []
    for match in _WORD.finditer(text):
        raw = match.group(0).strip("'-")
        if "\u4e00" <= raw[:1] <= "\u9fff":
            found.append(raw)
            continue
        possessive = raw.endswith(("'s", "’s"))
        word = raw[:-2] if possessive else raw
        if len(word) < 2 or not word[0].isupper() or word.isupper() or word in _STOP_CAPS:
            continue
        prefix = text[: match.start()].rstrip()
        sentence_start = not prefix or prefix[-1] in ".!?\n:;\"'"
        if sentence_start and not possessive:
            continue
        found.append(word.lower())
    return list(dict.fromkeys(found))


def transforms_given_text(message: str) -> bool:
    """Whether ``message`` asks to transform text it gives ("Translate ...",
    "Proofread this: ...", "Summarise ...", "翻译..."): its words are not about the user.

    Example:
        >>> transforms_given_text("Proofread this: their going.")
        True
        >>> transforms_given_text("Plan my week")
        False
    """
    return bool(_TRANSFORM_LEAD.search(message))


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(0) if match else None


def decide_recall(
    message: str,
    *,
    entities: EntityLookup | None = None,
    similarity: Callable[[str], float] | None = None,
    config: GateConfig | None = None,
) -> GateDecision:
    """Decide whether ``message`` needs recall (pure apart from the lookups).

    Args:
        message: The latest user message.
        entities: Looks names up in the user's archive (keyword index).
        similarity: Returns the archive's best cosine similarity to the message.
        config: Which signals are on.
    """
    started = time.perf_counter()
    config = config or GateConfig()

    def done(recall: bool, reason: str, signal: str, **details: Any) -> GateDecision:
        elapsed = (time.perf_counter() - started) * 1000
        return GateDecision(recall, reason, signal, details, elapsed)

    text = message.strip()
    if not text:
        return done(False, "empty message", "empty")
    back = _first(_BACK_REFERENCE, text)
    if back:
        return done(True, f"refers back in time ({back!r})", "back_reference", match=back)
    # "how do I ..." asks for instructions, not about the user
    about_user = _first(_ABOUT_USER, _HOW_TO.sub(" ", text))
    is_question = bool(_QUESTION.search(text))
    self_contained = bool(_SELF_CONTAINED.search(text))
    if config.personal_requests and not self_contained:
        personal = _first(_PERSONAL_REQUEST, text)
        if personal and (about_user or is_question):
            return done(
                True,
                f"a personal request a known fact could change ({personal!r})",
                "personal_request",
                match=personal,
            )
    transform = bool(_TRANSFORM_LEAD.search(text))
    if config.personal_requests and not transform:
        own = strip_quoted(text)  # a quoted line to work on is not about the user
        for pattern, what in (
            (_RECOMMEND, "a request for a recommendation or plan"),
            (_SELF_PRESENTATION, "writing about the user"),
            (_DEIXIS, "the user's own time or place"),
            (_MY_THINGS, "the user's own people or things"),
        ):
            hit = _first(pattern, own)
            if hit:
                hit = re.sub(
                    r"(?i)^\s*(?:please\s+|(?:can|could|would|will) you\s+(?:please\s+)?)", "", hit
                )
            if hit and not (pattern is _SELF_PRESENTATION and _HOW_TO.search(own)):
                return done(
                    True,
                    f"a personal request a known fact could change ({what}: {hit.strip()!r})",
                    "personal_request",
                    match=hit.strip(),
                )
    # a question about the user, or a request on their behalf ("Update my CV"; not a
    # statement such as "Hi, I'm Ana.")
    imperative = (
        config.personal_requests
        and not transform
        and bool(_IMPERATIVE.search(text))
        and bool(about_user and about_user.lower() in {"my", "me", "mine", "myself", "our", "us"})
    )
    if about_user and (is_question or imperative) and not self_contained:
        return done(
            True, f"a question about the user ({about_user!r})", "about_user", match=about_user
        )
    if config.entity_lookup and entities is not None:
        names = candidate_entities(text)
        known = sorted(entities(names)) if names else []
        if known:
            return done(
                True,
                f"mentions {', '.join(known)} from the archive",
                "known_entity",
                entities=known,
            )
    if similarity is not None:
        score = similarity(text)
        if score >= config.min_similarity:
            return done(
                True,
                f"close to an archived memory (similarity {score:.2f})",
                "similarity",
                similarity=score,
            )
    return done(False, "self-contained: no reference to the past, the user or known names", "none")


class TermIndex:
    """The names a user's archive mentions, for the gate's entity lookups.

    Keeps words written capitalised in the archive (proper nouns such as
    people, places, brands) and CJK character pairs, so a common word that
    merely occurs in the archive ("world", "list") does not count as a known
    entity.

    Example:
        >>> index = TermIndex(["Caroline went to the support group", "I met Melanie."])
        >>> sorted(index(["caroline", "melanie", "group", "paris"]))
        ['caroline', 'melanie']
    """

    def __init__(self, texts: Sequence[str] = ()) -> None:
        self.names: set[str] = set()
        self.cjk_pairs: set[str] = set()
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        """Index the names in ``text``."""
        for match in _WORD.finditer(text):
            word = match.group(0).strip("'-")
            if word.endswith(("'s", "’s")):
                word = word[:-2]
            if len(word) > 1 and word[0].isupper() and not word.isupper():
                self.names.add(word.lower())
        for run in re.findall(r"[\u4e00-\u9fff]+", text):
            self.cjk_pairs.update(run[i : i + 2] for i in range(len(run) - 1))

    def __call__(self, terms: Sequence[str]) -> set[str]:
        """The terms the archive mentions (CJK terms by their character pairs)."""
        found: set[str] = set()
        for term in terms:
            if "\u4e00" <= term[:1] <= "\u9fff":
                # no word boundaries in CJK: any 3-character stretch the archive has
                for i in range(len(term) - 2):
                    if term[i : i + 2] in self.cjk_pairs and term[i + 1 : i + 3] in self.cjk_pairs:
                        found.add(term[i : i + 3])
                        break
            elif term in self.names:
                found.add(term)
        return found
