"""The JSON-RPC layer: framing, bad input, concurrency, cancellation, the single writer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from acp_agent.testing.client import MemoryByteStream
from acp_agent.wire.rpc import Connection, LineReader, Methods, Reply, RpcError
from tests.streams import Pipe, held_pauses

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]


class Peer:
    def __init__(self, methods: Methods, max_line_bytes: int = 1024) -> None:
        self.to_server = MemoryByteStream()
        self.output: list[dict[str, Any]] = []
        self._partial = b""
        self.from_server = MemoryByteStream(tap=self._tap)
        self.connection = Connection(
            self.to_server, self.from_server, methods, max_line_bytes=max_line_bytes
        )
        self.got_frame = anyio.Event()

    def _tap(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self.output.extend(json.loads(line) for line in lines if line)
        self.got_frame.set()

    async def send_raw(self, data: bytes) -> None:
        await self.to_server.send(data)

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        while len(self.output) < count:
            self.got_frame = anyio.Event()
            await self.got_frame.wait()
        return self.output


async def drain(stream: MemoryByteStream) -> None:
    while True:
        try:
            await stream.receive()
        except anyio.EndOfStream:
            return


async def echo(params: Any) -> Any:
    return {"echo": params}


def methods(**extra: Any) -> Methods:
    return Methods(requests={"echo": echo, **extra}, notifications={})


async def serve_then_close(peer: Peer) -> None:
    await peer.connection.serve()
    peer.from_server.close_input()


async def run_peer(peer: Peer, body: Any) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_then_close, peer)
        tg.start_soon(drain, peer.from_server)
        await body()
        peer.to_server.close_input()


async def test_request_answer_and_bad_input_keep_the_connection_up() -> None:
    peer = Peer(methods())

    async def body() -> None:
        await peer.send_raw(b'not json\n[1]\n"str"\n{"jsonrpc":"2.0","id":7}\n')
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":8,"method":"missing"}\n{"jsonrpc":"2.0","method":"unknown/note"}\n'
        )
        await peer.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"echo","params":5}\n')
        await peer.send_raw(b'{"jsonrpc":"2.0","id":10,"method":"echo","params":{"a":1}}\n')
        await peer.wait_for(7)

    await run_peer(peer, body)
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for frame in peer.output:
        by_id.setdefault(frame["id"], []).append(frame)
    nulls = by_id[None]
    assert [frame["error"]["code"] for frame in nulls] == [-32700, -32600, -32600]
    assert by_id[7][0]["error"]["code"] == -32600
    assert by_id[8][0]["error"]["code"] == -32601
    assert by_id[9][0]["error"]["code"] == -32602
    assert by_id[9][0]["error"]["data"] == {"field": "params"}
    assert by_id[10][0]["result"] == {"echo": {"a": 1}}
    assert len(peer.output) == 7  # the unknown notification got no answer


async def test_oversized_line_is_dropped_and_answered_with_memory_bounded() -> None:
    peer = Peer(methods(), max_line_bytes=100)

    async def body() -> None:
        await peer.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"' + b"a" * 300)
        await peer.send_raw(b"a" * 300 + b'"}}\n{"jsonrpc":"2.0","id":2,"method":"echo"}\n')
        await peer.wait_for(2)

    await run_peer(peer, body)
    assert peer.output[0]["id"] is None
    assert peer.output[0]["error"]["code"] == -32600
    assert "exceeds the limit of 100 bytes" in peer.output[0]["error"]["message"]
    assert peer.output[1] == {"jsonrpc": "2.0", "id": 2, "result": {"echo": None}}


async def test_line_reader_never_holds_more_than_the_bound() -> None:
    stream = MemoryByteStream()
    reader = LineReader(stream, 64)
    for _ in range(100):
        await stream.send(b"x" * 50)
    await stream.send(b"\nok\n")
    stream.close_input()
    assert await reader.next_line() == 5000
    assert len(reader._buffer) <= 64 + 50
    assert await reader.next_line() == b"ok"
    assert await reader.next_line() is None


@pytest.mark.parametrize("gather_s", [0.001, 0.0], ids=["gathering", "not gathering"])
async def test_a_gathering_reader_takes_what_was_written_while_it_waited_in_one_read(
        monkeypatch: pytest.MonkeyPatch, gather_s: float) -> None:
    """Lines the backend wrote one by one while the reader gathered come in one read; the first
    read does not wait, and a reader that does not gather reads each line as it comes."""
    pauses, gate = held_pauses(monkeypatch)
    pipe = Pipe()
    reader = LineReader(pipe, 64, gather_s=gather_s)
    pipe.write(b"first\n")
    assert await reader.next_line() == b"first"
    assert pauses == []
    lines: list[bytes | int | None] = []

    async def read_three() -> None:
        for _ in range(3):
            lines.append(await reader.next_line())

    async with anyio.create_task_group() as group:
        group.start_soon(read_three)
        for line in (b"b\n", b"c\n", b"d\n"):
            await anyio.wait_all_tasks_blocked()  # the reader waits: gathering, or for input
            pipe.write(line)
        gate.set()
    assert lines == [b"b", b"c", b"d"]
    if gather_s:
        assert pauses == [gather_s] and pipe.reads == 2
    else:
        assert pauses == [] and pipe.reads == 4


async def test_requests_run_concurrently_and_cancel_request_is_honoured() -> None:
    release = anyio.Event()

    async def blocked(params: Any) -> Any:
        await release.wait()
        return "late"

    async def quick(params: Any) -> Any:
        return "quick"

    peer = Peer(methods(blocked=blocked, quick=quick))

    async def body() -> None:
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":1,"method":"blocked"}\n{"jsonrpc":"2.0","id":2,"method":"quick"}\n'
        )
        await peer.wait_for(1)
        assert peer.output[0] == {"jsonrpc": "2.0", "id": 2, "result": "quick"}
        await peer.send_raw(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n'
        )
        await peer.wait_for(2)

    await run_peer(peer, body)
    assert peer.output[1]["id"] == 1
    assert peer.output[1]["error"]["code"] == -32800


async def test_handler_errors_and_crashes_become_error_answers() -> None:
    async def refuses(params: Any) -> Any:
        raise RpcError(-32000, "auth please", {"why": "x"})

    async def crashes(params: Any) -> Any:
        raise RuntimeError("internal detail that must not leak")

    peer = Peer(methods(refuses=refuses, crashes=crashes))

    async def body() -> None:
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":"a","method":"refuses"}\n{"jsonrpc":"2.0","id":"b","method":"crashes"}\n'
        )
        await peer.wait_for(2)

    await run_peer(peer, body)
    answers = {frame["id"]: frame["error"] for frame in peer.output}
    assert answers["a"] == {"code": -32000, "message": "auth please", "data": {"why": "x"}}
    assert answers["b"]["code"] == -32603
    assert "internal detail" not in answers["b"]["message"]


async def test_reply_reports_whether_the_frame_was_written() -> None:
    written: list[bool] = []

    async def with_reply(params: Any) -> Any:
        return Reply({"ok": True}, written.append)

    peer = Peer(methods(reply=with_reply))

    async def body() -> None:
        await peer.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"reply"}\n')
        await peer.wait_for(1)

    await run_peer(peer, body)
    assert written == [True]


class BrokenSend(MemoryByteStream):
    async def send(self, item: bytes) -> None:
        raise anyio.BrokenResourceError


async def test_failed_write_is_reported_not_counted() -> None:
    to_server = MemoryByteStream()
    connection = Connection(to_server, BrokenSend(), methods())
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        assert await connection.notify("x", {}, wait_written=True) is False
        to_server.close_input()


async def test_outgoing_request_has_a_deadline_and_correlates_answers() -> None:
    peer = Peer(methods())

    async def body() -> None:
        with pytest.raises(TimeoutError):
            await peer.connection.request("client/method", {}, timeout_s=0.05)
        async with anyio.create_task_group() as tg:
            result: list[Any] = []

            async def ask() -> None:
                result.append(await peer.connection.request("client/method", {"q": 1}, timeout_s=5))

            tg.start_soon(ask)
            frames = await peer.wait_for(2)
            request = frames[-1]
            await peer.send_raw(
                json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": 42}).encode() + b"\n"
            )
        assert result == [42]

    await run_peer(peer, body)


async def test_answers_to_requests_written_before_the_connection_are_kept_until_awaited() -> None:
    """A greeting written at spawn (`acp_agent.startup.prestart`): its answers may be read before anyone
    awaits them; they are kept by id, and the connection's own requests take the next ids."""
    peer = Peer(methods())
    first = peer.connection.written_request("initialize")
    second = peer.connection.written_request("model/list")

    async def body() -> None:
        await peer.send_raw(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no models"}}\n'
                            b'{"jsonrpc":"2.0","id":0,"result":{"ok":true}}\n')
        await peer.send_raw(b'{"jsonrpc":"2.0","method":"unknown/note"}\n')  # both answers were read
        async with anyio.create_task_group() as tg:
            later: list[Any] = []

            async def ask() -> None:
                later.append(await peer.connection.request("thread/start", {}, timeout_s=5))

            tg.start_soon(ask)
            frames = await peer.wait_for(1)
            assert [frame.get("id") for frame in frames if frame.get("method") == "thread/start"] == [2]
            await peer.send_raw(b'{"jsonrpc":"2.0","id":2,"result":"t"}\n')
        assert later == ["t"]
        assert await peer.connection.answer(first, timeout_s=5) == {"ok": True}
        with pytest.raises(RpcError) as raised:
            await peer.connection.answer(second, timeout_s=5)
        assert raised.value.code == -32000 and raised.value.message == "no models"

    await run_peer(peer, body)


