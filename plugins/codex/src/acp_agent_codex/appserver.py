"""One `codex app-server` process, its JSON-RPC connection and its handshake, without the runtime.

The process, its connection and its stop are the core's (`acp_agent.backends.rpc_child`); this
module adds app-server's handshake. Light on purpose (anyio, attrs and the core's process and rpc
layers, all loaded by the agent already): the first app-server, adopted from the command line
(`acp_agent.startup.prestart`) or spawned, answers its `initialize` handshake and `model/list` as
soon as the agent's event loop runs, while the runtime module is not loaded yet, so the first
`session/new` only pays `thread/start`. Notifications app-server sends before the runtime hands
over its handlers are kept, in order, and passed on by `attach`. The handshake's outcome is
recorded, never raised here: the runtime raises it, typed and under the initializing phase's
deadline, at the first session, exactly as when the handshake ran on that request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Final

import anyio
import anyio.abc
from attrs import define, field

from acp_agent.provider import ConnectionClosed, EarlyProcess, Methods, PendingRequest, RpcChild, RpcError
from acp_agent_codex.prestart import (
    GREETING_REQUESTS,
    initialize_params,
)

log = logging.getLogger(__name__)

APP_SERVER_NAME: Final = "codex app-server"
NO_TIMEOUT: Final = math.inf  # every backend wait is bounded by its phase instead
THREAD_METHODS: Final = frozenset({
    "error", "warning", "turn/started", "turn/completed", "item/started", "item/completed",
    "item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/summaryPartAdded",
    "item/reasoning/textDelta", "item/commandExecution/outputDelta", "turn/plan/updated", "item/plan/delta",
    "thread/tokenUsage/updated", "thread/compacted", "thread/name/updated", "model/rerouted",
    "thread/goal/updated", "thread/goal/cleared",
})
GLOBAL_NOTICES: Final = frozenset({"configWarning", "deprecationNotice"})
NOTIFICATIONS: Final = THREAD_METHODS | GLOBAL_NOTICES | {"thread/started"}
"""Every notification the runtime handles (in wire order); kept until it attaches."""


@define(eq=False, kw_only=True)
class AppServer(RpcChild):
    """One running `codex app-server` (the core's JSON-RPC child) and what its handshake learnt."""

    name: str = APP_SERVER_NAME
    generation: int
    greeted: Sequence[str] = ()
    """The requests the command line wrote when it spawned the process (`prestart.greeting`):
    only their answers are read, in that order, from the first line on."""
    started_threads: dict[str, anyio.Event] = field(factory=dict)
    models: list[Mapping[str, Any]] | None = None
    """`model/list`'s visible entries (efforts and service tiers included), asked once per process."""
    handshaken: anyio.Event = field(factory=anyio.Event)
    """Set once `initialize` was answered (or failed: `handshake_error`)."""
    handshake_error: ConnectionClosed | RpcError | None = None
    listed: anyio.Event = field(factory=anyio.Event)
    """Set once the handshake's `model/list` ended (or was never sent: the handshake failed)."""
    model_list: Any = None
    """`model/list`'s answer (`{}` if app-server refused it); None: the runtime asks again."""
    kept: list[tuple[str, Any]] = field(factory=list)

    require_version: ClassVar[bool] = False  # app-server omits `"jsonrpc": "2.0"`

    def methods(self) -> Methods:
        """Until the runtime attaches: every notification it handles is kept, in order."""
        return _keeping(self)

    def connected(self, group: anyio.abc.TaskGroup) -> None:
        # Answers to a greeting are kept from the first line read (ids 0 and 1, in its order).
        greeted = [self.connection.written_request(method) for method in self.greeted]
        group.start_soon(_handshake, self, greeted)

    async def attach(self, methods: Methods) -> None:
        """Give the connection the runtime's handlers, after what arrived before them, in order."""
        while self.kept:
            method, params = self.kept.pop(0)
            handler = methods.notifications.get(method)
            try:
                if handler is not None:
                    await handler(params)
            except Exception:
                log.exception("notification handler %s failed", method)
        self.connection.methods = methods  # no await since `kept` was last seen empty: nothing lost


def _keeping(server: AppServer) -> Methods:
    def keep(method: str) -> Callable[[Any], Awaitable[None]]:
        async def handle(params: Any) -> None:
            server.kept.append((method, params))

        return handle

    return Methods(requests={}, notifications={method: keep(method) for method in NOTIFICATIONS},
                   ordered=NOTIFICATIONS)


async def _handshake(server: AppServer, greeted: Sequence[PendingRequest] = ()) -> None:
    """`initialize`, `initialized` and `model/list`; with `greeted`, the command line wrote them
    when it spawned the process (`prestart.greeting`) and only their answers are read here."""
    connection = server.connection
    try:
        if greeted:
            await connection.answer(greeted[0], timeout_s=NO_TIMEOUT)
        else:
            await server.call("initialize", initialize_params())
            await connection.notify("initialized", None)
    except (ConnectionClosed, RpcError) as exc:
        server.handshake_error = exc
        log.debug("%s (pid %s) failed initialize: %s", APP_SERVER_NAME, server.pid, type(exc).__name__)
        return
    finally:
        server.handshaken.set()
        if server.handshake_error is not None:
            server.listed.set()
    log.debug("%s (pid %s) answered initialize%s", APP_SERVER_NAME, server.pid,
              " (greeted when it was spawned)" if greeted else "")
    try:
        server.model_list = (await connection.answer(greeted[1], timeout_s=NO_TIMEOUT) if greeted
                             else await server.call("model/list", {}))
    except RpcError as exc:
        log.info("model/list failed: %s", exc.message)
        server.model_list = {}
    except ConnectionClosed:
        pass  # the runtime meets the closed connection itself
    finally:
        server.listed.set()


async def serve_app_server(argv: Sequence[str], env: Mapping[str, str], generation: int,
                           adopted: EarlyProcess | None = None, greeting: bytes = b"", *,
                           task_status: anyio.abc.TaskStatus[AppServer]) -> None:
    """Own one app-server (`adopted`, else spawned) until it exits or is asked to stop; its
    handshake starts as soon as it is connected (an adopted one was sent `greeting`, the
    handshake's opening, when it was spawned). Raises OSError if it cannot be spawned."""
    if adopted is not None:
        server = AppServer(generation=generation, greeted=GREETING_REQUESTS if greeting else ())
        await server.adopt(adopted, task_status=task_status)
    else:
        await AppServer(generation=generation).spawn(argv, env, task_status=task_status)
