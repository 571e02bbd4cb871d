"""One place that routes a backend's events: to the running turn, else to the session, in order.

A runtime's backend reader hands every item of a backend session (a Muse session, a Codex thread)
to `SessionRouter.deliver` inline, in wire order. While a turn of that session is registered the
item goes into the turn's bounded `TurnQueue` (the reader waits while it is full: backpressure
reaches the backend's pipe); otherwise the runtime's `outside` handler is awaited for it, never
started in a task of its own, so nothing overtakes it. Session-scoped events (`emit`) go to the
session's channel, one at a time per session, or into that session's one backlog while it has no
channel yet (a session being created); `flush` hands the backlog to the channel once it exists.
Process-wide notices (`notice`) go into a running turn, or wait for the next session flushed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import anyio
from attrs import define, field

from .events import Event
from .provider import SessionChannel
from .turnqueue import TurnQueue

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@define(eq=False)
class _Route(Generic[T]):
    channel: SessionChannel | None = None
    turn: TurnQueue[T] | None = None
    backlog: list[Event] = field(factory=list)
    lock: anyio.Lock = field(factory=anyio.Lock)


class SessionRouter(Generic[K, T]):
    """Routes backend items (`T`) keyed by backend session id (`K`); see the module docstring."""

    def __init__(self, outside: Callable[[K, T], Awaitable[None]]) -> None:
        self._outside = outside
        self._routes: dict[K, _Route[T]] = {}
        self._notices: list[Event] = []

    def _route(self, key: K) -> _Route[T]:
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = _Route()
        return route

    # -- turns --------------------------------------------------------------------------------

    def start_turn(self, key: K, queue: TurnQueue[T]) -> None:
        """From now on the session's items go into `queue` (the running turn's)."""
        self._route(key).turn = queue

    def turn(self, key: K) -> TurnQueue[T] | None:
        route = self._routes.get(key)
        return route.turn if route is not None else None

    async def end_turn(self, key: K, queue: TurnQueue[T]) -> None:
        """The turn is over: what it left queued is handled as outside any turn, in order."""
        route = self._routes.get(key)
        if route is not None and route.turn is queue:
            route.turn = None
        if queue.closed:
            return
        for item in queue.close():
            await self._outside(key, item)

    async def deliver(self, key: K, item: T) -> None:
        """One backend item, in wire order: into the running turn, else to `outside` (awaited)."""
        route = self._routes.get(key)
        queue = route.turn if route is not None else None
        if queue is not None:
            try:
                await queue.put(item)  # waits while the turn's queue is full
                return
            except anyio.ClosedResourceError:
                pass  # the turn ended meanwhile
        await self._outside(key, item)

    # -- the session --------------------------------------------------------------------------

    async def emit(self, key: K, event: Event) -> None:
        """A session-scoped event: to the session's channel in order, or kept until it has one."""
        route = self._route(key)
        async with route.lock:
            if route.channel is None:
                route.backlog.append(event)
            else:
                await route.channel.emit(event)

    def keep(self, key: K, event: Event) -> None:
        """An event for the session's next flush (e.g. a notice found while opening it)."""
        self._route(key).backlog.append(event)

    async def flush(self, key: K, channel: SessionChannel, *, attach: bool = True) -> None:
        """The waiting notices, then the session's backlog, to `channel`, in order; `attach`:
        later session-scoped events go to `channel` too (else they are kept for the next flush)."""
        route = self._route(key)
        async with route.lock:
            if attach:
                route.channel = channel
            pending = [*self._notices, *route.backlog]
            self._notices.clear()
            route.backlog.clear()
            for event in pending:
                await channel.emit(event)

    def detach(self, key: K) -> None:
        """The session is gone (closed): forget its channel; a backlog left over is dropped."""
        self._routes.pop(key, None)

    # -- the process ----------------------------------------------------------------------------

    async def notice(self, event: Event, wrap: Callable[[Event], T]) -> None:
        """A process-wide notice: into a running turn's queue (as `wrap(event)`), else kept."""
        for route in list(self._routes.values()):
            if route.turn is not None:
                try:
                    await route.turn.put(wrap(event))
                    return
                except anyio.ClosedResourceError:
                    continue
        self._notices.append(event)

    def keep_notice(self, event: Event) -> None:
        """A notice for the next session flushed (e.g. found while no session exists yet)."""
        self._notices.append(event)


__all__ = ["SessionRouter"]
