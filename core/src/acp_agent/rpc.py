"""JSON-RPC 2.0 over newline-delimited JSON on anyio byte streams.

Owns framing, request/response correlation, concurrency of handlers, and the single writer.
It knows nothing of ACP: methods are looked up in a table handed in by the caller.
Nothing but protocol frames is ever written to the output stream.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from attrs import define, field, frozen

from acp_agent.wire import clip

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000

DEFAULT_MAX_LINE_BYTES = 50 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT_S = 300.0

JsonObject = dict[str, Any]


class RpcError(Exception):
    """An error answer to a request: raised by handlers, returned to the peer as `error`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ConnectionClosed(Exception):
    """The peer went away before answering."""


@frozen
class Reply:
    """A handler result plus a callback told whether the response frame was really written.

    Lets a caller count something as delivered only once it reached the output stream.
    """

    result: Any
    on_written: Callable[[bool], None]


RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]


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


def _encode(message: JsonObject) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"


class LineReader:
    """Splits a byte stream into lines; a line longer than the bound is dropped, never buffered."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, max_line_bytes: int) -> None:
        self._stream = stream
        self._max = max_line_bytes
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
            try:
                chunk = await self._stream.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._eof = True
                continue
            self._buffer.extend(chunk)


@define
class Connection:
    """One JSON-RPC peer: a reader task, a writer task and one task per incoming request."""

    receive_stream: anyio.abc.ByteReceiveStream
    send_stream: anyio.abc.ByteSendStream
    methods: Methods
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    require_version: bool = True
    """False for peers that omit `"jsonrpc": "2.0"` (codex app-server); we always send it."""
    _out_send: MemoryObjectSendStream[_Frame] = field(init=False)
    _out_receive: MemoryObjectReceiveStream[_Frame] = field(init=False)
    _pending: dict[int, MemoryObjectSendStream[JsonObject]] = field(init=False, factory=dict)
    _running: dict[Any, anyio.CancelScope] = field(init=False, factory=dict)
    _next_id: int = field(init=False, default=0)
    _closed: bool = field(init=False, default=False)
    _write_failed: bool = field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._out_send, self._out_receive = anyio.create_memory_object_stream[_Frame](math.inf)

    # -- outgoing -------------------------------------------------------------------------

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        """Send a notification; with wait_written, return whether it reached the output stream."""
        message: JsonObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return await self._send(message, wait_written=wait_written)

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send a request and wait for its answer under a deadline; raises RpcError on an error answer."""
        if self._closed:
            raise ConnectionClosed(method)
        request_id = self._next_id
        self._next_id += 1
        answer_send, answer_receive = anyio.create_memory_object_stream[JsonObject](1)
        self._pending[request_id] = answer_send
        message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            with anyio.fail_after(timeout_s if timeout_s is not None else self.request_timeout_s):
                try:
                    answer = await answer_receive.receive()
                except anyio.EndOfStream:
                    raise ConnectionClosed(method) from None
        finally:
            self._pending.pop(request_id, None)
            answer_send.close()
            answer_receive.close()
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
        return answer.get("result")

    async def _send(self, message: JsonObject, *, wait_written: bool = False) -> bool:
        if self._closed or self._write_failed:
            return False
        data = _encode(message)
        if not wait_written:
            self._out_send.send_nowait(_Frame(data))
            return True
        written = anyio.Event()
        outcome: list[bool] = []
        self._out_send.send_nowait(_Frame(data, written, outcome.append))
        await written.wait()
        return bool(outcome and outcome[0])

    # -- the connection's tasks -------------------------------------------------------------

    async def serve(self) -> None:
        """Run until the input reaches EOF; every handler task is finished or cancelled on return."""
        async with anyio.create_task_group() as writer_group:
            writer_group.start_soon(self._writer)
            try:
                async with anyio.create_task_group() as handlers:
                    await self._reader(handlers)
                    handlers.cancel_scope.cancel()
            finally:
                self._closed = True
                for pending in list(self._pending.values()):
                    pending.close()
                self._out_send.close()

    async def _writer(self) -> None:
        async with self._out_receive:
            async for first in self._out_receive:
                batch = [first]
                while True:
                    try:
                        batch.append(self._out_receive.receive_nowait())
                    except anyio.WouldBlock:
                        break
                ok = not self._write_failed
                if ok:
                    try:
                        await self.send_stream.send(b"".join(frame.data for frame in batch))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                        log.warning("output stream failed: %s", type(exc).__name__)
                        self._write_failed = True
                        ok = False
                for frame in batch:
                    if frame.on_written is not None:
                        frame.on_written(ok)
                    if frame.written is not None:
                        frame.written.set()

    async def _reader(self, handlers: anyio.abc.TaskGroup) -> None:
        lines = LineReader(self.receive_stream, self.max_line_bytes)
        while True:
            line = await lines.next_line()
            if line is None:
                return
            if isinstance(line, int):
                log.warning("dropped an input line of %d bytes (bound %d)", line, self.max_line_bytes)
                await self._send(_error_message(None, RpcError(
                    INVALID_REQUEST,
                    f"Input line of {line} bytes exceeds the limit of {self.max_line_bytes} bytes; it was dropped.",
                )))
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                await self._send(_error_message(None, RpcError(PARSE_ERROR, f"Parse error: {exc}")))
                continue
            inline = self._dispatch(message, handlers)
            if inline is not None:
                await inline

    def _dispatch(self, message: Any, handlers: anyio.abc.TaskGroup) -> Awaitable[None] | None:
        """Route one message; returns the awaitable of an ordered notification to run inline."""
        if isinstance(message, list):
            # Batches are not used by ACP; answer each element as its own message.
            if not message:
                self._send_nowait(_error_message(None, RpcError(INVALID_REQUEST, "Empty batch")))
            for element in message:
                inline = self._dispatch(element, handlers)
                if inline is not None:
                    handlers.start_soon(_await, inline)
            return None
        if not isinstance(message, dict):
            self._send_nowait(_error_message(None, RpcError(INVALID_REQUEST, "A message must be a JSON object")))
            return None
        message_id = message.get("id")
        has_id = "id" in message
        if has_id and not _valid_id(message_id):
            self._send_nowait(_error_message(None, RpcError(INVALID_REQUEST, "Invalid id")))
            return None
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                self._resolve(message)
                return None
            self._send_nowait(_error_message(message_id if has_id else None, RpcError(
                INVALID_REQUEST, "Invalid request: missing 'method'")))
            return None
        method = message["method"]
        if not isinstance(method, str) or (self.require_version and message.get("jsonrpc") != "2.0"):
            if has_id:
                self._send_nowait(_error_message(message_id, RpcError(
                    INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\" and 'method' a string")))
            return None
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            if has_id:
                self._send_nowait(_error_message(message_id, RpcError(
                    INVALID_PARAMS, "Invalid params: must be an object or array", {"field": "params"})))
            return None
        if not has_id:
            if method == "$/cancel_request":
                self._cancel_request(params)
                return None
            handler = self.methods.notifications.get(method)
            if handler is None:
                log.debug("ignored unknown notification %s", method)
            elif method in self.methods.ordered:
                return self._run_notification(method, handler, params)
            else:
                handlers.start_soon(self._run_notification, method, handler, params)
            return None
        request_handler = self.methods.requests.get(method)
        if request_handler is None:
            self._send_nowait(_error_message(message_id, RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}")))
            return None
        handlers.start_soon(self._run_request, message_id, method, request_handler, params)
        return None

    def _send_nowait(self, message: JsonObject) -> None:
        if not self._closed and not self._write_failed:
            self._out_send.send_nowait(_Frame(_encode(message)))

    def _resolve(self, message: JsonObject) -> None:
        pending = self._pending.get(message["id"]) if isinstance(message["id"], int) else None
        if pending is None:
            log.debug("response to an unknown request id %r", message["id"])
            return
        try:
            pending.send_nowait(message)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("duplicate response to request id %r", message["id"])

    def _cancel_request(self, params: Any) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        scope = self._running.get(_id_key(request_id))
        if scope is not None:
            scope.cancel()

    async def _run_notification(self, method: str, handler: NotificationHandler, params: Any) -> None:
        try:
            await handler(params)
        except RpcError as exc:
            log.info("notification %s rejected: %s", method, exc.message)
        except Exception:
            log.exception("notification handler %s failed", method)

    async def _run_request(self, message_id: Any, method: str, handler: RequestHandler, params: Any) -> None:
        key = _id_key(message_id)
        answer: JsonObject
        on_written: Callable[[bool], None] | None = None
        with anyio.CancelScope() as scope:
            self._running[key] = scope
            try:
                result = await handler(params)
                if isinstance(result, Reply):
                    on_written = result.on_written
                    result = result.result
                answer = {"jsonrpc": "2.0", "id": message_id, "result": result}
            except RpcError as exc:
                answer = _error_message(message_id, exc)
            except Exception:
                log.exception("handler for %s failed", method)
                answer = _error_message(message_id, RpcError(INTERNAL_ERROR, f"Internal error while handling {method}"))
            finally:
                self._running.pop(key, None)
        if scope.cancelled_caught:
            answer = _error_message(message_id, RpcError(REQUEST_CANCELLED, "Request cancelled"))
            on_written = None
        if self._closed:
            if on_written is not None:
                on_written(False)
            return
        try:
            data = _encode(answer)
        except (TypeError, ValueError):
            log.exception("result of %s is not JSON", method)
            data = _encode(_error_message(message_id, RpcError(INTERNAL_ERROR, f"Internal error while handling {method}")))
            if on_written is not None:
                on_written(False)
            on_written = None
        self._out_send.send_nowait(_Frame(data, None, on_written))


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _id_key(value: Any) -> Any:
    return (type(value).__name__, value)


def _error_message(message_id: Any, error: RpcError) -> JsonObject:
    return {"jsonrpc": "2.0", "id": message_id, "error": error.to_wire()}
