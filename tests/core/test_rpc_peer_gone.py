"""A failed write on a connection that ends with its output: the input ends as at EOF.

The agent's client connection sets `end_when_output_fails`: a client that closed the agent's
stdout is gone, whatever it does with stdin. Other connections (a backend's) still read until EOF.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_agent.testing.client import MemoryByteStream
from acp_agent.wire.rpc import Connection, Methods

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]


class GoneOutput(MemoryByteStream):
    """An output whose reader closed its end: every write fails."""

    async def send(self, item: bytes) -> None:
        raise anyio.BrokenResourceError


class WatchedInput(MemoryByteStream):
    """An input the peer keeps open (never EOF); records when the connection closes it."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = anyio.Event()

    async def aclose(self) -> None:
        self.closed.set()
        await super().aclose()


async def echo(params: Any) -> Any:
    return {"echo": params}


def connection(input_stream: WatchedInput, *, ends: bool) -> Connection:
    conn = Connection(input_stream, GoneOutput(), Methods(requests={"echo": echo}, notifications={}))
    conn.end_when_output_fails = ends
    return conn


async def serve_then_set(conn: Connection, done: anyio.Event) -> None:
    await conn.serve()
    done.set()


async def test_a_failed_write_ends_the_input_and_serve_returns() -> None:
    input_stream = WatchedInput()
    conn = connection(input_stream, ends=True)
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(serve_then_set, conn, done)
        await input_stream.send(b'{"jsonrpc":"2.0","id":1,"method":"echo"}\n')  # its answer fails
        with anyio.fail_after(5):
            await done.wait()
    assert input_stream.closed.is_set()


async def test_without_the_flag_a_failed_write_leaves_reading_to_eof() -> None:
    input_stream = WatchedInput()
    conn = connection(input_stream, ends=False)
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(serve_then_set, conn, done)
        assert await conn.notify("x", {}, wait_written=True) is False
        await anyio.wait_all_tasks_blocked()
        assert not done.is_set() and not input_stream.closed.is_set()
        input_stream.close_input()
        with anyio.fail_after(5):
            await done.wait()
