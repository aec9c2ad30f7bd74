"""English rules: work (job, employer, trade, a business run)."""

from __future__ import annotations

import re

from langchain_tiered_memory.write.rules.en.objects import (
    cut_tail,
    no_longer,
    object_text,
    says,
)
from langchain_tiered_memory.write.rules.en.words import (
    ADVERB,
    I_AM,
    I_HAVE,
    JOBS,
)
from langchain_tiered_memory.write.rules.engine import Rule, by_group, rule


def _job(m: re.Match[str], _: str) -> tuple[str, str] | None:
    role = object_text(m.group("job"))
    org = m.group("org") if "org" in m.re.groupindex else None
    place = f" at {cut_tail(org)}" if org and cut_tail(org) else ""
    return ("work", f"{role}{place}") if role else None


RULES: list[Rule] = [
    # -- work --
    no_longer("work (?:at|for|as)", "work", "no longer works at {}"),
    rule(
        rf"(?:\bI {ADVERB}work|(?:{I_AM}|{I_HAVE} been) {ADVERB}working|^{ADVERB}working)"
        r"(?: from home| remotely| part-time| full-time| freelance| shifts)? "
        r"(?P<prep>as|at|for|in) (?P<x>.+)",
        lambda m, _: (
            ("work", f"works {m.group('prep').lower()} {cut_tail(m.group('x'))}")
            if object_text(m.group("x"))
            and not re.match(
                r"(?i)(?:home|progress|the garden|a team|teams|my (?:current |new |old )?(?:job|"
                r"role|"
                r"free time|spare time)|the (?:mornings?|evenings?|afternoons?|day|nights?)|shifts|"
                r"pairs|groups|batches|bursts|sprints|cycles|silence|peace)\b",
                cut_tail(m.group("x")),
            )
            else None
        ),
        importance=6.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been|\bI was|^I'm) {ADVERB}(?:an? |the (?=(?:ceo|cto|cfo|coo|"
        rf"founder|"
        rf"co-founder|owner|head|director|manager|principal|headteacher|editor|"
        rf"chef)\b))(?P<job>(?:(?!(?:fan|"
        rf"bit|lot|big fan|member|huge fan|sucker|believer|kind|type|sort|part)\b)[\w-]+ ){{0,3}}"
        rf"(?:{JOBS}))\b(?:s)?(?: (?:at|for|in|with) (?P<org>[^,.;!?]+))?",
        _job,
        importance=6.5,
    ),
    rule(
        rf"\b[Aa]s an? (?P<job>(?:[\w-]+ ){{0,3}}(?:{JOBS}))\b(?: (?:at|for|in) (?P<org>[^,]+?))?"
        r",? (?:I|we)\b",
        _job,
        importance=6.5,
    ),
    rule(
        rf"(?:\bI(?:'ve| have|'m| am)?|^|\band) {ADVERB}(?:started|began|start|begin|starting|"
        rf"joined|got a job|landed a job|got hired|was hired|was promoted|got promoted|'m starting|"
        rf"training|retraining|studying|qualifying|qualified|working)"
        rf"(?: (?:work|working|a new job|a new role))?(?: as| to be| to become| towards being)"
        rf" an? (?P<job>(?:[\w-]+ ){{0,3}}"
        rf"(?:{JOBS}))\b(?: (?:at|for|in|with) (?P<org>[^,.;!?]+))?",
        _job,
        importance=6.5,
    ),
    rule(
        rf"(?:{I_AM}|{I_HAVE} been) {ADVERB}(?P<job>retired|unemployed|self-employed|"
        r"between jobs|on maternity leave|on paternity leave|a stay-at-home (?:mum|mom|dad|parent)|"
        r"a full-time (?:mum|mom|dad|parent))\b",
        says("work", "{job:lower}"),
        importance=6.5,
    ),
    rule(
        r"\bI (?:now |currently |still )?teach (?P<x>[^,.;!?]+)",
        lambda m, _: (
            ("work", f"teaches {cut_tail(m.group('x'))}") if cut_tail(m.group("x")) else None
        ),
        importance=6.5,
    ),
    rule(
        rf"\bmy (?:day )?job (?:is|as an?) (?P<job>(?:[\w-]+ ){{0,3}}(?:{JOBS}))\b|"
        rf"(?:{I_AM}|{I_HAVE} been) {ADVERB}in (?P<x>marketing|finance|sales|it|tech|hr|law|"
        r"banking|insurance|consulting|retail|hospitality|healthcare|education|publishing|"
        r"advertising|pharma|real estate|construction|logistics|software|academia|journalism|"
        r"recruitment|accounting|engineering|research|government|the nhs|the army|the navy)\b",
        lambda m, _: ("work", m.group("job") if m.group("job") else f"works in {m.group('x')}"),
        importance=6.5,
    ),
    rule(
        r"\bI (?:run|own|manage|co-own|founded|started) (?:a|an|my own|the|our) (?P<x>(?:[\w&'-]+ )"
        r"{0,3}(?:business|company|shop|store|café|cafe|restaurant|bakery|bar|pub|salon|studio|"
        r"agency|practice|clinic|firm|startup|start-up|farm|b&b|hotel|charity|gym|consultancy))\b",
        says("work", "runs a {x}"),
        importance=6.5,
    ),
    rule(
        rf"\b(?:I(?:'ve| have)? )?(?:joined|moved to|"
        rf"went to) (?P<org>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)*)"
        rf" as an? (?P<job>(?:[\w-]+ ){{0,3}}(?i:{JOBS}))\b|\b(?i:I(?:'ve| have)? )?(?i:got|"
        rf"landed|"
        r"accepted|started|took|start)(?i: (?:a|the|my)(?: new)?| a new| my new)? (?i:job|role|"
        r"position) (?i:at|with) (?P<org2>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)*)",
        by_group(org=says("work", "{job} at {org}"), org2=says("work", "works at {org2}")),
        importance=6.5,
        flags=0,
    ),
]
