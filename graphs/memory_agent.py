"""The prebuilt memory agent, ready for ``langgraph dev`` (see ``langgraph.json``).

    load_memory -> (recall?) -> recall -> answer -> update_memory

Importing this module needs no API key and no network: the chat model is
chosen per run from ``config["configurable"]["model"]`` (any
``init_chat_model`` string, e.g. ``"openai:gpt-4o-mini"``) or the
``TIERED_MEMORY_MODEL`` environment variable. Memory lives under
``$TIERED_MEMORY_HOME`` (default ``.tiered-memory``), conversations are
checkpointed to SQLite there, and ``user_id`` / ``thread_id`` come from the
run config.

To build your own (your model, tools, budget and store), call
:func:`langchain_tiered_memory.graph.build_memory_graph`.
"""

from __future__ import annotations

import os

from langchain_tiered_memory.graph import build_memory_graph

graph = build_memory_graph(
    None,
    context_window=int(os.environ.get("TIERED_MEMORY_CONTEXT_WINDOW", "8192")),
)
