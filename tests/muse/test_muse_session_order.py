"""Session-scoped events emitted between turns reach the session in the order they happened.

In process with the runtime and the fake Muse host. The host is killed between turns: the runtime
reports the loss to the session. A notice emitted to the session once the runtime has handled the
loss must come after that failure. Before the router the failure was emitted with
`start_soon` (a task of its own), so whatever the session got next could overtake it. The channel
here writes like the core's: each emit yields while it writes, and a failure takes two writes (its
record and its update), a notice one.
"""

from __future__ import annotations

import inspect
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from attrs import define, field

from acp_agent.backends.contract import RuntimeContext
from acp_agent.backends.events import Event, Notice, SessionFailure, TurnEnd
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.acp import PermissionOption, TextContent, ToolCallUpdate
from acp_agent_muse.runtime import open_muse_runtime
from tests.muse.e2e_support import host_pids, muse_env

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@define(eq=False)
class RecordingTurn:
    """A TurnChannel that records every session-scoped event as it is emitted."""

    session_id: str = ""
    turn_id: str = "t"
    events: list[Event] = field(factory=list)
    failures: list[FailureObservation] = field(factory=list)
    two: anyio.Event = field(factory=anyio.Event)

    async def emit(self, event: Event) -> None:
        for _ in range(2 if isinstance(event, SessionFailure) else 1):
            await anyio.lowlevel.checkpoint()  # a write: other tasks run meanwhile
        self.events.append(event)
        if len(self.events) == 2:
            self.two.set()

    async def request_permission(self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]) -> str | None:
        return None

    def record_failure(self, observation: FailureObservation) -> None:
        self.failures.append(observation)

    def adopt_turn_id(self, backend_turn_id: str) -> bool:
        return False


async def test_a_host_loss_failure_is_emitted_before_what_follows_it(tmp_path: Path) -> None:
    env = {**os.environ, **muse_env(tmp_path)}
    context = RuntimeContext(hooks=installed_hooks(), environ=env, clock=PhaseClock(Deadlines(), "Muse Code"), redact=Redactor())
    channel = RecordingTurn()
    handled = anyio.Event()
    after = Notice("after the loss")
    async with open_muse_runtime(context) as runtime:
        original = runtime.hosts.lost

        def lost(host: Any) -> Any:
            result = original(host)
            if not inspect.isawaitable(result):
                handled.set()
                return result

            async def awaited() -> None:
                await result
                handled.set()

            return awaited()

        runtime.hosts.lost = lost  # type: ignore[method-assign]
        start = await runtime.new_session(str(tmp_path), [], channel)
        channel.session_id = start.session_id
        await context.router.open(start.session_id, channel.emit)  # as the core does once announced
        end = await runtime.prompt(start.session_id, [TextContent("one")], channel)
        assert end == TurnEnd("end_turn")
        channel.events.clear()
        [pid] = host_pids(tmp_path)
        os.kill(pid, signal.SIGKILL)  # by PID: the one host this runtime started
        with anyio.fail_after(30):
            await handled.wait()
        # The next session-scoped event, once the runtime has handled the loss.
        await channel.emit(after)
        with anyio.fail_after(30):
            await channel.two.wait()
    failure, notice = channel.events
    assert isinstance(failure, SessionFailure)
    assert failure.observation.kind == FailureKind.TRANSPORT_LOST
    assert notice is after
