"""The core parses `mcpServers` into typed records and hands providers those, never raw JSON."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from acp_agent.acp import EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio
from acp_agent.rpc import RpcError
from acp_agent.testing import run_in_process
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()
WIRE = [
    {"name": "tools", "command": "/usr/bin/true", "args": ["--flag"], "env": [{"name": "A", "value": "1"}]},
    {"type": "stdio", "name": "bare", "command": "mcp-bare", "_meta": {"x": 1}},
    {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]},
    {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse"},
]
TYPED = [
    McpServerStdio("tools", "/usr/bin/true", ["--flag"], [EnvVariable("A", "1")]),
    McpServerStdio("bare", "mcp-bare", meta={"x": 1}),
    McpServerHttp("web", "http://127.0.0.1:9/mcp", [HttpHeader("X", "y")]),
    McpServerSse("old", "http://127.0.0.1:9/sse"),
]


def runtime_of(client: Any) -> ScriptedRuntime:
    host = client.agent._host
    assert host is not None and isinstance(host.runtime, ScriptedRuntime)
    return host.runtime


async def test_new_load_resume_and_fork_hand_the_provider_typed_records() -> None:
    async with run_in_process(make_spec({"history": {"stored": [{"user": "hi"}]}})) as client:
        await client.initialize()
        created = await client.request("session/new", {"cwd": CWD, "mcpServers": WIRE})
        await client.request("session/load", {"sessionId": "stored", "cwd": CWD, "mcpServers": WIRE})
        await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": WIRE[2:]})
        await client.request("session/fork", {"sessionId": created["sessionId"], "cwd": CWD, "mcpServers": []})
        received = runtime_of(client).mcp_servers
    assert received == [TYPED, TYPED, TYPED[2:], []]


async def test_a_malformed_server_is_invalid_params_naming_the_field_and_no_provider_sees_it() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        await client.new_session(CWD)
        with pytest.raises(RpcError) as caught:
            await client.request("session/new", {"cwd": CWD, "mcpServers": [WIRE[0], {**WIRE[2], "headers": [{}]}]})
        received = runtime_of(client).mcp_servers
    assert (caught.value.code, caught.value.data) == (-32602, {"field": "params.mcpServers[1].headers[0].name"})
    assert caught.value.message == "Invalid params: params.mcpServers[1].headers[0].name: expected a string"
    assert received == [[]]


async def test_a_nested_list_field_is_named_as_spelled_on_the_wire() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        with pytest.raises(RpcError) as caught:
            await client.request("session/new", {"cwd": CWD, "mcpServers": [], "additionalDirectories": ["/a", 5]})
    assert caught.value.data == {"field": "params.additionalDirectories[1]"}
