"""The agent's one `codex app-server`: started when a session needs it, replaced when it dies, is
frozen or must see new credentials, and stopped with the runtime.

The first start takes the app-server started (and already handshaken) as the runtime opened
(`acp_agent_codex.appserver`); later ones spawn a new process. Each start runs in the
`initializing` phase and raises its failure typed. Every app-server has a `generation`: what a
session or a turn did on an older one is known to be gone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import anyio.abc
from attrs import evolve

from acp_agent.provider import (
    ConnectionClosed,
    Methods,
    Phase,
    PhaseFailed,
    RpcError,
    RuntimeContext,
    executable_problem,
)
from acp_agent_codex import settings
from acp_agent_codex.appserver import AppServer, serve_app_server
from acp_agent_codex.classify import rpc_error_observation, spawn_failed, transport_lost
from acp_agent_codex.prestart import app_server_argv, child_environment

log = logging.getLogger(__name__)

STOP_TIMEOUT_S: Final = 8.0
RESPONSIVE_S: Final = 2.0
"""How long app-server may take to answer a request that needs no work (`turn/interrupt`,
`thread/loaded/list`, `thread/unsubscribe`) when a cancel, a close or a missed deadline asks it
to: one that does not is frozen, and is replaced (killed with its process group; the sessions
resume on a new one)."""


class Supervisor:
    """Owns the running app-server (`server`) and the runtime's `context` (whose environment a
    new app-server gets); `methods` gives a new one the runtime's handlers and `lost` is told when
    one dies or is killed (its turns fail)."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup, binary: str,
                 early: AppServer | None, methods: Callable[[AppServer], Methods],
                 lost: Callable[[AppServer], None]) -> None:
        self.context = context
        self.clock = context.clock
        self.server: AppServer | None = None
        self.renew = False
        """The environment changed (new credentials): the next start-up point replaces the
        running app-server, once no turn runs; threads resume on the new one at their next prompt."""
        self._tg = task_group
        self._binary = binary
        self._early = early
        self._methods = methods
        self._lost = lost
        self._lock = anyio.Lock()
        self._generation = 0

    def renew_environment(self, environ: Mapping[str, str]) -> None:
        """app-server keeps the environment it started with: a new one (with `environ`) takes
        over at the next start-up point that finds no turn running."""
        self.context = evolve(self.context, environ=dict(environ))
        self.renew = True

    async def ready(self, idle: Callable[[], bool]) -> tuple[AppServer, bool]:
        """The running app-server, started (again) under the initializing phase when needed, and
        whether it replaced one that was lost (its sessions resume on it). `idle`: no turn runs."""
        async with self._lock:
            server = self.server
            if server is not None and server.alive and self.renew and idle():
                log.info("replacing codex app-server: new credentials")
                self.renew = False
                self.server = None
                await self._stop(server)
                server = None  # not a lost backend: nothing to tell the sessions
            if server is not None and server.alive:
                return server, False
            replaced = server is not None
            self._generation += 1
            server = await self._start(self._generation, self.context.environ)
            self.server = server
        return server, replaced

    async def _start(self, generation: int, environ: Mapping[str, str]) -> AppServer:
        server: AppServer | None = None
        try:
            async with self.clock.phase(Phase.INITIALIZING, label="codex app-server"):
                server, self._early = self._early, None
                if server is not None and not server.alive and server.handshaken.is_set() \
                        and server.handshake_error is None:
                    log.info("the early codex app-server (pid %s) exited before it was used", server.pid)
                    server = None
                if server is None:
                    try:
                        server = await self._tg.start(serve_app_server, app_server_argv(self._binary, environ),
                                                      child_environment(environ), generation)
                    except OSError as exc:
                        log.warning("codex app-server could not be started: %s", type(exc).__name__)
                        problem = executable_problem(self._binary, environ, error=exc)
                        raise PhaseFailed(spawn_failed(Phase.INITIALIZING.value,
                                                       problem or "could not be run")) from None
                server.generation = generation
                server.on_lost = self._on_lost
                await server.attach(self._methods(server))
                await server.handshaken.wait()  # started with the process: early, for the first one
                error = server.handshake_error
                if isinstance(error, ConnectionClosed):
                    raise PhaseFailed(transport_lost(Phase.INITIALIZING.value, submitted=False))
                if isinstance(error, RpcError):
                    raise PhaseFailed(rpc_error_observation(error.code, error.message, Phase.INITIALIZING.value))
        except BaseException:
            if server is not None:
                # The server's own task (in the runtime's task group) stops and reaps it, shielded;
                # the failure answers the client now instead of after that stop.
                server.request_stop()
            raise
        return server

    async def _on_lost(self, server: AppServer) -> None:
        self._lost(server)

    def replace(self, server: AppServer, why: str) -> None:
        """A frozen app-server is killed with its process group (it leads its own session; SIGKILL
        reaches a stopped process too) and reaped by its task; its turns end, and the next use
        starts a new one, on which every session resumes (`RuntimeReplaced`), as after a loss."""
        if not server.alive or server.stop_requested:
            return
        log.warning("replacing codex app-server (pid %s): %s", server.pid, why)
        server.kill()
        self._lost(server)
        server.request_stop()

    async def within_grace(self, server: AppServer, method: str, answered: Awaitable[None]) -> None:
        """Wait for `answered` (`method`'s answer); an app-server that gives none within
        RESPONSIVE_S is frozen, and is replaced."""
        with anyio.move_on_after(RESPONSIVE_S) as waited:
            await answered
        if waited.cancelled_caught:
            self.replace(server, f"{method} unanswered for {RESPONSIVE_S:g} s")

    @staticmethod
    async def ask(server: AppServer, method: str, params: Mapping[str, Any]) -> None:
        """A request whose answer only says app-server is responsive (an error is an answer too)."""
        try:
            await server.call(method, params)
        except (RpcError, ConnectionClosed) as exc:
            log.info("%s failed: %s", method, type(exc).__name__)

    async def models(self, server: AppServer) -> list[Mapping[str, Any]]:
        """The models `server` offers (asked with its handshake, else now)."""
        if server.models is None:
            await server.listed.wait()  # asked with the handshake, as app-server started
            result = server.model_list
            if result is None:
                try:
                    result = await server.call("model/list", {})
                except RpcError as exc:
                    log.info("model/list failed: %s", exc.message)
                    result = {}
            server.models = settings.visible_models(result)
        return server.models

    def known_models(self) -> list[Mapping[str, Any]]:
        """The models of the running app-server, as far as it has listed them."""
        server = self.server
        return list(server.models or []) if server is not None else []

    async def _stop(self, server: AppServer) -> None:
        server.request_stop()
        with anyio.move_on_after(STOP_TIMEOUT_S):
            await server.stopped.wait()

    async def aclose(self) -> None:
        server = self.server
        self.server = None
        if server is not None:
            with anyio.CancelScope(shield=True):
                await self._stop(server)
