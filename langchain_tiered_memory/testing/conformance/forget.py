"""Conformance: forgetting - total, durable, honoured by every open view, never resurrected."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.memory import FORGOTTEN_REQUEST
from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing.conformance.backend import Backend, file_bytes
from langchain_tiered_memory.tiers.core import CoreFact

WINDOW = 1024
SECRET = "zebrasecret"  # a word that exists only in what gets forgotten


def chat(memory, n: int, *, secret: bool = False) -> None:
    for i in range(n):
        word = f" {SECRET}{i}" if secret else ""
        memory.add_messages(
            [
                HumanMessage(
                    f"message {i} about trains and lamps{word}", id=f"{memory.thread_id}-h{i}"
                ),
                AIMessage(f"reply {i} about trains{word}", id=f"{memory.thread_id}-a{i}"),
            ]
        )


def test_forget_user_removes_every_tier_and_leaves_others(backend: Backend) -> None:
    store = backend.open()
    for user in ("ana", "bob"):
        memory = store.memory(user, "t1", context_window=WINDOW)
        chat(memory, 30, secret=user == "ana")
        memory.write_fact(
            CoreFact.new("allergy", f"allergic to {SECRET}" if user == "ana" else "none")
        )
    assert store.archive.count("ana") > 0
    deleted = store.forget_user("ana")
    assert deleted > 0
    assert store.archive.count("ana") == 0
    assert store.threads("ana") == []
    assert store.core("ana").history() == []
    assert "ana" not in store.users()
    data = store.export_user("ana")
    assert data["records"] == [] and data["threads"] == {} and data["core_memory"] == []
    assert [(e.kind, e.payload.get("forgotten")) for e in store.audit.events("ana")] == [
        ("delete", True)
    ]
    bob = store.memory("bob", "t1", context_window=WINDOW)
    assert store.archive.count("bob") > 0 and bob.core.get("allergy") is not None
    assert len(bob.messages) > 0
    if backend.files():  # nothing of it left in any byte of any file
        assert SECRET.encode() not in file_bytes(backend)


def test_open_views_honour_a_forget_and_keep_what_comes_after(backend: Backend) -> None:
    store = backend.open()
    same = store.memory("ana", "t1", context_window=WINDOW)
    other = store.memory("ana", "t2", context_window=WINDOW)
    chat(same, 12, secret=True)
    chat(other, 3, secret=True)
    other.write_fact(CoreFact.new("pet", f"a cat called {SECRET}"))
    store.forget_user("ana")  # e.g. from another process, or another request
    # each open view writes again: nothing forgotten comes back, the new turn is kept
    same.add_messages([HumanMessage("My name is Ana."), AIMessage("Hello Ana.")])
    other.add_messages([HumanMessage("I like jazz."), AIMessage("Noted.")])
    assert [m.content for m in same.messages] == ["My name is Ana.", "Hello Ana."]
    assert [m.content for m in other.messages] == ["I like jazz.", "Noted."]
    assert {f.subject for f in same.core.active()} == {"name", "likes:jazz"}
    assert SECRET not in same.core.render() + same.build_context().messages.__repr__()
    if backend.durable:
        store.close()
        store = backend.open()
    again = store.memory("ana", "t1", context_window=WINDOW)
    assert [m.content for m in again.messages] == ["My name is Ana.", "Hello Ana."]
    assert {f.subject for f in store.core("ana").active()} == {"name", "likes:jazz"}
    everything = repr(store.export_user("ana"))
    assert SECRET not in everything
    if backend.files():
        assert SECRET.encode() not in file_bytes(backend)


def test_a_replayed_conversation_is_not_stored_again(store: MemoryStore) -> None:
    memory = store.memory("ana", "t1", context_window=WINDOW)
    old = [HumanMessage(f"{SECRET} one", id="x1"), AIMessage(f"{SECRET} two", id="x2")]
    memory.sync(old)
    store.forget_user("ana")
    # a graph whose state (or checkpoint) still holds the old messages replays them
    added = memory.sync([*old, HumanMessage("hello again", id="x3")])
    assert [m.id for m in added] == ["x3"]
    assert [m.content for m in memory.messages] == ["hello again"]
    assert SECRET not in repr(store.export_user("ana"))


def test_forgetting_a_fact_removes_what_stated_and_carried_it(store: MemoryStore) -> None:
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.add_messages(
        [HumanMessage(f"I'm allergic to {SECRET}."), AIMessage("Noted, no more of that.")]
    )
    memory.add_messages([HumanMessage("I live in Paris."), AIMessage("Lovely city.")])
    assert memory.core.get(f"allergy:{SECRET}") is not None
    stating = [t.index for t in memory.state.turns if SECRET in t.transcript()]
    chat(memory, 30)  # the statement pages out into the archive and the summary
    allergy = memory.core.get(f"allergy:{SECRET}")
    assert allergy is not None
    store.archive.add(  # an observation citing the fact's record
        [
            MemoryRecord.new(
                user_id="ana",
                kind="observation",
                text=f"ana avoids {SECRET}",
                sources=(f"ana:fact:{allergy.id}",),
            )
        ]
    )
    assert any(SECRET in r.text for r in store.archive.records("ana"))
    removed = memory.forget_fact(f"allergy:{SECRET}")
    assert removed and all(f.subject == f"allergy:{SECRET}" for f in removed)
    assert memory.core.get(f"allergy:{SECRET}") is None
    assert memory.core.get("home_city") is not None  # the other fact stays
    assert not any(SECRET in r.text for r in store.archive.records("ana"))
    assert SECRET not in memory.state.summary
    assert stating and not set(stating) & {t.index for t in memory.state.turns}
    assert SECRET not in repr(store.export_user("ana"))
    assert store.archive.keyword_search(SECRET, "ana") == []


def test_a_forget_request_in_the_conversation_is_carried_out(store: MemoryStore) -> None:
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.add_messages([HumanMessage(f"My dog is called {SECRET}."), AIMessage("Cute!")])
    memory.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    memory.add_messages([HumanMessage("I live in Paris."), AIMessage("Nice.")])
    records = store.archive.count("ana")
    assert records >= 2  # the two facts' records
    memory.add_messages([HumanMessage("Please forget everything you know about me.")])
    [notice] = [str(m.content) for m in memory.messages]
    assert notice.startswith(FORGOTTEN_REQUEST) and "everything" in notice
    assert memory.core.active() == []
    assert SECRET not in repr(store.export_user("ana"))
    deletes = [e.payload for e in store.audit.events("ana", kinds=["delete"])]
    assert deletes == [{"forgotten": True, "records": records}]  # every record counted
    assert "ana" not in store.users()  # the notice is no user data
    memory.add_messages([AIMessage("Done - I have forgotten it.")])
    assert [m.type for m in memory.messages] == ["human", "ai"]
    assert "ana" not in store.users()
    memory.add_messages([HumanMessage("Hello again."), AIMessage("Hello!")])
    assert store.users() == ["ana"]  # what she says afterwards is kept


def test_a_forget_request_says_what_it_found(store: MemoryStore) -> None:
    """The model is told what was deleted, or that nothing matched - never a deletion
    that did not happen."""
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.add_messages([HumanMessage("I live in Lisbon."), AIMessage("Lovely city.")])
    memory.add_messages([HumanMessage("Forget what I said about Madrid.")])
    nothing = str(memory.messages[-1].content)
    assert nothing.startswith(FORGOTTEN_REQUEST)
    assert "Nothing in memory matched" in nothing and "Madrid" not in nothing
    assert memory.core.get("home_city") is not None  # nothing was deleted
    assert memory.last_forget is not None and not memory.last_forget.found
    memory.add_messages([AIMessage("There was nothing about that to forget.")])
    memory.add_messages([HumanMessage("Forget what I said about Lisbon.")])
    done = str(memory.messages[-1].content)
    assert done.startswith(FORGOTTEN_REQUEST) and "Lisbon" not in done
    assert "1 fact" in done and "1 conversation turn" in done
    assert memory.core.get("home_city") is None
    assert not any("Lisbon" in str(m.content) for m in memory.messages)


def test_a_forget_by_words_reaches_every_tier(backend: Backend) -> None:
    """ "Forget what I said about X": the buffer, the log, the archive, the summaries,
    core memory and the audit log of every thread of the user - and no byte of any file."""
    store = backend.open()
    memory = store.memory("ana", "t1", context_window=WINDOW)
    memory.add_messages([HumanMessage("I moved to Lisbon last month."), AIMessage("Nice!")])
    memory.add_messages(
        [HumanMessage(f"Actually we moved again, to {SECRET}."), AIMessage(f"{SECRET}, lovely!")]
    )
    other = store.memory("ana", "t2", context_window=WINDOW)
    other.add_messages([HumanMessage(f"Flights to {SECRET} are cheap."), AIMessage("Good.")])
    chat(other, 30)  # that turn pages out: archive records and summaries carry it
    memory.recall(f"where is {SECRET}")  # a recall audit event with the words in its query
    bob = store.memory("bob", "t1", context_window=WINDOW)
    bob.add_messages([HumanMessage(f"I love {SECRET}."), AIMessage("Me too.")])
    assert SECRET in repr(store.export_user("ana"))
    memory.add_messages([HumanMessage(f"Forget what I said about {SECRET}.")])
    notice = str(memory.messages[-1].content)
    assert notice.startswith(FORGOTTEN_REQUEST) and SECRET not in notice
    assert "2 conversation turns" in notice  # one in each thread
    assert SECRET not in repr(memory.build_context().messages)
    assert SECRET not in repr(store.memory("ana", "t2", context_window=WINDOW).build_context())
    assert SECRET not in repr(store.export_user("ana"))  # log, records, facts, audit events
    assert store.archive.keyword_search(SECRET, "ana") == []
    # "moved again, to X" is the home fact now (issue 30): forgetting X forgets that subject;
    # the Lisbon turn stays in the conversation
    assert SECRET not in memory.core.render()
    assert any("Lisbon" in str(m.content) for m in memory.messages)
    kinds = [(e.kind, e.payload.get("forgotten")) for e in store.audit.events("ana")]
    assert ("delete", True) in kinds  # the event that says something was forgotten
    assert SECRET in repr(store.export_user("bob"))  # other users keep theirs
    store.forget_user("bob")
    if backend.files():  # nothing of it left in any byte of any file
        assert SECRET.encode() not in file_bytes(backend)


def test_forget_thread_removes_one_conversation(store: MemoryStore) -> None:
    keep = store.memory("ana", "keep", context_window=WINDOW)
    drop = store.memory("ana", "drop", context_window=WINDOW)
    chat(keep, 20)
    chat(drop, 20, secret=True)
    assert store.forget_thread("ana", "drop") > 0
    assert store.threads("ana") == ["keep"]
    assert store.archive.records(RecordFilter("ana", thread_id="drop")) == []
    assert drop.messages == [] and drop.state.summary == ""
    assert len(keep.messages) > 0
    drop.add_messages([HumanMessage("a fresh start")])
    assert [m.content for m in drop.messages] == ["a fresh start"]
    assert SECRET not in repr(store.export_user("ana"))


@pytest.mark.parametrize("bad", ["ana\x00", "bad\ud800id", "", "x" * 600])
def test_invalid_ids_are_a_clear_error_and_store_nothing(store: MemoryStore, bad: str) -> None:
    with pytest.raises(ValueError, match="user_id"):
        store.memory(bad, "t1")
    with pytest.raises(ValueError, match="thread_id"):
        store.memory("ana", bad)
    with pytest.raises(ValueError, match="user_id"):
        store.forget_user(bad)
    assert store.users() == []
