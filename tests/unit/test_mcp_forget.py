"""The MCP tool ``forget(subject=...)`` matches as chat's ``/forget`` does: a fact's subject,
else the words of subject or content, in every tier; when nothing matches it lists what
there is (issue 33 item 5, over MCP). Driven through the real server, in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from mcp.shared.memory import create_connected_server_and_client_session

from langchain_tiered_memory.integrations.mcp_server import MemoryTools, build_mcp_server
from langchain_tiered_memory.store import MemoryStore


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def said_in_chat(store: MemoryStore) -> None:
    """Ana talks in another thread (not the MCP one): the facts and turns are there."""
    chat = store.memory("ana", "chat", context_window=2048)
    chat.add_messages(
        [HumanMessage("My daughter Mia starts school in September."), AIMessage("Nice!")]
    )
    chat.add_messages([HumanMessage("I moved to Lisbon last month."), AIMessage("Lovely.")])
    subjects = {f.subject for f in store.core("ana").active()}
    assert "family:daughter" in subjects and "home_city" in subjects


async def test_forget_finds_a_fact_by_the_words_of_its_subject_or_content(tmp_path: Path) -> None:
    with MemoryStore(tmp_path, embeddings="none") as store:
        said_in_chat(store)
        server = build_mcp_server(store, user_id="ana")
        async with create_connected_server_and_client_session(server) as client:
            out = text(await client.call_tool("forget", {"subject": "daughter"}))
            assert out.startswith("Forgot 2 facts") and out.endswith("about 'daughter'.")
            out = text(await client.call_tool("forget", {"subject": "Lisbon"}))
            assert out.startswith("Forgot ") and "about 'Lisbon'" in out
        assert store.core("ana").history() == []
        exported = repr(store.export_user("ana"))
        assert "Mia" not in exported and "Lisbon" not in exported  # every tier, every thread


async def test_forget_lists_what_there_is_when_nothing_matches(tmp_path: Path) -> None:
    with MemoryStore(tmp_path, embeddings="none") as store:
        said_in_chat(store)
        before = store.export_user("ana")
        server = build_mcp_server(store, user_id="ana")
        async with create_connected_server_and_client_session(server) as client:
            out = text(await client.call_tool("forget", {"subject": "Madrid"}))
            assert out.startswith("Nothing in memory matches 'Madrid'; core facts: ")
            assert "family:daughter (" in out and "home_city (" in out  # names kept as said
            refused = await client.call_tool("forget", {"subject": "the"})
            assert refused.isError and "nothing to match" in text(refused)
        after = store.export_user("ana")
        for part in ("records", "threads", "core_memory", "audit_events"):
            assert after[part] == before[part], part  # nothing deleted


def test_a_subject_named_exactly_forgets_every_version(tmp_path: Path) -> None:
    with MemoryStore(tmp_path, embeddings="none") as store:
        tools = MemoryTools(store, "ana")
        tools.write_core_fact("allergy", "allergic to peanuts")
        tools.write_core_fact("allergy", "allergic to peanuts and shellfish")
        assert tools.forget(subject="allergy") == "Forgot 2 version(s) of 'allergy'."
        assert store.core("ana").history("allergy") == []
