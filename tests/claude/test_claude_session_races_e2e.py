"""Races on one Claude session (issue 25, items 5 and 6), through `acp-agent --provider claude`
against the real bundled CLI and the loopback fake API.

One agent: two loads of one session at once give it one CLI, gone after `session/close`.
Two agents (two editor windows): the second cannot open a session the first holds, so the
transcript never forks and a later load replays every prompt; a holder that crashed holds nothing.
"""

from __future__ import annotations

import functools
import os
import re
import signal
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.claude.e2e_support import claude_env, text
from tests.claude.test_claude_e2e import install_transcript
from tests.e2e.harness import AgentProcess, spawn_agent
from tests.e2e.processes import argv_of, live_descendants, pidfds, wait_ended
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


def live_clis(agent_pid: int) -> list[int]:
    return [pid for pid in live_descendants(agent_pid) if any(re.search(rb"claude$", part) for part in argv_of(pid)[:2])]


def user_texts(agent: AgentProcess, session_id: str) -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id)
            if u["sessionUpdate"] == "user_message_chunk" and u["content"].get("type") == "text"]


async def delete(agent: AgentProcess, *, session_id: str) -> Any:
    """`session/delete` (the client library has no method for it yet)."""
    return await agent.conn._conn.send_request("session/delete", {"sessionId": session_id})


async def test_two_loads_at_once_start_one_cli_and_close_leaves_none(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    session_id = install_transcript(tmp_path / "claude-config", work, "transcript_usage_limit")
    with FakeAnthropicAPI([]) as api:
        async with spawn_agent("claude", tmp_path, claude_env(api, tmp_path)) as agent:
            await agent.initialize(capable=False)
            answers: list[Any] = []

            async def load() -> None:
                answers.append(await agent.conn.load_session(cwd=str(work), session_id=session_id))

            async with anyio.create_task_group() as group:
                group.start_soon(load)
                group.start_soon(load)
            seen = live_clis(agent.process.pid)
            await agent.conn.close_session(session_id=session_id)
            with anyio.move_on_after(10):  # (then asserted: a CLI left running)
                await wait_ended(seen, within_s=10)
            left = live_clis(agent.process.pid)
    assert len(answers) == 2
    assert len(seen) == 1, f"one session, one CLI: {seen}"
    assert left == []
    # A load of a session already open replays its history again (as claude-agent-acp does).
    assert len(user_texts(agent, session_id)) == 2 * len(set(user_texts(agent, session_id)))
    assert agent.frames.problems == []


async def test_a_session_is_held_by_one_agent_process_and_no_prompt_vanishes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    replies = [{"reply": f"Answer {n}."} for n in range(12)]
    with FakeAnthropicAPI(replies) as api:
        env = claude_env(api, tmp_path)  # one user: one HOME, one Claude store, two windows
        async with spawn_agent("claude", tmp_path / "a", env) as first, \
                spawn_agent("claude", tmp_path / "b", env) as second:
            await first.initialize(capable=False)
            await second.initialize(capable=False)
            session_id = (await first.conn.new_session(cwd=str(work))).session_id
            await first.conn.prompt(session_id=session_id, prompt=text("prompt one"))
            refusals = (functools.partial(second.conn.load_session, cwd=str(work)),
                        functools.partial(second.conn.resume_session, cwd=str(work)),
                        functools.partial(delete, second))
            for method in refusals:
                with pytest.raises(acp.RequestError) as refused:
                    await method(session_id=session_id)
                assert refused.value.code == -32602
                assert "open in another acp-agent process" in str(refused.value)
                assert f"pid {first.process.pid}" in str(refused.value)
                assert "close it there" in str(refused.value)
            await first.conn.prompt(session_id=session_id, prompt=text("prompt two"))
            await first.conn.close_session(session_id=session_id)
            await second.conn.load_session(cwd=str(work), session_id=session_id)
            replayed = user_texts(second, session_id)
            await second.conn.prompt(session_id=session_id, prompt=text("prompt three"))
            with pytest.raises(acp.RequestError) as refused_back:
                await first.conn.load_session(cwd=str(work), session_id=session_id)
            await second.conn.close_session(session_id=session_id)
            await first.conn.load_session(cwd=str(work), session_id=session_id)
            final = user_texts(first, session_id)  # (a prompt is not echoed: this is the replay)
    assert replayed == ["prompt one", "prompt two"]
    assert refused_back.value.code == -32602
    assert final == ["prompt one", "prompt two", "prompt three"]
    assert first.frames.problems == [] and second.frames.problems == []


async def test_a_crashed_holder_holds_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    session_id = install_transcript(tmp_path / "claude-config", work, "transcript_usage_limit")
    with FakeAnthropicAPI([{"reply": "Still here."}]) as api:
        env = claude_env(api, tmp_path)
        async with spawn_agent("claude", tmp_path / "b", env) as second:
            await second.initialize(capable=False)
            async with spawn_agent("claude", tmp_path / "a", env) as first:
                await first.initialize(capable=False)
                await first.conn.load_session(cwd=str(work), session_id=session_id)
                with pytest.raises(acp.RequestError):
                    await second.conn.load_session(cwd=str(work), session_id=session_id)
                with ExitStack() as stack:
                    [first_fd] = pidfds([first.process.pid], stack)
                    os.kill(first.process.pid, signal.SIGKILL)
                    with anyio.fail_after(10):
                        await anyio.wait_readable(first_fd)
            await second.conn.load_session(cwd=str(work), session_id=session_id)
            answer = await second.conn.prompt(session_id=session_id, prompt=text("Try again."))
    assert answer.stop_reason == "end_turn"
