"""The core's backend turn (Codex and Muse consume their turns with it): order, the provider's
hook, recorded failures, the end, and a queue that ends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from acp_agent.backends.contract import TurnFailed
from acp_agent.backends.events import Notice, TurnEnd
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.backends.turns import BackendTurn, TurnDone
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.sessions.queue import TurnQueue

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

FAILURE = FailureObservation(kind=FailureKind.INTERNAL_ERROR, native_kind="boom", title="boom")
LOST = FailureObservation(kind=FailureKind.TRANSPORT_LOST, native_kind="gone", title="gone")


class Channel:
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.failures: list[FailureObservation] = []

    async def emit(self, event: Any) -> None:
        self.events.append(event)

    def record_failure(self, observation: FailureObservation) -> None:
        self.failures.append(observation)


class Translator:
    """`say` emits a notice, `fail` a failure, `done` ends the turn with its params' end."""

    def __init__(self) -> None:
        self.fed: list[str] = []

    def feed(self, method: str, params: Mapping[str, Any]) -> list[Any]:
        self.fed.append(method)
        if method == "say":
            return [Notice(params["text"])]
        if method == "fail":
            return [FAILURE]
        if method == "done":
            return [TurnDone(params["end"]), Notice("never emitted")]
        return []


def turn(channel: Channel) -> BackendTurn[Any, Translator]:
    return BackendTurn(channel, TurnQueue(8), Translator())  # type: ignore[arg-type]


async def test_entries_are_taken_in_order_and_the_hook_keeps_its_own() -> None:
    channel = Channel()
    active = turn(channel)
    active.acknowledged("t1")
    assert active.turn_id == "t1" and active.known.is_set() and active.queue.bounded
    for entry in (("say", {"text": "a"}), "barrier", ("fail", {}), ("say", {"text": "b"}),
                  ("done", {"end": TurnEnd("end_turn")}), ("say", {"text": "late"})):
        await active.queue.put(entry)
    kept: list[Any] = []

    async def take(entry: Any) -> Any:
        if entry == "barrier":
            kept.append(entry)
            return None
        return entry

    end = await active.consume(take, lambda: LOST)
    assert end == TurnEnd("end_turn")
    assert channel.events == [Notice("a"), Notice("b")] and channel.failures == [FAILURE]
    assert kept == ["barrier"]
    assert active.translator is not None and active.translator.fed == ["say", "fail", "say", "done"]
    assert active.outcome(end) == TurnEnd("end_turn")


async def test_a_queue_that_ends_is_the_providers_gone_and_a_failure_is_raised() -> None:
    channel = Channel()
    active = turn(channel)
    active.acknowledged(None)
    await active.queue.put(("say", {"text": "a"}))
    active.queue.fail()

    async def take(entry: Any) -> Any:
        return entry

    clock = PhaseClock(Deadlines(), "Backend")
    with anyio.fail_after(5), pytest.raises(TurnFailed) as failed:
        await active.run(clock, take, lambda: LOST)
    assert failed.value.observation is LOST and channel.failures == [LOST]
    assert channel.events == [Notice("a")]


async def test_a_turn_ended_by_a_failure_raises_it() -> None:
    channel = Channel()
    active = turn(channel)
    active.acknowledged("t")
    await active.queue.put(("done", {"end": FAILURE}))

    async def take(entry: Any) -> Any:
        return entry

    with pytest.raises(TurnFailed):
        await active.run(PhaseClock(Deadlines(), "Backend"), take, lambda: LOST)
    assert channel.failures == [FAILURE]
