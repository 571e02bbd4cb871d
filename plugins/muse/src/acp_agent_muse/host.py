"""One `muse serve` process and the MSP connection to it (the core's JSON-RPC layer over its stdio).

The process lives in its own task inside the runtime's task group: the core's JSON-RPC child
(`acp_agent.backends.rpc_child`) owns it (close stdin → SIGTERM → SIGKILL, always reaped) and
serves the connection until the host's stdout ends. Every notification is handed, in wire order, to the runtime's router;
the two server-initiated requests MSP defines (`approval/request`, `userInput/request`) are
routed the same way and answered with the empty presentation receipt.

Commands (every mutating method) carry a client-minted UUIDv7 `commandId`; the same command is
re-sent with the same id only when the host answered `-32001 overloaded` or `-32031
backpressured` (nothing was admitted), with a short full-jitter backoff.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
from attrs import define, field

from acp_agent.provider import Methods, RpcChild, RpcError
from acp_agent_muse.classify import is_retryable_error
from acp_agent_muse.ids import mint

log = logging.getLogger(__name__)

MAX_COMMAND_ATTEMPTS: Final = 4
SERVER_REQUESTS: Final = ("approval/request", "userInput/request")

Router = Callable[["MuseHost", str, Mapping[str, Any]], Awaitable[None]]


def backoff_s(attempt: int) -> float:
    """Full jitter: uniform in 0..min(2 s, 50 ms · 2^(attempt-1))."""
    return random.uniform(0, min(2.0, 0.05 * 2 ** max(0, attempt - 1)))


def notification_methods() -> list[str]:
    """Every MSP notification a host may send (from the generated wire types)."""
    from muse_code_msp import NOTIFICATIONS

    return sorted(name for name in NOTIFICATIONS if name != "initialized")


@define(eq=False, kw_only=True)
class MuseHost(RpcChild):
    """A running `muse serve` (the core's JSON-RPC child); `session_id` is the ACP session it
    serves (None: a read-only host)."""

    route: Router
    session_id: str | None = None
    initialize_result: Mapping[str, Any] = field(factory=dict)

    @property
    def granted(self) -> frozenset[str]:
        granted = self.initialize_result.get("grantedCapabilities")
        return frozenset(name for name in granted or [] if isinstance(name, str))

    def methods(self) -> Methods:
        names = notification_methods()

        def notification(method: str) -> Callable[[Any], Any]:
            async def handle(params: Any) -> None:
                # Inline in the reader: while the router waits (a full turn queue), nothing more is read.
                await self.route(self, method, params if isinstance(params, Mapping) else {})

            return handle

        def server_request(method: str) -> Callable[[Any], Any]:
            async def handle(params: Any) -> dict[str, Any]:
                await self.route(self, method, params if isinstance(params, Mapping) else {})
                return {}

            return handle

        return Methods(
            requests={name: server_request(name) for name in SERVER_REQUESTS},
            notifications={name: notification(name) for name in names},
            ordered=frozenset(names),
        )

    async def command(self, method: str, params: Mapping[str, Any], *, command_id: str | None = None
                      ) -> Mapping[str, Any]:
        """A mutating command with its `commandId`; re-sent with the same id only when nothing was admitted."""
        command_id = command_id or mint()
        body = {**params, "commandId": command_id}
        attempt = 0
        while True:
            attempt += 1
            try:
                result = await self.call(method, body)
            except RpcError as exc:
                if attempt >= MAX_COMMAND_ATTEMPTS or not is_retryable_error(exc.code, exc.data):
                    raise
                log.info("%s %s answered %d; re-sending the same command (attempt %d)", self.name, method,
                         exc.code, attempt + 1)
                await anyio.sleep(backoff_s(attempt))
                continue
            return result if isinstance(result, Mapping) else {}

    async def handshake(self, client_version: str) -> Mapping[str, Any]:
        """`initialize` (asking for the session MCP grant) then the `initialized` notification."""
        result = await self.call("initialize", {
            "clientInfo": {"name": "acp-agent-muse", "title": "acp-agent (Muse Code)", "version": client_version},
            "capabilities": {"requestedCapabilities": ["sessionMcp"]},
        })
        self.initialize_result = result if isinstance(result, Mapping) else {}
        await self.connection.notify("initialized", None)
        return self.initialize_result
