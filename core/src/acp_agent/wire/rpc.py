"""JSON-RPC 2.0 over newline-delimited JSON on anyio byte streams.

Owns framing, the single writer and the routing of what the peer sends to handlers; the calls in
progress (our requests awaiting answers, the peer's being handled) are kept by
`acp_agent.wire.calls`. It knows nothing of ACP: methods are looked up in a table handed in by the caller.
Nothing but protocol frames is ever written to the output stream.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
from attrs import define, field

from acp_agent.wire.calls import (
    ClientLink,
    IncomingCalls,
    NotificationHandler,
    OutgoingCalls,
    PendingRequest,
    Reply,
    RequestHandler,
    result_of,
)
from acp_agent.wire.convert import clip
from acp_agent.wire.messages import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    ConnectionClosed,
    JsonObject,
    RpcError,
    error_message,
    valid_id,
)
from acp_agent.wire.records import frozen

__all__ = [
    "AUTH_REQUIRED", "DEFAULT_CLOSE_FLUSH_S", "DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_QUEUED_BYTES", "DEFAULT_REQUEST_TIMEOUT_S", "INTERNAL_ERROR", "INVALID_PARAMS",
    "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "REQUEST_CANCELLED", "ClientLink", "Connection",
    "ConnectionClosed", "JsonObject", "LineReader", "Methods", "NotificationHandler",
    "PendingRequest", "Reply", "RequestHandler", "RpcError", "new_event", "response_frame", "result_of",
    "waiting_request",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 50 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT_S = 300.0
DEFAULT_MAX_QUEUED_BYTES = 1024 * 1024
"""Outgoing frames waiting for the peer to read; producers wait for room beyond this."""
DEFAULT_MAX_IN_FLIGHT = 1024
"""Requests being handled at once; more are answered with an error, so memory stays bounded."""
DEFAULT_CLOSE_FLUSH_S = 1.0


def new_event() -> anyio.Event:
    """An `anyio.Event`, as a field's factory: `factory=anyio.Event` would load anyio's
    synchronization module where the class is defined, on the way to `initialize`."""
    return anyio.Event()


@frozen
class Methods:
    """The method table: request handlers answer, notification handlers do not.

    Notifications named in `ordered` run inline in the reader, one after another, so their order
    is the wire order (a client's `session/update`); others run as their own tasks.
    """

    requests: Mapping[str, RequestHandler]
    notifications: Mapping[str, NotificationHandler]
    ordered: frozenset[str] = frozenset()


@frozen
class _Frame:
    data: bytes
    written: anyio.Event | None = None
    on_written: Callable[[bool], None] | None = None


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_ENCODE_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
"""`json.dumps(value, ensure_ascii=..., separators=(",", ":"), allow_nan=False)`, with the encoder
made once instead of for every frame."""


def _encode(message: JsonObject) -> bytes:
    """One frame; raises TypeError, ValueError or RecursionError for a value JSON cannot carry."""
    try:
        return _ENCODE(message).encode() + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (a peer may send "\ud800" in an id or a method name) is not UTF-8;
        # escaped JSON carries it unchanged.
        return _ENCODE_ASCII(message).encode() + b"\n"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _decode(line: bytes) -> Any:
    """Strict JSON (no NaN or Infinity); raises ValueError or RecursionError for anything else."""
    return _DECODER.decode(line.decode(json.detect_encoding(line), "surrogatepass"))


def _report(frames: list[_Frame], ok: bool) -> None:
    for frame in frames:
        if frame.on_written is not None:
            try:
                frame.on_written(ok)
            except Exception:
                log.exception("on_written callback failed")
        if frame.written is not None:
            frame.written.set()


class LineReader:
    """Splits a byte stream into lines; a line longer than the bound is dropped, never buffered.

    With `gather_s`, every read after the first waits that long before it reads, so what the
    writer wrote meanwhile is read at once: for a backend that writes each streamed delta on its
    own (the Claude CLI), where reading each as it comes costs an event-loop pass (wake-ups, task
    switches, a write to the client) per delta, more than the delta's own work. A line waits at
    most that long beyond its arrival; one that arrives while the reader waits for input is read
    at once. A backend that already writes in batches gains nothing (Codex's app-server: measured,
    bench/README.md).
    """

    def __init__(self, stream: anyio.abc.ByteReceiveStream, max_line_bytes: int, *, gather_s: float = 0.0) -> None:
        self._stream = stream
        self._max = max_line_bytes
        self._gather_s = gather_s
        self._read_before = False
        self._buffer = bytearray()
        self._eof = False

    async def next_line(self) -> bytes | int | None:
        """Return a line (without newline), None at EOF, or the size of an oversized line dropped."""
        dropping = 0
        while True:
            index = self._buffer.find(b"\n")
            if index >= 0:
                line = bytes(self._buffer[:index])
                del self._buffer[: index + 1]
                if dropping:
                    return dropping + len(line)
                if len(line) > self._max:
                    return len(line)
                return line
            if len(self._buffer) > self._max:
                dropping += len(self._buffer)
                self._buffer.clear()
            if self._eof:
                if dropping:
                    self._buffer.clear()
                    return dropping
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            if self._gather_s and self._read_before:
                await anyio.sleep(self._gather_s)
            self._read_before = True
            try:
                chunk = await self._stream.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._eof = True
                continue
            except OSError as exc:
                log.warning("input stream failed (%s): treated as EOF", type(exc).__name__)
                self._eof = True
                continue
            self._buffer.extend(chunk)


class _OutQueue:
    """Frames waiting for the writer, bounded in bytes: `put` waits for room (backpressure).

    A frame counts against the bound until the writer has written it, so what is held for a peer
    that stops reading is at most the bound plus one frame, however many producers there are.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.peak_bytes = 0
        self.closed = False
        self._frames: deque[_Frame] = deque()
        self._room = anyio.Event()
        self._ready = anyio.Event()

    def __len__(self) -> int:
        return len(self._frames)

    async def put(self, frame: _Frame) -> bool:
        """Queue a frame once there is room; False if the queue is closed first (not queued)."""
        while not self.closed and self.queued_bytes >= self.max_bytes:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()
        if self.closed:
            return False
        self._frames.append(frame)
        self.queued_bytes += len(frame.data)
        self.peak_bytes = max(self.peak_bytes, self.queued_bytes)
        self._ready.set()
        return True

    async def take(self) -> list[_Frame] | None:
        """The next frames to write (about max_bytes at most); None once closed and empty."""
        while not self._frames:
            if self.closed:
                return None
            if self._ready.is_set():
                self._ready = anyio.Event()
            await self._ready.wait()
        batch = [self._frames.popleft()]
        size = len(batch[0].data)
        while self._frames and size + len(self._frames[0].data) <= self.max_bytes:
            frame = self._frames.popleft()
            size += len(frame.data)
            batch.append(frame)
        return batch

    def release(self, batch: list[_Frame]) -> None:
        """The writer is done with these frames: their bytes no longer count."""
        self.queued_bytes -= sum(len(frame.data) for frame in batch)
        self._room.set()

    def close(self) -> None:
        """No more frames are accepted (waiting producers get False); queued ones are still taken."""
        self.closed = True
        self._room.set()
        self._ready.set()

    def abandon(self) -> list[_Frame]:
        """Close and hand back every frame that will never be written."""
        self.close()
        left = list(self._frames)
        self._frames.clear()
        self.release(left)
        return left

    async def write_to(self, stream: anyio.abc.ByteSendStream, failed: Callable[[], None]) -> None:
        """The writer: batch after batch to `stream` until closed and empty, each frame reported
        written or not. A failed write tells `failed` and closes the queue: what is left is
        reported unwritten."""
        batch: list[_Frame] = []
        try:
            ok = True
            while True:
                next_batch = await self.take()
                if next_batch is None:
                    return
                batch = next_batch
                if ok:
                    try:
                        await stream.send(b"".join(frame.data for frame in batch))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                        log.warning("output stream failed: %s", type(exc).__name__)
                        failed()
                        ok = False
                        self.close()
                self.release(batch)
                done_batch, batch = batch, []
                _report(done_batch, ok)
        finally:
            left = self.abandon()
            if batch:
                self.release(batch)
            _report(batch + left, False)


@define
class Connection:
    """One JSON-RPC peer: a reader task, a writer task and one task per incoming request.

    Outgoing frames wait in a queue bounded by `max_queued_bytes`; every producer (notifications,
    requests, answers, and the reader's error answers) waits for room, so a peer that stops
    reading slows the producers down instead of growing memory. The reader hands the peer's
    answers to our requests over without waiting for room, so a handler waiting for the peer is
    resolved even while the writer is blocked; the reader itself waits only to queue its own
    error answers to bad input (and inside ordered notification handlers), which is backpressure
    on a peer that writes without reading.
    """

    receive_stream: anyio.abc.ByteReceiveStream
    send_stream: anyio.abc.ByteSendStream
    methods: Methods
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    require_version: bool = True
    """False for peers that omit `"jsonrpc": "2.0"` (codex app-server); we always send it."""
    max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    eof_grace_s: float = 0.0
    """After input EOF, how long requests already received may run on before they are cancelled
    (and answered -32800)."""
    close_flush_s: float = DEFAULT_CLOSE_FLUSH_S
    """After that, how long the last answers may take to reach the output stream."""
    end_when_output_fails: bool = False
    """Whether a failed write (the peer closed our output: it is gone) ends the input as EOF does,
    closing the input stream; otherwise only EOF does. The agent's client connection sets it: a
    client that stopped reading but keeps its end of stdin open must not keep the agent running."""
    _queue: _OutQueue = field(init=False)
    _outgoing: OutgoingCalls = field(init=False, factory=OutgoingCalls)
    _incoming: IncomingCalls = field(init=False, factory=IncomingCalls)
    _output_broken: anyio.Event = field(init=False, factory=new_event)
    _next_id: int = field(init=False, default=0)
    _closed: bool = field(init=False, default=False)
    _write_failed: bool = field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._queue = _OutQueue(self.max_queued_bytes)

    # -- outgoing -------------------------------------------------------------------------

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        """Send a notification, waiting for room in the outgoing queue.

        With wait_written, return whether it reached the output stream.
        """
        message: JsonObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return await self._send(message, wait_written=wait_written)

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send a request and wait for its answer under a deadline; raises RpcError on an error answer."""
        if self._closed or self._outgoing.closed:
            raise ConnectionClosed(method)
        pending = self._register(method)
        message: JsonObject = {"jsonrpc": "2.0", "id": pending.request_id, "method": method}
        if params is not None:
            message["params"] = params
        return await self._complete(pending, message, timeout_s)

    def written_request(self, method: str) -> PendingRequest:
        """The next id, for a request another writer already sent the peer (the greeting that
        `acp_agent.startup.prestart` wrote when it spawned the process): its answer is kept from now on,
        even if it arrives before anyone awaits it with `answer`."""
        return self._register(method)

    async def answer(self, pending: PendingRequest, *, timeout_s: float | None = None) -> Any:
        """The answer to a `written_request`, as `request` returns it."""
        return await self._complete(pending, None, timeout_s)

    def _register(self, method: str) -> PendingRequest:
        request_id = self._next_id
        self._next_id += 1
        return self._outgoing.register(request_id, method)

    async def _complete(self, pending: PendingRequest, message: JsonObject | None,
                        timeout_s: float | None) -> Any:
        send = None if message is None else functools.partial(self._send, message)
        return await self._outgoing.complete(pending, send, self.request_timeout_s if timeout_s is None else timeout_s)

    async def _send(self, message: JsonObject, *, wait_written: bool = False) -> bool:
        if self._closed or self._write_failed:
            return False
        try:
            data = _encode(message)
        except (TypeError, ValueError, RecursionError) as exc:
            log.error("a %s frame is not JSON (%s); not sent", message.get("method", "response"),
                      type(exc).__name__)
            return False
        if not wait_written:
            return await self._queue.put(_Frame(data))
        written = anyio.Event()
        outcome: list[bool] = []
        if not await self._queue.put(_Frame(data, written, outcome.append)):
            return False
        await written.wait()
        return bool(outcome and outcome[0])

    async def _send_error(self, message_id: Any, error: RpcError) -> None:
        await self._send(error_message(message_id, error))

    # -- the connection's tasks -------------------------------------------------------------

    async def serve(self) -> None:
        """Run until the input reaches EOF (or the output fails, with `end_when_output_fails`);
        every handler task is finished or cancelled on return.

        Requests already received when the input ends run on for `eof_grace_s`, then are
        cancelled and answered -32800; the last frames get `close_flush_s` to be written.
        """
        self._queue.max_bytes = self.max_queued_bytes
        writer_done = anyio.Event()
        async with anyio.create_task_group() as writer_group:
            writer_group.start_soon(self._writer, writer_done)
            try:
                async with anyio.create_task_group() as handlers:
                    async with anyio.create_task_group() as reading:
                        if self.end_when_output_fails:
                            reading.start_soon(_set_then_cancel, self._output_broken, reading.cancel_scope)
                        await self._reader(handlers)
                        reading.cancel_scope.cancel()
                    if self._output_broken.is_set() and self.end_when_output_fails:
                        with anyio.move_on_after(self.close_flush_s, shield=True):
                            await self.receive_stream.aclose()  # whoever wraps it learns input ended
                    await self._finish_in_flight()
                    handlers.cancel_scope.cancel()
            finally:
                self._closed = True
                self._outgoing.close()
                self._queue.close()
                with anyio.move_on_after(self.close_flush_s):
                    await writer_done.wait()
                writer_group.cancel_scope.cancel()

    async def _finish_in_flight(self) -> None:
        """At input EOF: no answer to our requests can arrive any more, and requests received
        get their answer: the result if it comes within the grace, else -32800."""
        self._outgoing.close()
        with anyio.move_on_after(self.eof_grace_s):
            async with anyio.create_task_group() as waiting:
                # Done when every request is answered, or when no answer can be written any more.
                for event in (self._incoming.idle, self._output_broken):
                    waiting.start_soon(_set_then_cancel, event, waiting.cancel_scope)
        self._incoming.cancel_all()
        with anyio.move_on_after(self.close_flush_s):
            await self._incoming.idle.wait()

    async def _writer(self, done: anyio.Event) -> None:
        try:
            await self._queue.write_to(self.send_stream, self._output_failed)
        finally:
            done.set()

    def _output_failed(self) -> None:
        self._write_failed = True
        self._output_broken.set()

    async def _reader(self, handlers: anyio.abc.TaskGroup) -> None:
        lines = LineReader(self.receive_stream, self.max_line_bytes)
        while True:
            line = await lines.next_line()
            if line is None:
                return
            if isinstance(line, int):
                log.warning("dropped an input line of %d bytes (bound %d)", line, self.max_line_bytes)
                await self._send_error(None, RpcError(
                    INVALID_REQUEST,
                    f"Input line of {line} bytes exceeds the limit of {self.max_line_bytes} bytes; it was dropped.",
                ))
                continue
            if not line.strip():
                continue
            try:
                message = _decode(line)
            except RecursionError:
                await self._send_error(None, RpcError(PARSE_ERROR, "Parse error: nesting too deep"))
                continue
            except ValueError as exc:
                await self._send_error(None, RpcError(PARSE_ERROR, f"Parse error: {exc}"))
                continue
            try:
                await self._dispatch(message, handlers)
            except Exception:
                # A message no rule above foresaw must not end the connection.
                log.exception("could not dispatch an input message")
                await self._send_error(None, RpcError(INTERNAL_ERROR, "Internal error while reading a message"))

    async def _dispatch(self, message: Any, handlers: anyio.abc.TaskGroup) -> None:
        """Route one message; ordered notifications run here, in wire order."""
        if isinstance(message, list):
            # Batches are not used by ACP; each element is answered as its own message.
            if not message:
                await self._send_error(None, RpcError(INVALID_REQUEST, "Empty batch"))
            for element in message:
                if isinstance(element, list):
                    await self._send_error(None, RpcError(INVALID_REQUEST, "A batch element must be a JSON object"))
                else:
                    await self._dispatch_one(element, handlers)
            return
        await self._dispatch_one(message, handlers)

    async def _dispatch_one(self, message: Any, handlers: anyio.abc.TaskGroup) -> None:
        if not isinstance(message, dict):
            await self._send_error(None, RpcError(INVALID_REQUEST, "A message must be a JSON object"))
            return
        message_id = message.get("id")
        has_id = "id" in message
        if has_id and not valid_id(message_id):
            await self._send_error(None, RpcError(INVALID_REQUEST, "Invalid id"))
            return
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                self._outgoing.resolve(message)
                return
            await self._send_error(message_id if has_id else None, RpcError(
                INVALID_REQUEST, "Invalid request: missing 'method'"))
            return
        method = message["method"]
        malformed = _call_error(message, self.require_version)
        if malformed is not None:
            if has_id:
                await self._send_error(message_id, malformed)
            else:
                log.info("ignored a malformed notification: %s", malformed.message)
            return
        params = message.get("params")
        busy = self._incoming.requests + self._incoming.notifications >= self.max_in_flight
        if not has_id:
            if method == "$/cancel_request":
                self._incoming.cancel(params)
                return
            handler = self.methods.notifications.get(method)
            if handler is None:
                log.debug("ignored unknown notification %s", method)
            elif method in self.methods.ordered:
                await self._incoming.run_notification(method, handler, params)
            elif busy:
                log.warning("ignored notification %s: %d messages already being handled", method,
                            self.max_in_flight)
            else:
                self._incoming.notifications += 1
                handlers.start_soon(self._incoming.run_notification, method, handler, params, True)
            return
        request_handler = self.methods.requests.get(method)
        if request_handler is None:
            await self._send_error(message_id, RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}"))
            return
        if busy:
            await self._send_error(message_id, RpcError(
                INTERNAL_ERROR, f"Too many requests in flight (limit {self.max_in_flight}); "
                "send it again once some are answered."))
            return
        self._incoming.started_request()
        handlers.start_soon(self._run_request, message_id, method, request_handler, params)

    async def _run_request(self, message_id: Any, method: str, handler: RequestHandler, params: Any) -> None:
        try:
            answer, on_written = await self._incoming.answer(message_id, method, handler, params)
            if self._closed:
                if on_written is not None:
                    on_written(False)
                return
            try:
                data = _encode(answer)
            except (TypeError, ValueError, RecursionError):
                log.exception("result of %s is not JSON", method)
                data = _encode(error_message(message_id, RpcError(
                    INTERNAL_ERROR, f"Internal error while handling {method}")))
                if on_written is not None:
                    on_written(False)
                on_written = None
            queued = False
            try:
                queued = await self._queue.put(_Frame(data, None, on_written))
            finally:
                if not queued and on_written is not None:
                    on_written(False)
        finally:
            self._incoming.finished_request()

async def _set_then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def waiting_request(line: bytes) -> tuple[Any, str, Any] | None:
    """The id, method and params of `line` if it is a well-formed JSON-RPC 2.0 request with an id
    (one the connection would hand to a handler), else None (the connection says what is wrong)."""
    try:
        message = _decode(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or message.get("id") is None:
        return None
    if not valid_id(message["id"]) or _call_error(message, require_version=True) is not None:
        return None
    return message["id"], message["method"], message.get("params")


def _call_error(message: JsonObject, require_version: bool) -> RpcError | None:
    """What makes a message naming a method (a request or a notification) malformed, or None."""
    if not isinstance(message["method"], str) or (require_version and message.get("jsonrpc") != "2.0"):
        return RpcError(INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\" and 'method' a string")
    params = message.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return RpcError(INVALID_PARAMS, "Invalid params: must be an object or array", {"field": "params"})
    return None


def response_frame(message_id: Any, result: Any) -> bytes:
    """The frame answering request `message_id` with `result`, as the connection writes it."""
    return _encode({"jsonrpc": "2.0", "id": message_id, "result": result})