class GatedSend(anyio.abc.ByteSendStream):
    """An output stream whose reader can stop reading: `send` waits while the gate is shut."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.gate.set()
        self.lines: list[dict[str, Any]] = []
        self._partial = b""
        self.got_frame = anyio.Event()

    def shut(self) -> None:
        self.gate = anyio.Event()

    async def send(self, item: bytes) -> None:
        await self.gate.wait()
        *lines, self._partial = (self._partial + item).split(b"\n")
        self.lines.extend(json.loads(line) for line in lines if line)
        self.got_frame.set()

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        while len(self.lines) < count:
            self.got_frame = anyio.Event()
            await self.got_frame.wait()
        return self.lines

    async def aclose(self) -> None:
        return None


FRAME = {"jsonrpc": "2.0", "method": "note", "params": {"n": 10, "pad": "x" * 80}}


async def test_a_peer_that_stops_reading_holds_producers_back_and_memory_bounded() -> None:
    bound = 1000
    frame_size = len(json.dumps(FRAME, separators=(",", ":"))) + 1
    to_server = MemoryByteStream()
    out = GatedSend()
    connection = Connection(to_server, out, methods(), max_queued_bytes=bound)
    returned: list[int] = []
    sizes: list[int] = []

    async def produce() -> None:
        for n in range(100):
            await connection.notify("note", {"n": n + 10, "pad": "x" * 80})
            returned.append(n)
            sizes.append(connection._queue.queued_bytes)

    out.shut()
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        tg.start_soon(produce)
        await anyio.wait_all_tasks_blocked()
        # The writer holds one batch it cannot write; the producer waits inside notify for room.
        assert 0 < len(returned) < 100
        assert len(returned) <= bound // frame_size + 1
        blocked_at = len(returned)
        await anyio.wait_all_tasks_blocked()
        assert len(returned) == blocked_at
        assert connection._queue.queued_bytes < bound + frame_size
        out.gate.set()
        await out.wait_for(100)
        to_server.close_input()
    assert [line["params"]["n"] for line in out.lines] == list(range(10, 110))
    assert max(sizes) < bound + frame_size
    assert connection._queue.peak_bytes < bound + frame_size


async def test_a_handler_waiting_for_the_peer_is_answered_while_the_writer_is_blocked() -> None:
    """The peer's answer arrives on the input: the reader resolves it though no frame can be written."""
    to_server = MemoryByteStream()
    out = GatedSend()
    answered = anyio.Event()
    got: list[Any] = []

    async def ask(params: Any) -> Any:
        got.append(await connection.request("client/question", {}, timeout_s=30))
        answered.set()
        return "asked"

    connection = Connection(to_server, out, methods(ask=ask), max_queued_bytes=500)

    async def flood() -> None:
        for n in range(50):
            await connection.notify("note", {"n": n, "pad": "x" * 80})

    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        await to_server.send(b'{"jsonrpc":"2.0","id":1,"method":"ask"}\n')
        question = (await out.wait_for(1))[0]
        assert question["method"] == "client/question"
        out.shut()
        tg.start_soon(flood)
        await anyio.wait_all_tasks_blocked()
        assert connection._queue.queued_bytes >= 500  # full: every producer now waits
        await to_server.send(json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": 42}).encode() + b"\n")
        await answered.wait()
        assert got == [42]
        out.gate.set()
        frames = await out.wait_for(52)
        to_server.close_input()
    assert {"jsonrpc": "2.0", "id": 1, "result": "asked"} in frames


async def test_error_answers_wait_for_room_too() -> None:
    """Bad lines from a peer that does not read: the reader stops reading instead of queueing answers."""
    to_server = MemoryByteStream()
    out = GatedSend()
    connection = Connection(to_server, out, methods(), max_queued_bytes=300)
    out.shut()
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        for _ in range(40):
            await to_server.send(b"not json\n")
        await anyio.wait_all_tasks_blocked()
        assert connection._queue.queued_bytes < 300 + 200
        out.gate.set()
        await out.wait_for(40)
        to_server.close_input()
    assert all(line["error"]["code"] == -32700 for line in out.lines)


async def test_requests_received_before_eof_are_finished_within_the_grace() -> None:
    release = anyio.Event()

    async def slow(params: Any) -> Any:
        await release.wait()
        return "finished"

    to_server = MemoryByteStream()
    out = GatedSend()
    connection = Connection(to_server, out, methods(slow=slow), eof_grace_s=30)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        await to_server.send(b'{"jsonrpc":"2.0","id":1,"method":"slow"}\n{"jsonrpc":"2.0","id":2,"method":"echo"}\n')
        to_server.close_input()
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert sorted(out.lines, key=lambda line: line["id"]) == [
        {"jsonrpc": "2.0", "id": 1, "result": "finished"},
        {"jsonrpc": "2.0", "id": 2, "result": {"echo": None}},
    ]


async def test_requests_still_running_when_the_grace_ends_are_answered_cancelled() -> None:
    asked: list[type[BaseException]] = []

    async def forever(params: Any) -> Any:
        await anyio.sleep_forever()

    async def ask(params: Any) -> Any:
        try:
            await connection.request("client/question", {}, timeout_s=3600)
        except Exception as exc:
            asked.append(type(exc))
        return "no answer"

    to_server = MemoryByteStream()
    out = GatedSend()
    connection = Connection(to_server, out, methods(forever=forever, ask=ask), eof_grace_s=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        await to_server.send(b'{"jsonrpc":"2.0","id":"f","method":"forever"}\n{"jsonrpc":"2.0","id":"a","method":"ask"}\n')
        await out.wait_for(1)  # the question to the client
        to_server.close_input()
    by_id = {line.get("id"): line for line in out.lines if "method" not in line}
    assert by_id["f"]["error"]["code"] == -32800
    assert by_id["a"] == {"jsonrpc": "2.0", "id": "a", "result": "no answer"}
    from acp_agent.wire.rpc import ConnectionClosed

    assert asked == [ConnectionClosed]


async def test_odd_inputs_get_answers_and_never_end_the_connection() -> None:
    peer = Peer(methods(), max_line_bytes=1 << 20)
    lines = [
        b"[" * 100_000,
        b"[" * 1000 + b"]" * 1000,
        b"{" * 5000,
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":[1]}}',
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":{"a":1}}}',
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":[1]}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"nope"}',
        b'{"jsonrpc":"2.0","id":"\\udfff","method":"echo","params":["\\ud800"]}',
        b'{"jsonrpc":"2.0","id":NaN,"method":"echo"}',
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[Infinity]}',
        b'{"jsonrpc":"2.0","id":2,"method":"echo","params":[1e999]}',
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"echo"}',
        b'{"jsonrpc":"2.0","id":true,"method":"echo"}',
        b'{"jsonrpc":"2.0","id":[1],"result":1}',
        b'{"jsonrpc":"2.0","id":3,"error":{"code":1e999}}',
        b"\xff\xfe\x00garbage",
        b'{"jsonrpc":"2.0","id":"\xed\xa0\x80","method":"echo"}',
        b"[[[1]], [], 5]",
        b'{"jsonrpc":"2.0","method":"echo","params":7}',
        b'{"jsonrpc":1,"method":"note"}',
    ]

    async def body() -> None:
        for line in lines:
            await peer.send_raw(line + b"\n")
        await peer.send_raw(b'{"jsonrpc":"2.0","id":"last","method":"echo","params":{"ok":true}}\n')
        while not any(frame.get("id") == "last" for frame in peer.output):
            await peer.wait_for(len(peer.output) + 1)

    await run_peer(peer, body)
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for frame in peer.output:
        by_id.setdefault(frame["id"], []).append(frame)
    assert by_id["last"] == [{"jsonrpc": "2.0", "id": "last", "result": {"echo": {"ok": True}}}]
    assert by_id["\ud800"][0]["error"]["code"] == -32601
    assert by_id["\udfff"][0]["result"] == {"echo": ["\ud800"]}
    assert by_id[2][0]["error"]["code"] == -32603  # infinity cannot be answered in JSON
    codes = [frame["error"]["code"] for frame in by_id[None]]
    assert codes[:3] == [-32700, -32700, -32700]
    assert "nesting too deep" in by_id[None][0]["error"]["message"]


