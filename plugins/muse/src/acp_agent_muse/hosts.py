"""The sessions' live hosts: started (spawn and handshake under the `initializing` budget), their
frames routed to the session they serve, released when idle, started again (the session
resumed) when the session is used again, and replaced when they die. Each host's process runs in
the runtime's task group."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any, Final

import anyio
import anyio.abc

from acp_agent.provider import (
    ConnectionClosed,
    FailureKind,
    FailureObservation,
    IdleRelease,
    Notice,
    Phase,
    PhaseFailed,
    RpcError,
    RuntimeContext,
    RuntimeReplaced,
    SessionFailure,
    executable_problem,
    stop_in_background,
)
from acp_agent.provider import (
    idle_release_s as read_idle_release,
)
from acp_agent_muse import find_muse, items, sessions
from acp_agent_muse.classify import (
    HOST_TITLE,
    fingerprint_notice_text,
    host_lost,
    host_unavailable,
    request_error_observation,
    route_unserved_notice,
)
from acp_agent_muse.host import MuseHost
from acp_agent_muse.modes import mapping
from acp_agent_muse.sessions import Emit, MuseSession

log = logging.getLogger(__name__)

IDLE_VAR: Final = "ACP_AGENT_MUSE_IDLE_RELEASE_MS"
DEFAULT_IDLE_MS: Final = 60_000


def idle_release_s(environ: Mapping[str, str]) -> float:
    """The core's reader; a host is always released in the end (0 is the default, not never)."""
    return read_idle_release(environ, IDLE_VAR, default_ms=DEFAULT_IDLE_MS) or DEFAULT_IDLE_MS / 1000


def _version() -> str:
    try:
        return metadata.version("acp-agent-muse")
    except metadata.PackageNotFoundError:
        return "0"


