"""`codex app-server` starts when the agent starts, before any session (issue 11, target 2), and
an agent that never opens a session still stops it: on the end of its input, and through the
parent-death signal when it is killed. The stand-in app-server writes its PID into a FIFO, so the
test wakes when it has been spawned instead of polling."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.codex.e2e_support import app_server_pid, codex_agent, stand_in_env, text, workspace, write_codex_home
from tests.e2e.harness import spawn_agent
from tests.e2e.processes import close_input_and_wait_for, kill_agent_and_wait_for, live_descendants, wait_ended
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


async def spawned_stand_in(fifo: Path) -> int:
    """The stand-in's PID, read from the FIFO it writes on start; fails if it is never spawned."""
    descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: not readable
    try:
        data = b""
        with anyio.fail_after(20):
            while not data.endswith(b"\n") or not data:
                await anyio.wait_readable(descriptor)
                chunk = os.read(descriptor, 64)
                if not chunk:  # the writer closed: the whole PID is in
                    break
                data += chunk
        return int(data)
    finally:
        os.close(descriptor)


def early_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env = stand_in_env(tmp_path)
    fifo = Path(env["STAND_IN_PID_FILE"])
    os.mkfifo(fifo)
    return env, fifo


async def test_app_server_runs_before_any_session_and_stops_at_the_end_of_input(tmp_path: Path) -> None:
    env, fifo = early_env(tmp_path)
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        server = await spawned_stand_in(fifo)  # no session/new was sent
        assert server in live_descendants(agent.process.pid)
        await close_input_and_wait_for(agent.process, server)
        assert agent.process.returncode == 0


async def test_app_server_started_early_dies_with_a_killed_agent(tmp_path: Path) -> None:
    env, fifo = early_env(tmp_path)
    async with spawn_agent("codex", tmp_path, env) as agent:
        server = await spawned_stand_in(fifo)  # not even initialized
        await kill_agent_and_wait_for(agent.process.pid, server)


async def test_the_provider_hands_the_core_the_codex_runtime_itself(tmp_path: Path) -> None:
    """No wrapper stands between the agent and the runtime (a forwarding wrapper once dropped fork,
    delete and steer): what `open_runtime` yields is the `CodexRuntime`, app-server started early."""
    from acp_agent.backends.contract import RuntimeContext
    from acp_agent.backends.phases import Deadlines, PhaseClock
    from acp_agent.backends.plugins import installed_hooks
    from acp_agent.failures.redaction import Redactor
    from acp_agent_codex import open_runtime
    from acp_agent_codex.runtime import CodexRuntime

    env, fifo = early_env(tmp_path)
    context = RuntimeContext(hooks=installed_hooks(), environ={**os.environ, **env}, clock=PhaseClock(Deadlines(), "Codex"),
                             redact=Redactor())
    async with open_runtime(context) as runtime:
        assert type(runtime) is CodexRuntime
        server = await spawned_stand_in(fifo)  # spawned as the runtime opened, before any session
    await wait_ended([server], within_s=15)


@pytest.mark.real_backend
@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_the_command_line_starts_app_server_and_the_first_session_adopts_it(
        tmp_path: Path, capable: bool) -> None:
    """`--provider codex` spawns app-server before the agent's imports (`acp_agent.startup.prestart`); the
    first session is served by that very process, which stops with the agent."""
    with FakeResponsesAPI([{"reply": "Hello from the fake model"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            server = app_server_pid(agent.process.pid)
            assert result.stop_reason == "end_turn"
            log = agent.log_text()
            assert f"adopted codex app-server (pid {server})" in log
            assert "started codex app-server" not in log  # no second app-server was spawned
            # Its handshake was written by the command line at spawn; only the answers were read.
            assert f"codex app-server (pid {server}) answered initialize (greeted when it was spawned)" in log
            await close_input_and_wait_for(agent.process, server)
        assert agent.process.returncode == 0
