"""The core parses `mcpServers` into typed records and hands providers those, never raw JSON."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_agent.testing import run_in_process
from acp_agent.wire.acp import EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio, parse_mcp_servers
from acp_agent.wire.convert import FieldProblem
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.timeout(30)]
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
    host = client.agent._opening
    assert host is not None and isinstance(host.runtime, ScriptedRuntime)
    return host.runtime


@pytest.mark.anyio
async def test_new_load_resume_and_fork_hand_the_provider_typed_records() -> None:
    async with run_in_process(make_spec({"history": {"stored": [{"user": "hi"}]}})) as client:
        await client.initialize()
        created = await client.request("session/new", {"cwd": CWD, "mcpServers": WIRE})
        await client.request("session/load", {"sessionId": "stored", "cwd": CWD, "mcpServers": WIRE})
        await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": WIRE[2:]})
        await client.request("session/fork", {"sessionId": created["sessionId"], "cwd": CWD, "mcpServers": []})
        received = runtime_of(client).mcp_servers
    assert received == [TYPED, TYPED, TYPED[2:], []]


@pytest.mark.anyio
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


@pytest.mark.anyio
async def test_a_nested_list_field_is_named_as_spelled_on_the_wire() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        with pytest.raises(RpcError) as caught:
            await client.request("session/new", {"cwd": CWD, "mcpServers": [], "additionalDirectories": ["/a", 5]})
    assert caught.value.data == {"field": "params.additionalDirectories[1]"}


_junk = st.none() | st.booleans() | st.integers() | st.lists(st.integers(), max_size=2) | st.just({})
_text = st.sampled_from(["a", "b", ""]) | _junk
_pairs = st.lists(st.fixed_dictionaries({}, optional={"name": _text, "value": _text}) | _junk, max_size=2) | _junk
_server = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["stdio", "http", "sse", "ws"]) | _junk, "name": _text, "command": _text, "url": _text,
    "args": st.lists(_text, max_size=2) | _junk, "env": _pairs, "headers": _pairs, "_meta": _junk})


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(_server | _junk, max_size=3) | _junk)
def test_any_json_is_either_typed_records_or_one_named_field(value: Any) -> None:
    """Whatever a client sends, the parse never fails any other way (which would not name a field)."""
    where: str | None = None
    try:
        servers = parse_mcp_servers(value)
    except FieldProblem as problem:
        where, servers = problem.where, []
    assert where is None or where == "" or where.startswith("[")
    assert all(isinstance(server, McpServerStdio | McpServerHttp | McpServerSse) for server in servers)