class LiveHosts:
    """The hosts of the sessions in `sessions` (the runtime's table: a session joins it when it
    adopts its host), and the read-only hosts of listings and forks."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup,
                 sessions: dict[str, MuseSession]) -> None:
        self.context = context
        self._tg = task_group
        self._sessions = sessions
        self._hosts: set[MuseHost] = set()
        self._idle = IdleRelease(idle_release_s(context.environ), self._idle_since, self._release)
        task_group.start_soon(self._idle.run)
        self._version = _version()
        self._fingerprint_noticed = False
        self._router = context.router
        self._router.serve(self._outside)

    async def spawn(self, label: str, cwd: str | None) -> MuseHost:
        """Start a host and complete the MSP handshake, all under the `initializing` budget."""
        executable = find_muse(self.context.environ)
        if executable is None:
            raise PhaseFailed(host_unavailable(Phase.INITIALIZING.value, "was not found (no `muse` on PATH)"))
        host = MuseHost(name=label, route=self.route, on_lost=self.lost)
        try:
            async with self.context.clock.phase(Phase.INITIALIZING, label=f"{label}: spawn and initialize"):
                try:
                    await self._tg.start(host.spawn, [executable, "serve"], self.context.environ, cwd)
                except OSError as exc:
                    problem = executable_problem(executable, self.context.environ, error=exc)
                    raise PhaseFailed(host_unavailable(Phase.INITIALIZING.value,
                                                       problem or "could not be run")) from None
                self._hosts.add(host)
                try:
                    result = await host.handshake(self._version)
                except ConnectionClosed:
                    raise PhaseFailed(host_lost(Phase.INITIALIZING.value, submitted=False)) from None
                except RpcError as exc:
                    raise PhaseFailed(request_error_observation(exc.code, exc.message, exc.data,
                                                                Phase.INITIALIZING.value)) from None
        except BaseException:
            await self.stop(host)
            raise
        log.info("%s started (pid %s)", label, host.pid)
        self._check_fingerprint(result)
        return host

    def _check_fingerprint(self, result: Mapping[str, Any]) -> None:
        from muse_code_msp import REQUIRED_HOST_VERSION, SCHEMA_FINGERPRINT

        served = mapping(result.get("schema")).get("fingerprint")
        if served == SCHEMA_FINGERPRINT:
            return
        version = mapping(result.get("serverInfo")).get("version")
        text = fingerprint_notice_text(str(served), SCHEMA_FINGERPRINT, version if isinstance(version, str) else None,
                                       REQUIRED_HOST_VERSION)
        log.warning("%s", text)
        if not self._fingerprint_noticed:
            self._fingerprint_noticed = True
            self._router.keep_notice(Notice(text, severity="warning"))

    def _served(self, host: MuseHost) -> MuseSession | None:
        """The session whose host `host` is (None: a read-only host, or one its session let go)."""
        state = self._sessions.get(host.session_id) if host.session_id else None
        return state if state is not None and state.host is host else None

    async def route(self, host: MuseHost, method: str, params: Mapping[str, Any]) -> None:
        """Every frame a host sends, in wire order: into the running prompt, or handled outside one."""
        state = self._served(host)
        if state is not None:
            # Into the prompt's queue (the host's reader waits while it is full, so a stalled client
            # stalls the host instead of growing the agent's memory), else outside it, in order.
            await self._router.deliver(state.session_id, (method, params))

    async def _outside(self, session_id: str, item: Any) -> None:
        """A host's frame no running prompt takes (the router calls it in order)."""
        state = self._sessions.get(session_id)
        method, params = item
        if state is None:
            return
        if method == "session/closed":
            log.info("session %s was unloaded by its host (%s)", state.session_id, params.get("reason"))
            state.needs_resume = True
        elif method == "session/nameChanged":  # a rename between turns
            await self._router.emit(state.session_id, items.session_title(params))
        elif method == "session/modelRouteUnserved":  # after a credential update between turns
            notice = route_unserved_notice(params)
            if notice is not None:
                await self._router.emit(state.session_id, notice)
        else:
            log.debug("dropped %s outside a prompt of session %s", method, state.session_id)

    async def stop(self, host: MuseHost) -> None:
        """Stop a host (and reap it); a prompt still running on it learns it from its queue."""
        await host.stop()
        self._ended(host)

    def _ended(self, host: MuseHost) -> None:
        self._hosts.discard(host)
        state = self._served(host)
        active = state.active if state is not None else None
        if active is not None and active.host is host:
            active.queue.fail()  # never waits: the reader that fills the queue has ended

    async def lost(self, host: MuseHost) -> None:
        """A host that exited (or closed its output) without being asked to."""
        self._ended(host)
        state = self._served(host)
        if state is None:
            return
        state.lost = True
        log.warning("the host of session %s exited unexpectedly", state.session_id)
        if state.active is None:
            observation = FailureObservation(
                kind=FailureKind.TRANSPORT_LOST, native_kind="transportError",
                title=f"{HOST_TITLE} exited; it will be started again for the next prompt.", source="transport",
                outcome="failed", execution="notSubmitted",
                recovery_hint="Send the next prompt; the session is resumed in a new host.")
            # Awaited, in the host's task: nothing the session gets later overtakes it.
            await self._router.emit(state.session_id, SessionFailure(observation))

    def emit(self, state: MuseSession) -> Emit:
        return functools.partial(self._router.emit, state.session_id)

    def adopt(self, state: MuseSession, host: MuseHost) -> None:
        """`host` serves `state` from now on, and the session joins the table."""
        host.session_id = state.session_id
        state.host = host
        state.needs_resume = False
        self._sessions[state.session_id] = state

    async def ensure(self, state: MuseSession) -> MuseHost:
        """The session's live host: started again and the session resumed when it was released or
        died; resumed in it when the host unloaded it."""
        async with state.lock:
            host = state.host
            restart = host is None or not host.alive
            if host is None or not host.alive:
                if state.stopping is not None:
                    await state.stopping.wait()  # a released host's stop (bounded by its stop sequence)
                    state.stopping = None
                host = await self.spawn("muse serve (restart)", state.cwd)
            elif not state.needs_resume:
                return host
            try:
                label = "session/resume (restart)" if restart else "session/resume (unloaded)"
                async with self.context.clock.phase(Phase.PREPARING, label=label):
                    served = await sessions.open_session(host, state, self.emit(state), restart=True)
                    await sessions.apply_settings(host, state, served)
            except BaseException:
                if restart:
                    await self.stop(host)
                raise
            if not restart:
                state.needs_resume = False
                return host
            self.adopt(state, host)
            if state.lost:
                state.lost = False
                await self._router.emit(state.session_id, RuntimeReplaced())
            return host

    # -- idle release ---------------------------------------------------------------------------

    @asynccontextmanager
    async def using(self, *states: MuseSession | None) -> AsyncIterator[None]:
        """The sessions are in use: their hosts are not released until they have been idle a while."""
        used = [state for state in states if state is not None]
        for state in used:
            state.busy += 1
        try:
            yield
        finally:
            for state in used:
                state.busy -= 1
                self.touched(state)

    def touched(self, state: MuseSession) -> None:
        """The session was just used: its host's release is timed from now."""
        state.last_used = time.monotonic()
        self._idle.touched()

    def _idle_since(self) -> Iterator[tuple[MuseSession, float]]:
        return ((state, state.last_used) for state in self._sessions.values()
                if not state.busy and not state.closed and state.host is not None and state.host.alive)

    def _release(self, state: MuseSession) -> None:
        """Stop an idle session's host in the background; the session's next use starts another
        (resuming the session) once this one has stopped."""
        host, state.host = state.host, None
        assert host is not None
        log.info("releasing the idle host of session %s (pid %s)", state.session_id, host.pid)
        state.stopping = stop_in_background(self._tg, functools.partial(self.stop, host))

    async def aclose(self) -> None:
        """Stop every host at once (the sessions are closed: none is released or restarted)."""
        with anyio.CancelScope(shield=True):
            self._idle.stop()
            for state in self._sessions.values():
                state.closed = True
            async with anyio.create_task_group() as stopping:
                for host in list(self._hosts):
                    stopping.start_soon(self.stop, host)
