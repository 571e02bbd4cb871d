"""One owner per child process: spawn, byte streams, stderr to the log, and an orderly stop.

Stopping closes stdin, waits, terminates, waits, kills and reaps, each step under a deadline, in a
shielded scope so cancellation cannot leave an orphan. Raw stderr goes to the debug log (through
the redacting formatter), never into errors.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

log = logging.getLogger(__name__)


class ChildProcess:
    """A running child; `stdin` and `stdout` are its byte streams."""

    def __init__(self, process: anyio.abc.Process, name: str) -> None:
        self.process = process
        self.name = name
        assert process.stdin is not None and process.stdout is not None
        self.stdin: anyio.abc.ByteSendStream = process.stdin
        self.stdout: anyio.abc.ByteReceiveStream = process.stdout
        self.exited = anyio.Event()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        code = await self.process.wait()
        self.exited.set()
        return code

    async def stop(self, *, grace_s: float = 2.0, term_s: float = 2.0) -> None:
        """Close stdin, then SIGTERM, then SIGKILL; always reaps. Safe to call more than once."""
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                try:
                    await self.stdin.aclose()
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                for deadline, action in ((grace_s, None), (term_s, signal.SIGTERM), (5.0, signal.SIGKILL)):
                    if action is not None and self.process.returncode is None:
                        try:
                            self.process.send_signal(action)
                        except ProcessLookupError:
                            pass
                    with anyio.move_on_after(deadline):
                        await self.process.wait()
                    if self.returncode is not None:
                        break
            self.exited.set()
            log.debug("%s (pid %d) stopped with %s", self.name, self.pid, self.process.returncode)


async def _drain_stderr(stream: anyio.abc.ByteReceiveStream, name: str) -> None:
    try:
        async for chunk in TextReceiveStream(stream, errors="replace"):
            for line in chunk.splitlines():
                if line.strip():
                    log.debug("%s stderr: %s", name, line)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return


@asynccontextmanager
async def open_child(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None, name: str = "backend",
    grace_s: float = 2.0,
) -> AsyncIterator[ChildProcess]:
    """Start a child with piped stdio; on exit it is stopped (and reaped) whatever happened."""
    process = await anyio.open_process(
        list(argv), env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    child = ChildProcess(process, name)
    log.debug("started %s (pid %d)", name, child.pid)
    try:
        async with anyio.create_task_group() as task_group:
            if process.stderr is not None:
                task_group.start_soon(_drain_stderr, process.stderr, name)
            try:
                yield child
            finally:
                await child.stop(grace_s=grace_s)
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()


def kill_process_group(pid: int) -> None:
    """Kill what a child left behind in its own session (tools it spawned)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
