"""`bypassPermissions` is offered only where the Claude CLI can enter it, and there it can be
entered (issue 25, item 12), through the real CLI and the fake Anthropic API.

The tests run as root here: `IS_SANDBOX=1` is the sandbox the CLI is told of (it then allows the
mode to root), anything else the root it refuses the mode to. The rule for other users is
unit-tested in test_claude_bypass.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

TOUCH = [{"tool_use": {"name": "Bash", "input": {"command": "touch made.txt", "description": "Create a file"}}},
         {"reply": "Made it."}]
ALL_MODES = ["default", "acceptEdits", "plan", "auto", "bypassPermissions"]


def modes(session: Any) -> list[str]:
    return [mode.id for mode in session.modes.available_modes]


async def test_in_a_sandbox_root_can_switch_to_bypass_and_tools_run_unasked(tmp_path: Path) -> None:
    """Before: set_mode answered -32603 (the CLI was "not launched with
    --dangerously-skip-permissions")."""
    with FakeAnthropicAPI(TOUCH) as api:
        async with claude_agent(api, tmp_path, capable=False, extra={"IS_SANDBOX": "1"}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="bypassPermissions")
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Make a file"))
    assert modes(session) == ALL_MODES
    assert result.stop_reason == "end_turn"
    assert (tmp_path / "made.txt").exists()
    assert agent.client.permission_requests == []  # the CLI is in the mode: it asked nothing
    assert agent.frames.problems == []


async def test_in_a_sandbox_a_users_default_mode_bypass_starts_sessions_in_it(tmp_path: Path) -> None:
    """Before: every session/new failed (the CLI refused the mode after its handshake)."""
    with FakeAnthropicAPI(TOUCH) as api:
        async with claude_agent(api, tmp_path, capable=True, extra={"IS_SANDBOX": "1"},
                                default_mode="bypassPermissions") as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Make a file"))
    assert session.modes.current_mode_id == "bypassPermissions"
    assert result.stop_reason == "end_turn"
    assert (tmp_path / "made.txt").exists()
    assert agent.client.permission_requests == []
    assert agent.frames.problems == []


async def test_a_projects_default_mode_bypass_does_not_switch_it_on(tmp_path: Path) -> None:
    """The CLI may now enter the mode, but a cloned repository's settings still cannot start a
    session in it: the session starts in `default` and the tool call asks."""
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
    with FakeAnthropicAPI(TOUCH) as api:
        async with claude_agent(api, tmp_path, capable=False, extra={"IS_SANDBOX": "1"}) as agent:
            session = await agent.conn.new_session(cwd=str(project))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Make a file"))
    assert modes(session) == ALL_MODES
    assert session.modes.current_mode_id == "default"
    assert result.stop_reason == "end_turn"
    assert [call.title for call, _ in agent.client.permission_requests] == ["`touch made.txt`"]
    assert agent.frames.problems == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the CLI's refusal of root (elsewhere: test_claude_bypass.py)")
@pytest.mark.parametrize("sandbox", ["", "yes"], ids=["unset", "not-1"])
async def test_as_root_bypass_is_not_offered_and_a_users_default_of_it_is_set_aside(
        tmp_path: Path, sandbox: str) -> None:
    """The CLI refuses the mode to root without IS_SANDBOX=1 (it exits at start when launched so
    that it could enter it): not offered, a set_mode to it is an invalid-params error, and a
    user's `defaultMode` of it starts the session in `default` with a log line saying why."""
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False, extra={"IS_SANDBOX": sandbox},
                                default_mode="bypassPermissions") as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.set_session_mode(session_id=session.session_id, mode_id="bypassPermissions")
    assert modes(session) == ALL_MODES[:-1]
    assert session.modes.current_mode_id == "default"
    assert caught.value.code == -32602
    assert "refuses it as root unless IS_SANDBOX=1" in agent.log_text()
    assert agent.frames.problems == []
