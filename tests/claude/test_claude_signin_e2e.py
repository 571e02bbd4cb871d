"""Claude sign-in from the editor against the real bundled CLI: the check is its `auth status`
(never the model API), and a sign-in reaches the open session's next prompt."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import acp
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, claude_env, text
from tests.claude.test_claude_auth import keyring_env
from tests.e2e.harness import agent_executable
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.vendor_cli import write_executable

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


async def test_after_a_subscription_sign_in_the_next_prompt_of_the_open_session_works(tmp_path: Path) -> None:
    """The editor's flow: a prompt fails with "Please run /login"; the user runs the advertised
    Claude Subscription command in a terminal; `authenticate` asks the real CLI's `auth status`;
    the same session's next prompt goes through, signed in, without restarting anything.

    Only the terminal's `claude auth login --claudeai` is a stand-in (it would need claude.ai): it
    stores an OAuth sign-in in the real CLI's format where the real CLI keeps it."""
    token = "sk-ant-oat01-stand-in-subscription-0123456789"
    oauth = {"claudeAiOauth": {"accessToken": token, "refreshToken": "sk-ant-ort01-stand-in-0123456789",
                               "expiresAt": int(time.time() * 1000) + 3_600_000,
                               "scopes": ["user:inference", "user:profile"], "subscriptionType": "pro"}}
    with FakeAnthropicAPI([{"reply": "signed in with a subscription"}]) as api:
        extra = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", **LOCAL}
        async with claude_agent(api, tmp_path, capable=False, key=None, extra=extra) as agent:
            capabilities = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=True),
                                                     field_meta={"terminal-auth": True, "claude/authStatus": 1})
            await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
            # claude_agent initialized as a legacy client first: this client's answer is the last one
            methods = [frame["result"]["authMethods"] for frame in agent.frames.incoming
                       if "authMethods" in (frame.get("result") or {})][-1]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            with pytest.raises(acp.RequestError) as not_logged_in:
                await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            [terminal] = [m["_meta"]["terminal-auth"] for m in methods if m["id"] == "claude-ai-login"]
            terminal_env = {key: value for key, value in {**os.environ, **claude_env(api, tmp_path, key=None,
                                                                                     extra=extra)}.items() if value}
            terminal_env.update({"ACP_AGENT_CLAUDE_CLI": str(write_executable(tmp_path / "bin" / "claude")),
                                 "STANDIN_CLI_LOG": str(tmp_path / "login.jsonl"),
                                 "STANDIN_CREDENTIALS": str(tmp_path / "claude-config" / ".credentials.json"),
                                 "STANDIN_CREDENTIALS_JSON": json.dumps(oauth)})
            login = subprocess.run([terminal["command"], *terminal["args"]], env=terminal_env, text=True,
                                   capture_output=True, timeout=60, check=False)
            response = await agent.conn.authenticate(method_id="claude-ai-login")
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi again"))
            problems = agent.frames.problems
            frames = agent.frames.text()
    assert problems == []
    assert not_logged_in.value.code == -32000
    assert "/login" in str(not_logged_in.value)
    assert login.returncode == 0, login.stderr
    assert [json.loads(line)["argv"] for line in (tmp_path / "login.jsonl").read_text().splitlines()] == [
        ["auth", "login", "--claudeai"]]
    assert response.field_meta["claude/authStatus"]["source"] == "stored"
    assert result.stop_reason == "end_turn"
    assert [request.headers.get("authorization") for request in api.turn_requests] == [f"Bearer {token}"]
    assert token not in frames
