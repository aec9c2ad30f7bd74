"""``tiered-memory mcp``: the real server process, driven by the MCP client and a LangChain agent.

Each test starts the command as a user would (``tiered-memory mcp ...``) and
talks to it over stdio or streamable HTTP on a free localhost port; the
LangChain agent reaches it through ``langchain-mcp-adapters``. Two users
share one data directory; neither may read the other's memory, whatever the
tool arguments say.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from langchain_tiered_memory.cli.app import app
from langchain_tiered_memory.store import MemoryStore

pytestmark = [pytest.mark.server, pytest.mark.subprocess]

CLI = str(Path(sys.executable).with_name("tiered-memory"))
TOKENS = {"ana-token-0123456789abcdef": "ana", "bob-token-0123456789abcdef": "bob"}
ANA, BOB = (f"Bearer {t}" for t in TOKENS)
ENV = {**os.environ, "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


@asynccontextmanager
async def stdio_session(data: Path, user: str):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=CLI,
        args=["mcp", "--user", user, "--data-dir", str(data), "--embeddings", "none"],
        env=ENV,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.mark.slow
async def test_stdio_session_serves_one_user_and_never_another(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with stdio_session(data, "ana") as ana:
        tools = {t.name: t for t in (await ana.list_tools()).tools}
        assert set(tools) == {
            "remember",
            "recall",
            "read_core_memory",
            "write_core_fact",
            "forget",
            "forget_everything",
        }
        for tool in tools.values():  # no tool lets the model name a user
            assert not {"user", "user_id"} & set(tool.inputSchema.get("properties", {}))
        assert text(await ana.call_tool("remember", {"text": "My hotel in Porto is Casa Azul."}))
        said = await ana.call_tool(
            "write_core_fact", {"subject": "allergy", "content": "allergic to peanuts"}
        )
        assert "Saved to core memory" in text(said)
        found = text(await ana.call_tool("recall", {"query": "hotel Porto"}))
        assert found.startswith("Recalled memories") and "Casa Azul.</memory>" in found
        assert "memory ids, best first:" in found
        core = await ana.read_resource("memory://core")  # type: ignore[arg-type]
        assert "allergic to peanuts" in core.contents[0].text  # type: ignore[union-attr]
    async with stdio_session(data, "bob") as bob:
        assert text(await bob.call_tool("recall", {"query": "hotel Porto Casa Azul"})) == (
            "No memories found."
        )
        assert text(await bob.call_tool("read_core_memory", {})) == "(empty)"
        await bob.call_tool("remember", {"text": "Bob's locker code is 8812."})
        refused = await bob.call_tool("forget_everything", {"confirm": False})
        assert refused.isError and "confirm=true" in text(refused)
    async with stdio_session(data, "ana") as ana:
        assert "No memories" in text(await ana.call_tool("recall", {"query": "locker code 8812"}))
        gone = await ana.call_tool("forget", {"subject": "allergy"})
        assert "Forgot 1 version" in text(gone)
        assert "peanuts" not in text(await ana.call_tool("read_core_memory", {}))
    with MemoryStore(data, embeddings="none") as store:  # the server flushed and closed
        assert [r.text for r in store.archive.records("bob")] == ["Bob's locker code is 8812."]
        assert store.core("ana").history("allergy") == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    port = _free_port()
    log = tmp_path / "server.log"
    data = tmp_path / "data"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [CLI, "mcp", "--transport", "http", "--port", str(port), "--tokens", str(tokens),
             "--data-dir", str(data)],
            env=ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            httpx.get(url, timeout=2)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
    try:
        yield {"url": url, "data": data, "proc": proc, "log": log}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@asynccontextmanager
async def http_session(url: str, authorization: str):  # type: ignore[no-untyped-def]
    http = httpx.AsyncClient(headers={"Authorization": authorization}, timeout=60)
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_http_serves_each_token_its_own_user(http_server: dict[str, Any]) -> None:
    url = http_server["url"]
    for bad in (None, "Bearer not-a-token-of-anyone", "Basic YW5hOmFuYQ=="):
        headers = {"Authorization": bad} if bad else {}
        response = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code == 401, (bad, response.text)
    async with http_session(url, ANA) as ana, http_session(url, BOB) as bob:
        await ana.call_tool("remember", {"text": "Ana's gate code is 4711."})
        await bob.call_tool("remember", {"text": "Bob's gate code is 9090."})
        await ana.call_tool("write_core_fact", {"subject": "city", "content": "lives in Porto"})
        ana_found = text(await ana.call_tool("recall", {"query": "gate code"}))
        bob_found = text(await bob.call_tool("recall", {"query": "gate code"}))
        assert "4711" in ana_found and "9090" not in ana_found
        assert "9090" in bob_found and "4711" not in bob_found
        assert "Porto" not in text(await bob.call_tool("read_core_memory", {}))
        # an argument naming another user changes nothing: the token decides
        sneaky = await bob.call_tool("recall", {"query": "gate code", "user_id": "ana"})
        assert "4711" not in text(sneaky)
        bob_core = await bob.read_resource("memory://core")  # type: ignore[arg-type]
        assert "Porto" not in bob_core.contents[0].text  # type: ignore[union-attr]
        # bob cannot forget ana's memory by its id: ids are looked up in bob's memory only
        ana_id = ana_found.rsplit("memory ids, best first: ", 1)[1].split(",")[0].strip()
        assert "No memory" in text(await bob.call_tool("forget", {"memory_id": ana_id}))
        assert "4711" in text(await ana.call_tool("recall", {"query": "gate code"}))
        expiring = await ana.call_tool(
            "remember", {"text": "The wifi password is lantern", "expires_in_days": 1}
        )
        assert "Remembered until" in text(expiring)


class ScriptedModel(GenericFakeChatModel):
    """A fake chat model that accepts tools and replies from a script."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self


