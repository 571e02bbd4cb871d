"""The child-process owner: orderly stop, escalation, reaping, no orphans."""

from __future__ import annotations

import os

import anyio
import pytest

from acp_agent.process import open_child

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_closing_stdin_is_enough_for_a_polite_child() -> None:
    async with open_child(["cat"], name="cat") as child:
        await child.stdin.send(b"ping\n")
        assert await child.stdout.receive() == b"ping\n"
    assert child.returncode == 0
    assert not alive(child.pid)


async def test_a_child_ignoring_sigterm_is_killed_and_reaped() -> None:
    script = "trap '' TERM; exec 0<&-; while true; do sleep 0.05; done"
    async with open_child(["bash", "-c", script], name="stubborn", grace_s=0.1) as child:
        pid = child.pid
    assert child.returncode == -9
    assert not alive(pid)


async def test_cancellation_still_stops_the_child() -> None:
    with anyio.move_on_after(0.2):
        async with open_child(["sleep", "30"], name="sleeper", grace_s=0.1) as child:
            await anyio.sleep_forever()
    assert child.returncode is not None
    assert not alive(child.pid)
