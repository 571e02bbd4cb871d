"""Byte streams over raw descriptors: every byte in order, EOF, closing under a waiting reader."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import anyio
import pytest

from acp_agent.wire import stdio
from acp_agent.wire.stdio import FdReceiveStream

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


class Pipe:
    """A pipe whose ends are closed once, by whoever owns them (a descriptor number closed twice
    may by then be the event loop's)."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        self.open = {self.read_end, self.write_end}

    def reader(self, *, owned: bool = True) -> FdReceiveStream:
        if owned:
            self.open.discard(self.read_end)  # the stream closes it
        return FdReceiveStream(self.read_end, owned=owned)

    def close_write_end(self) -> None:
        self.open.discard(self.write_end)
        os.close(self.write_end)


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    made = Pipe()
    yield made
    for fd in made.open:
        os.close(fd)


async def read_all(stream: FdReceiveStream) -> bytes:
    received = bytearray()
    while True:
        try:
            received += await stream.receive()
        except anyio.EndOfStream:
            return bytes(received)


async def test_lines_written_one_at_a_time_arrive_whole_and_in_order(pipe: Pipe) -> None:
    write_end = pipe.write_end
    stream = pipe.reader()
    lines = [f'{{"n":{n}}}\n'.encode() for n in range(500)]

    async def write() -> None:
        for line in lines:
            os.write(write_end, line)
            await anyio.sleep(0)  # the reader waits between lines, as for a streaming backend
        pipe.close_write_end()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        received = await read_all(stream)
    assert received == b"".join(lines)
    await stream.aclose()


async def test_closing_an_owned_stream_under_a_waiting_reader_ends_it(pipe: Pipe) -> None:
    stream = pipe.reader()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            async def receive() -> None:
                with pytest.raises(anyio.ClosedResourceError):
                    await stream.receive()

            tg.start_soon(receive)
            await anyio.sleep(0.01)
            await stream.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


async def test_a_cancelled_wait_leaves_the_stream_readable(pipe: Pipe) -> None:
    write_end = pipe.write_end
    stream = pipe.reader()
    with anyio.move_on_after(0.05):
        await stream.receive()
    os.write(write_end, b"after\n")
    with anyio.fail_after(5):
        assert await stream.receive() == b"after\n"
    await stream.aclose()


async def test_a_read_error_is_raised_after_what_was_read(pipe: Pipe,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = pipe.read_end, pipe.write_end
    stream = pipe.reader()
    with anyio.move_on_after(0.01):
        await stream.receive()  # registered with the loop now
    real_read = os.read
    reads = iter([b"kept\n", OSError(5, "Input/output error")])

    def failing_read(fd: int, size: int) -> bytes:
        if fd != read_end:
            return real_read(fd, size)
        outcome = next(reads)
        if isinstance(outcome, OSError):
            raise outcome
        return outcome

    monkeypatch.setattr(stdio.os, "read", failing_read)
    os.write(write_end, b"!")  # readable: the loop reads (through the stand-in)
    with anyio.fail_after(5):
        assert await stream.receive() == b"kept\n"
        os.write(write_end, b"!")
        with pytest.raises(OSError, match="Input/output"):
            await stream.receive()
        with pytest.raises(anyio.EndOfStream):  # what a read after a failed one gives
            await stream.receive()
    await stream.aclose()


async def test_stdin_handed_back_after_close(pipe: Pipe) -> None:
    """A stream that does not own its descriptor (the process's stdin) leaves it open, blocking
    again and watched by no one; reading the closed stream is ClosedResourceError."""
    read_end, write_end = pipe.read_end, pipe.write_end
    stream = pipe.reader(owned=False)
    with anyio.move_on_after(0.01):
        await stream.receive()
    await stream.aclose()
    assert os.get_blocking(read_end)
    assert read_end not in asyncio.get_running_loop()._selector.get_map()  # type: ignore[attr-defined]
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()
    os.write(write_end, b"still open\n")
    assert os.read(read_end, 100) == b"still open\n"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_other_event_loops_wait_through_anyio(pipe: Pipe) -> None:
    write_end = pipe.write_end
    stream = pipe.reader()

    async def write() -> None:
        await anyio.sleep(0.01)
        os.write(write_end, b"hello\n")
        pipe.close_write_end()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        assert await read_all(stream) == b"hello\n"
    await stream.aclose()
