"""ACP v2 over the real Claude Code CLI (the fake Anthropic API): the mode set as the `mode` config
option, a Write's diff in v2 form, a Bash permission asked in v2 form, every agent frame valid v2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.claude.e2e_support import claude_env
from tests.e2e.raw import raw_agent
from tests.e2e.test_v2_e2e import V2Client, idle, started
from tests.fakes.anthropic_api import FakeAnthropicAPI

RUN = "python3 -c \"print('shell-output-marker')\""
"""A command Claude Code asks permission for, also in `acceptEdits` (an `echo` it runs unasked)."""
pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


async def test_a_v2_client_sets_the_mode_and_sees_v2_tool_calls_from_claude(tmp_path: Path) -> None:
    target = tmp_path / "hello.py"
    script = [
        {"tool_use": {"name": "Write", "input": {"file_path": str(target), "content": "print('hi')\n"}}},
        {"tool_use": {"name": "Bash", "input": {"command": RUN, "description": "Run"}}},
        {"reply": "Done."},
    ]
    with FakeAnthropicAPI(script) as api:
        async with raw_agent("claude", tmp_path, claude_env(api, tmp_path)) as agent:
            client: V2Client = await started(agent)
            new = await client.result("session/new", {"cwd": str(tmp_path)})
            session_id = new["sessionId"]
            mode = next(option for option in new["configOptions"] if option["configId"] == "mode")
            assert mode["currentValue"] == "default"
            assert "acceptEdits" in [choice["value"] for choice in mode["options"]]
            answer = await client.result("session/set_config_option", {
                "sessionId": session_id, "configId": "mode", "type": "id", "value": "acceptEdits"})
            assert next(o for o in answer["configOptions"] if o["configId"] == "mode")["currentValue"] == "acceptEdits"
            await client.result("session/prompt", {"sessionId": session_id,
                                                   "prompt": [{"type": "text", "text": "Write and run"}]})
            end = (await client.until(idle, allow=True, deadline_s=90))["params"]["update"]
            assert end["stopReason"] == "end_turn"
    assert target.read_text() == "print('hi')\n"
    updates = client.updates(session_id)
    kinds = {u["sessionUpdate"] for u in updates}
    assert "tool_call" not in kinds and "current_mode_update" not in kinds
    diffs = [item for u in updates if u["sessionUpdate"] == "tool_call_update"
             for item in u.get("content") or [] if item["type"] == "diff"]
    assert diffs and diffs[0]["changes"] == [{"operation": "add", "path": str(target), "fileType": "text"}]
    assert "+print('hi')" in diffs[0]["patch"]["text"]
    asks = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert [ask["params"]["subject"]["type"] for ask in asks] == ["tool_call"]  # Bash; the Write is accepted
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states == ["running", "requires_action", "running", "idle"]
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(u["content"]["text"] for u in chunks) == "Done."
    client.check_all()
