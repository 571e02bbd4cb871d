"""A running prompt's queue of backend notifications, bounded so a stalled client stalls the backend.

The backend connection's reader puts every notification of a turn here and the prompt takes them
off in order. Once the turn is acknowledged (`acknowledged()`), `put` waits while
the queue holds `max_items`: the reader then stops reading the backend's stdout and the backend
blocks writing, instead of the agent's memory growing at the backend's pace. Before that the
prompt is waiting for the backend's answer to its own request, which the reader must still be able
to read, so nothing is refused (a full queue only yields once, to let a prompt whose answer was
just read switch the bound on): what a backend sends before acknowledging a turn depends on the
backend and the submit deadline, not on the client.

`fail` (the backend is gone) never waits and is never lost: the consumer sees it once the items
queued before it are taken. `close` (the prompt ended) wakes every waiting producer with
`anyio.ClosedResourceError`, so whatever arrives afterwards is handled outside the prompt.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

DEFAULT_MAX_ITEMS = 256


class TurnQueue(Generic[T]):
    def __init__(self, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.max_items = max(1, max_items)
        self.bounded = False
        self.closed = False
        self.lost = False
        self.high_water = 0
        """The most items it ever held (tests read it)."""
        self.producer_waited = anyio.Event()
        """Set the first time a producer had to wait for room (backpressure reached the backend)."""
        self._items: deque[T] = deque()
        self._readable = anyio.Event()
        self._room = anyio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def acknowledged(self) -> None:
        """The turn is acknowledged and its consumer drains the queue: from now on it is bounded."""
        self.bounded = True

    async def put(self, item: T) -> None:
        """Queue an item, waiting for room; raises ClosedResourceError once the prompt has ended."""
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            if len(self._items) < self.max_items:
                break
            if not self.bounded:
                # Not acknowledged yet: the reader must go on (it has to read the acknowledgement),
                # but first let the prompt run, so that an acknowledgement already read takes effect.
                await anyio.lowlevel.checkpoint()
                if self._changed_while_yielding():
                    continue
                break
            self.producer_waited.set()
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()
        self._items.append(item)
        self.high_water = max(self.high_water, len(self._items))
        self._readable.set()

    def _changed_while_yielding(self) -> bool:
        """Whether the turn was acknowledged (the bound applies) or closed meanwhile."""
        return self.bounded or self.closed

    def fail(self) -> None:
        """The backend is gone: after the items already queued, the consumer gets None."""
        self.lost = True
        self._readable.set()

    async def get(self) -> T | None:
        """The next item in order; None once the backend is gone and nothing is left before that."""
        while True:
            if self._items:
                item = self._items.popleft()
                self._room.set()
                return item
            if self.lost or self.closed:
                return None
            if self._readable.is_set():
                self._readable = anyio.Event()
            await self._readable.wait()

    def close(self) -> list[T]:
        """The prompt ended: wake waiting producers (they get ClosedResourceError); hand back the rest."""
        self.closed = True
        left = list(self._items)
        self._items.clear()
        self._room.set()
        self._readable.set()
        return left
