"""What the core checks and converts for Muse Code, through `acp-agent --provider muse` and the fake
host: modes and options the session did not offer, the prompt text and the MCP servers the host gets."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.muse.e2e_support import muse_agent, received, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


async def refusal(call: Awaitable[Any]) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as caught:
        await call
    return caught.value


async def test_an_unknown_mode_option_or_value_is_invalid_params_from_the_agent(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        errors = [
            await refusal(agent.conn.set_session_mode(session_id=sid, mode_id="yolo")),
            await refusal(agent.conn.set_config_option(session_id=sid, config_id="effort", value="high")),
            await refusal(agent.conn.set_config_option(session_id=sid, config_id="model", value="gpt-x")),
        ]
        result = await agent.conn.prompt(session_id=sid, prompt=text("still usable"))
    assert [(error.code, error.data) for error in errors] == [
        (-32602, {"field": "modeId"}), (-32602, {"field": "configId"}), (-32602, {"field": "value"})]
    assert "choose one of default, readOnly, plan, bypassApprovals, rejectApprovals" in str(errors[0])
    assert result.stop_reason == "end_turn"
    assert received(tmp_path, "session/setApprovalMode") == received(tmp_path, "session/setModel") == []
    assert agent.frames.problems == []


async def test_prompt_resources_reach_the_host_as_text(tmp_path: Path) -> None:
    prompt: list[Any] = [
        schema.TextContentBlock(type="text", text="Look at"),
        schema.ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
        schema.ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py"),
        schema.ResourceContentBlock(type="resource_link", uri="https://example.test/doc", name="doc"),
        schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
            uri="file:///w/b.py", text="print(1)")),
        schema.EmbeddedResourceContentBlock(type="resource", resource=schema.BlobResourceContents(
            uri="file:///w/c.png", blob=PNG)),
    ]
    async with muse_agent(tmp_path, capable=True) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=prompt)
    [turn] = received(tmp_path, "turn/start")
    assert turn["params"]["input"] == [
        {"type": "text", "text": "Look at"},
        {"type": "image", "base64Data": PNG, "mediaType": "image/png"},
        {"type": "text", "text": "@/w/a.py"},
        {"type": "text", "text": "[@doc](https://example.test/doc)"},
        {"type": "text", "text": '<context ref="file:///w/b.py">\nprint(1)\n</context>'},
        {"type": "text", "text": "[@c.png](file:///w/c.png)"},
    ]


async def test_http_mcp_servers_reach_the_host_and_sse_has_no_arm(tmp_path: Path) -> None:
    servers: list[Any] = [
        schema.HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp",
                             headers=[schema.HttpHeader(name="X-Plain", value="y")]),
        schema.SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    async with muse_agent(tmp_path, capable=True) as agent:
        await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=servers)
    [start] = received(tmp_path, "session/start")
    assert start["params"]["config"] == {"mcpServers": {"web": {
        "transport": "streamableHttp", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Plain": "y"}}}}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_initialize_advertises_http_mcp_servers_and_not_sse(tmp_path: Path, capable: bool) -> None:
    """MSP has a streamable-HTTP arm for MCP servers (above) and none for SSE."""
    async with muse_agent(tmp_path, capable=capable) as agent:
        [caps] = [frame["result"]["agentCapabilities"] for frame in agent.frames.incoming
                  if isinstance(frame.get("result"), dict) and "agentCapabilities" in frame["result"]]
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}

