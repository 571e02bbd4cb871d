"""The agent's one `codex app-server`: started when a session needs it, replaced when it dies, is
frozen or must see new credentials, and stopped with the runtime.

The first start takes the app-server started (and already handshaken) as the runtime opened
(`acp_agent_codex.appserver`); later ones spawn a new process. Each start runs in the
`initializing` phase and raises its failure typed. Every app-server has a `generation`: what a
session or a turn did on an older one is known to be gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final

import anyio
import anyio.abc

from acp_agent.provider import ConnectionClosed, Methods, Phase, PhaseClock, PhaseFailed, RpcError, executable_problem
from acp_agent_codex.appserver import AppServer, serve_app_server
from acp_agent_codex.classify import rpc_error_observation, spawn_failed, transport_lost
from acp_agent_codex.prestart import child_environment

log = logging.getLogger(__name__)

STOP_TIMEOUT_S: Final = 8.0


class Supervisor:
    """Owns the running app-server (`server`) for the runtime; `methods` gives a new one the
    runtime's handlers and `lost` is told when one dies or is killed (its turns fail)."""

    def __init__(self, clock: PhaseClock, task_group: anyio.abc.TaskGroup, binary: str,
                 early: AppServer | None, methods: Callable[[AppServer], Methods],
                 lost: Callable[[AppServer], None]) -> None:
        self.clock = clock
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

    async def ready(self, environ: Mapping[str, str], idle: Callable[[], bool]) -> tuple[AppServer, bool]:
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
            server = await self._start(self._generation, environ)
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
                        server = await self._tg.start(serve_app_server, [self._binary, "app-server"],
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
