"""As root without IS_SANDBOX=1, `bypassPermissions` is not offered (the Claude CLI refuses it),
and a client that still asks for it is told why (issue 25, item 12): the answer to its
`session/set_mode` is the core's invalid-params error for a mode not offered, saying that the CLI
refuses the mode to root unless IS_SANDBOX=1 is set in the agent's environment. It said only
"Unknown mode 'bypassPermissions'". A `permissions.defaultMode` of it in the user's settings is
set aside with a log line giving the same reason.

Real Claude Code CLI against the fake Anthropic API; the tests run as root here."""

from __future__ import annotations

import os
from pathlib import Path

import acp
import pytest

from tests.claude.e2e_support import claude_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120),
              pytest.mark.skipif(os.geteuid() != 0, reason="the CLI refuses the mode to root only")]

WHY = ("Mode 'bypassPermissions' is not available: Claude Code refuses it as root unless IS_SANDBOX=1 "
       "(or CLAUDE_CODE_BUBBLEWRAP) is set in the agent's environment; choose one of default, "
       "acceptEdits, plan, auto.")


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
@pytest.mark.parametrize("default_mode", ["default", "bypassPermissions"])
async def test_as_root_set_mode_to_bypass_says_why_it_is_not_offered(tmp_path: Path, capable: bool,
                                                                     default_mode: str) -> None:
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=capable, extra={"IS_SANDBOX": ""},
                                default_mode=default_mode) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.set_session_mode(session_id=session.session_id, mode_id="bypassPermissions")
            with pytest.raises(acp.RequestError) as unknown:  # a mode Claude Code has not: unknown
                await agent.conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
    assert "bypassPermissions" not in [mode.id for mode in session.modes.available_modes]
    assert session.modes.current_mode_id == "default"
    assert (caught.value.code, str(caught.value)) == (-32602, WHY)
    assert caught.value.data == {"field": "modeId"}
    assert unknown.value.code == -32602
    assert str(unknown.value).startswith("Unknown mode 'yolo'; choose one of default"), str(unknown.value)
    set_aside = ("permissions.defaultMode bypassPermissions is not used: Claude Code refuses it as root "
                 "unless IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP) is set in the agent's environment")
    assert (set_aside in agent.log_text()) == (default_mode == "bypassPermissions")
    assert agent.frames.problems == []
