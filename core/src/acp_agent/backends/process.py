"""One owner per child process: spawn, byte streams, stderr to the log, and an orderly stop.

Stopping closes stdin, waits, terminates, waits, kills and reaps, each step under a deadline, in a
shielded scope so cancellation cannot leave an orphan. Raw stderr goes to the debug log (through
the redacting formatter), never into errors.

Every backend the agent starts also gets a parent-death signal (`parent_death_argv`): should the
agent die without stopping it (SIGKILL, a crash), the kernel kills the backend at once.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import anyio
import anyio.abc

from acp_agent.backends import pdeath
from acp_agent.wire.rpc import LineReader
from acp_agent.wire.stdio import FdReceiveStream, FdSendStream

log = logging.getLogger(__name__)


def _setpriv() -> str | None:
    """util-linux `setpriv` if it runs here and knows `--pdeathsig` (probed once: `pdeath.setpriv`)."""
    return pdeath.setpriv()


def parent_death_available() -> bool:
    """Whether backends started here get a parent-death signal (see `parent_death_argv`)."""
    return _setpriv() is not None


def parent_death_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """`argv` run so that the kernel SIGKILLs it when the agent dies (Linux PR_SET_PDEATHSIG).

    `setpriv --pdeathsig KILL --` sets the signal and execs the program, so the backend keeps its
    PID and its own argv. The signal fires when the *thread* that forked the child ends: spawn from
    the event-loop thread (anyio's `open_process` does), never from a worker thread. Where setpriv
    is unavailable (not Linux, util-linux missing or too old) `argv` is returned unchanged and the
    orderly stop remains the only guard; that is logged at debug level once. A program that cannot
    be found (on `env`'s PATH) is not wrapped either, so starting it fails as it would unwrapped
    (FileNotFoundError) instead of as a wrapper that exits 127.
    """
    return pdeath.wrap(argv, env, _setpriv())


def write_launcher(path: Path, argv: Sequence[str], *, new_session: bool = False) -> str:
    """An executable script at `path` that execs `argv` (plus its own arguments) with the parent-death signal.

    For backends a library spawns, where only the program can be chosen (the Claude CLI through
    claude-agent-sdk). `new_session` also starts the program in a session of its own (util-linux
    `setsid`; the launcher is never a group leader, so setsid execs without forking) so what it
    leaves behind can be killed as one group. The script is readable only by the agent's user.
    """
    program = list(argv)
    if new_session:
        import shutil

        setsid = shutil.which("setsid") if sys.platform.startswith("linux") else None
        if setsid is None:
            log.debug("backend launcher: setsid unavailable, the program shares the agent's process group")
        else:
            # setpriv (below) execs setsid, which calls setsid() in the same process and execs the program.
            program = [setsid, *program]
    command = parent_death_argv(program)
    path.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(part) for part in command) + ' "$@"\n')
    path.chmod(stat.S_IRWXU)
    return str(path)


class EarlyProcess(Protocol):
    """A backend the command line started before the event loop (`acp_agent.startup.prestart`),
    as a runtime adopts it: its PID, this process's ends of its pipes (raw descriptors) and its
    signals. What `RuntimeContext.prestarted.take` hands over."""

    pid: int
    stdin: int | None
    stdout: int | None
    stderr: int | None

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def send_signal(self, signum: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


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
        await stop_process(self.process, self.stdin.aclose, grace_s=grace_s, term_s=term_s)
        self.exited.set()
        log.debug("%s (pid %d) stopped with %s", self.name, self.pid, self.process.returncode)


KILL_WAIT_S = 5.0
"""After SIGKILL, how long a stop waits for the process to be reaped."""


async def stop_process(process: anyio.abc.Process, close_input: Callable[[], Awaitable[None]], *, grace_s: float,
                       term_s: float, signal_process: Callable[[signal.Signals], None] | None = None,
                       on_kill: Callable[[], None] | None = None) -> None:
    """The one stop sequence of a backend: close its input and wait `grace_s`, SIGTERM and wait
    `term_s`, SIGKILL and wait until it is reaped (each wait bounded), in a shielded scope so that
    cancellation cannot leave it running. `signal_process` sends the signals (default: to the
    process); `on_kill` is told before a SIGKILL. Returns at once for a process that has exited."""
    send = signal_process or process.send_signal
    with anyio.CancelScope(shield=True):
        if _reaped(process):
            return
        try:
            await close_input()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        for deadline, action in ((grace_s, None), (term_s, signal.SIGTERM), (KILL_WAIT_S, signal.SIGKILL)):
            if action is not None and not _reaped(process):
                if action is signal.SIGKILL and on_kill is not None:
                    on_kill()
                try:
                    send(action)
                except ProcessLookupError:
                    pass
            with anyio.move_on_after(deadline):
                await process.wait()
            if _reaped(process):
                break


def _reaped(process: anyio.abc.Process) -> bool:
    return process.returncode is not None

STDERR_LINE_BYTES = 64 * 1024
"""A longer stderr line is dropped, not buffered (its size is logged instead)."""


async def drain_stderr(stream: anyio.abc.ByteReceiveStream, name: str) -> None:
    """A backend's stderr, line by line, to the debug log (the redacting formatter's), until it
    closes; a line split across reads is logged whole."""
    reader = LineReader(stream, STDERR_LINE_BYTES)  # a closed or failed stream ends it like EOF
    while (line := await reader.next_line()) is not None:
        if isinstance(line, int):
            log.debug("%s stderr: a line of %d bytes, not logged", name, line)
        elif line.strip():
            log.debug("%s stderr: %s", name, line.decode(errors="replace"))


@asynccontextmanager
async def open_child(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None, name: str = "backend",
    grace_s: float = 2.0,
) -> AsyncIterator[ChildProcess]:
    """Start a child with piped stdio; on exit it is stopped (and reaped) whatever happened."""
    process = await anyio.open_process(
        parent_death_argv(argv, env), env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    log.debug("started %s (pid %d)", name, process.pid)
    async with _owned(process, name, grace_s) as child:
        yield child


class _AdoptedProcess(anyio.abc.Process):
    """A backend the command line spawned before the event loop (`acp_agent.startup.prestart.Spawned`),
    driven from it. Its exit is awaited on a pidfd (Linux), then reaped, which returns at once."""

    def __init__(self, spawned: EarlyProcess) -> None:
        assert spawned.stdin is not None and spawned.stdout is not None and spawned.stderr is not None
        self._spawned = spawned
        # The streams own the descriptors from now on.
        self._stdin = FdSendStream(spawned.stdin, owned=True)
        self._stdout = FdReceiveStream(spawned.stdout, owned=True)
        self._stderr = FdReceiveStream(spawned.stderr, owned=True)
        spawned.stdin = spawned.stdout = spawned.stderr = None

    async def wait(self) -> int:
        while self._spawned.returncode is None:
            try:
                pidfd = os.pidfd_open(self._spawned.pid)
            except ProcessLookupError:  # already reaped
                break
            except OSError:  # no descriptor to be had (EMFILE, say): look again in 10 ms
                if self._spawned.poll() is None:
                    await anyio.sleep(0.01)
                continue
            try:
                if self._spawned.poll() is None:
                    await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
            self._spawned.poll()
        code = self._spawned.poll()
        assert code is not None
        return code

    def terminate(self) -> None:
        self._spawned.terminate()

    def kill(self) -> None:
        self._spawned.kill()

    def send_signal(self, signal: int) -> None:
        self._spawned.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._spawned.pid

    @property
    def returncode(self) -> int | None:
        return self._spawned.poll()

    @property
    def stdin(self) -> anyio.abc.ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream:
        return self._stderr

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for stream in (self._stdin, self._stdout, self._stderr):
                await stream.aclose()
            if self._spawned.poll() is None:
                self._spawned.kill()
                await self.wait()


def adopted_process(spawned: EarlyProcess) -> anyio.abc.Process:
    """A child started before the event loop (`acp_agent.startup.prestart`) as an anyio process, for a
    provider that owns its backend's lifetime itself (stop, reap) rather than through `adopt_child`."""
    return _AdoptedProcess(spawned)


@asynccontextmanager
async def _owned(process: anyio.abc.Process, name: str, grace_s: float) -> AsyncIterator[ChildProcess]:
    child = ChildProcess(process, name)
    try:
        async with anyio.create_task_group() as task_group:
            if process.stderr is not None:
                task_group.start_soon(drain_stderr, process.stderr, name)
            try:
                yield child
            finally:
                await child.stop(grace_s=grace_s)
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()


@asynccontextmanager
async def adopt_child(spawned: EarlyProcess, *, name: str = "backend",
                      grace_s: float = 2.0) -> AsyncIterator[ChildProcess]:
    """Own a child started before the event loop (`acp_agent.startup.prestart`) exactly as `open_child` does."""
    log.debug("adopted %s (pid %d), started with the agent", name, spawned.pid)
    async with _owned(_AdoptedProcess(spawned), name, grace_s) as child:
        yield child


def kill_process_group(pid: int) -> None:
    """Kill what a child left behind in its own session (tools it spawned)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
