"""The calls a JSON-RPC connection (`acp_agent.wire.rpc.Connection`) keeps track of: its own
requests waiting for the peer's answer (`OutgoingCalls`), and the peer's requests and
notifications being handled (`IncomingCalls`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_agent.wire.messages import (
    INTERNAL_ERROR,
    REQUEST_CANCELLED,
    ConnectionClosed,
    JsonObject,
    RpcError,
    error_message,
    id_key,
    valid_id,
)
from acp_agent.wire.records import frozen

if TYPE_CHECKING:  # the streams load with the first request's answer, not on the way to `initialize`
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

log = logging.getLogger(__name__)


@frozen
class Reply:
    """A handler result plus a callback told whether the response frame was really written.

    Lets a caller count something as delivered only once it reached the output stream.
    """

    result: Any
    on_written: Callable[[bool], None]


def result_of(answer: Any) -> Any:
    """What a handler answered, its `Reply`'s result where it gave one."""
    return answer.result if isinstance(answer, Reply) else answer


class ClientLink(Protocol):
    """What the agent writes to its client through: a connection, its v2 translation, or a
    session's view of the connection shared by every provider (`acp_agent.federation`)."""

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool: ...

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any: ...


RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]


class PendingRequest:
    """A request awaiting its answer: the reader hands the answer over through `send`."""

    __slots__ = ("method", "receive", "request_id", "send")

    def __init__(self, request_id: int, method: str, send: MemoryObjectSendStream[JsonObject],
                 receive: MemoryObjectReceiveStream[JsonObject]) -> None:
        self.request_id = request_id
        self.method = method
        self.send = send
        self.receive = receive


class OutgoingCalls:
    """Our requests waiting for their answers, by id. Each has a channel of one answer, so an
    answer the reader hands over (`resolve`) is kept even before anyone awaits it; once the
    input has ended (`close`), every request still waiting ends with `ConnectionClosed`."""

    def __init__(self) -> None:
        self.closed = False
        self._pending: dict[int, MemoryObjectSendStream[JsonObject]] = {}

    def register(self, request_id: int, method: str) -> PendingRequest:
        answer_send, answer_receive = anyio.create_memory_object_stream[JsonObject](1)
        self._pending[request_id] = answer_send
        return PendingRequest(request_id, method, answer_send, answer_receive)

    async def complete(self, pending: PendingRequest, send: Callable[[], Awaitable[bool]] | None,
                       timeout_s: float) -> Any:
        """Send the request (`send`: False if it could not be queued; None: written already),
        then its result within `timeout_s`; raises RpcError for an error answer."""
        try:
            with anyio.fail_after(timeout_s):
                if send is not None and not await send():
                    raise ConnectionClosed(pending.method)
                try:
                    answer = await pending.receive.receive()
                except anyio.EndOfStream:
                    raise ConnectionClosed(pending.method) from None
        finally:
            self._pending.pop(pending.request_id, None)
            pending.send.close()
            pending.receive.close()
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            code = error.get("code")
            if not isinstance(code, int) or isinstance(code, bool):
                code = INTERNAL_ERROR
            message_text = error.get("message")
            raise RpcError(code, message_text if isinstance(message_text, str) else "", error.get("data"))
        return answer.get("result")

    def resolve(self, message: JsonObject) -> None:
        """Hand the peer's answer `message` to the request it answers."""
        message_id = message["id"]
        pending = self._pending.get(message_id) if isinstance(message_id, int) else None
        if pending is None:
            log.debug("response to an unknown request id %r", message_id)
            return
        try:
            pending.send_nowait(message)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("duplicate response to request id %r", message_id)

    def close(self) -> None:
        """No answer can arrive any more."""
        self.closed = True
        for pending in list(self._pending.values()):
            pending.close()


class IncomingCalls:
    """The peer's requests and notifications being handled: how many (against the in-flight
    bound), each running request's cancel scope by id (for `$/cancel_request` and for the end of
    the input), and `idle`, set while no request runs."""

    def __init__(self) -> None:
        self.requests = 0
        self.notifications = 0
        self.idle = anyio.Event()
        self.idle.set()
        self._running: dict[Any, anyio.CancelScope] = {}

    def started_request(self) -> None:
        self.requests += 1
        if self.idle.is_set():
            self.idle = anyio.Event()

    def finished_request(self) -> None:
        self.requests -= 1
        if self.requests == 0:
            self.idle.set()

    def cancel(self, params: Any) -> None:
        """`$/cancel_request`: cancel the running request `params["requestId"]`, if any."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if not valid_id(request_id):
            log.info("ignored $/cancel_request: requestId must be a string, an integer or null")
            return
        scope = self._running.get(id_key(request_id))
        if scope is not None:
            scope.cancel()

    def cancel_all(self) -> None:
        """The input ended and the grace is over: every request still running is cancelled."""
        if self._running:
            log.info("input closed with %d request(s) running: cancelling them", len(self._running))
        for scope in list(self._running.values()):
            scope.cancel()

    async def run_notification(self, method: str, handler: NotificationHandler, params: Any,
                               counted: bool = False) -> None:
        try:
            await handler(params)
        except RpcError as exc:
            log.info("notification %s rejected: %s", method, exc.message)
        except Exception:
            log.exception("notification handler %s failed", method)
        finally:
            if counted:
                self.notifications -= 1

    async def answer(self, message_id: Any, method: str, handler: RequestHandler,
                     params: Any) -> tuple[JsonObject, Callable[[bool], None] | None]:
        """Run the handler of request `message_id` (cancellable while it runs): its answer, and
        the callback to tell whether that answer was written."""
        key = id_key(message_id)
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
                answer = error_message(message_id, exc)
                on_written = exc.on_written
            except Exception:
                log.exception("handler for %s failed", method)
                answer = error_message(message_id, RpcError(INTERNAL_ERROR, f"Internal error while handling {method}"))
            finally:
                if self._running.get(key) is scope:
                    del self._running[key]
        if scope.cancelled_caught:
            answer = error_message(message_id, RpcError(REQUEST_CANCELLED, "Request cancelled"))
            if on_written is not None:
                on_written(False)  # that answer is not the one written
            on_written = None
        return answer, on_written
