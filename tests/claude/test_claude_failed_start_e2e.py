"""A Claude CLI that misses its start-up deadline is gone when its error is answered, and the
agent's exit at stdin EOF afterwards waits for nothing (issue 25, item 1)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.claude.test_claude_exit_e2e import initialize
from tests.claude.test_claude_phases import standin, standin_pids
from tests.e2e.processes import gone, live_descendants
from tests.e2e.test_rpc_e2e import raw_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
@pytest.mark.parametrize("hang", ["asleep", "initializing"])
async def test_a_cli_past_its_start_up_deadline_is_gone_when_the_error_answers(
        tmp_path: Path, capable: bool, hang: str) -> None:
    """Three `session/new` against a stand-in that never answers its handshake (`asleep` does not
    even read its input, so the end of it goes unnoticed; SIGTERM would end it): the first adopts
    the spare the command line started, the others start their own. Each error finds every
    stand-in gone and the agent without a child; the exit at EOF then leaves nothing behind."""
    async with raw_agent(tmp_path, provider="claude", extra_env=standin(tmp_path, hang)) as client:
        await client.send(1, "initialize", initialize(capable))
        await client.answer(1)
        left: list[list[int]] = []
        for request_id in (2, 3, 4):
            await client.send(request_id, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            with anyio.fail_after(30):
                answer = await client.answer(request_id)
            assert answer["error"]["code"] == -32603
            assert answer["error"]["data"]["failure"]["phase"] == "initializing"
            # at the moment the error arrived: no stand-in, no child of the agent
            left.append([pid for pid in standin_pids(tmp_path) if not gone(pid)]
                        + live_descendants(client.process.pid))
        pids = standin_pids(tmp_path)
        started = time.monotonic()
        await client.close_stdin()
        with anyio.fail_after(30):
            code = await client.process.wait()
        print(f"exit after EOF: {(time.monotonic() - started) * 1000:.0f} ms")  # shown with -s
        after_exit = [pid for pid in pids if not gone(pid)]
    assert left == [[], [], []]
    assert len(pids) == 3  # the spare and two of the agent's own
    assert code == 0
    assert after_exit == []
