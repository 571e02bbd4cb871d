"""The core's JSON-lines backend child: its lines read in order (what is not a JSON object, or
too long, dropped; what the provider routes kept from `messages`), its stop sequence (EOF, then
SIGTERM to its process group) and what fails once it is gone."""

from __future__ import annotations

import signal
import sys
from typing import Any, ClassVar

import anyio
import anyio.abc
import pytest

from acp_agent.backends.lines_child import ChildGone, JsonLinesChild
from tests.e2e.processes import wait_ended

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

ECHO = """
import json, sys
for line in sys.stdin:
    n = json.loads(line)["n"]
    print("not json", flush=True)
    print(json.dumps([n]), flush=True)
    print(json.dumps({"type": "long", "pad": "x" * 500}), flush=True)
    print(json.dumps({"type": "control", "n": n}), flush=True)
    print(json.dumps({"type": "echo", "n": n}), flush=True)
"""

DEAF_TO_EOF = """
import json, signal, subprocess, sys
sub = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(json.dumps({"type": "grandchild", "pid": sub.pid}), flush=True)
signal.pause()
"""
"""A child that ignores the end of its input, with a grandchild in its process group."""


class Routed(JsonLinesChild):
    max_line_bytes: ClassVar[int] = 200

    def __init__(self, process: anyio.abc.Process) -> None:
        super().__init__(process, name="echo")
        self.routed: list[dict[str, Any]] = []
        self.ended_calls = 0

    def route(self, message: dict[str, Any], task_group: anyio.abc.TaskGroup) -> bool:
        if message.get("type") != "control":
            return False
        self.routed.append(message)
        return True

    def ended(self) -> None:
        self.ended_calls += 1


async def test_messages_come_in_order_routed_ones_aside_and_eof_stops_the_child() -> None:
    async with anyio.create_task_group() as group:
        child = await Routed.spawn([sys.executable, "-c", ECHO], env={"PATH": "/usr/bin:/bin"})
        group.start_soon(child.run)
        assert child.alive
        for n in (1, 2):
            await child.write({"n": n})
        with anyio.fail_after(10):
            received = [await child.receive(), await child.receive()]
        assert received == [{"type": "echo", "n": 1}, {"type": "echo", "n": 2}]
        assert child.routed == [{"type": "control", "n": 1}, {"type": "control", "n": 2}]
        with anyio.fail_after(10):
            await child.stop(grace_s=5)
            with pytest.raises(anyio.EndOfStream):
                await child.receive()
            await child.closed.wait()
    assert child.process.returncode == 0  # it exited on EOF, within its grace
    assert child.ended_calls == 1 and not child.alive
    with pytest.raises(ChildGone):
        await child.write({"n": 3})


async def test_a_child_deaf_to_eof_gets_sigterm_with_its_process_group() -> None:
    async with anyio.create_task_group() as group:
        child = await JsonLinesChild.spawn([sys.executable, "-c", DEAF_TO_EOF], env={"PATH": "/usr/bin:/bin"})
        group.start_soon(child.run)
        with anyio.fail_after(10):
            grandchild = (await child.receive())["pid"]
            await child.stop(grace_s=0.1, term_s=5)
    assert child.process.returncode == -signal.SIGTERM
    await wait_ended([grandchild], within_s=10)


async def test_a_program_that_cannot_run_raises() -> None:
    with pytest.raises(OSError):
        await JsonLinesChild.spawn(["/nonexistent/acp-agent-test-program"], env={})
