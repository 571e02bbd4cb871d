"""Byte streams over raw descriptors: every byte in order, EOF, closing under a waiting reader,
and (asyncio) a pipe that stays registered with the loop instead of once per wait."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import anyio
import pytest

from acp_agent.wire import stdio
from acp_agent.wire.stdio import READ_AHEAD_BYTES, FdReceiveStream

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


async def test_a_pipe_waited_on_many_times_is_registered_with_the_loop_once(
        pipe: Pipe, monkeypatch: pytest.MonkeyPatch) -> None:
    """anyio.wait_readable registers and unregisters the descriptor (and passes through the loop
    once more) on every wait: ~40 against ~14 us of CPU per line of a streamed answer."""
    read_end, write_end = pipe.read_end, pipe.write_end
    loop = asyncio.get_running_loop()
    registrations: list[int] = []
    add_reader = loop.add_reader

    def counting_add_reader(fd: int, callback: object, *args: object) -> None:
        registrations.append(fd)
        add_reader(fd, callback, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "add_reader", counting_add_reader)
    stream = pipe.reader()
    waits = 0
    for n in range(50):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, 0)
            receiving = anyio.Event()
            got: list[bytes] = []

            async def receive(into: list[bytes] = got, started: anyio.Event = receiving) -> None:
                started.set()
                into.append(await stream.receive())

            tg.start_soon(receive)
            await receiving.wait()
            await anyio.sleep(0)  # the reader is waiting now: the pipe is empty
            os.write(write_end, b"%d\n" % n)
        assert got == [b"%d\n" % n]
        waits += 1
    assert waits == 50
    assert registrations == [read_end]
    await stream.aclose()
    assert read_end not in loop._selector.get_map()  # type: ignore[attr-defined]


async def test_the_loop_reads_ahead_only_so_far(pipe: Pipe) -> None:
    write_end = pipe.write_end
    os.set_blocking(write_end, False)
    stream = pipe.reader()
    # The reader waits once (registering the pipe), then stops reading while a writer fills it.
    async with anyio.create_task_group() as tg:
        async def first() -> None:
            assert await stream.receive(1) == b"a"

        tg.start_soon(first)
        await anyio.sleep(0.01)
        os.write(write_end, b"a")
    written, stalled = 0, 0
    block = b"x" * 65536
    while stalled < 5:  # until the loop has stopped reading and the pipe itself is full
        try:
            written += os.write(write_end, block)
            stalled = 0
        except BlockingIOError:
            before = len(stream._buffer)
            await anyio.sleep(0.01)
            stalled = stalled + 1 if len(stream._buffer) == before else 0
    buffered = len(stream._buffer)
    assert buffered <= READ_AHEAD_BYTES + 65536
    assert buffered < written
    pipe.close_write_end()
    data = await read_all(stream)
    assert len(data) == written
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
