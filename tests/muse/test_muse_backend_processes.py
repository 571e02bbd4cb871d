"""`muse serve` dies with the agent, however the agent dies (issue 9, item 3), with the fake host."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.processes import kill_agent_and_wait_for
from tests.muse.e2e_support import host_pids, muse_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


async def test_sigkill_of_the_agent_ends_its_hosts(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False) as agent:
        await agent.conn.new_session(cwd=str(tmp_path))
        [host] = host_pids(tmp_path)
        await kill_agent_and_wait_for(agent.process.pid, host)
