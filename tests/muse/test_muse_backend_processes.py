"""`muse serve` dies with the agent, however the agent dies (issue 9, item 3), with the fake host."""

from __future__ import annotations

import os
import signal
from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest

from tests.e2e.processes import PARENT_DEATH_WAIT_S, pidfds
from tests.muse.e2e_support import host_pids, muse_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


async def test_sigkill_of_the_agent_ends_its_hosts_within_a_second(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False) as agent:
        await agent.conn.new_session(cwd=str(tmp_path))
        [host] = host_pids(tmp_path)
        with ExitStack() as stack:
            agent_fd, host_fd = pidfds([agent.process.pid, host], stack)
            os.kill(agent.process.pid, signal.SIGKILL)
            with anyio.fail_after(10):
                await anyio.wait_readable(agent_fd)
            with anyio.fail_after(PARENT_DEATH_WAIT_S):
                await anyio.wait_readable(host_fd)
