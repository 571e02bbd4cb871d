"""The Claude sign-in methods' check runs the real bundled CLI's `auth status` (never the model API)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import acp
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, claude_env
from tests.claude.test_claude_auth import keyring_env
from tests.e2e.harness import agent_executable
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
LOCAL = dict.fromkeys(("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "NO_BROWSER"), "")


async def test_claude_sign_in_check_asks_the_real_cli(tmp_path: Path) -> None:
    secret = "sk-ant-stored-for-the-cli-0123456789"
    with FakeAnthropicAPI([]) as api:
        extra = {**keyring_env(tmp_path), **LOCAL}
        async with claude_agent(api, tmp_path, capable=False, key=None, extra=extra) as agent:
            capabilities = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=True),
                                                     field_meta={"claude/authStatus": 1})
            await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
            with pytest.raises(acp.RequestError) as not_signed_in:
                await agent.conn.authenticate(method_id="claude-ai-login")
            env = {key: value for key, value in claude_env(api, tmp_path, key=None, extra=extra).items() if value}
            stored = subprocess.run([agent_executable(), "auth", "set", "--provider", "claude", "--stdin"],
                                    input=secret + "\n", env={**os.environ, **env}, text=True, capture_output=True,
                                    timeout=60, check=False)
            signed_in = await agent.conn.authenticate(method_id="console-login")
            problems = agent.frames.problems
            frames = agent.frames.text()
            log = agent.log_text()
    assert problems == []
    assert not_signed_in.value.code == -32000
    assert str(not_signed_in.value).startswith("Not signed in to Claude Code: the sign-in (Claude Subscription)")
    assert stored.returncode == 0, stored.stderr
    # the CLI saw the key the agent hands it (`claude auth status` exits 0 for an API key)
    assert signed_in.field_meta["claude/authStatus"]["source"] == "keyring"
    assert api.requests == []  # a status check, never a model request
    assert secret not in frames and secret not in log
