"""Property: nothing a peer writes ends the connection, and a valid request afterwards is answered.

Arbitrary bytes, arbitrary JSON values and arbitrary JSON-RPC-shaped objects (odd ids, methods,
params, responses, nested batches) are fed to the reader. Fixed example budget, derandomized, so
the same cases run in CI every time.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acp_agent.testing.client import MemoryByteStream
from acp_agent.wire.rpc import Connection, Methods, RpcError

pytestmark = pytest.mark.timeout(300)

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
PROBE_ID = "probe-6f1d2c"
PROBE = json.dumps({"jsonrpc": "2.0", "id": PROBE_ID, "method": "echo", "params": {"probe": True}}).encode()

ODD_STRINGS = st.sampled_from(["\ud800", "a\udfff", "\x00", "\ufeff", "é", "$/cancel_request", "echo", ""])
json_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20) | ODD_STRINGS)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8) | ODD_STRINGS, inner, max_size=4), max_leaves=12)
ids = st.integers(min_value=-3, max_value=5) | st.integers(min_value=-(10**40), max_value=10**40) | json_values
methods_names = st.sampled_from(["echo", "fail", "refuse", "ask", "note", "ordered", "$/cancel_request", "missing"]) | json_values
rpc_objects = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values,
    "id": ids,
    "method": methods_names,
    "params": json_values | st.fixed_dictionaries({"requestId": ids}),
    "result": json_values,
    "error": json_values | st.fixed_dictionaries({}, optional={"code": json_values, "message": json_values,
                                                               "data": json_values}),
})
rpc_messages = rpc_objects | st.lists(rpc_objects | json_values, max_size=4)
TOKENS = ["[", "]", "{", "}", '"', ":", ",", "NaN", "Infinity", "-Infinity", "1e999", "-0", '"\\ud800"',
          '"\\udc00"', "\\", "true", "null", "9" * 5000, "\u2028", "\ufeff", '"id"', '"method"', " "]
token_lines = st.lists(st.sampled_from(TOKENS), max_size=40).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))


async def echo(params: Any) -> Any:
    return {"echo": params}


async def fail(params: Any) -> Any:
    raise RuntimeError("boom")


async def refuse(params: Any) -> Any:
    raise RpcError(-32000, "no", params)


async def note(params: Any) -> None:
    if params:
        raise ValueError("bad note")


async def feed_then_probe(chunks: list[bytes]) -> None:
    """Feed the chunks, then a valid request; it must be answered and the connection still up."""
    output: list[bytes] = []
    partial = [b""]
    got = [anyio.Event()]

    def tap(chunk: bytes) -> None:
        *lines, partial[0] = (partial[0] + chunk).split(b"\n")
        output.extend(lines)
        got[0].set()

    to_server = MemoryByteStream()
    from_server = MemoryByteStream(tap=tap)
    ended: list[str] = []

    async def ask(params: Any) -> Any:
        return await connection.request("client/question", params, timeout_s=30)

    connection = Connection(to_server, from_server, Methods(
        requests={"echo": echo, "fail": fail, "refuse": refuse, "ask": ask},
        notifications={"note": note, "ordered": note}, ordered=frozenset({"ordered"})), max_line_bytes=1 << 20)

    async def serve() -> None:
        await connection.serve()
        ended.append("served")
        from_server.close_input()

    async def drain() -> None:
        while True:
            try:
                await from_server.receive()
            except anyio.EndOfStream:
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(drain)
        for chunk in chunks:
            await to_server.send(chunk)
        await to_server.send(b"\n" + PROBE + b"\n")
        with anyio.fail_after(30):
            while not any(PROBE_ID.encode() in line for line in output):
                got[0] = anyio.Event()
                await got[0].wait()
        assert ended == [], "the connection ended before its input did"
        to_server.close_input()
    frames = [json.loads(line) for line in output if line]
    assert all(isinstance(frame, dict) and frame.get("jsonrpc") == "2.0" for frame in frames)
    assert {"jsonrpc": "2.0", "id": PROBE_ID, "result": {"echo": {"probe": True}}} in frames


def run(chunks: list[bytes]) -> None:
    anyio.run(feed_then_probe, chunks)


@FUZZ
@given(st.lists(st.binary(max_size=300), max_size=6))
@example([b"[" * 100_000])
@example([b"\xff\xfe\xfd\n", b"\xed\xa0\x80\n"])
def test_arbitrary_bytes_never_end_the_connection(chunks: list[bytes]) -> None:
    run(chunks)


@FUZZ
@given(st.lists(token_lines, max_size=6))
def test_json_like_tokens_never_end_the_connection(lines: list[bytes]) -> None:
    run([line + b"\n" for line in lines])


@FUZZ
@given(st.lists(json_values, min_size=1, max_size=6))
def test_arbitrary_json_values_never_end_the_connection(values: list[Any]) -> None:
    run([json.dumps(value).encode() + b"\n" for value in values])


@FUZZ
@given(st.lists(rpc_messages, min_size=1, max_size=8))
@example([{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": [1]}}])
@example([{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": {"a": 1}}}])
@example([{"jsonrpc": "2.0", "id": 1, "method": "ask"}, {"jsonrpc": "2.0", "id": 0, "error": {"code": 1.5}}])
@example([[[[{"jsonrpc": "2.0", "id": 1, "method": "echo"}]]]])
def test_arbitrary_json_rpc_objects_never_end_the_connection(messages: list[Any]) -> None:
    run([json.dumps(message).encode() + b"\n" for message in messages])
