"""The learned offline extractor (issue 31): clauses, the logistic model, the
policy that keeps clauses and links a fact to the facts it may replace, and the
shipped weights on sentences written apart from their training data."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from langchain_tiered_memory.embeddings.logistic import fit_logistic, predict_proba
from langchain_tiered_memory.tiers.core import CoreFact, CoreMemory
from langchain_tiered_memory.values.turns import Turn
from langchain_tiered_memory.write.learned import LearnedExtractor, Link
from langchain_tiered_memory.write.learned.clauses import clean_clause, split_clauses
from langchain_tiered_memory.write.learned.training import (
    clause_examples,
    ending_examples,
    pair_examples,
)
from langchain_tiered_memory.write.writer import MemoryWriter, extractor_from


class ScriptedModels:
    """Probabilities by substring, so the policy can be tested without embeddings."""

    def __init__(self, about: dict[str, float], links: dict[tuple[str, str], float]) -> None:
        self.about = about
        self.links = links

    def about_user(self, clauses: Sequence[str]) -> list[float]:
        return [next((p for k, p in self.about.items() if k in c), 0.0) for c in clauses]

    def link(self, statement: str, current: Sequence[CoreFact]) -> list[Link]:
        return [
            Link(
                f,
                next(
                    (
                        p
                        for (new, old), p in self.links.items()
                        if new in statement and old in f.content
                    ),
                    0.0,
                ),
            )
            for f in current
        ]


def _turn(i: int, text: str) -> Turn:
    return Turn(i, (HumanMessage(text),))


def test_clauses_drop_questions_and_lead_ins() -> None:
    assert split_clauses(
        "Quick one - what's the capital? Asking because I fly to Lima on the 3rd."
    ) == ["Asking because I fly to Lima on the 3rd"]
    assert clean_clause("remember that my gate code is 4471") == "my gate code is 4471"
    assert split_clauses("对了，我在杭州上班。你呢？") == ["我在杭州上班"]


def test_logistic_rejects_bad_labels_and_separates() -> None:
    x = np.array([[0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.9, 0.2]])
    model = fit_logistic(x, np.array([0, 0, 1, 1]), l2=0.1, steps=500)
    assert list(predict_proba(model, x).round()) == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="0 or 1"):
        fit_logistic(x, np.array([0, 2, 1, 1]))


def test_clause_no_rule_covers_is_kept_whole_with_its_values() -> None:
    ex = LearnedExtractor(ScriptedModels({"gate code": 0.95, "friend": 0.1}, {}))
    facts = ex.extract([_turn(0, "btw the side gate code is 4471. My friend Sasha is a surgeon.")])
    kept = [f for f in facts if "4471" in f.content]
    assert kept and kept[0].stated and kept[0].content == "the side gate code is 4471"
    assert not any("Sasha" in f.content for f in facts)


def test_unsure_clause_is_only_a_possible_fact() -> None:
    writer = MemoryWriter(
        CoreMemory(), extractor=LearnedExtractor(ScriptedModels({"hiking": 0.6}, {}))
    )
    result = writer.extract([_turn(0, "weekends are mostly hiking with the club these days")])
    assert not writer.core.active() and [f.content for f in result.possible] == [
        "weekends are mostly hiking with the club these days"
    ]


def test_sure_link_supersedes_a_fact_under_another_subject() -> None:
    core = CoreMemory([CoreFact.new("home_city", "lives in Manchester", source_turn=0)])
    models = ScriptedModels({"Sheffield": 0.95}, {("Sheffield", "Manchester"): 0.9})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "the house in Sheffield finally feels like ours")])
    assert [f.content for f in core.active()] == ["the house in Sheffield finally feels like ours"]
    assert [f.status for f in core.history("home_city")] == ["superseded", "active"]


def test_unsure_link_moves_the_older_fact_out_as_earlier() -> None:
    core = CoreMemory([CoreFact.new("work", "works at Deloitte", source_turn=0)])
    models = ScriptedModels({"Stripe": 0.95}, {("Stripe", "Deloitte"): 0.5})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "first week at Stripe went well")])
    assert [f.content for f in core.active()] == ["first week at Stripe went well"]
    old = core.history("work")[0]
    assert old.status == "archived" and old.reason is not None and old.reason.startswith("earlier")


def test_no_link_leaves_other_facts_current() -> None:
    core = CoreMemory([CoreFact.new("allergy:peanuts", "allergic to peanuts", source_turn=0)])
    models = ScriptedModels({"Biscuit": 0.95}, {("Biscuit", "peanuts"): 0.1})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "Biscuit the beagle is twelve now")])
    assert len(core.active()) == 2


def test_thresholds_are_checked_and_the_option_is_named() -> None:
    with pytest.raises(ValueError):
        LearnedExtractor(fact_threshold=0.3, possible_threshold=0.6)
    assert isinstance(extractor_from("learned"), LearnedExtractor)


def test_training_data_has_both_labels_and_languages_in_both_splits() -> None:
    for split in ("train", "check"):
        clauses = clause_examples(split)
        pairs = pair_examples(split, per_attribute=4)
        assert {e.label for e in clauses} == {0, 1} and {e.lang for e in clauses} == {"en", "zh"}
        assert {e.label for e in pairs} == {0, 1} and {e.lang for e in pairs} == {"en", "zh"}
    train = {e.text for e in clause_examples("train")}
    assert not train & {e.text for e in clause_examples("check")}


def test_pair_data_has_endings_in_both_splits_and_languages() -> None:
    """Round 7 of issue 31: endings of an attribute are 1 against its fact (a
    many-valued one too), another attribute's ending 0, and worded apart in check."""
    for split in ("train", "check"):
        endings = ending_examples(split)
        assert {(e.kind, e.label) for e in endings} == {
            ("ending", 1),
            ("ending_unnamed", 1),
            ("ending_other", 0),
            ("other_ending", 0),
        }
        assert {e.lang for e in endings if e.label} == {"en", "zh"}
        assert any(e.label and e.attribute == "pet" for e in endings)
    said = {e.later for e in ending_examples("train") if e.label}
    assert not said & {e.later for e in ending_examples("check") if e.label}
    # the endings are drawn after the value pairs, with a generator of their own
    pairs, endings = pair_examples("check"), ending_examples("check")
    assert pairs[len(pairs) - len(endings) :] == endings
    assert {e.kind for e in pairs[: len(pairs) - len(endings)]} == {"value", "value_many", "other"}


