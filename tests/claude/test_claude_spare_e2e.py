"""The spare CLI: started by the command line, adopted by the first session/new that fits.

`acp-agent --provider claude` starts a Claude Code CLI for the first session before its own
imports (`acp_agent_claude.prestart`), under a session id chosen in advance, in the agent's
directory. A first session/new in that directory with default settings adopts it (the debug log
says so, and no other CLI is started); one elsewhere stops it and starts its own. Nothing is left
when the agent exits, adopted or not. Real CLI, loopback fake API, capable and legacy clients.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest

from tests.claude.e2e_support import agent_texts, claude_agent, claude_env, text
from tests.claude.test_claude_e2e import install_transcript
from tests.claude.test_claude_exit_e2e import initialize
from tests.e2e.processes import argv_of, children, descendants, pidfds
from tests.e2e.test_rpc_e2e import raw_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])

ADOPTED = re.compile(r"session (\S+) adopts the spare claude CLI \(pid (\d+)\)")
STOPPED = re.compile(r"stopping the spare claude CLI \(pid (\d+)\): (.*)")
END_S = 20.0


def is_cli(argv: list[bytes]) -> bool:
    return any(part.endswith(b"claude") for part in argv[:2])


def cli_children(agent_pid: int) -> list[int]:
    return [pid for pid in children(agent_pid) if is_cli(argv_of(pid))]


async def ended(descriptors: list[int]) -> None:
    with anyio.fail_after(END_S):
        for descriptor in descriptors:
            await anyio.wait_readable(descriptor)


@BOTH
async def test_first_session_adopts_the_spare_and_its_prompt_works(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "Hello from the spare!"}]) as api, ExitStack() as stack:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            adopted = ADOPTED.search(agent.log_text())
            assert adopted is not None, agent.log_text()
            assert adopted.group(1) == session.session_id
            pid = int(adopted.group(2))
            # the session's CLI is the one started with the agent: no other CLI was started
            assert cli_children(agent.process.pid) == [pid]
            assert f"--session-id={session.session_id}".encode() in argv_of(pid)
            assert "started claude CLI" not in agent.log_text()
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Say hello."))
            assert result.stop_reason == "end_turn"
            assert "".join(agent_texts(agent, session.session_id)) == "Hello from the spare!"
            left = pidfds(descendants(agent.process.pid), stack)
            assert agent.frames.problems == []
        await ended(left)  # the agent exited (stdin EOF): its CLI went with it


def shared_digits(one: str, other: str) -> int:
    """How many positions of two UUIDs hold the same hex digit (chance: about 3 of 32)."""
    return sum(a == b for a, b in zip(one.replace("-", ""), other.replace("-", ""), strict=True))


async def test_the_first_sessions_of_two_agents_have_unrelated_random_ids(tmp_path: Path) -> None:
    """The spare's session id is drawn at random (uuid4): two agents' first sessions, each of
    which adopts its spare, do not share most of their digits (ids built from the boot id, PID
    and start time did)."""
    ids = []
    with FakeAnthropicAPI([]) as api:
        for run in (1, 2):
            home = tmp_path / f"agent-{run}"  # its own directory, log and configuration
            home.mkdir()
            async with claude_agent(api, home, capable=True) as agent:
                session = await agent.conn.new_session(cwd=str(home))
                adopted = ADOPTED.search(agent.log_text())
                assert adopted is not None and adopted.group(1) == session.session_id, agent.log_text()
                ids.append(session.session_id)
    for session_id in ids:
        assert uuid.UUID(session_id).version == 4
    assert shared_digits(*ids) < 16, ids


CLIENT_KEY = "sk-ant-client-handed-7777777777"


@BOTH
@pytest.mark.parametrize("differs", ["cwd", "credentials"])
async def test_a_first_session_that_differs_stops_the_spare_and_starts_its_own(
        tmp_path: Path, capable: bool, differs: str) -> None:
    """Another directory, or credentials the client hands over for the session: the spare (the
    agent's directory and environment) is stopped, and the session's own CLI gets them."""
    cwd = tmp_path / "elsewhere" if differs == "cwd" else tmp_path
    cwd.mkdir(exist_ok=True)
    meta = {"claude/credentials": {"ANTHROPIC_API_KEY": CLIENT_KEY}} if differs == "credentials" else {}
    with FakeAnthropicAPI([{"reply": "Hello from its own CLI!"}]) as api, ExitStack() as stack:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            spares = cli_children(agent.process.pid)
            assert len(spares) == 1  # started by the command line, before any session
            spare_fd = pidfds(spares, stack)
            session = await agent.conn.new_session(cwd=str(cwd), **meta)
            log = agent.log_text()
            assert ADOPTED.search(log) is None
            stopped = STOPPED.search(log)
            assert stopped is not None and int(stopped.group(1)) == spares[0]
            assert stopped.group(2) == "it does not fit the first session"
            await ended(spare_fd)
            own = cli_children(agent.process.pid)
            assert len(own) == 1 and own != spares
            assert os.readlink(f"/proc/{own[0]}/cwd") == str(cwd)
            assert f"--session-id={session.session_id}".encode() in argv_of(own[0])
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Say hello."))
            assert result.stop_reason == "end_turn"
            assert "".join(agent_texts(agent, session.session_id)) == "Hello from its own CLI!"
            left = pidfds(descendants(agent.process.pid), stack)
            assert agent.frames.problems == []
        await ended(left)
    sent = api.turn_requests[0].headers.get("x-api-key")
    assert (sent == CLIENT_KEY) == (differs == "credentials")


@BOTH
async def test_a_first_load_stops_the_spare(tmp_path: Path, capable: bool) -> None:
    """A loaded session resumes its own transcript (`--resume`): even in the agent's directory the
    spare (a new session id) is no use to it, and a later session/new starts its own CLI."""
    session_id = install_transcript(tmp_path / "claude-config", tmp_path, "transcript_usage_limit")
    with FakeAnthropicAPI([{"reply": "Loaded."}]) as api, ExitStack() as stack:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            spares = cli_children(agent.process.pid)
            assert len(spares) == 1
            spare_fd = pidfds(spares, stack)
            await agent.conn.load_session(cwd=str(tmp_path), session_id=session_id)
            stopped = STOPPED.search(agent.log_text())
            assert stopped is not None and int(stopped.group(1)) == spares[0]
            assert stopped.group(2) == "the first session is a loaded one"
            await ended(spare_fd)
            [own] = cli_children(agent.process.pid)
            assert f"--resume={session_id}".encode() in argv_of(own)
            result = await agent.conn.prompt(session_id=session_id, prompt=text("Again."))
            assert result.stop_reason == "end_turn"
            fresh = await agent.conn.new_session(cwd=str(tmp_path))
            assert fresh.session_id != session_id
            assert ADOPTED.search(agent.log_text()) is None
            left = pidfds(descendants(agent.process.pid), stack)
            assert agent.frames.problems == []
        await ended(left)


@BOTH
async def test_a_sign_in_before_the_first_session_stops_the_spare(tmp_path: Path, capable: bool) -> None:
    """The spare started before the user signed in (here: a subscription sign-in stored where the
    CLI keeps it, then `authenticate`): as any backend started before a sign-in it is not used;
    the first session starts its own CLI, which uses the stored sign-in."""
    token = "sk-ant-oat01-stand-in-subscription-9876543210"
    oauth = {"claudeAiOauth": {"accessToken": token, "refreshToken": "sk-ant-ort01-stand-in-9876543210",
                               "expiresAt": int(time.time() * 1000) + 3_600_000,
                               "scopes": ["user:inference", "user:profile"], "subscriptionType": "pro"}}
    extra = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
             **dict.fromkeys(("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "NO_BROWSER"), "")}
    with FakeAnthropicAPI([{"reply": "signed in"}]) as api, ExitStack() as stack:
        async with claude_agent(api, tmp_path, capable=capable, key=None, extra=extra,
                                meta={"terminal-auth": True}) as agent:
            spares = cli_children(agent.process.pid)
            assert len(spares) == 1
            spare_fd = pidfds(spares, stack)
            config = tmp_path / "claude-config"
            config.mkdir(exist_ok=True)
            (config / ".credentials.json").write_text(json.dumps(oauth))
            await agent.conn.authenticate(method_id="claude-ai-login")
            await ended(spare_fd)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            assert ADOPTED.search(agent.log_text()) is None
            [own] = cli_children(agent.process.pid)
            assert own != spares[0]
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            assert result.stop_reason == "end_turn"
            assert agent.frames.problems == []
    assert [request.headers.get("authorization") for request in api.turn_requests] == [f"Bearer {token}"]


@BOTH
async def test_an_agent_that_opens_no_session_leaves_no_spare(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([]) as api, ExitStack() as stack:
        async with raw_agent(tmp_path, provider="claude", extra_env=claude_env(api, tmp_path)) as client:
            await client.send(1, "initialize", initialize(capable))
            await client.answer(1)
            spares = cli_children(client.process.pid)
            assert len(spares) == 1
            spare_fd = pidfds(spares, stack)
            await client.close_stdin()
            with anyio.fail_after(30):
                assert await client.process.wait() == 0
        await ended(spare_fd)


async def test_the_spare_can_be_turned_off(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "ok"}]) as api:
        async with claude_agent(api, tmp_path, capable=True, extra={"ACP_AGENT_CLAUDE_SPARE": "0"}) as agent:
            assert cli_children(agent.process.pid) == []
            session = await agent.conn.new_session(cwd=str(tmp_path))
            log = agent.log_text()
            assert ADOPTED.search(log) is None and "started claude CLI" in log
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Say hello."))
            assert result.stop_reason == "end_turn"
