"""What the core checks and converts for Claude Code, through `acp-agent --provider claude` and the
real CLI: modes and options the session did not offer, and the exact prompt text the model gets."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


async def refusal(call: Awaitable[Any]) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as caught:
        await call
    return caught.value


async def test_an_unknown_mode_option_or_value_is_invalid_params_from_the_agent(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "still fine"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            errors = [
                await refusal(agent.conn.set_session_mode(session_id=sid, mode_id="yolo")),
                await refusal(agent.conn.set_config_option(session_id=sid, config_id="verbosity", value="high")),
                await refusal(agent.conn.set_config_option(session_id=sid, config_id="model", value="no-such-model")),
            ]
            result = await agent.conn.prompt(session_id=sid, prompt=text("Say hello."))
    assert [(error.code, error.data) for error in errors] == [
        (-32602, {"field": "modeId"}), (-32602, {"field": "configId"}), (-32602, {"field": "value"})]
    assert "choose one of default, acceptEdits, plan, auto" in str(errors[0])
    assert result.stop_reason == "end_turn"
    assert not any(u["sessionUpdate"] == "current_mode_update" for u in agent.frames.updates())
    assert agent.frames.problems == []


async def test_links_and_embedded_resources_reach_the_model_as_path_mentions(tmp_path: Path) -> None:
    link, inline = f"file://{tmp_path}/notes.md", f"file://{tmp_path}/inline.py"
    prompt: list[Any] = [
        schema.TextContentBlock(type="text", text="Look at these."),
        schema.ResourceContentBlock(type="resource_link", uri=link, name="notes.md"),
        schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
            uri=inline, text="print('inline')")),
    ]
    (tmp_path / "notes.md").write_text("remember the milk\n")
    with FakeAnthropicAPI([{"reply": "Seen them."}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=prompt)
        body = api.turn_requests[0].body or {}
    content = next(message["content"] for message in body["messages"] if message["role"] == "user")
    texts = [block["text"] for block in content if isinstance(block, dict) and block.get("type") == "text"]
    expected = ["Look at these.", f"@{tmp_path}/notes.md", f"@{tmp_path}/inline.py",
                f'<context ref="{inline}">\nprint(\'inline\')\n</context>']
    assert [t for t in texts if not t.startswith("<system-reminder>")] == expected