@pytest.mark.slow
def test_shipped_weights_on_sentences_outside_their_data() -> None:
    """The fitted models (real e5) on sentences that are in no training file."""
    ex = LearnedExtractor()
    about = ex.models.about_user(
        [
            "my allotment plot number is 62",
            "mi hermana vive en Quito",  # not English or Chinese: anything but a crash
            "Would it be weird to take up fencing at 50",
            "My neighbour is a pilot for Qantas",
        ]
    )
    assert about[0] > 0.5 and about[2] < 0.5 and about[3] < 0.5
    current = [
        CoreFact.new("home_city", "lives in Manchester"),
        CoreFact.new("allergy:peanuts", "allergic to peanuts"),
    ]
    links = ex.models.link("the movers just left, the house in Sheffield is ours", current)
    assert links[0].p > links[1].p


def test_earlier_fact_is_shown_beside_the_newer_never_as_current(tmp_path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage

    from langchain_tiered_memory.store import MemoryStore
    from langchain_tiered_memory.values.turns import message_text

    models = ScriptedModels(
        {"Deloitte": 0.95, "Stripe": 0.95}, {("Stripe", "at Deloitte in audit"): 0.5}
    )
    store = MemoryStore(tmp_path / "s", embeddings=DeterministicFakeEmbedding(size=16))
    try:
        memory = store.memory("u", "t", extractor=LearnedExtractor(models))
        memory.add_messages([HumanMessage("I work at Deloitte in audit."), AIMessage("Noted.")])
        memory.add_messages([HumanMessage("first week at Stripe went well"), AIMessage("Nice!")])
        current = " ".join(f.content for f in memory.core.active())
        assert "Stripe" in current and "Deloitte" not in current
        memory.add_messages([HumanMessage("Write a LinkedIn headline for me.")])
        prompt = "\n".join(message_text(m) for m in memory.build_context().messages)
        assert "earlier (" in prompt and "Deloitte" in prompt
    finally:
        store.close()


def test_possible_clause_that_surely_updates_a_current_fact_replaces_it() -> None:
    core = CoreMemory([CoreFact.new("car", "drives a Passat", source_turn=0)])
    models = ScriptedModels({"Tesla": 0.6}, {("Tesla", "Passat"): 0.95})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "the new Tesla drives like a dream")])
    assert [f.content for f in core.active()] == ["the new Tesla drives like a dream"]


def test_links_when_no_fact_stands_out_move_every_linked_fact_out_as_earlier() -> None:
    core = CoreMemory(
        [
            CoreFact.new("work", "works at Deloitte", source_turn=0),
            CoreFact.new("home_city", "lives in Deloitte Town", source_turn=0),
            CoreFact.new("pet:dog", "dog is called Rex", source_turn=0),
        ]
    )
    models = ScriptedModels({"Stripe": 0.95}, {("Stripe", "Deloitte"): 0.9})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "first week at Stripe went well")])
    assert sorted(f.content for f in core.active()) == [
        "dog is called Rex",
        "first week at Stripe went well",
    ]
    moved = [f for f in core.history() if f.status == "archived"]
    assert len(moved) == 2 and all(f.reason.startswith("earlier") for f in moved)


