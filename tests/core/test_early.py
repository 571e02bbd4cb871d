"""`initialize` answered before the event loop starts (`acp_agent.startup.early`, issue 11 target 6)."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import pytest

from acp_agent.agent import Agent
from acp_agent.startup import early as early_module
from acp_agent.startup.early import answer_waiting_initialize
from acp_agent.testing.client import default_settings
from acp_agent.wire.rpc import response_frame
from acp_agent_scripted import make_spec
from tests.e2e.harness import CAPABLE_META

pytestmark = pytest.mark.timeout(30)

MAX_LINE = 1 << 20
NEW_SESSION = b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n'


def request(params: Any, *, message_id: Any = 1, **fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "initialize", "params": params,
                       **fields}).encode() + b"\n"


def plain(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": True}
    if meta is not None:
        capabilities["_meta"] = dict(meta)
    return {"protocolVersion": 1, "clientCapabilities": capabilities}


def new_agent(environ: Mapping[str, str] | None = None) -> Agent:
    return Agent(default_settings(make_spec({}), environ))


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """stdin's read and write ends, stdout's read and write ends."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    os.set_blocking(out_read, False)
    yield in_read, in_write, out_read, out_write
    for fd in (in_read, in_write, out_read, out_write):
        os.close(fd)


def early(agent: Agent, pipes: tuple[int, int, int, int], waiting: bytes) -> tuple[bytes, bytes]:
    """What the agent wrote on stdout and what it left for the connection."""
    in_read, in_write, out_read, out_write = pipes
    if waiting:
        os.write(in_write, waiting)
    rest = answer_waiting_initialize(agent, in_read, out_write, MAX_LINE)
    try:
        written = os.read(out_read, 65536)
    except BlockingIOError:
        written = b""
    return written, rest


def through_the_loop(params: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`Agent.initialize`'s answer, as the connection gets it on the event loop."""
    agent = new_agent(environ)

    async def answer() -> Any:
        return (await agent.initialize(params)).result

    return anyio.run(answer)


@pytest.mark.parametrize("meta", [None, CAPABLE_META], ids=["plain client", "negotiates the extension"])
def test_a_waiting_initialize_is_answered_as_the_loop_answers_it(pipes: tuple[int, int, int, int],
                                                                  meta: Mapping[str, Any] | None) -> None:
    agent = new_agent()
    written, rest = early(agent, pipes, request(plain(meta), message_id="init-1") + NEW_SESSION[:30])
    assert written == response_frame("init-1", through_the_loop(plain(meta)))
    assert written.endswith(b"\n") and written.count(b"\n") == 1
    assert rest == NEW_SESSION[:30]  # what followed, even half a line, is the connection's
    assert agent.capable is (meta is not None)
    assert agent.client_capabilities.terminal is True


def test_the_loop_knows_initialize_was_answered(pipes: tuple[int, int, int, int]) -> None:
    agent = new_agent()
    written, _ = early(agent, pipes, request(plain()))
    assert written

    async def answered() -> bool:
        return agent._initialize_answered.is_set()

    assert anyio.run(answered)


def test_what_the_redactor_holds_is_scrubbed_as_from_the_connection(pipes: tuple[int, int, int, int]) -> None:
    environ = {"SCRIPTED_API_KEY": "acp-agent-scripted"}  # a "secret" the answer happens to contain
    written, _ = early(new_agent(environ), pipes, request(plain()))
    assert b"acp-agent-scripted" not in written
    assert b"[REDACTED]" in written


@pytest.mark.parametrize("waiting", [
    request(plain())[:-1],  # no end of line yet
    b"{not json\n",
    b'{"jsonrpc":"2.0","method":"initialize","params":{}}\n',  # a notification
    NEW_SESSION,  # another request first
    request(plain(), jsonrpc="1.0"),
    request(plain(), message_id=None),
    request(plain(), message_id=True),
    request("params"),
    request({"protocolVersion": "one", "clientCapabilities": {}}),  # invalid params: the loop says so
    request(plain({"scripted/authStatus": 1})),  # auth status: the answer asks the credentials
    b"\n" + request(plain()),
], ids=["incomplete", "not JSON", "notification", "not initialize", "jsonrpc 1.0", "null id", "boolean id",
        "params a string", "invalid params", "auth status", "blank line first"])
def test_anything_else_is_left_to_the_connection_unanswered(pipes: tuple[int, int, int, int],
                                                           waiting: bytes) -> None:
    agent = new_agent()
    written, rest = early(agent, pipes, waiting)
    assert written == b""
    assert rest == waiting
    assert agent.capable is False


def test_a_line_over_the_bound_is_left_to_the_connection(pipes: tuple[int, int, int, int]) -> None:
    in_read, in_write, out_read, out_write = pipes
    waiting = request(plain({"padding": "x" * 200}))
    os.write(in_write, waiting)
    assert answer_waiting_initialize(new_agent(), in_read, out_write, 100) == waiting
    with pytest.raises(BlockingIOError):
        os.read(out_read, 1)


def test_nothing_waiting_reads_nothing(pipes: tuple[int, int, int, int]) -> None:
    written, rest = early(new_agent(), pipes, b"")
    assert (written, rest) == (b"", b"")


def test_stdout_that_is_not_a_pipe_is_left_to_the_connection(pipes: tuple[int, int, int, int]) -> None:
    in_read, in_write, _, _ = pipes
    os.write(in_write, request(plain()))
    with tempfile.TemporaryFile() as output:
        assert answer_waiting_initialize(new_agent(), in_read, output.fileno(), MAX_LINE) == b""
        assert os.fstat(output.fileno()).st_size == 0
    assert os.read(in_read, 65536) == request(plain())  # still there for the connection


def test_a_full_stdout_is_left_to_the_connection_without_waiting(pipes: tuple[int, int, int, int]) -> None:
    in_read, in_write, _, out_write = pipes
    os.set_blocking(out_write, False)
    try:
        while True:
            os.write(out_write, b"x" * 4096)
    except BlockingIOError:
        pass  # full
    os.set_blocking(out_write, True)  # as an editor would hand it over: a write would block
    os.write(in_write, request(plain()))
    assert answer_waiting_initialize(new_agent(), in_read, out_write, MAX_LINE) == request(plain())


def test_socket_pairs_as_node_spawns_them_are_answered_too() -> None:
    agent_in, client_out = socket.socketpair()
    agent_out, client_in = socket.socketpair()
    with agent_in, client_out, agent_out, client_in:
        client_out.sendall(request(plain()) + NEW_SESSION)
        rest = answer_waiting_initialize(new_agent(), agent_in.fileno(), agent_out.fileno(), MAX_LINE)
        assert rest == NEW_SESSION
        client_in.setblocking(False)
        assert client_in.recv(65536) == response_frame(1, through_the_loop(plain()))


def test_a_write_that_takes_part_of_the_answer_is_finished_before_anything_else(
        pipes: tuple[int, int, int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls: list[int] = []

    def short_write(fd: int, data: Any) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data)[:100] if len(calls) == 1 else data)

    in_read, in_write, out_read, out_write = pipes
    os.write(in_write, request(plain()) + NEW_SESSION)
    monkeypatch.setattr(early_module.os, "write", short_write)
    rest = answer_waiting_initialize(new_agent(), in_read, out_write, MAX_LINE)
    monkeypatch.undo()
    assert os.read(out_read, 65536) == response_frame(1, through_the_loop(plain()))
    assert len(calls) == 2 and rest == NEW_SESSION