def call(name: str, args: dict[str, Any], id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": id, "type": "tool_call"}])


async def test_a_langchain_agent_uses_the_tools_through_the_adapters(
    http_server: dict[str, Any],
) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    url = http_server["url"]
    client = MultiServerMCPClient(
        {
            user: {"transport": "streamable_http", "url": url, "headers": {"Authorization": auth}}
            for user, auth in (("ana", ANA), ("bob", BOB))
        }
    )
    tools = {user: await client.get_tools(server_name=user) for user in ("ana", "bob")}
    assert {t.name for t in tools["ana"]} >= {"remember", "recall", "write_core_fact", "forget"}

    async def run(user: str, script: list[AIMessage]) -> list[str]:
        agent = create_agent(ScriptedModel(messages=iter(script)), tools=tools[user])
        result = await agent.ainvoke({"messages": [HumanMessage("hi")]})
        return [m.text for m in result["messages"] if isinstance(m, ToolMessage)]

    await run(
        "ana",
        [
            call("remember", {"text": "Ana is allergic to peanuts."}, "a1"),
            call("write_core_fact", {"subject": "allergy", "content": "peanuts"}, "a2"),
            AIMessage("Noted."),
        ],
    )
    await run("bob", [call("remember", {"text": "Bob plays the cello."}, "b1"), AIMessage("Ok.")])
    ana = await run(
        "ana",
        [
            call("recall", {"query": "allergic peanuts cello"}, "a3"),
            call("read_core_memory", {}, "a4"),
            AIMessage("You are allergic to peanuts."),
        ],
    )
    bob = await run(
        "bob",
        [
            call("recall", {"query": "allergic peanuts cello"}, "b2"),
            call("read_core_memory", {}, "b3"),
            AIMessage("You play the cello."),
        ],
    )
    assert "allergic to peanuts" in ana[0] and "cello" not in ana[0]
    assert "peanuts" in ana[1]
    assert "cello" in bob[0] and "peanuts" not in bob[0]
    assert bob[1] == "(empty)"


def test_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"abc": "ana"}))
    numbered = tmp_path / "numbered.json"
    numbered.write_text(json.dumps({"x" * 24: 7}))
    cases = [
        (["mcp"], "exactly one"),
        (["mcp", "--user", "ana", "--tokens", str(short)], "exactly one"),
        (["mcp", "--tokens", str(short)], "stdio has no request headers"),
        (["mcp", "--transport", "http", "--tokens", str(short)], "at least 16"),
        (["mcp", "--user", "   "], "non-empty"),
        (["mcp", "--transport", "http", "--tokens", str(numbered)], "user id must be a string"),
        (["mcp", "--user", "ana", "--transport", "ws"], "'stdio' or 'http'"),
        (
            ["mcp", "--user", "ana", "--transport", "http", "--host", "0.0.0.0",
             "--data-dir", str(tmp_path / "d")],
            "loopback",
        ),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)


async def test_the_server_reports_its_version_and_a_disconnect_logs_nothing(
    http_server: dict[str, Any],
) -> None:
    import langchain_tiered_memory

    url = http_server["url"]
    for _ in range(3):  # clients that come, work and leave, as clients do
        http = httpx.AsyncClient(headers={"Authorization": ANA}, timeout=60)
        async with (
            http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            hello = await session.initialize()
            await session.call_tool("remember", {"text": "Ana's gate code is 4711."})
            assert "4711" in text(await session.call_tool("recall", {"query": "gate code"}))
        assert hello.serverInfo.name == "tiered-memory"
        assert hello.serverInfo.version == langchain_tiered_memory.__version__
    time.sleep(1.0)  # what the server logs after the disconnects
    log = http_server["log"].read_text()
    assert "Traceback" not in log and "Error" not in log, log
    assert http_server["proc"].poll() is None  # still serving
