"""`codex app-server` dies with the agent, however the agent dies (issue 9, item 3), end to end with
the real codex binary; and a failed start-up answers within its deadline, the stop going on after."""

from __future__ import annotations

import contextlib
from pathlib import Path

import acp
import anyio
import pytest

from tests.codex.e2e_support import (
    app_server_pid,
    codex_agent,
    stand_in_env,
    text,
    wait_for_turn_requests,
    workspace,
    write_codex_home,
)
from tests.e2e.harness import spawn_agent
from tests.e2e.processes import gone, kill_agent_and_wait_for, live_descendants, wait_ended
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]

SLOW = {"slow_stream": {"text": " ".join(f"word{n}" for n in range(600)), "interval_s": 0.05}}


@pytest.mark.real_backend
async def test_sigkill_of_the_agent_mid_turn_ends_app_server_within_a_second(tmp_path: Path) -> None:
    with FakeResponsesAPI([SLOW]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    with contextlib.suppress(Exception):  # the agent dies under it
                        await agent.conn.prompt(session_id=session.session_id, prompt=text("talk slowly"))

                group.start_soon(run)
                await wait_for_turn_requests(api, 1)  # app-server is inside the turn, streaming
                server = app_server_pid(agent.process.pid)
                await kill_agent_and_wait_for(agent.process.pid, server)
                group.cancel_scope.cancel()


async def test_a_stalled_start_up_answers_before_app_server_is_stopped(tmp_path: Path) -> None:
    """app-server ignores SIGTERM and the end of its input: the error comes while it is still being
    stopped (only SIGKILL ends it), and it is stopped afterwards while the agent runs on."""
    env = stand_in_env(tmp_path, STAND_IN_HANG="initialize", STAND_IN_STUBBORN="1",
                       ACP_AGENT_STARTUP_TIMEOUT_MS="400")
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
        pid = int((tmp_path / "stand-in.pid").read_text())
        assert not gone(pid), "the error waited for app-server to be stopped"
        await wait_ended([pid], within_s=15)
        assert live_descendants(agent.process.pid) == []
        assert agent.process.returncode is None
    assert caught.value.data["failure"]["phase"] == "initializing"
    assert agent.frames.problems == []
