"""Idle Claude sessions: a CLI is released after an idle timeout (and, beyond a bound set by the
user, least recently used first), never while its session is in use; a released session comes
back on its next prompt or mode/model change with its settings, MCP servers and history. The real
CLI against the fake API, through `acp-agent`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.e2e.processes import argv_of, children, gone, wait_ended
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
IN_USE = 5  # more sessions than the three live CLIs the agent used to keep
DEFAULTS = {"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "", "ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": ""}


def cli_of(agent_pid: int, session_id: str) -> int:
    """The live CLI of a session (its --session-id or --resume argument names it)."""
    found = [pid for pid in children(agent_pid)
             if any(part.endswith(session_id.encode()) for part in argv_of(pid))]
    assert len(found) == 1, (session_id, found)
    return found[0]


def has_cli(agent_pid: int, session_id: str) -> bool:
    return any(any(part.endswith(session_id.encode()) for part in argv_of(pid)) for pid in children(agent_pid))


def flag(argv: list[bytes], name: str) -> str:
    return os.fsdecode(argv[argv.index(name.encode()) + 1])


def user_texts(body: dict[str, Any] | None) -> list[str]:
    texts = []
    for message in (body or {}).get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts += [f"{message['role']}: {block['text']}" for block in blocks
                  if message.get("role") in ("user", "assistant") and block.get("type") == "text"
                  and not block["text"].startswith("<system-reminder>")]
    return texts


@BOTH
async def test_the_least_recently_used_cli_is_released_and_comes_back_with_history_and_settings(
        tmp_path: Path, capable: bool) -> None:
    mcp = [schema.McpServerStdio(name="editor-tools", command="/bin/true", args=[], env=[])]
    script = [{"reply": "Noted: the word is heron."}, {"reply": "Second session here."},
              {"reply": "The word was heron."}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            first = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp)
            await agent.conn.set_session_mode(session_id=first.session_id, mode_id="acceptEdits")
            await agent.conn.prompt(session_id=first.session_id, prompt=text("Remember the word heron."))
            before = argv_of(cli_of(pid, first.session_id))
            released = cli_of(pid, first.session_id)
            second = await agent.conn.new_session(cwd=str(tmp_path))
            await wait_ended([released], within_s=30)  # the first session's CLI went: one live CLI
            assert not has_cli(pid, first.session_id) and has_cli(pid, second.session_id)
            await agent.conn.prompt(session_id=second.session_id, prompt=text("Hello"))
            second_cli = cli_of(pid, second.session_id)
            result = await agent.conn.prompt(session_id=first.session_id, prompt=text("Which word?"))
            after = argv_of(cli_of(pid, first.session_id))
            config = json.loads(Path(flag(after, "--mcp-config")).read_text())
            await wait_ended([second_cli], within_s=30)  # the bound holds for the session used second too
            texts = agent_texts(agent, first.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts).endswith("The word was heron.")
    # the revived CLI resumed the transcript: the API saw the first exchange again
    assert user_texts(api.turn_requests[-1].body)[:3] == [
        "user: Remember the word heron.", "assistant: Noted: the word is heron.", "user: Which word?"]
    assert f"--resume={first.session_id}".encode() in after
    assert f"--session-id={first.session_id}".encode() in before
    assert flag(after, "--permission-mode") == "acceptEdits"
    assert list(config["mcpServers"]) == ["editor-tools"]
    assert agent.frames.problems == []


@BOTH
async def test_a_released_session_that_never_had_a_prompt_comes_back_under_its_id(tmp_path: Path,
                                                                                   capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "Fresh start."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            first = await agent.conn.new_session(cwd=str(tmp_path))
            released = cli_of(pid, first.session_id)
            await agent.conn.new_session(cwd=str(tmp_path))
            await wait_ended([released], within_s=30)
            # a mode change brings it back (verified by the CLI), then a prompt runs on it
            await agent.conn.set_session_mode(session_id=first.session_id, mode_id="plan")
            revived = argv_of(cli_of(pid, first.session_id))
            result = await agent.conn.prompt(session_id=first.session_id, prompt=text("Hi"))
            texts = agent_texts(agent, first.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "Fresh start."
    assert f"--session-id={first.session_id}".encode() in revived
    assert flag(revived, "--permission-mode") == "plan"
    assert agent.frames.problems == []


@BOTH
async def test_an_idle_cli_is_released_after_the_idle_timeout_and_comes_back(tmp_path: Path,
                                                                            capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "One."}, {"reply": "Two."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": "2000"}) as agent:
            pid = agent.process.pid
            session = await agent.conn.new_session(cwd=str(tmp_path))
            cli = cli_of(pid, session.session_id)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("First"))
            await wait_ended([cli], within_s=30)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Second"))
            texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "One.Two."
    assert user_texts(api.turn_requests[-1].body)[:3] == ["user: First", "assistant: One.", "user: Second"]
    assert agent.frames.problems == []


def clis_of(agent_pid: int, session_id: str) -> list[int]:
    """Every CLI the agent runs for a session (one, or none once released)."""
    return [pid for pid in children(agent_pid)
            if any(part.endswith(session_id.encode()) for part in argv_of(pid))]


async def test_sessions_in_use_keep_their_clis_with_the_default_settings(tmp_path: Path) -> None:
    """Five sessions, each prompted twice: every turn runs on the CLI its session/new started (a
    restart would be a new PID and `--resume`), none is released between turns."""
    with FakeAnthropicAPI([{"echo": True, "times": 2 * IN_USE}]) as api:
        async with claude_agent(api, tmp_path, capable=True, extra=DEFAULTS) as agent:
            pid = agent.process.pid
            started: dict[str, list[int]] = {}
            for _ in range(IN_USE):
                session_id = (await agent.conn.new_session(cwd=str(tmp_path))).session_id
                started[session_id] = clis_of(pid, session_id)
            results = []
            for turn in ("first", "second"):
                for session_id in started:
                    results.append(await agent.conn.prompt(session_id=session_id,
                                                           prompt=text(f"{turn} {session_id}")))
            after = {session_id: clis_of(pid, session_id) for session_id in started}
            argvs = [argv_of(cli) for clis in after.values() for cli in clis]
            texts = {session_id: "".join(agent_texts(agent, session_id)) for session_id in started}
    assert all(len(clis) == 1 for clis in started.values()), started
    assert after == started, "a session's CLI was restarted between its turns"
    assert not any(part.startswith(b"--resume") for argv in argvs for part in argv)
    assert [result.stop_reason for result in results] == ["end_turn"] * 2 * IN_USE
    assert texts == {session_id: f"echo: first {session_id}echo: second {session_id}" for session_id in started}
    assert agent.frames.problems == []


async def test_sessions_idle_past_the_release_time_lose_their_clis_and_resume(tmp_path: Path) -> None:
    """More sessions than the old bound, the release time shortened: once every session has been
    idle that long no CLI is left, and each next prompt resumes its session's transcript."""
    with FakeAnthropicAPI([{"echo": True, "times": 2 * IN_USE}]) as api:
        async with claude_agent(api, tmp_path, capable=True,
                                extra={**DEFAULTS, "ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": "3000"}) as agent:
            pid = agent.process.pid
            sessions = [(await agent.conn.new_session(cwd=str(tmp_path))).session_id for _ in range(IN_USE)]
            for session_id in sessions:
                await agent.conn.prompt(session_id=session_id, prompt=text(f"first {session_id}"))
            await wait_ended(children(pid), within_s=60)
            left = [child for child in children(pid) if not gone(child)]  # a zombie is not left running
            revived = []
            for session_id in sessions:
                result = await agent.conn.prompt(session_id=session_id, prompt=text(f"second {session_id}"))
                assert result.stop_reason == "end_turn"
                revived.append(argv_of(cli_of(pid, session_id)))
            texts = {session_id: "".join(agent_texts(agent, session_id)) for session_id in sessions}
    assert left == []
    assert all(f"--resume={session_id}".encode() in argv for session_id, argv in zip(sessions, revived, strict=True))
    assert texts == {session_id: f"echo: first {session_id}echo: second {session_id}" for session_id in sessions}
    # each resumed CLI sent its session's first exchange again
    histories = [user_texts(request.body)[:3] for request in api.turn_requests[IN_USE:]]
    assert sorted(histories) == sorted([f"user: first {s}", f"assistant: echo: first {s}", f"user: second {s}"]
                                       for s in sessions)
    assert agent.frames.problems == []
