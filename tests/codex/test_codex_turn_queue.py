"""A prompt's queue of app-server notifications is bounded; backpressure reaches app-server's pipe.

In process with the runtime and the stand-in app-server: the turn's consumer is held at its first
text chunk (as when the client stops reading stdout and the core's outgoing queue is full) while
the stand-in streams far more deltas than the queue holds. The reader must then wait for room
(the stand-in blocks writing) instead of queueing everything; once the consumer goes on, every
delta arrives, in order. Also: deltas sent before `turn/start` is answered cannot deadlock the
prompt, app-server dying while the queue is full still fails the turn, and a prompt cancelled
with a full queue still interrupts its turn.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.backends.contract import RuntimeContext, TurnFailed
from acp_agent.backends.events import TurnEnd
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.protocol import FailureObservation
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.acp import TextContent
from acp_agent_codex import turns as codex_turns
from acp_agent_codex.runtime import CodexRuntime, open_codex_runtime
from tests.codex.e2e_support import stand_in_env
from tests.fakes.held_turn import HeldTurn, first_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BOUND = 8
DELTAS = 3000  # ~500 KB of notifications: far more than the queue, the pipe (64 KB) and a read (64 KB) hold


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": {"threadId": "$THREAD", **params}}


def deltas(count: int = DELTAS) -> list[dict[str, Any]]:
    return [note("item/agentMessage/delta", turnId="turn-1", itemId="m1", delta=f"w{i} " + "." * 100)
            for i in range(count)]


STARTED = note("turn/started", turn={"id": "turn-1", "status": "inProgress"})
COMPLETED = note("turn/completed", turn={"id": "turn-1", "status": "completed", "error": None})
EXPECTED = [f"w{i} " + "." * 100 for i in range(DELTAS)]


@asynccontextmanager
async def codex(tmp_path: Path, script: dict[str, Any], **settings: str) -> AsyncIterator[CodexRuntime]:
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    env = {**os.environ, **stand_in_env(tmp_path, STAND_IN_SCRIPT_FILE=str(script_file), **settings)}
    context = RuntimeContext(hooks=installed_hooks(), environ=env, clock=PhaseClock(Deadlines(), "Codex"), redact=Redactor())
    async with open_codex_runtime(context) as runtime:
        yield runtime


def count_routed(runtime: CodexRuntime, total: int) -> tuple[list[int], anyio.Event]:
    """Counts the deltas the reader has finished routing; the event is set when all `total` are."""
    routed = [0]
    done = anyio.Event()
    original = runtime._on_notification

    async def counting(server: Any, method: str, params: Any) -> None:
        await original(server, method, params)
        if method == "item/agentMessage/delta":
            routed[0] += 1
            if routed[0] == total:
                done.set()

    runtime._on_notification = counting  # type: ignore[method-assign]
    return routed, done


def answered_interrupts(runtime: CodexRuntime) -> list[str]:
    """The turn ids whose `turn/interrupt` app-server answered, as they are answered."""
    answered: list[str] = []
    original = runtime.turns.interrupt_turn

    async def interrupt(server: Any, thread_id: str, turn_id: str) -> None:
        await original(server, thread_id, turn_id)
        answered.append(turn_id)

    runtime.turns.interrupt_turn = interrupt  # type: ignore[method-assign]
    return answered


async def start_prompt(runtime: CodexRuntime, tmp_path: Path, turn: HeldTurn,
                       group: anyio.abc.TaskGroup, outcome: list[Any]) -> str:
    start = await runtime.new_session(str(tmp_path), [], turn)
    turn.session_id = start.session_id

    async def run() -> None:
        try:
            outcome.append(await runtime.prompt(start.session_id, [TextContent("go")], turn))
        except TurnFailed as exc:
            outcome.append(exc.observation)

    group.start_soon(run)
    return start.session_id


async def wait_for_backpressure(runtime: CodexRuntime, session_id: str, all_routed: anyio.Event) -> None:
    """Until the reader waits for room, or (an unbounded queue) every delta was queued."""
    active = runtime._threads[session_id].active
    queue = getattr(active, "queue", None)
    waited = getattr(queue, "producer_waited", None)
    await first_of(all_routed, *([waited] if waited is not None else []))


@pytest.fixture(autouse=True)
def small_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex_turns, "TURN_QUEUE_ITEMS", BOUND, raising=False)


async def test_a_held_consumer_stalls_the_reader_and_every_delta_arrives_in_order(tmp_path: Path) -> None:
    turn, outcome = HeldTurn(), []
    async with codex(tmp_path, {"turn/start": {"after": [STARTED, *deltas(), COMPLETED]}}) as runtime:
        routed, all_routed = count_routed(runtime, DELTAS)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            with anyio.fail_after(30):
                await turn.held.wait()
                await wait_for_backpressure(runtime, session_id, all_routed)
            queue = runtime._threads[session_id].active.queue  # type: ignore[union-attr]
            # the held delta, plus at most BOUND queued: the rest stays in app-server's pipe
            assert routed[0] <= BOUND + 1
            assert len(queue) == BOUND
            turn.release.set()
        assert queue.high_water == BOUND
    assert outcome == [TurnEnd("end_turn")]
    assert turn.texts == EXPECTED
    assert turn.failures == []


async def test_deltas_before_the_turn_start_answer_do_not_deadlock(tmp_path: Path) -> None:
    """The reader must read the answer the prompt waits for, however much app-server sent first."""
    turn, outcome = HeldTurn(), []
    turn.release.set()
    script = {"turn/start": {"before": [STARTED, *deltas()], "after": [COMPLETED]}}
    async with codex(tmp_path, script) as runtime, anyio.create_task_group() as group:
        await start_prompt(runtime, tmp_path, turn, group, outcome)
    assert outcome == [TurnEnd("end_turn")]
    assert turn.texts == EXPECTED


async def test_app_server_dying_while_the_queue_is_full_fails_the_turn(tmp_path: Path) -> None:
    """The lost signal is not a queue item: it is neither lost nor waits, and comes after the deltas."""
    turn, outcome = HeldTurn(), []
    async with codex(tmp_path, {"turn/start": {"after": [STARTED, *deltas()]}}) as runtime:
        _, all_routed = count_routed(runtime, DELTAS)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            with anyio.fail_after(30):
                await turn.held.wait()
                await wait_for_backpressure(runtime, session_id, all_routed)
            os.kill(int((tmp_path / "stand-in.pid").read_text()), signal.SIGKILL)
            turn.release.set()
    [failure] = outcome
    assert isinstance(failure, FailureObservation) and failure.native_kind == "transportLost"
    assert turn.texts == EXPECTED[:len(turn.texts)] and turn.texts


async def test_a_prompt_cancelled_with_a_full_queue_interrupts_its_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing the queue first releases the reader, so the interrupt's answer is read.

    The interrupt's own time limit is lifted: were its answer left unread, the test would hang.
    """
    monkeypatch.setattr(codex_turns, "INTERRUPT_TIMEOUT_S", 3600.0)
    turn, outcome = HeldTurn(), []
    async with codex(tmp_path, {"turn/start": {"after": [STARTED, *deltas()]}}) as runtime:
        _, all_routed = count_routed(runtime, DELTAS)
        answered = answered_interrupts(runtime)
        async with anyio.create_task_group() as group:
            session_id = await start_prompt(runtime, tmp_path, turn, group, outcome)
            with anyio.fail_after(30):
                await turn.held.wait()
                await wait_for_backpressure(runtime, session_id, all_routed)
            group.cancel_scope.cancel()
        assert answered == ["turn-1"]
        assert runtime._threads[session_id].active is None
    assert outcome == []


class FailingTurn(HeldTurn):
    """A turn whose first text chunk fails in the agent (an emit that raises)."""

    async def emit(self, event: Any) -> None:
        from acp_agent.wire.acp import AgentMessageChunk

        if isinstance(event, AgentMessageChunk):
            raise RuntimeError("the agent failed while presenting the turn")
        await super().emit(event)


async def test_a_prompt_that_fails_in_the_agent_interrupts_its_turn(tmp_path: Path) -> None:
    """An error in the agent mid-turn (not a cancel, not a deadline) still stops app-server's
    turn: left running, it would meet the session's next turn/start (issue 25, item 3)."""
    turn, outcome = FailingTurn(), []
    async with codex(tmp_path, {"turn/start": {"after": [STARTED, *deltas(20)]}}) as runtime:
        answered = answered_interrupts(runtime)
        start = await runtime.new_session(str(tmp_path), [], turn)
        turn.session_id = start.session_id
        with anyio.fail_after(30), pytest.raises(RuntimeError, match="presenting the turn"):
            outcome.append(await runtime.prompt(start.session_id, [TextContent("go")], turn))
        assert answered == ["turn-1"]
        assert runtime._threads[start.session_id].active is None
    assert outcome == []
