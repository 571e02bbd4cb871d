"""Byte streams over the process's stdin and stdout file descriptors.

Pipes and sockets are read and written non-blocking through the event loop, so a read never pins
a worker thread that would keep the process alive at shutdown. A regular file (stdin redirected
from disk) is read through a worker thread, which is safe because file reads never block for long.
A descriptor that has nothing to read yet is waited for with `anyio.wait_readable`.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread


def pollable(fd: int) -> bool:
    """Whether `fd` is read and written through the event loop (a pipe, socket or terminal)
    rather than from a worker thread (a regular file)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


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

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pollable:
            anyio.notify_closing(self._fd)  # a receive waiting on it ends (ClosedResourceError)
        if self._owned:
            os.close(self._fd)
        elif self._pollable:
            os.set_blocking(self._fd, True)


class FdReceiveStream(_FdStream, anyio.abc.ByteReceiveStream):
    """Reads from a file descriptor."""

    def __init__(self, fd: int, *, owned: bool = False, preread: bytes = b"") -> None:
        super().__init__(fd, owned=owned)
        self._preread = preread
        """Read before the loop ran (`acp_agent.startup.early`), received first."""
        self._eof = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._preread:
                data, self._preread = self._preread[:max_bytes], self._preread[max_bytes:]
                return data
            if self._eof:
                raise anyio.EndOfStream
            if not self._pollable:
                data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes)
            else:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    continue
                except OSError:
                    self._eof = True  # what a read after a failed one gives
                    raise
            if not data:
                raise anyio.EndOfStream
            return data


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
