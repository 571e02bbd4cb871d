"""Byte streams over the process's stdin and stdout file descriptors.

Pipes and sockets are read and written non-blocking through the event loop, so a read never pins
a worker thread that would keep the process alive at shutdown. A regular file (stdin redirected
from disk) is read through a worker thread, which is safe because file reads never block for long.

On asyncio a pipe that had to be waited for stays registered with the loop, which reads it as it
becomes readable (as asyncio's own pipe transports do), up to `READ_AHEAD_BYTES` ahead of the
reader. `anyio.wait_readable` registers and unregisters the descriptor and passes through the
loop once more on every wait: about 40 against 14 us of CPU per line for a backend that streams
its answer a line at a time, and the agent's CPU competes with the backend's (issue 11).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread

if TYPE_CHECKING:  # asyncio is loaded by its loop: `initialize` may be answered before (`acp_agent.startup.early`)
    import asyncio


def pollable(fd: int) -> bool:
    """Whether `fd` is read and written through the event loop (a pipe, socket or terminal)
    rather than from a worker thread (a regular file)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None on another event loop (asyncio not even loaded: not its)."""
    module = sys.modules.get("asyncio")
    if module is None:
        return None
    try:
        loop: asyncio.AbstractEventLoop = module.get_running_loop()
    except RuntimeError:
        return None
    return loop


class _FdStream:
    """A file descriptor read or written through the event loop. Not `owned` (the process's own
    stdio): closing leaves it open and blocking again. `owned` (a child's pipe spawned before
    the loop, `acp_agent.backends.process`): closing closes it, and using it afterwards is
    `ClosedResourceError`. Reading either once it is closed is `ClosedResourceError`."""

    def __init__(self, fd: int, *, owned: bool = False) -> None:
        self._fd = fd
        self._owned = owned
        self._closed = False
        self._pollable = pollable(fd)
        if self._pollable:
            os.set_blocking(fd, False)

    def _check_open(self) -> None:
        if self._closed and self._owned:  # an owned descriptor's number may be reused by now
            raise anyio.ClosedResourceError

    def _release(self) -> None:
        """Before the descriptor is closed or handed back: nothing of ours watches it any more."""

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._release()
        if self._owned:
            anyio.notify_closing(self._fd)
            os.close(self._fd)
        elif self._pollable:
            os.set_blocking(self._fd, True)


READ_AHEAD_BYTES = 256 * 1024
"""How far the loop reads a registered pipe ahead of its reader (then it waits to be asked again)."""


class FdReceiveStream(_FdStream, anyio.abc.ByteReceiveStream):
    """Reads from a file descriptor."""

    def __init__(self, fd: int, *, owned: bool = False, preread: bytes = b"") -> None:
        super().__init__(fd, owned=owned)
        self._loop: asyncio.AbstractEventLoop | None = None
        """The asyncio loop the descriptor is registered with (None: not registered)."""
        self._buffer = bytearray(preread)
        """Read, not yet received: `preread` (read before the loop ran, `acp_agent.startup.early`) first."""
        self._error: OSError | None = None
        """The error the loop's read raised, for the reader once it has taken the buffer."""
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._buffer:
                data = bytes(self._buffer[:max_bytes])
                del self._buffer[:max_bytes]
                return data
            if self._error is not None:
                error, self._error, self._eof = self._error, None, True
                raise error
            if self._eof:
                raise anyio.EndOfStream
            if not self._pollable:
                data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes)
            elif self._loop is not None:  # the loop reads it: wait for what it reads
                await self._readable()
                continue
            else:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await self._readable()
                    continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def _readable(self) -> None:
        """Until the loop has read something (asyncio), or else until the descriptor is readable."""
        loop = _running_asyncio_loop()
        if loop is None:
            await anyio.wait_readable(self._fd)
            return
        if self._loop is not loop:
            self._release()
            try:
                loop.add_reader(self._fd, self._on_readable)
            except (NotImplementedError, OSError):  # no selector loop, or a descriptor epoll refuses
                await anyio.wait_readable(self._fd)
                return
            self._loop = loop
        waiter = self._waiter = loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            self._error = exc
            self._release()
        else:
            if not data:
                self._eof = True
                self._release()
            else:
                self._buffer += data
                if len(self._buffer) >= READ_AHEAD_BYTES:
                    self._release()  # the reader drains the buffer, then waits (registers) again
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _release(self) -> None:
        if self._loop is not None:
            loop, self._loop = self._loop, None
            if not loop.is_closed():
                loop.remove_reader(self._fd)
        if self._closed and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)  # a receive waiting on a stream closed under it: it raises


class FdSendStream(_FdStream, anyio.abc.ByteSendStream):
    """Writes whole buffers to a file descriptor."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            self._check_open()
            if not self._pollable:
                written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            else:
                try:
                    written = os.write(self._fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
                    continue
                except (BrokenPipeError, ConnectionResetError) as exc:
                    raise anyio.BrokenResourceError from exc
            view = view[written:]


def stdio_streams(stdin: Any = None, stdout: Any = None, *,
                  preread: bytes = b"") -> tuple[FdReceiveStream, FdSendStream]:
    """Streams over the given file objects (default: the process's stdin and stdout); `preread`:
    bytes already read from stdin, received first."""
    return (FdReceiveStream((stdin or sys.stdin).fileno(), preread=preread),
            FdSendStream((stdout or sys.stdout).fileno()))
