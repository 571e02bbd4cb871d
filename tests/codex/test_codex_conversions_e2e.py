"""What the core checks and converts for Codex, through `acp-agent --provider codex`: modes and
options the session did not offer (real app-server), and the MCP servers the app-server is given."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.codex.e2e_support import codex_agent, stand_in_env, text, turn_metadata, workspace, write_codex_home
from tests.e2e.harness import spawn_agent
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]


async def refusal(call: Awaitable[Any]) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as caught:
        await call
    return caught.value


@pytest.mark.real_backend
async def test_an_unknown_mode_option_or_value_is_invalid_params_from_the_agent(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "still fine"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            errors = [
                await refusal(agent.conn.set_session_mode(session_id=sid, mode_id="yolo")),
                await refusal(agent.conn.set_config_option(session_id=sid, config_id="effort", value="high")),
                await refusal(agent.conn.set_config_option(session_id=sid, config_id="model", value="no-such-model")),
            ]
            result = await agent.conn.prompt(session_id=sid, prompt=text("still usable"))
        requests = api.turn_requests
    assert [(error.code, error.data) for error in errors] == [
        (-32602, {"field": "modeId"}), (-32602, {"field": "configId"}), (-32602, {"field": "value"})]
    assert "choose one of read-only, auto, auto-review, full-access" in str(errors[0])
    assert result.stop_reason == "end_turn"
    # nothing a refused request named reached the backend
    assert [turn_metadata(request).get("sandbox_mode") for request in requests] == ["workspace-write"]
    assert [request.body["model"] for request in requests] == ["gpt-5.5"]
    assert agent.frames.problems == []


async def test_the_editors_mcp_servers_reach_the_app_server_as_config(tmp_path: Path) -> None:
    servers: list[Any] = [
        schema.McpServerStdio(name="tools", command="/bin/true", args=["--flag"],
                              env=[schema.EnvVariable(name="TOOL_MODE", value="x")]),
        schema.HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp",
                             headers=[schema.HttpHeader(name="X-Plain", value="y")]),
        schema.SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    log = tmp_path / "stand-in.jsonl"
    async with spawn_agent("codex", tmp_path, stand_in_env(tmp_path, STAND_IN_LOG=str(log))) as agent:
        await agent.initialize(capable=True)
        await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=servers)
    [start] = [json.loads(line)["params"] for line in log.read_text().splitlines()
               if json.loads(line)["method"] == "thread/start"]
    assert start["config"] == {
        "mcp_servers.tools": {"command": "/bin/true", "args": ["--flag"], "env": {"TOOL_MODE": "x"}},
        "mcp_servers.web": {"url": "http://127.0.0.1:9/mcp", "http_headers": {"X-Plain": "y"}},
        "mcp_servers.old": {"url": "http://127.0.0.1:9/sse"},
    }
