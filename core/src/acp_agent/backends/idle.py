"""Idle release: a session's backend process is stopped once it has gone unused for a while, and
started again (resuming the session) when the session is next used.

`idle_release_s` is the one reader of a provider's release-time variable (`count_setting` of
any other bound); `IdleRelease` is the task that releases what has gone unused, waking when the
next release is due or when told that something started being used; `stop_in_background`
stops a released backend without holding up the release, and gives what the session's next
start must wait for.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Generic, TypeVar

import anyio
import anyio.abc

T = TypeVar("T")


def count_setting(environ: Mapping[str, str], variable: str, *, default: int) -> int | None:
    """A count or bound from `variable`: None (none) when it is 0, `default` when it is unset or
    not a number."""
    raw = environ.get(variable, "").strip()
    if raw.isdigit():
        return int(raw) if int(raw) > 0 else None
    return default


def idle_release_s(environ: Mapping[str, str], variable: str, *, default_ms: int) -> float | None:
    """After how many seconds without use a session's backend is released, from `variable` in
    milliseconds: None (never) when it is 0, `default_ms` when it is unset or not a number."""
    ms = count_setting(environ, variable, default=default_ms)
    return ms / 1000 if ms is not None else None


def stop_in_background(task_group: anyio.abc.TaskGroup, stop: Callable[[], Awaitable[object]]) -> anyio.Event:
    """Run `stop` in `task_group`; the event is set once it has ended, however it ended: a
    session's next backend waits for it, so that one session never has two."""
    stopped = anyio.Event()

    async def run() -> None:
        try:
            await stop()
        finally:
            stopped.set()

    task_group.start_soon(run)
    return stopped


class IdleRelease(Generic[T]):
    """Releases each item `idle_since` reports as idle once it has been so for `idle_s` (None:
    never). `idle_since` yields the idle items with the `time.monotonic()` of their last use;
    `release` stops one (it must not block: a stop that takes time runs in a task of its own).
    `run` is the one task; `touched` wakes it early (an item was used, so its release moves)."""

    def __init__(self, idle_s: float | None, idle_since: Callable[[], Iterable[tuple[T, float]]],
                 release: Callable[[T], None]) -> None:
        self.idle_s = idle_s
        self._idle_since = idle_since
        self._release = release
        self._scope = anyio.CancelScope()
        self._touched = anyio.Event()

    def touched(self) -> None:
        self._touched.set()

    def stop(self) -> None:
        """End `run` (at the runtime's close)."""
        self._scope.cancel()

    async def run(self) -> None:
        if self.idle_s is None:
            return
        with self._scope:
            while True:
                now = time.monotonic()
                due = now + self.idle_s
                for item, since in list(self._idle_since()):
                    if since + self.idle_s <= now:
                        self._release(item)
                    else:
                        due = min(due, since + self.idle_s)
                self._touched = anyio.Event()
                with anyio.move_on_after(due - now):
                    await self._touched.wait()
