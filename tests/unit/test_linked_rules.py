"""``extractor="rules+links"`` (issue 31, stale shown as current): the rules' facts,
with the user's other statements offered to the learned linker, so an update no
rule reads supersedes (or moves out) the fact it replaces."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import HumanMessage

from langchain_tiered_memory.storage.inprocess import InProcessFacts
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.learned import Link, LinkedRulesExtractor
from langchain_tiered_memory.write.learned.earlier import EARLIER
from langchain_tiered_memory.write.rules import find_statements
from langchain_tiered_memory.write.writer import MemoryWriter, extractor_from

PANDA = "I drive a Fiat Panda."
SWIFT = "part-exchanged the old car today, picked up a Suzuki Swift hybrid!!"


class ScriptedLinks:
    """P(replaces) by substring of the statement, and every statement it was asked about."""

    def __init__(self, p: dict[str, float]) -> None:
        self.p = p
        self.asked: list[str] = []

    def about_user(self, clauses: Sequence[str]) -> list[float]:
        raise AssertionError("the rules' path never asks the about-the-user model")

    def link(self, statement: str, current: Sequence[CoreFact]) -> list[Link]:
        self.asked.append(statement)
        p = next((v for k, v in self.p.items() if k in statement), 0.0)
        return [Link(f, p) for f in current]


def _writer(
    p: dict[str, float], core: CoreMemory | None = None
) -> tuple[MemoryWriter, ScriptedLinks]:
    links = ScriptedLinks(p)
    return MemoryWriter(core or CoreMemory(), extractor=LinkedRulesExtractor(links)), links


def _say(writer: MemoryWriter, *texts: str) -> None:
    for i, text in enumerate(texts):
        writer.extract([Turn(i, (HumanMessage(text),))])


def test_a_sure_link_supersedes_the_fact_with_the_statement() -> None:
    writer, _ = _writer({"Suzuki": 0.95})
    _say(writer, PANDA, SWIFT)
    assert writer.core.get("car").content.startswith("part-exchanged the old car today")
    assert next(f.content for f in writer.core.history("car")) == "drives a Fiat Panda"
    assert not any("Panda" in f.content for f in writer.core.active())


def test_an_unsure_link_moves_the_old_fact_out_as_earlier_and_keeps_a_possible_fact() -> None:
    writer, _ = _writer({"Suzuki": 0.5})
    writer.extract([Turn(0, (HumanMessage(PANDA),))])
    result = writer.extract([Turn(1, (HumanMessage(SWIFT),))])
    assert writer.core.active() == []
    moved = writer.core.history("car")[-1]
    assert moved.status == "archived" and moved.reason and moved.reason.startswith(EARLIER)
    assert [f.content for f in result.possible] == [SWIFT.rstrip("!")]


def test_a_statement_linked_to_nothing_writes_nothing() -> None:
    writer, _ = _writer({})
    _say(writer, PANDA, "the garden is finally looking good this year")
    assert [(f.subject, f.content) for f in writer.core.active()] == [
        ("car", "drives a Fiat Panda")
    ]


def test_non_facts_are_never_offered_to_the_linker() -> None:
    writer, links = _writer({"Suzuki": 1.0})
    _say(
        writer,
        PANDA,
        "did you know I picked up a Suzuki Swift?",
        "If I sold the car I'd get a Suzuki Swift",
        "My friend picked up a Suzuki Swift",
        "Maybe I'll pick up a Suzuki Swift",
        "Picking up a Suzuki Swift if the loan comes through",
        "Let's role-play: you're a dealer and I picked up a Suzuki Swift",
        "my dad says I picked up a Suzuki Swift",
        "Write a short ad for the Suzuki Swift I picked up",
        "这辆Suzuki Swift的广告帮我写一下",
    )
    assert not any("Suzuki" in s for s in links.asked)
    assert writer.core.get("car").content == "drives a Fiat Panda"


def test_a_rule_fact_under_another_subject_is_linked_too() -> None:
    writer, _ = _writer({"5th": 0.95})
    _say(writer, "My flight to Lisbon is on the 3rd.", "Airline moved me to the 5th.")
    assert not any("3rd" in f.content for f in writer.core.active())
    assert any("5th" in f.content for f in writer.core.active())


def test_a_rule_fact_that_says_no_change_moves_nothing_out() -> None:
    """The rules know what their fact is about: a dentist appointment tomorrow (the real
    linker gave it p 0.93 against a flight tomorrow) leaves the flight current, and an
    unsure link from a fact that does say a change moves nothing out either."""
    writer, links = _writer({"dentist": 0.95, "Airline": 0.5})
    _say(
        writer,
        "My flight to Kyoto is tomorrow at 9:40.",
        "My dentist appointment is tomorrow.",
        "Airline moved me to the 5th.",
    )
    # the dentist was never offered (it says nothing changed); the airline was, unsurely
    assert len(links.asked) == 1 and "Airline" in links.asked[0], links.asked
    subjects = {f.subject for f in writer.core.active()}
    assert {"plan:flight", "plan:dentist"} <= subjects, subjects


def test_a_rule_fact_from_a_message_that_says_a_change_is_linked() -> None:
    """The rule's content need not keep the change word: "Actually I prefer Rebecca now"
    is read as ``prefers Rebecca``, and still replaces the name it changes."""
    writer, links = _writer({"Rebecca": 0.95})
    _say(
        writer,
        "Call me Becky, by the way.",
        "Actually I prefer Rebecca now, Becky feels a bit young.",
    )
    assert links.asked and "now" not in links.asked[0]
    assert not any(f.content.endswith("Becky") for f in writer.core.active())


def test_the_links_are_staged_with_the_batch_and_nothing_written_before_the_commit() -> None:
    store = InProcessFacts()
    core = CoreMemory(store=store, user_id="ana")
    writer, _ = _writer({"Suzuki": 0.5}, core)
    writer.extract([Turn(0, (HumanMessage(PANDA),))])
    staged = writer.stage([Turn(1, (HumanMessage(SWIFT),))])
    assert [c.retire for c in staged.changes] == [core.get("car").id]
    assert core.get("car").content == "drives a Fiat Panda"  # not written yet


def test_the_option_is_named_and_the_statements_are_the_users_own() -> None:
    assert isinstance(extractor_from("rules+links"), LinkedRulesExtractor)
    assert find_statements("上个月搬到南宁了。如果搬到南宁呢？我朋友搬到南宁了。") == [
        "上个月搬到南宁了。"
    ]


def test_a_rule_fact_read_from_a_request_is_kept_but_never_linked() -> None:
    writer, _ = _writer({"operation": 0.95})
    _say(
        writer,
        "The surgery is on 18 March.",
        "Plan the next month for me around the operation.",
    )
    assert any("18 March" in f.content for f in writer.core.active())


def test_the_default_memory_links_an_update_no_rule_reads_and_rules_opts_out() -> None:
    """The offline default (no ``extractor=``, no model) is the rules with links: the real
    linker (e5) moves the old car out of the current facts; the plain rules leave it."""
    from langchain_core.messages import AIMessage

    from langchain_tiered_memory import TieredMemory

    def current_cars(**options: object) -> list[str]:
        memory = TieredMemory(**options)  # type: ignore[arg-type]
        for said in (PANDA, SWIFT):
            memory.add_messages([HumanMessage(said), AIMessage("Noted.")])
        return [f.content for f in memory.writer.core.active()]

    linked = current_cars()
    assert not any("Panda" in fact for fact in linked), linked
    assert any("Panda" in fact for fact in current_cars(extractor="rules"))
    assert isinstance(TieredMemory().writer.extractor, LinkedRulesExtractor)


def _current_after(*said: str, **options: object) -> list[str]:
    """The current facts' contents after each of ``said`` is one turn of a ``TieredMemory``."""
    from langchain_core.messages import AIMessage

    from langchain_tiered_memory import TieredMemory

    memory = TieredMemory(**options)  # type: ignore[arg-type]
    for text in said:
        memory.add_messages([HumanMessage(text), AIMessage("Noted.")])
    return [f"{f.subject}: {f.content}" for f in memory.writer.core.active()]


