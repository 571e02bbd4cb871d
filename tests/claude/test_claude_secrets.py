"""No secret the agent knows reaches the client, even when a user-approved command prints it.

The real Claude Code CLI runs `printenv ANTHROPIC_API_KEY` through its Bash tool (the fake API asks
for it, the client allows it); the CLI sends the real output back to the fake API, and the client
sees the tool call's output with the key replaced. The key comes from the agent's environment,
from the client (`_meta["claude/credentials"]`) or from the keyring.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import API_KEY, claude_agent, text
from tests.e2e.harness import agent_executable
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
CLIENT_KEY = "sk-ant-client-handed-e2e-fedcba9876543210"
KEYRING_KEY = "sk-ant-keyring-e2e-13572468024680"


def print_key(key: str) -> list[dict[str, Any]]:
    """The model asks for the key, then repeats it in its answer."""
    return [{"tool_use": {"name": "Bash", "input": {"command": "printenv ANTHROPIC_API_KEY",
                                                     "description": "Print the key"}}},
            {"reply": f"The key is {key} as printed."}]


def store_in_keyring(tmp_path: Path, key: str) -> dict[str, str]:
    """Store the key with the real `acp-agent auth set`, in a file keyring under tmp_path."""
    env = {"PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring", "XDG_DATA_HOME": str(tmp_path / "data")}
    subprocess.run([agent_executable(), "auth", "set", "--provider", "claude", "--stdin"], input=key + "\n",
                   text=True, check=True, capture_output=True, timeout=30,
                   env={**env, "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    return env


@BOTH
@pytest.mark.parametrize("source", ["environment", "client", "keyring"])
async def test_a_key_printed_by_an_approved_command_never_reaches_the_client(
        tmp_path: Path, capable: bool, source: str) -> None:
    key = {"environment": API_KEY, "client": CLIENT_KEY, "keyring": KEYRING_KEY}[source]
    meta: dict[str, Any] = {"claude/credentials": {"ANTHROPIC_API_KEY": CLIENT_KEY}} if source == "client" else {}
    extra = store_in_keyring(tmp_path, KEYRING_KEY) if source == "keyring" else {}
    with FakeAnthropicAPI(print_key(key)) as api:
        async with claude_agent(api, tmp_path, capable=capable, key=API_KEY if source == "environment" else None,
                                extra=extra) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), **meta)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Print the key"))
    assert result.stop_reason == "end_turn"
    # The command really ran with the key: its output went back to the model.
    tool_result = api.turn_requests[1].last_user_text
    assert key in tool_result
    assert [call.title for call, _ in agent.client.permission_requests] == ["`printenv ANTHROPIC_API_KEY`"]
    # The client saw the tool call finish with its output, the key replaced.
    [done] = [u for u in agent.frames.updates(session.session_id)
              if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
    shown = json.dumps(done)
    assert "[REDACTED]" in shown
    assert key not in shown
    answer = "".join(u["content"]["text"] for u in agent.frames.updates(session.session_id)
                     if u["sessionUpdate"] == "agent_message_chunk")
    assert answer == "The key is [REDACTED] as printed."
    # Nowhere on the wire, nor in the log.
    assert key not in json.dumps(agent.frames.incoming, ensure_ascii=False)
    assert key not in json.dumps(agent.frames.incoming)
    assert key not in agent.log_text()
    assert agent.frames.problems == []
