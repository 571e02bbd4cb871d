"""The one place a backend's events go: to the running turn, else to the session, in order.

The core owns one `SessionRouter` per agent and hands it to the runtime as `RuntimeContext.router`;
it is keyed by ACP session id (= the backend's session or thread id in every provider).

A runtime's backend reader hands every item of a backend session to `deliver` inline, in wire
order. While a turn of that session is registered (`start_turn`) the item goes into the turn's
bounded `TurnQueue` (the reader waits while it is full: backpressure reaches the backend's pipe);
otherwise the runtime's `outside` handler (`serve`) is awaited for it, never started in a task of
its own, and one at a time per session, so nothing overtakes it (what a turn left queued when it
ended included).

Session-scoped events (`emit`) go to the session once the core has opened it (`open`), one at a
time per session; before that (a session being created, or not yet announced to the client) they
wait in the session's backlog, the only one there is. Process-wide notices (`notice`) go into a
running turn's queue, or wait for the next session the core opens or prompts. The core's own
channels (the session a provider creates, loads or prompts) emit through here too.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from attrs import define, field

from acp_agent.backends.events import Event
from acp_agent.sessions.queue import TurnQueue

log = logging.getLogger(__name__)

Sink = Callable[[Event], Awaitable[None]]
Outside = Callable[[str, Any], Awaitable[None]]


async def _drop(key: str, item: Any) -> None:
    log.debug("no runtime handles items outside a turn; dropped one of session %s", key)


@define(eq=False)
class _Route:
    sink: Sink | None = None
    turn: TurnQueue[Any] | None = None
    backlog: list[tuple[int, Event]] = field(factory=list)
    lock: anyio.Lock = field(factory=anyio.Lock)
    """Serialises the session's events (emit, open) and, separately, `outside_lock` its items."""
    outside_lock: anyio.Lock = field(factory=anyio.Lock)


class SessionRouter:
    """Routes a backend's items and events keyed by session id; see the module docstring."""

    def __init__(self) -> None:
        self._routes: dict[str, _Route] = {}
        self._notices: list[tuple[int, Event]] = []
        self._closed: set[str] = set()
        self._seq = itertools.count()
        self._outside: Outside = _drop
        self._provisional = itertools.count(1)

    def _route(self, key: str) -> _Route:
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = _Route()
        return route

    # -- the runtime: backend items -------------------------------------------------------------

    def serve(self, outside: Outside) -> None:
        """The runtime's handler for an item no running turn takes (one runtime at a time)."""
        self._outside = outside

    def start_turn(self, key: str, queue: TurnQueue[Any]) -> None:
        """From now on the session's items go into `queue` (the running turn's)."""
        self._route(key).turn = queue

    def turn(self, key: str) -> TurnQueue[Any] | None:
        route = self._routes.get(key)
        return route.turn if route is not None else None

    async def end_turn(self, key: str, queue: TurnQueue[Any]) -> None:
        """The turn is over: what it left queued is handled as outside any turn, in order, before
        anything the reader delivers later."""
        route = self._route(key)
        if route.turn is queue:
            route.turn = None
        if queue.closed:
            return
        async with route.outside_lock:
            for item in queue.close():
                await self._outside(key, item)

    async def deliver(self, key: str, item: Any) -> None:
        """One backend item, in wire order: into the running turn, else to `outside` (awaited)."""
        route = self._route(key)
        queue = route.turn
        if queue is not None:
            try:
                await queue.put(item)  # waits while the turn's queue is full
                return
            except anyio.ClosedResourceError:
                pass  # the turn ended meanwhile: after what it left (end_turn holds the lock)
        async with route.outside_lock:
            await self._outside(key, item)

    # -- the runtime: events ----------------------------------------------------------------------

    async def emit(self, key: str, event: Event) -> None:
        """A session-scoped event: to the session (its running turn, if any) in order, or into
        the session's backlog until the core opens it. Dropped once the session is closed."""
        if key in self._closed:
            log.debug("dropped an event of closed session %s", key)
            return
        route = self._route(key)
        async with route.lock:
            if route.sink is None:
                route.backlog.append((next(self._seq), event))
            else:
                await route.sink(event)

    async def notice(self, event: Event, wrap: Callable[[Event], Any] | None = None) -> None:
        """A process-wide notice: into a running turn's queue (as `wrap(event)`), else kept for
        the next session the core opens or prompts."""
        if wrap is not None:
            for route in list(self._routes.values()):
                if route.turn is not None:
                    try:
                        await route.turn.put(wrap(event))
                        return
                    except anyio.ClosedResourceError:
                        continue
        self.keep_notice(event)

    def keep_notice(self, event: Event) -> None:
        """A notice for the next session the core opens or prompts (e.g. one found while starting)."""
        self._notices.append((next(self._seq), event))

    # -- the core -----------------------------------------------------------------------------------

    def provisional_key(self) -> str:
        """A key for a session still being created, whose id the provider has not reported yet."""
        return f"\0creating-{next(self._provisional)}"

    def rekey(self, provisional: str, key: str) -> None:
        """The session created under `provisional` is `key`: its backlog joins `key`'s, in order."""
        route = self._routes.pop(provisional, None)
        if route is None:
            return
        self._closed.discard(key)
        target = self._route(key)
        target.backlog = list(heapq.merge(route.backlog, target.backlog, key=lambda entry: entry[0]))

    async def open(self, key: str, sink: Sink) -> None:
        """The session's events go to `sink` from now on; first the kept notices and the session's
        backlog, in the order they came. Called again, it delivers what was kept meanwhile."""
        self._closed.discard(key)
        route = self._route(key)
        async with route.lock:
            route.backlog = list(heapq.merge(self._notices, route.backlog, key=lambda entry: entry[0]))
            self._notices.clear()
            while route.backlog:  # one at a time: what a cancelled flush did not write stays kept
                await sink(route.backlog[0][1])
                route.backlog.pop(0)
            route.sink = sink

    def expect(self, key: str) -> None:
        """A session of this id is being loaded (a closed one again, maybe): its events wait for it."""
        self._closed.discard(key)

    def close(self, key: str) -> None:
        """The session is gone: its backlog is dropped and later events of it too."""
        self._routes.pop(key, None)
        self._closed.add(key)

    def forget(self, key: str) -> None:
        """A session that was never created (its provider failed): drop what it kept."""
        self._routes.pop(key, None)


__all__ = ["Outside", "SessionRouter", "Sink"]
