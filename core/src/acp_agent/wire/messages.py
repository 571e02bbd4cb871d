"""JSON-RPC 2.0 errors and ids: the error codes, `RpcError` (an error answer), and how an id is
checked, keyed and answered with an error. Shared by the connection (`acp_agent.wire.rpc`) and its
call tracking (`acp_agent.wire.calls`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000

JsonObject = dict[str, Any]


class RpcError(Exception):
    """An error answer to a request: raised by handlers, returned to the peer as `error`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.on_written: Callable[[bool], None] | None = None
        """Like `Reply.on_written`: told whether the error answer was really written."""

    def to_wire(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ConnectionClosed(Exception):
    """The peer went away before answering."""


def valid_id(value: Any) -> bool:
    """Whether `value` may be a request's id: a string, an integer or null."""
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def id_key(value: Any) -> Any:
    """A dictionary key for an id that tells `1` from `"1"`."""
    return (type(value).__name__, value)


def error_message(message_id: Any, error: RpcError) -> JsonObject:
    """The error answer to request `message_id`."""
    return {"jsonrpc": "2.0", "id": message_id, "error": error.to_wire()}
