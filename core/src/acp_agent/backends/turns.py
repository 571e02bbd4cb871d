"""One prompt's turn on a backend that streams it as notifications: the runtimes' common machine.

The backend connection's reader puts the turn's notifications into its `TurnQueue` (through the
session router); the prompt submits the turn, marks it `acknowledged` once the backend names it
(the queue is bounded from then on), and `consume`s the queue in order: what the provider's
`take` hook hands on goes through the turn's translator, whose steps are emitted to the client,
recorded (a `FailureObservation`) or end the turn (`TurnDone`). The queue ending (`None`) means
the backend is gone, or stopped under a cancelled turn: the provider's `gone` says which end that
is. `outcome` turns the end into the prompt's answer: a failure is recorded and raised as
`TurnFailed`.

A cancel sets `cancel_requested`; the provider interrupts the turn once it is acknowledged (in
the background: the prompt must keep draining the queue while the backend answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import anyio
from attrs import define, field, frozen

from acp_agent.backends.contract import TurnChannel, TurnFailed
from acp_agent.backends.events import AttemptBoundary, TurnEnd
from acp_agent.backends.phases import Phase, PhaseClock
from acp_agent.failures.protocol import FailureObservation
from acp_agent.sessions.queue import TurnQueue

if TYPE_CHECKING:
    from acp_agent.backends.events import Event


@frozen
class TurnDone:
    """The turn is over: a normal end, or the failure that ended it."""

    end: TurnEnd | FailureObservation


Notification = tuple[str, Mapping[str, Any]]


class Translator(Protocol):
    """Folds a turn's notifications, in order, into steps: events, failures and a `TurnDone`."""

    def feed(self, method: str,
             params: Mapping[str, Any]) -> Iterable[Event | FailureObservation | TurnDone]: ...


def fold_steps(translator: Translator, messages: Iterable[Notification]) -> list[Event | FailureObservation | TurnEnd]:
    """A turn's notifications (in wire order) folded into the steps a runtime carries out, up to
    the turn's end (`TurnDone`'s end, last): what tests fold over captured traffic."""
    steps: list[Event | FailureObservation | TurnEnd] = []
    for method, params in messages:
        for step in translator.feed(method, params):
            if isinstance(step, TurnDone):
                steps.append(step.end)
                return steps
            steps.append(step)
    return steps


@define
class Attempts:
    """A translator's retry state: after a retry notice (`retrying`), the model's next output
    opens a new attempt (`progress` hands out one `AttemptBoundary`, once)."""

    retrying: bool = field(default=False, kw_only=True)

    def progress(self) -> list[Event | FailureObservation | TurnDone]:
        if not self.retrying:
            return []
        self.retrying = False
        return [AttemptBoundary()]


Entry = TypeVar("Entry")
T = TypeVar("T", bound=Translator)
Take = Callable[[Entry], Awaitable[Notification | None]]
"""The provider's hook for each queued entry: the notification for the translator, or None when
it handled the entry itself (a barrier, an approval, another turn's notification)."""
End = TurnEnd | FailureObservation


@define(eq=False)
class BackendTurn(Generic[Entry, T]):
    """A prompt's turn: its channel to the client, its queue, its translator (None until the
    provider can make one) and the backend's id for it."""

    channel: TurnChannel
    queue: TurnQueue[Entry]
    translator: T | None = None
    turn_id: str | None = None
    cancel_requested: bool = False
    known: anyio.Event = field(factory=anyio.Event)
    """Set once the backend named the turn (`turn_id`), or the prompt ended without it."""

    def acknowledged(self, turn_id: str | None) -> None:
        """The backend accepted the turn (naming it, or not): the queue is bounded from now on."""
        self.turn_id = turn_id
        self.known.set()
        self.queue.acknowledged()

    async def consume(self, take: Take[Entry], gone: Callable[[], End]) -> End:
        """Fold the turn's queued entries, in order, until the turn is over."""
        translator = self.translator
        assert translator is not None
        while True:
            entry = await self.queue.get()
            if entry is None:
                return gone()
            notification = await take(entry)
            if notification is None:
                continue
            for step in translator.feed(*notification):
                if isinstance(step, TurnDone):
                    return step.end
                if isinstance(step, FailureObservation):
                    self.channel.record_failure(step)
                else:
                    await self.channel.emit(step)

    async def run(self, clock: PhaseClock, take: Take[Entry], gone: Callable[[], End]) -> TurnEnd:
        """`consume` in the running phase, then its `outcome`."""
        async with clock.phase(Phase.RUNNING, label="turn"):
            end = await self.consume(take, gone)
        return self.outcome(end)

    def outcome(self, end: End) -> TurnEnd:
        """The prompt's answer: the end, or the failure that ended the turn, recorded and raised."""
        if isinstance(end, FailureObservation):
            self.channel.record_failure(end)
            raise TurnFailed(end)
        return end


__all__ = ["Attempts", "BackendTurn", "Take", "Translator", "TurnDone", "fold_steps"]
