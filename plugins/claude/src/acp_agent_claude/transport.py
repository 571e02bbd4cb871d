"""One Claude Code CLI, driven directly over its stream-json control protocol.

The CLI reads NDJSON on stdin (user messages, `control_request`s such as `initialize`,
`interrupt`, `set_permission_mode`, `set_model`, and `control_response`s to its own requests) and
writes NDJSON on stdout (the conversation's messages, `control_response`s, and `control_request`s
such as `can_use_tool`). This is the protocol claude-agent-sdk speaks; speaking it here keeps the
SDK (and the `mcp` package it imports) off the path to a ready session, and gives the agent the
process itself (the core's `JsonLinesChild`). The messages reach the runtime unchanged, as the
dicts the CLI wrote: the fold and the failure hooks see the backend's own JSON.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import anyio
import anyio.abc

from acp_agent.provider import ChildGone, JsonLinesChild

log = logging.getLogger(__name__)

CONTROL_TIMEOUT_S = 60.0  # the SDK's bound on a control request that no phase deadline covers
GATHER_S = 0.001
"""Before each read of the CLI's output after the first, what it writes meanwhile gathers this
long: it writes every streamed delta on its own, and a read per delta costs the agent more than
the delta's own work. A line waits at most `GATHER_S` more."""

Message = dict[str, Any]
RequestHandler = Callable[[Message], Awaitable[Message]]


class ControlError(Exception):
    """The CLI answered a control request with an error (its text stays in the debug log)."""


class ClaudeCLI(JsonLinesChild):
    """A running CLI. Conversation messages go to `messages` in order; control responses wake
    their `request`; the CLI's own control requests are answered by `on_request` in tasks of
    their own (a permission request waits for the user while the stream goes on)."""

    gather_s: ClassVar[float] = GATHER_S
    logger: ClassVar[logging.Logger] = log

    def __init__(self, process: anyio.abc.Process, on_request: RequestHandler, *,
                 name: str = "claude CLI") -> None:
        super().__init__(process, name=name)
        self.on_request = on_request  # rebound when a spare CLI is adopted by its session
        self._pending: dict[str, list[Any]] = {}
        self._handlers: dict[str, anyio.CancelScope] = {}
        self._counter = 0

    async def request(self, subtype: str, *, timeout_s: float = CONTROL_TIMEOUT_S, **fields: Any) -> Message:
        """A control request; its response's payload. ControlError if refused, ChildGone if the CLI went."""
        self._counter += 1
        request_id = f"req_{self._counter}_{os.urandom(4).hex()}"
        slot: list[Any] = [anyio.Event(), None]
        self._pending[request_id] = slot
        try:
            await self.write({"type": "control_request", "request_id": request_id,
                              "request": {"subtype": subtype, **fields}})
            with anyio.fail_after(timeout_s):
                await slot[0].wait()
        except TimeoutError:
            raise ControlError(f"no answer to {subtype}") from None
        finally:
            self._pending.pop(request_id, None)
        result = slot[1]
        if isinstance(result, BaseException):
            raise result
        payload = result.get("response") if isinstance(result, dict) else None
        return payload if isinstance(payload, dict) else {}

    def route(self, message: Message, task_group: anyio.abc.TaskGroup) -> bool:
        kind = message.get("type")
        if kind == "control_response":
            self._resolve(message.get("response"))
        elif kind == "control_request":
            request_id = message.get("request_id")
            if isinstance(request_id, str) and isinstance(message.get("request"), dict):
                scope = self._handlers[request_id] = anyio.CancelScope()
                task_group.start_soon(self._answer, request_id, message["request"], scope)
        elif kind == "control_cancel_request":
            cancelled = self._handlers.pop(str(message.get("request_id")), None)
            if cancelled is not None:
                cancelled.cancel()
        else:
            return False
        return True

    def ended(self) -> None:
        for slot in list(self._pending.values()):
            slot[1] = ChildGone()
            slot[0].set()

    def _resolve(self, response: Any) -> None:
        slot = self._pending.get(str(response.get("request_id"))) if isinstance(response, dict) else None
        if slot is None:
            return
        if response.get("subtype") == "error":
            log.debug("claude CLI refused a control request: %s", response.get("error"))
            slot[1] = ControlError("refused")
        else:
            slot[1] = response
        slot[0].set()

    async def _answer(self, request_id: str, request: Message, scope: anyio.CancelScope) -> None:
        """Answer one of the CLI's control requests; a request it cancelled gets no answer."""
        with scope:
            try:
                payload = await self.on_request(request)
                response: Message = {"subtype": "success", "request_id": request_id, "response": payload}
            except Exception as exc:
                log.info("claude control request %s failed: %s", request.get("subtype"), type(exc).__name__)
                response = {"subtype": "error", "request_id": request_id, "error": str(exc) or type(exc).__name__}
            finally:
                self._handlers.pop(request_id, None)
            try:
                await self.write({"type": "control_response", "response": response})
            except ChildGone:
                pass
