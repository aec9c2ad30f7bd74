"""The LangGraph server's custom app (``langgraph.json``: ``http.app``): a shutdown hook.

``langgraph dev`` and the Agent Server stop on SIGTERM by re-raising the
signal once uvicorn has shut down, so Python's exit handlers never run. This
app's lifespan flushes every open memory store when the server shuts down
(the vector index file, pending access times), so the next start finds the
index complete instead of rebuilding it. Add the same ``http.app`` entry to
your own ``langgraph.json`` when you serve a graph built with
``build_memory_graph``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette

from langchain_tiered_memory.store import flush_open_stores


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    yield
    await asyncio.to_thread(flush_open_stores)  # file writes: off the event loop


app = Starlette(lifespan=lifespan)
