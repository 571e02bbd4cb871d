"""Credentials, `muse/authStatus`, authenticate, logout and the CLI pass-through for `acp-agent --provider muse`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from tests.e2e.harness import agent_executable
from tests.muse.e2e_support import (
    API_KEY,
    assert_hosts_gone,
    host_events,
    host_pids,
    muse_agent,
    muse_env,
    records,
    text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
AUTH_META = {"muse/authStatus": 1}


def statuses(agent: Any, session_id: str) -> list[dict[str, Any]]:
    return [u["_meta"]["muse/authStatus"] for u in agent.frames.updates(session_id)
            if u["sessionUpdate"] == "session_info_update" and "muse/authStatus" in (u.get("_meta") or {})]


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


async def test_auth_required_is_rejected_and_a_later_success_is_accepted_for_that_turn(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, meta=AUTH_META,
                          MUSE_FAKE_ERROR_MESSAGE="Your Meta token was rejected; run `muse login`.") as agent:
        init = agent.frames.incoming[0]["result"]["_meta"]["muse/authStatus"]
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:fail:authRequired one"))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    assert init == {"configured": True, "source": "environment", "verification": "unknown", "identity": "unknown"}
    assert (caught.value.code, str(caught.value)) == (
        -32000, "Your Meta token was rejected; run `muse login`. Sign in or configure credentials, then try again.")
    assert caught.value.data["failure"]["kind"] == "authRequired"
    assert caught.value.data["failure"]["source"] == "provider"
    rejected, accepted = statuses(agent, session.session_id)
    assert rejected["verification"] == "rejected"
    assert (rejected["latestFailure"]["kind"], rejected["latestFailure"]["source"]) == ("authRequired", "provider")
    assert accepted == {"configured": True, "source": "environment", "verification": "acceptedForTurn",
                        "identity": "unknown", "latestFailure": None}
    assert agent.frames.problems == []


async def test_capable_clients_get_the_login_action(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, meta=AUTH_META, turn="fail:authRequired") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
    record = result.field_meta["jetbrains"]["air"]["sessionFailure"]
    assert (record["category"], record["actions"]) == ("access", ["login"])
    [status] = statuses(agent, session.session_id)
    assert status["verification"] == "rejected"
    assert records(agent) == [record]


@pytest.mark.parametrize(("content", "configured"), [(None, False), ("{}", False), ('{"token": "abc"}', True)])
async def test_the_stored_file_is_evidence_by_size_only(tmp_path: Path, content: str | None, configured: bool) -> None:
    if content is not None:
        (tmp_path / "config" / "muse").mkdir(parents=True)
        (tmp_path / "config" / "muse" / "auth.json").write_text(content)
    async with muse_agent(tmp_path, capable=False, meta=AUTH_META, key=None) as agent:
        init = agent.frames.incoming[0]["result"]["_meta"]["muse/authStatus"]
        try:
            response: Any = await agent.conn.authenticate(method_id="muse")
        except acp.RequestError as error:
            response = error
    assert init["configured"] is configured
    assert init["source"] == ("stored" if configured else "none")
    if configured:
        assert response.field_meta["muse/authStatus"]["source"] == "stored"
    else:
        assert response.code == -32000
        assert "META_API_KEY" in str(response)
    assert host_pids(tmp_path) == []  # authenticate checks configuration; it starts no host


async def test_the_home_config_is_used_without_xdg(tmp_path: Path) -> None:
    stored = tmp_path / "home" / ".config" / "muse"
    stored.mkdir(parents=True)
    (stored / "auth.json").write_text('{"token": "abcdef"}')
    async with muse_agent(tmp_path, capable=False, meta=AUTH_META, key=None, XDG_CONFIG_HOME="") as agent:
        init = agent.frames.incoming[0]["result"]["_meta"]["muse/authStatus"]
    assert init["source"] == "stored"


async def test_a_keyring_key_reaches_the_host_only_through_its_environment(tmp_path: Path) -> None:
    secret = "meta-keyring-secret-9876543210"
    env = {**os.environ, **muse_env(tmp_path)}
    env = {key: value for key, value in env.items() if value != "" and not key.startswith("ACP_AGENT_")}
    subprocess.run([agent_executable(), "auth", "set", "--provider", "muse", "--stdin"], input=secret + "\n",
                   text=True, check=True, env=env, capture_output=True)
    async with muse_agent(tmp_path, capable=True, meta=AUTH_META, key=None) as agent:
        init = agent.frames.incoming[0]["result"]["_meta"]["muse/authStatus"]
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
        [pid] = host_pids(tmp_path)
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert init["source"] == "keyring"
    [spawn] = [event for event in host_events(tmp_path) if event["event"] == "spawn"]
    assert spawn["key"] == digest(secret)
    assert secret.encode() not in argv
    assert secret not in agent.frames.text() and secret not in agent.log_text()
    assert statuses(agent, session.session_id)[-1]["verification"] == "acceptedForTurn"


async def test_logout_runs_muse_logout_closes_everything_and_keeps_the_environment_key(tmp_path: Path) -> None:
    import keyring
    from keyrings.alt.file import PlaintextKeyring

    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "data" / "python_keyring" / "keyring_pass.cfg")  # type: ignore[misc]
    (tmp_path / "config" / "muse").mkdir(parents=True)
    (tmp_path / "config" / "muse" / "auth.json").write_text('{"token": "signed-in"}')
    async with muse_agent(tmp_path, capable=False, meta=AUTH_META) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
        keyring.set_keyring(backend)
        keyring.set_password("acp-agent", "muse", "meta-stored-before-logout")
        response = schema.LogoutResponse.model_validate(await agent.conn._conn.send_request("logout", {}))
        with pytest.raises(acp.RequestError) as gone:
            await agent.conn.prompt(session_id=session.session_id, prompt=text("still there?"))
        assert_hosts_gone(tmp_path)  # every session's host is closed by logout
    assert response.field_meta["muse/authStatus"] == {"configured": True, "source": "environment",
                                                      "verification": "unknown", "identity": "unknown"}
    assert keyring.get_password("acp-agent", "muse") is None
    assert gone.value.code == -32002
    [cli] = [event for event in host_events(tmp_path) if event["event"] == "cli"]
    assert cli["argv"] == ["logout"]
    assert not (tmp_path / "config" / "muse" / "auth.json").exists()


def test_cli_login_and_logout_pass_through_to_muse(tmp_path: Path) -> None:
    env = {**os.environ, **muse_env(tmp_path)}
    env = {key: value for key, value in env.items() if value != "" and not key.startswith("ACP_AGENT_")}
    login = subprocess.run([agent_executable(), "--provider", "muse", "--cli", "login"], env=env, text=True,
                           capture_output=True, check=False)
    stored = tmp_path / "config" / "muse" / "auth.json"
    assert (login.returncode, login.stdout.strip()) == (0, "Signed in to Muse Code.")
    assert stored.stat().st_size > 2
    logout = subprocess.run([agent_executable(), "--provider", "muse", "--cli", "logout"], env=env, text=True,
                            capture_output=True, check=False)
    assert (logout.returncode, logout.stdout.strip()) == (0, "Signed out of Muse Code.")
    assert not stored.exists()
    assert [event["argv"] for event in host_events(tmp_path) if event["event"] == "cli"] == [["login"], ["logout"]]


async def test_sixteen_clients_with_different_credentials_never_cross(tmp_path: Path) -> None:
    keys = [f"meta-client{index:02d}-{index * 7919:08d}" for index in range(16)]
    outcomes: dict[int, Any] = {}

    async def one_client(index: int) -> None:
        home = tmp_path / f"client{index}"
        home.mkdir()
        async with muse_agent(home, capable=index % 2 == 0, meta=AUTH_META, key=keys[index]) as agent:
            first = await agent.conn.new_session(cwd=str(home))
            second = await agent.conn.new_session(cwd=str(home))
            try:
                await agent.conn.prompt(session_id=first.session_id, prompt=text("turn:fail:authRequired one"))
            except acp.RequestError:
                pass
            await agent.conn.prompt(session_id=second.session_id, prompt=text("two"))
            outcomes[index] = (agent, home, first.session_id, second.session_id)

    async with anyio.create_task_group() as tg:
        for index in range(16):
            tg.start_soon(one_client, index)
    assert len(outcomes) == 16
    for index, (agent, home, first, second) in outcomes.items():
        spawned = {event["key"] for event in host_events(home) if event["event"] == "spawn"}
        assert spawned == {digest(keys[index])}
        [rejected] = statuses(agent, first)
        [accepted] = statuses(agent, second)
        assert (rejected["verification"], accepted["verification"]) == ("rejected", "acceptedForTurn")
        assert rejected["latestFailure"] is not None and accepted["latestFailure"] is None
        everything = agent.frames.text() + agent.log_text() + json.dumps(agent.frames.outgoing)
        assert not [key for key in keys if key in everything]
        assert agent.frames.problems == []
        assert_hosts_gone(home)
    assert API_KEY not in keys
