"""Credentials, auth status, authenticate and logout for `acp-agent --provider claude` (real CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, text
from tests.e2e.processes import descendants
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(180)]
AUTH_META = {"claude/authStatus": 1}
UNAUTHORIZED = {"status": 401, "error_type": "authentication_error", "message": "invalid x-api-key"}


def keyring_env(tmp_path: Path) -> dict[str, str]:
    return {"PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring", "XDG_DATA_HOME": str(tmp_path / "data")}


def statuses(agent: Any, session_id: str) -> list[dict[str, Any]]:
    return [u["_meta"]["claude/authStatus"] for u in agent.frames.updates(session_id)
            if u["sessionUpdate"] == "session_info_update" and "claude/authStatus" in (u.get("_meta") or {})]


async def test_401_turns_verification_rejected_and_a_later_success_accepts(tmp_path: Path) -> None:
    with FakeAnthropicAPI([UNAUTHORIZED, {"reply": "hello"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AUTH_META, retries=0) as agent:
            init = agent.frames.incoming[0]["result"]["_meta"]["claude/authStatus"]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    assert init == {"configured": True, "source": "environment", "verification": "unknown", "identity": "unknown"}
    assert caught.value.code == -32000
    rejected, accepted = statuses(agent, session.session_id)
    assert rejected["verification"] == "rejected"
    assert rejected["latestFailure"]["kind"] == "authentication_failed"
    assert rejected["latestFailure"]["source"] == "provider"
    assert accepted == {"configured": True, "source": "environment", "verification": "acceptedForTurn",
                        "identity": "unknown", "latestFailure": None}
    assert agent.frames.problems == []


async def test_keyring_key_reaches_the_cli_only_through_its_environment(tmp_path: Path) -> None:
    import subprocess

    from tests.e2e.harness import agent_executable

    secret = "sk-ant-keyring-secret-9876543210"
    env = {**keyring_env(tmp_path), "HOME": str(tmp_path)}
    subprocess.run([agent_executable(), "auth", "set", "--provider", "claude", "--stdin"], input=secret + "\n",
                   text=True, check=True, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True)
    with FakeAnthropicAPI([{"reply": "via keyring"}]) as api:
        async with claude_agent(api, tmp_path, capable=True, meta=AUTH_META, key=None,
                                extra=keyring_env(tmp_path)) as agent:
            init = agent.frames.incoming[0]["result"]["_meta"]["claude/authStatus"]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            cli_argv = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in descendants(agent.process.pid)]
    assert init["source"] == "keyring"
    assert api.turn_requests[0].headers.get("x-api-key") == secret
    assert all(secret.encode() not in argv for argv in cli_argv)
    assert secret not in agent.frames.text()
    assert secret not in agent.log_text()


async def test_authenticate_and_auth_methods(tmp_path: Path) -> None:
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AUTH_META, key=None,
                                extra={"HOME": str(tmp_path / "empty-home"), **keyring_env(tmp_path),
                                       **dict.fromkeys(("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "NO_BROWSER"),
                                                       "")}) as agent:
            methods = [m.id for m in (await _init_terminal(agent)).auth_methods]
            with pytest.raises(acp.RequestError) as unknown:
                await agent.conn.authenticate(method_id="nope")
            with pytest.raises(acp.RequestError) as unconfigured:
                await agent.conn.authenticate(method_id="claude")
    assert methods == ["claude", "claude-terminal", "claude-ai-login", "console-login"]  # issue 13: vendor sign-ins
    assert unknown.value.code == -32602
    assert unconfigured.value.code == -32000
    assert "ANTHROPIC_API_KEY" in str(unconfigured.value)
    assert api.requests == []  # authenticate never contacts the provider


async def _init_terminal(agent: Any) -> Any:
    capabilities = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=True), field_meta=AUTH_META)
    return await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)


async def test_stored_credential_file_is_configuration_evidence(tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / ".credentials.json").write_text('{"claudeAiOauth": {}}')
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AUTH_META, key=None,
                                extra=keyring_env(tmp_path)) as agent:
            response = await agent.conn.authenticate(method_id="claude")
    assert response.field_meta["claude/authStatus"]["source"] == "stored"


async def test_logout_closes_sessions_clears_the_keyring_and_keeps_the_environment_key(tmp_path: Path) -> None:
    import keyring
    from keyrings.alt.file import PlaintextKeyring

    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "data" / "python_keyring" / "keyring_pass.cfg")  # type: ignore[misc]
    with FakeAnthropicAPI([{"reply": "before"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AUTH_META, extra=keyring_env(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            keyring.set_keyring(backend)
            keyring.set_password("acp-agent", "claude", "sk-ant-stored-before-logout")
            # The SDK client has no logout helper yet: send the ACP method on its connection.
            response = schema.LogoutResponse.model_validate(await agent.conn._conn.send_request("logout", {}))
            with pytest.raises(acp.RequestError) as gone:
                await agent.conn.prompt(session_id=session.session_id, prompt=text("still there?"))
            cli_children = descendants(agent.process.pid)
    assert response.field_meta["claude/authStatus"] == {"configured": True, "source": "environment",
                                                        "verification": "unknown", "identity": "unknown"}
    assert keyring.get_password("acp-agent", "claude") is None
    assert gone.value.code == -32002
    assert cli_children == []


async def test_sixteen_clients_with_different_credentials_never_cross(tmp_path: Path) -> None:
    keys = [f"sk-ant-client{index:02d}-{index * 7919:08d}" for index in range(16)]
    outcomes: dict[int, Any] = {}

    async def one_client(index: int) -> None:
        home = tmp_path / f"client{index}"
        home.mkdir()
        with FakeAnthropicAPI([UNAUTHORIZED, {"reply": f"answer {index}"}]) as api:
            async with claude_agent(api, home, capable=index % 2 == 0, meta=AUTH_META, retries=0, key=keys[index]) as agent:
                first = await agent.conn.new_session(cwd=str(home))
                second = await agent.conn.new_session(cwd=str(home))
                try:
                    await agent.conn.prompt(session_id=first.session_id, prompt=text("one"))
                except acp.RequestError:
                    pass
                await agent.conn.prompt(session_id=second.session_id, prompt=text("two"))
                outcomes[index] = (agent, first.session_id, second.session_id,
                                   [r.headers.get("x-api-key") for r in api.turn_requests])

    async with anyio.create_task_group() as tg:
        for index in range(16):
            tg.start_soon(one_client, index)
    for index, (agent, first, second, sent_keys) in outcomes.items():
        assert set(sent_keys) == {keys[index]}
        [rejected] = statuses(agent, first)
        [accepted] = statuses(agent, second)
        assert (rejected["verification"], accepted["verification"]) == ("rejected", "acceptedForTurn")
        assert rejected["latestFailure"] is not None
        assert accepted["latestFailure"] is None
        everything = agent.frames.text() + agent.log_text() + json.dumps(agent.frames.outgoing)
        assert not [key for key in keys if key in everything]
        assert agent.frames.problems == []


async def test_client_provided_credentials_reach_only_that_sessions_cli(tmp_path: Path) -> None:
    client_key = "sk-ant-client-handed-5555555555"
    with FakeAnthropicAPI([{"reply": "with the client key"}, {"reply": "with the environment key"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AUTH_META) as agent:
            given = await agent.conn.new_session(cwd=str(tmp_path), **{
                "claude/credentials": {"ANTHROPIC_API_KEY": client_key}})
            plain = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=given.session_id, prompt=text("one"))
            await agent.conn.prompt(session_id=plain.session_id, prompt=text("two"))
    sent = [request.headers.get("x-api-key") for request in api.turn_requests]
    assert sent[0] == client_key
    assert sent[1] != client_key
    assert statuses(agent, given.session_id)[0]["source"] == "clientProvider"
    assert statuses(agent, plain.session_id)[0]["source"] == "environment"
    assert client_key not in agent.frames.text()
    assert client_key not in agent.log_text()