async def test_requests_beyond_the_in_flight_bound_are_refused_not_parked() -> None:
    release = anyio.Event()

    async def blocked(params: Any) -> Any:
        await release.wait()
        return "done"

    to_server = MemoryByteStream()
    out = GatedSend()
    connection = Connection(to_server, out, methods(blocked=blocked), max_in_flight=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        await to_server.send(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"blocked"}\n' % n for n in (1, 2, 3)))
        refused = (await out.wait_for(1))[0]
        assert refused["id"] == 3
        assert refused["error"]["code"] == -32603
        await to_server.send(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n')
        await out.wait_for(2)
        release.set()
        await out.wait_for(3)
        to_server.close_input()
    assert [(line["id"], line.get("result", line.get("error", {}).get("code"))) for line in out.lines] == [
        (3, -32603), (1, -32800), (2, "done")]


async def test_no_grace_is_waited_for_when_no_answer_can_be_written() -> None:
    """The peer is gone both ways: EOF ends the requests at once instead of after the grace."""
    import math

    async def forever(params: Any) -> Any:
        await connection.notify("progress", {})
        await anyio.sleep_forever()

    to_server = MemoryByteStream()
    connection = Connection(to_server, BrokenSend(), methods(forever=forever), eof_grace_s=math.inf)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.serve)
        await to_server.send(b'{"jsonrpc":"2.0","id":1,"method":"forever"}\n')
        await anyio.wait_all_tasks_blocked()
        to_server.close_input()
