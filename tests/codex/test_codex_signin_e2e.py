"""After a sign-in from the editor, the next session works without restarting the agent (real codex).

One app-server serves every session and keeps the environment it started with, so a key stored
through the `codex-terminal` auth method (`acp-agent auth set`, run as the editor's terminal runs
it) only reaches codex when the agent starts a new app-server: `authenticate` does that when no
session is open.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import acp
import pytest
from acp import schema

from tests.codex.e2e_support import codex_env, text, workspace, write_codex_home
from tests.e2e.harness import agent_executable, spawn_agent
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]


async def test_a_key_stored_through_the_terminal_method_reaches_the_next_session(tmp_path: Path) -> None:
    secret = "sk-codex-stored-from-the-editor-0123456789"
    with FakeResponsesAPI([{"reply": "signed in now"}]) as api:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"  # the provider reads the variable the keyring key is handed over as
        config.write_text(config.read_text().replace('env_key = "FAKE_OPENAI_API_KEY"', 'env_key = "OPENAI_API_KEY"'))
        (tmp_path / "home").mkdir()
        env = {**codex_env(home), "FAKE_OPENAI_API_KEY": "", "HOME": str(tmp_path / "home"),
               "XDG_DATA_HOME": str(tmp_path / "data"),
               "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring"}
        async with spawn_agent("codex", tmp_path, env) as agent:
            capabilities = schema.ClientCapabilities(field_meta={"terminal-auth": True, "codex/authStatus": 1})
            await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
            methods = agent.frames.incoming[0]["result"]["authMethods"]
            first = await agent.conn.new_session(cwd=workspace(tmp_path))
            with pytest.raises(acp.RequestError) as without_key:
                await agent.conn.prompt(session_id=first.session_id, prompt=text("hi"))
            await agent.conn._conn.send_request("session/close", {"sessionId": first.session_id})
            [terminal] = [m["_meta"]["terminal-auth"] for m in methods if m["id"] == "codex-terminal"]
            terminal_env = {key: value for key, value in {**os.environ, **env}.items()
                            if value != "" and not key.startswith("ACP_AGENT_")}
            # No controlling terminal here, so the key prompt reads the line the user would type from stdin.
            stored = subprocess.run([terminal["command"], *terminal["args"]], input=secret + "\n", env=terminal_env,
                                    text=True, capture_output=True, timeout=60, start_new_session=True, check=False)
            response = await agent.conn.authenticate(method_id="codex-terminal")
            second = await agent.conn.new_session(cwd=workspace(tmp_path))
            result = await agent.conn.prompt(session_id=second.session_id, prompt=text("hi again"))
            problems = agent.frames.problems
            frames = agent.frames.text()
    assert problems == []
    assert without_key.value.code in (-32000, -32603)
    assert stored.returncode == 0, stored.stderr
    assert response.field_meta["codex/authStatus"]["source"] == "keyring"
    assert result.stop_reason == "end_turn"
    assert [request.headers.get("authorization") for request in api.turn_requests] == [f"Bearer {secret}"]
    assert secret not in frames
    assert secret not in agent.log_text()


async def test_sign_in_status_and_logout_with_the_real_codex(tmp_path: Path) -> None:
    """codex's own API-key sign-in (local only: no network) through `--cli`, then the ChatGPT
    method's check (`codex login status`) and ACP `logout` (`codex logout`) on the real binary."""
    secret = "sk-codex-own-sign-in-0123456789"
    home = tmp_path / "codex-home"
    home.mkdir()
    (tmp_path / "home").mkdir()
    env = {"CODEX_HOME": str(home), "HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "", "CODEX_API_KEY": "",
           "ACP_AGENT_CODEX_BIN": "", "XDG_DATA_HOME": str(tmp_path / "data"), "NO_BROWSER": "", "SSH_CONNECTION": "",
           "SSH_CLIENT": "", "SSH_TTY": "", "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring"}
    terminal_env = {key: value for key, value in {**os.environ, **env}.items()
                    if value != "" and not key.startswith("ACP_AGENT_")}
    signed_in = subprocess.run([agent_executable(), "--provider", "codex", "--cli", "login", "--with-api-key"],
                               input=secret + "\n", env=terminal_env, text=True, capture_output=True, timeout=60,
                               check=False)
    assert signed_in.returncode == 0, signed_in.stderr
    async with spawn_agent("codex", tmp_path, env) as agent:
        capabilities = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=True),
                                                 field_meta={"codex/authStatus": 1})
        await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
        before = agent.frames.incoming[0]["result"]["_meta"]["codex/authStatus"]
        accepted = await agent.conn.authenticate(method_id="chatgpt-login")
        logged_out = await agent.conn._conn.send_request("logout", {})
        with pytest.raises(acp.RequestError) as refused:
            await agent.conn.authenticate(method_id="chatgpt-login")
        problems = agent.frames.problems
        frames = agent.frames.text()
    assert problems == []
    assert (before["configured"], before["source"]) == (True, "stored")
    assert accepted.field_meta["codex/authStatus"]["source"] == "stored"
    assert not (home / "auth.json").exists()
    assert logged_out["_meta"]["codex/authStatus"] == {"configured": False, "source": "none",
                                                       "verification": "unknown", "identity": "unknown"}
    assert refused.value.code == -32000
    assert str(refused.value).startswith("Not signed in to Codex: the sign-in (ChatGPT) did not complete.")
    assert secret not in frames + signed_in.stdout + signed_in.stderr