def test_a_sure_link_from_an_ending_ends_the_fact_and_keeps_no_new_one() -> None:
    core = CoreMemory([CoreFact.new("gym", "goes to PureGym on Deansgate", source_turn=0)])
    models = ScriptedModels({"PureGym": 0.95}, {("Cancelled", "PureGym"): 0.9})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    result = writer.extract([_turn(1, "Cancelled PureGym")])
    assert core.active() == [] and [f.status for f in core.history("gym")] == ["ended"]
    assert [f.subject for f in result.ended] == ["gym"]


def test_an_unsure_second_link_beside_a_sure_one_is_moved_out_too() -> None:
    core = CoreMemory(
        [
            CoreFact.new("work", "works at Deloitte", source_turn=0),
            CoreFact.new("said:aa", "my team at Deloitte does audit", source_turn=0),
        ]
    )
    models = ScriptedModels(
        {"Stripe": 0.95}, {("Stripe", "works at Deloitte"): 0.95, ("Stripe", "my team"): 0.5}
    )
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "first week at Stripe went well")])
    assert [f.content for f in core.active()] == ["first week at Stripe went well"]
    assert core.active()[0].subject == "work"


def test_facts_of_one_message_never_replace_each_other() -> None:
    models = ScriptedModels({"started running": 0.95, "34": 0.9}, {("started running", "34"): 0.99})
    writer = MemoryWriter(CoreMemory(), extractor=LearnedExtractor(models))
    writer.extract([_turn(0, "I'm 34. Just started running")])
    assert "34" in " ".join(f.content for f in writer.core.active())


def test_possible_update_with_an_unsure_link_leaves_neither_alone_as_current() -> None:
    core = CoreMemory([CoreFact.new("home_city", "lives in Manchester", source_turn=0)])
    models = ScriptedModels({"Sheffield": 0.6}, {("Sheffield", "Manchester"): 0.6})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    result = writer.extract([_turn(1, "the house in Sheffield feels like ours")])
    assert not core.active() and [f.content for f in result.possible] == [
        "the house in Sheffield feels like ours"
    ]
    assert core.history("home_city")[0].reason.startswith("earlier")


def test_requests_and_conditionals_are_not_kept() -> None:
    ex = LearnedExtractor(ScriptedModels({"": 0.99}, {}))
    facts = ex.extract(
        [_turn(0, "Plan a date night for Friday. If the bonus comes I'll buy a boat.")]
    )
    assert facts == []


def test_a_kept_clause_carries_the_time_it_names() -> None:
    from datetime import datetime, timezone

    ex = LearnedExtractor(ScriptedModels({"Porto": 0.95}, {}))
    said = datetime(2026, 7, 10, tzinfo=timezone.utc)
    facts = ex.extract_text("we settled in Porto last month", source_turn=0, said_at=said)
    assert facts and facts[0].valid_from is not None and facts[0].valid_from.month == 6


def test_a_rule_fact_from_a_sentence_surely_not_about_the_user_is_dropped() -> None:
    models = ScriptedModels({"Sketch for later": 0.02, "I'm allergic": 0.97}, {})
    ex = LearnedExtractor(models, rule_veto=0.1)
    story = ex.extract_text("Sketch for later: a retired ferryman adopts a cat named Bosun.")
    assert not any("Bosun" in f.content for f in story)
    mine = ex.extract_text("Sketch for later: a retired ferryman. I'm allergic to peanuts.")
    assert any("peanuts" in f.content for f in mine)
    # with the veto off, the rules' fact stays (the rule extractor alone keeps it)
    kept = LearnedExtractor(models, rule_veto=0.0).extract_text(
        "Sketch for later: a retired ferryman adopts a cat named Bosun."
    )
    assert any("Bosun" in f.content for f in kept)


def test_a_sure_link_to_a_subject_naming_the_old_value_moves_the_old_fact_out() -> None:
    core = CoreMemory([CoreFact.new("about:use pixel phone", "uses a Pixel phone", source_turn=0)])
    models = ScriptedModels({"iPhone": 0.95}, {("iPhone", "Pixel"): 0.95})
    writer = MemoryWriter(core, extractor=LearnedExtractor(models))
    writer.extract([_turn(1, "switched to an iPhone 15, don't judge me")])
    current = "\n".join(f"{f.subject}: {f.content}" for f in core.active())
    assert "iPhone" in current and "pixel" not in current.lower()
    old = core.history("about:use pixel phone")[0]
    assert old.status == "archived" and old.reason is not None and old.reason.startswith("earlier")


def test_a_clause_a_contrast_takes_back_is_scored_with_it() -> None:
    models = ScriptedModels({"decided against": 0.05, "switch to a vegan diet": 0.99}, {})
    ex = LearnedExtractor(models)
    facts = ex.extract_text("I was going to switch to a vegan diet, but I've decided against it.")
    assert not any("vegan" in f.content for f in facts)
    kept = ex.extract_text("I was going to switch to a vegan diet. Anyway.")
    assert any("vegan" in f.content for f in kept)
