"""An editor's streamable-HTTP MCP server works through Codex, so `initialize` advertises `mcpCapabilities.http`.

The real codex app-server connects to a fake MCP server on 127.0.0.1 with the editor's headers and
lists its tools. (codex 0.163.0 always defers MCP tools behind its `tool_search` tool, so the
model's first request names no MCP tool and a direct call is refused: calling one would need the
fake model to run a tool search first.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import schema

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
async def test_an_http_mcp_server_is_advertised_and_connected(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "done"}]) as api, FakeMcpHttp() as mcp:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            caps = agent.initialized.agent_capabilities.mcp_capabilities
            server = schema.HttpMcpServer(type="http", name="web", url=mcp.url,
                                          headers=[schema.HttpHeader(name="X-Plain", value="y")])
            session = await agent.conn.new_session(cwd=workspace(tmp_path), mcp_servers=[server])
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("use the tool"))
        methods = mcp.methods()
        headers = mcp.headers
    assert caps.http is True and caps.sse is False
    assert result.stop_reason == "end_turn"
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
    assert all(h.get("x-plain") == "y" for h in headers)
    assert agent.frames.problems == []
