"""The core's JSON-RPC backend child: calls, a loss told once, a requested stop that is no loss,
and a frozen child killed with its process group."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio
import pytest

from acp_agent.backends.rpc_child import RpcChild
from acp_agent.wire.rpc import ConnectionClosed
from tests.e2e.processes import gone

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

ECHO = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "exit":
        sys.exit(3)
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")}), flush=True)
"""


class Recorder:
    def __init__(self) -> None:
        self.lost: list[RpcChild] = []
        self.told = anyio.Event()

    async def __call__(self, child: Any) -> None:
        self.lost.append(child)
        self.told.set()


async def test_a_call_is_answered_and_a_requested_stop_is_no_loss() -> None:
    recorder = Recorder()
    async with anyio.create_task_group() as group:
        child = await group.start(RpcChild(name="echo", on_lost=recorder).spawn, [sys.executable, "-c", ECHO], None)
        assert child.started and child.alive and child.pid is not None
        assert await child.call("ping", {"n": 1}) == {"n": 1}
        pid = child.pid
        with anyio.fail_after(10):
            await child.stop()
    assert child.stopped.is_set() and not child.alive and child.stop_requested
    assert gone(pid)
    assert recorder.lost == []


async def test_a_child_that_exits_by_itself_is_lost_once() -> None:
    recorder = Recorder()
    async with anyio.create_task_group() as group:
        child = await group.start(RpcChild(name="echo", on_lost=recorder).spawn, [sys.executable, "-c", ECHO], None)
        with pytest.raises(ConnectionClosed):
            await child.call("exit", None)
        with anyio.fail_after(10):
            await recorder.told.wait()
            await child.stopped.wait()
    assert recorder.lost == [child] and not child.alive and not child.stop_requested
    assert child.child is not None and child.child.returncode == 3


async def test_a_frozen_child_is_killed_with_its_group_and_reaped() -> None:
    recorder = Recorder()
    async with anyio.create_task_group() as group:
        child = await group.start(RpcChild(name="echo", on_lost=recorder).spawn, [sys.executable, "-c", ECHO], None)
        assert child.pid is not None
        pid = child.pid
        os.kill(pid, signal.SIGSTOP)  # by PID: the child this test started
        child.kill()
        with anyio.fail_after(10):
            await recorder.told.wait()  # killed without a stop being asked for: a loss
            await child.stopped.wait()
    assert gone(pid)
    assert child.child is not None and child.child.returncode == -signal.SIGKILL


async def test_a_program_that_cannot_run_raises_before_it_starts() -> None:
    child = RpcChild(name="missing")
    async with anyio.create_task_group() as group:
        with pytest.raises(OSError):
            await group.start(child.spawn, ["/nonexistent/acp-agent-test-program"], None)
    assert child.stopped.is_set() and not child.started
    with anyio.fail_after(5):
        await child.stop()  # nothing to wait for
