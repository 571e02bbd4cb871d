"""A backend process spoken to in JSON lines on its stdio (one object per line, no JSON-RPC).

Spawned (`spawn`: in a session of its own, with the parent-death signal) or adopted (`adopt`:
started by the command line before the event loop), the child's stdout is read by `run`, in the
owner's task group, until it ends. Each line that is a JSON object goes to `route`, which a
provider overrides for the frames it answers itself (control requests, responses); the others go
to `messages`, in order. `write` sends one object per line; `stop` is the core's one stop
sequence, with SIGTERM to the child's process group, after which what it left there is killed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import anyio
import anyio.abc

from acp_agent.backends.process import (
    EarlyProcess,
    adopted_process,
    drain_stderr,
    kill_process_group,
    parent_death_argv,
    stop_process,
)
from acp_agent.wire.rpc import LineReader

log = logging.getLogger(__name__)

Message = dict[str, Any]


class ChildGone(Exception):
    """The child's stdin or stdout is closed: it exited or is exiting."""


class JsonLinesChild:
    """A running child: `run` reads its stdout until it closes; `receive` takes its messages."""

    max_line_bytes: ClassVar[int] = 64 * 1024 * 1024
    """A longer line is dropped (its size is logged)."""
    gather_s: ClassVar[float] = 0.0
    """Before each read after the first, how long what the child writes meanwhile gathers
    (`LineReader`): for a child that writes many small lines one by one."""
    logger: ClassVar[logging.Logger] = log
    """Where its lines, stop and drops are logged (a provider's own, to keep its level)."""
    buffer: ClassVar[int] = 256
    """Messages read ahead of their reader; beyond, the reader waits and the child blocks writing."""

    def __init__(self, process: anyio.abc.Process, *, name: str = "backend") -> None:
        self.process = process
        self.name = name
        self.adopted = False
        """Started by the command line: its streams are closed here once read."""
        self.group = process.pid  # started in a session of its own: what it spawned dies with it
        self.closed = anyio.Event()
        """Set once its stdout ended: it exited or is exiting."""
        self._write_lock = anyio.Lock()
        self._reading = anyio.CancelScope()  # `stop` ends the reader, which may wait on a full buffer
        self._send, self.messages = anyio.create_memory_object_stream[Message](self.buffer)

    @classmethod
    async def spawn(cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
                    **fields: Any) -> Self:
        """Start the program (from the event-loop thread, so the parent-death signal holds);
        `fields` go to the constructor. Raises OSError if it cannot run."""
        process = await anyio.open_process(parent_death_argv(argv, env), env=dict(env), cwd=cwd,
                                           start_new_session=True)
        child = cls(process, **fields)
        child.logger.debug("started %s (pid %d)", child.name, process.pid)
        return child

    @classmethod
    def adopt(cls, spawned: EarlyProcess, **fields: Any) -> Self:
        """A child the command line started before the event loop."""
        child = cls(adopted_process(spawned), **fields)
        child.adopted = True
        child.logger.debug("adopted %s (pid %d), started with the agent", child.name, spawned.pid)
        return child

    @property
    def alive(self) -> bool:
        return not self.closed.is_set() and self.process.returncode is None

    async def write(self, message: Message) -> None:
        """One line to the child's stdin; lines never interleave. Raises ChildGone if it is closed."""
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        async with self._write_lock:
            if self.process.stdin is None:
                raise ChildGone
            try:
                await self.process.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise ChildGone from None

    async def receive(self) -> Message:
        """The next message; anyio.EndOfStream once the output ended. Takes what is already read
        without an event-loop pass (a child's lines come in bursts)."""
        try:
            return self.messages.receive_nowait()
        except anyio.WouldBlock:
            return await self.messages.receive()

    def route(self, message: Message, task_group: anyio.abc.TaskGroup) -> bool:
        """Whether the child's `message` was handled here rather than handed to `messages`
        (`task_group` lives while the output is read). None is, by default."""
        return False

    def ended(self) -> None:
        """Called once the output ended (or reading stopped): fail what still waits on the child."""

    async def run(self) -> None:
        """Read stdout until it ends, routing each message; stderr goes to the debug log."""
        try:
            with self._reading:
                async with anyio.create_task_group() as task_group:
                    if self.process.stderr is not None:
                        task_group.start_soon(drain_stderr, self.process.stderr, self.name)
                    try:
                        await self._read(task_group)
                    finally:
                        task_group.cancel_scope.cancel()
        finally:
            self._send.close()
            self.closed.set()
            self.ended()
            if self.adopted:  # nothing reads them any more; their descriptors are ours to close
                with anyio.CancelScope(shield=True):
                    for stream in (self.process.stdout, self.process.stderr):
                        if stream is not None:
                            await stream.aclose()

    async def _read(self, task_group: anyio.abc.TaskGroup) -> None:
        assert self.process.stdout is not None
        reader = LineReader(self.process.stdout, self.max_line_bytes, gather_s=self.gather_s)
        while (line := await reader.next_line()) is not None:
            if isinstance(line, int):
                self.logger.warning("%s wrote a line of %d bytes: dropped", self.name, line)
                continue
            try:  # decoded first: `json.loads` of bytes looks for a UTF-16 or -32 encoding per line
                message = json.loads(line.decode("utf-8", "surrogatepass"))
            except ValueError:
                self.logger.debug("%s wrote a line that is not JSON", self.name)
                continue
            if not isinstance(message, dict) or self.route(message, task_group):
                continue
            try:  # without a checkpoint while there is room: a burst is handed over at once
                self._send.send_nowait(message)
            except anyio.WouldBlock:
                try:
                    await self._send.send(message)
                except anyio.BrokenResourceError:
                    return
            except anyio.BrokenResourceError:  # nobody reads its messages any more
                return

    async def stop(self, *, grace_s: float, term_s: float = 2.0) -> None:
        """Close stdin, wait `grace_s`, SIGTERM (its process group), wait `term_s`, SIGKILL;
        always reaped, then what it left in its process group is killed. Shielded: safe to call
        more than once. Only an orderly stop (a grace to exit after EOF) warns when it still comes
        to SIGKILL; a stop without grace plans the kill."""
        process = self.process
        began = time.monotonic()

        async def close_input() -> None:
            if process.stdin is not None:
                async with self._write_lock:
                    await process.stdin.aclose()

        def warn() -> None:
            if term_s > 0:
                self.logger.log(logging.WARNING if grace_s > 0 else logging.DEBUG,
                        "%s (pid %s) did not stop in time; killing it", self.name, process.pid)

        with anyio.CancelScope(shield=True):
            await stop_process(process, close_input, grace_s=grace_s, term_s=term_s,
                               signal_process=self._signal, on_kill=warn)
            kill_process_group(self.group)
            self._reading.cancel()
            self.logger.debug("%s (pid %s) stopped with %s after %.0f ms", self.name, process.pid,
                      process.returncode, (time.monotonic() - began) * 1000)

    def _signal(self, signum: signal.Signals) -> None:
        """SIGTERM to the child's process group (what it started hears it too), SIGKILL to the
        child (the group is killed once it is reaped)."""
        try:
            if signum is signal.SIGTERM:
                os.killpg(self.group, signum)
            else:
                self.process.send_signal(signum)
        except (ProcessLookupError, PermissionError):
            if signum is signal.SIGTERM:  # no group of its own: the child alone
                try:
                    self.process.send_signal(signum)
                except ProcessLookupError:
                    pass


__all__ = ["ChildGone", "JsonLinesChild", "Message"]