def test_the_default_memory_ends_a_partner_on_a_break_up() -> None:
    """The real linker (e5) ties an ending to the fact it ends (round 7 of issue 31:
    the linker learned endings; the shipped weights before gave "we broke up" p 0.12
    against the boyfriend, and an ending statement never reached core memory)."""
    before = _current_after("My boyfriend is called Tom.", extractor="rules")
    assert any("Tom" in fact for fact in before), before
    after = _current_after("My boyfriend is called Tom.", "we broke up last week, still a bit raw")
    assert not any("Tom" in fact for fact in after), after


def test_the_default_memory_ends_a_partner_on_a_chinese_break_up() -> None:
    after = _current_after("我男朋友叫阿杰。", "我们分手了，心情不太好")
    assert not any("阿杰" in fact for fact in after), after


def test_the_default_memory_ends_a_pet_that_died() -> None:
    after = _current_after("I have a hamster called Nibbles.", "the hamster died last night")
    assert not any("Nibbles" in fact for fact in after), after


def test_an_ending_ends_only_the_fact_it_is_about() -> None:
    """The car and the job stay current when the partner ends."""
    after = _current_after(
        "I drive a Fiat Panda.",
        "My boyfriend is called Tom.",
        "I work at Deloitte.",
        "we broke up last week, still a bit raw",
    )
    assert not any("Tom" in fact for fact in after), after
    assert any("Panda" in fact for fact in after), after
    assert any("Deloitte" in fact for fact in after), after


def test_a_sure_link_from_an_ending_ends_the_fact() -> None:
    """An ending statement no rule read (a possible fact, confidence 0.5) ends the
    fact it surely links to; before round 7 it was filed as a possible fact and the
    ended one stayed current."""
    writer, _ = _writer({"broke up": 0.95})
    _say(writer, "My boyfriend is called Tom.", "we broke up last week")
    assert writer.core.active() == []
    assert [f.status for f in writer.core.history("family:boyfriend")] == ["ended"]


def test_an_ending_never_ends_what_the_same_message_replaces() -> None:
    """The message's other statements are linked first: the new job supersedes the old
    one, and the ending then finds nothing older to end (blind r2's b2-043)."""
    writer, _ = _writer({"Handed in": 0.95, "Kestrel": 0.95})
    _say(
        writer,
        "I'm a nurse.",
        "Handed in my badge last Friday; I start on the Kestrel ward team on Monday.",
    )
    assert any("Kestrel" in f.content for f in writer.core.active()), writer.core.active()
    assert not any(f.content == "nurse" for f in writer.core.active())
