"""A prompt's queue of host notifications is bounded; backpressure reaches the host's pipe.

In process with the runtime and the fake Muse host: the turn's consumer is held at its first text
chunk (as when the client stops reading stdout) while the host streams far more deltas than the
queue holds. The host's reader must then wait for room (the host blocks writing) instead of
queueing everything; once the consumer goes on, every delta arrives, in order. The host dying, or
the prompt being cancelled, while the queue is full must still end the turn.
"""

from __future__ import annotations

import inspect
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from acp_agent.backends.contract import RuntimeContext, TurnFailed
from acp_agent.backends.events import TurnEnd
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.acp import TextContent
from acp_agent_muse import runtime as muse_runtime
from acp_agent_muse.runtime import MuseRuntime, open_muse_runtime
from tests.fakes.held_turn import HeldTurn, first_of
from tests.muse.e2e_support import host_pids, muse_env, process_gone

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BOUND = 8
DELTAS = 3000  # ~500 KB of notifications: far more than the queue, the pipe (64 KB) and a read (64 KB) hold
EXPECTED = [f"w{i} " + "." * 100 for i in range(DELTAS)]


@pytest.fixture(autouse=True)
def small_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(muse_runtime, "TURN_QUEUE_ITEMS", BOUND, raising=False)


@asynccontextmanager
async def muse(tmp_path: Path) -> AsyncIterator[MuseRuntime]:
    env = {**os.environ, **muse_env(tmp_path)}
    context = RuntimeContext(hooks=installed_hooks(), environ=env, clock=PhaseClock(Deadlines(), "Muse Code"), redact=Redactor())
    async with open_muse_runtime(context) as runtime:
        yield runtime


def count_routed(runtime: MuseRuntime) -> tuple[list[int], anyio.Event]:
    """Counts the deltas the host's reader has finished routing; the event: all of them were.

    (The router was synchronous before the queue was bounded; the count works with either.)
    """
    routed = [0]
    done = anyio.Event()
    original = runtime.hosts.route

    def count(method: str) -> None:
        if method == "item/delta":
            routed[0] += 1
            if routed[0] == DELTAS:
                done.set()

    def counting(host: Any, method: str, params: Any) -> Any:
        result = original(host, method, params)
        if not inspect.isawaitable(result):
            count(method)
            return result

        async def routed_then_counted() -> None:
            await result
            count(method)

        return routed_then_counted()

    runtime.hosts.route = counting  # type: ignore[method-assign]
    return routed, done


async def start_prompt(runtime: MuseRuntime, tmp_path: Path, turn: HeldTurn, group: anyio.abc.TaskGroup,
                       outcome: list[Any]) -> str:
    start = await runtime.new_session(str(tmp_path), [], turn)
    turn.session_id = start.session_id

    async def run() -> None:
        try:
            outcome.append(await runtime.prompt(start.session_id, [TextContent(f"turn:many:{DELTAS}")], turn))
        except TurnFailed as exc:
            outcome.append(exc.observation)

    group.start_soon(run)
    return start.session_id


async def held_with_backpressure(runtime: MuseRuntime, session_id: str, turn: HeldTurn,
                                 all_routed: anyio.Event) -> None:
    """Until the consumer is held and the reader waits for room (or every delta was queued)."""
    with anyio.fail_after(30):
        await turn.held.wait()
        queue = getattr(runtime._sessions[session_id].active, "queue", None)
        waited = getattr(queue, "producer_waited", None)
        await first_of(all_routed, *([waited] if waited is not None else []))


async def test_a_held_consumer_stalls_the_reader_and_every_delta_arrives_in_order(tmp_path: Path) -> None:
    turn, outcome = HeldTurn(), []
    async with muse(tmp_path) as runtime:
        routed, all_routed = count_routed(runtime)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            await held_with_backpressure(runtime, session_id, turn, all_routed)
            # the held delta, plus at most BOUND queued: the rest stays in the host's pipe
            assert routed[0] <= BOUND + 1
            queue = runtime._sessions[session_id].active.queue  # type: ignore[union-attr]
            assert len(queue) == BOUND
            turn.release.set()
        assert queue.high_water == BOUND
    assert outcome == [TurnEnd("end_turn")]
    assert turn.texts == EXPECTED
    assert turn.failures == []


async def test_the_host_dying_while_the_queue_is_full_fails_the_turn(tmp_path: Path) -> None:
    """The lost signal is not a queue item: it is neither lost nor waits, and comes after the deltas."""
    turn, outcome = HeldTurn(), []
    async with muse(tmp_path) as runtime:
        _, all_routed = count_routed(runtime)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            await held_with_backpressure(runtime, session_id, turn, all_routed)
            [pid] = host_pids(tmp_path)
            os.kill(pid, signal.SIGKILL)
            turn.release.set()
    [failure] = outcome
    assert isinstance(failure, FailureObservation) and failure.kind == FailureKind.TRANSPORT_LOST
    assert turn.texts == EXPECTED[:len(turn.texts)] and turn.texts


async def test_a_prompt_cancelled_with_a_full_queue_stops_its_host(tmp_path: Path) -> None:
    """The host's reader waiting for room does not keep the host from being stopped."""
    turn, outcome = HeldTurn(), []
    async with muse(tmp_path) as runtime:
        _, all_routed = count_routed(runtime)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            await held_with_backpressure(runtime, session_id, turn, all_routed)
            group.cancel_scope.cancel()
        assert runtime._sessions[session_id].active is None
        [pid] = host_pids(tmp_path)
        assert process_gone(pid)
    assert outcome == []
