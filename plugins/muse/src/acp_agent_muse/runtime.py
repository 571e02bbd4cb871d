"""The Muse runtime: one `muse serve` host per ACP session, spoken to in MSP.

A session's host starts with the session (`initializing`: spawn and handshake), opens it
(`preparing`: `session/resume` of the session id, `session/start` when the host answers `-32020
sessionNotFound`), applies the approval mode and model and verifies them with `session/read`. It
is released after a minute without use (`ACP_AGENT_MUSE_IDLE_RELEASE_MS`) and started again, and
the session resumed, when the session is used again; a host that died is replaced the same way
(`RuntimeReplaced` then ends the transport-loss incident). `session/list` uses a short-lived
read-only host, `session/load` and `session/resume` read under the `reading` budget, and
`session/fork` reads the source and then forks under the `forking` budget; the fork's host
becomes the new session's host.

The runtime holds the session table and answers the provider contract; its parts hold the rest:
`hosts` the live hosts (spawn, routing, loss, restart, idle release), `turns` a prompt's turn
(submit, consume, steer, cancel), `approvals` the host's approvals and questions.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import anyio.abc

from acp_agent.provider import (
    DEFAULT_MAX_ITEMS,
    ConfigOption,
    ConnectionClosed,
    ContentBlock,
    McpServer,
    Phase,
    PhaseFailed,
    ProviderRuntime,
    RpcError,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionModeState,
    SessionNotFound,
    SessionStart,
    SessionTable,
    TurnChannel,
    TurnEnd,
    additional_directories,
    fork_at,
    json_text,
)
from acp_agent_muse import items, models, sessions
from acp_agent_muse.classify import HOST_TITLE, request_error_observation
from acp_agent_muse.host import MuseHost
from acp_agent_muse.hosts import LiveHosts
from acp_agent_muse.ids import mint
from acp_agent_muse.models import EFFORT
from acp_agent_muse.modes import (
    APPROVAL_MODES,
    DEFAULT_MODE,
    MODE_OF_APPROVAL,
    MODES,
    mapping,
    served_mode,
)
from acp_agent_muse.sessions import MuseSession
from acp_agent_muse.turns import PROVIDER, Turns

log = logging.getLogger(__name__)

LEAVE_TIMEOUT_S: Final = 5.0
LIST_PAGE: Final = 50
TURN_QUEUE_ITEMS = DEFAULT_MAX_ITEMS
"""How many host notifications a running prompt holds before the host's reader waits (backpressure)."""


class MuseRuntime(ProviderRuntime):
    """The sessions, their hosts (`hosts`) and turns (`turns`); `task_group` (owned by
    `open_muse_runtime`) runs the hosts and the background cancels."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup) -> None:
        self.context = context
        self._sessions: SessionTable[MuseSession] = SessionTable()
        self.hosts = LiveHosts(context, task_group, self._sessions)
        self.turns = Turns(self.hosts, task_group, TURN_QUEUE_ITEMS)

    def _phase(self, phase: Phase, label: str, *, mutation: bool = False) -> Any:
        """A backend wait under its phase's deadline (the core's texts name the phase and the budget)."""
        return self.context.clock.phase(phase, label=label, mutation=mutation)

    @staticmethod
    def _setup(state: MuseSession) -> SessionStart:
        return SessionStart(state.session_id,
                            modes=SessionModeState(current_mode_id=state.mode, available_modes=list(MODES)),
                            config_options=models.options(state))

    # -- sessions ----------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        state = MuseSession(mint(), cwd, mcp=items.mcp_servers(mcp_servers),
                            roots=additional_directories(channel))
        async with self.hosts.using(state):
            host = await self.hosts.spawn("muse serve (new session)", cwd)
            try:
                async with self._phase(Phase.PREPARING, "session/resume|start"):
                    served = await sessions.open_session(host, state, self.hosts.emit(state), restart=False)
                await models.discover(host, state)
                async with self._phase(Phase.PREPARING, "settings"):
                    await sessions.apply_settings(host, state, served)
            except BaseException:
                await self.hosts.stop(host)
                raise
            self.hosts.adopt(state, host)
            return self._setup(state)

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        previous = self._sessions.get(session_id)
        state = MuseSession(session_id, cwd, mcp=items.mcp_servers(mcp_servers),
                            roots=additional_directories(channel))
        async with self.hosts.using(state, previous):  # previous's host may answer for the load
            host = await self.hosts.spawn("muse serve (load)" if replay else "muse serve (resume)", cwd)
            try:
                async with self._phase(Phase.READING, "session/resume"):
                    params: dict[str, Any] = {"sessionId": session_id, "excludeItems": not replay,
                                              **await sessions.mcp_config(host, state, self.hosts.emit(state))}
                    if replay:
                        params["history"] = "inline"
                    try:
                        result = await sessions.ask(host, "session/resume", params, Phase.READING, command=True,
                                                 missing=session_id)
                    except SessionNotFound:
                        held = previous.host if previous is not None and not previous.closed else None
                        if held is None or not held.alive:
                            raise
                        # An ephemeral host keeps its sessions in its own memory only (a never-prompted
                        # one too): the host that holds this session answers for it.
                        log.info("a new host does not know session %s; asking the host that holds it", session_id)
                        assert previous is not None
                        await self.hosts.stop(host)
                        host = held
                        result = await sessions.ask(host, "session/resume", params, Phase.READING, command=True,
                                                 missing=session_id)
                await models.discover(host, state)
            except BaseException:
                if previous is None or host is not previous.host:  # else it stays the session's host
                    await self.hosts.stop(host)
                raise
            served = mapping(result.get("session"))
            host_mode = served_mode(served)
            if previous is not None and host_mode == APPROVAL_MODES.get(previous.mode):
                state.mode = previous.mode
            else:
                state.mode = MODE_OF_APPROVAL.get(host_mode or "", DEFAULT_MODE)
            model = served.get("modelId")
            state.model = model if isinstance(model, str) and model else state.model
            if previous is not None:
                previous.closed = True
                if previous.host is not None and previous.host is not host:
                    await self.hosts.stop(previous.host)
            self.hosts.adopt(state, host)
            if replay:
                recogniser = functools.partial(self.context.hooks.recognise_history, PROVIDER)
                for event in items.history_events(result, self.context.redact, recogniser):
                    await channel.emit(event)
            return self._setup(state)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        host = await self.hosts.spawn("muse serve (list)", cwd)
        try:
            params: dict[str, Any] = {"limit": LIST_PAGE}
            if cwd:
                params["workspaceRoot"] = cwd
            if cursor:
                params["cursor"] = cursor
            async with self._phase(Phase.READING, "session/list"):
                result = await sessions.ask(host, "session/list", params, Phase.READING)
        finally:
            await self.hosts.stop(host)
        listed = [info for info in (items.session_info(row, cwd) for row in result.get("sessions") or []
                                    if isinstance(row, Mapping)) if info is not None]
        next_cursor = result.get("nextCursor")
        return SessionListing(listed, next_cursor if isinstance(next_cursor, str) and next_cursor else None)

    async def set_title(self, session_id: str, title: str) -> str:
        """`session/rename`, on the session's own host while it runs here, else on a host of its
        own for the request; the answer is the name the host settled."""
        state = self._sessions.get(session_id)
        if state is not None:
            async with self.hosts.using(state), state.lock:
                if state.host is not None and state.host.alive and not state.needs_resume:
                    return await self._rename(state.host, session_id, title)
        host = await self.hosts.spawn("muse serve (rename)", state.cwd if state is not None else None)
        try:
            return await self._rename(host, session_id, title)
        finally:
            await self.hosts.stop(host)

    async def _rename(self, host: MuseHost, session_id: str, title: str) -> str:
        async with self._phase(Phase.PREPARING, "session/rename", mutation=True):
            result = await sessions.ask(host, "session/rename", {"sessionId": session_id, "name": title},
                                        Phase.PREPARING, command=True, missing=session_id, mutation=True)
        return json_text(result.get("name")) or title

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        host = await self.hosts.spawn("muse serve (fork)", cwd)
        try:
            at = fork_at(channel)
            async with self._phase(Phase.READING, "session/read (fork source)"):
                source = await sessions.ask(host, "session/read", {"sessionId": session_id,
                                                                   "excludeItems": at is None},
                                            Phase.READING, missing=session_id)
            params: dict[str, Any] = {"sessionId": session_id, "excludeItems": True}
            if at is not None:  # MSP forks whole turns: through the one that holds the message
                params["cutPoint"] = {"lastTurnId": items.turn_holding(source, at)}
            async with self._phase(Phase.FORKING, "session/fork", mutation=True):
                result = await sessions.ask(host, "session/fork", params, Phase.FORKING, command=True,
                                            mutation=True)
            served = mapping(result.get("session"))
            new_id = served.get("sessionId")
            if not isinstance(new_id, str) or not new_id:
                raise PhaseFailed(request_error_observation(-32603, f"{HOST_TITLE} answered session/fork without "
                                                            "a session id.", None, Phase.FORKING.value,
                                                            mutation=True))
            state = MuseSession(new_id, cwd, mcp=items.mcp_servers(mcp_servers),
                                roots=additional_directories(channel))
            state.mode = MODE_OF_APPROVAL.get(served_mode(served) or "", DEFAULT_MODE)
            model = served.get("modelId")
            state.model = model if isinstance(model, str) and model else None
            await models.discover(host, state)
        except BaseException:
            await self.hosts.stop(host)
            raise
        self.hosts.adopt(state, host)
        self.hosts.touched(state)
        return self._setup(state)

    async def close_session(self, session_id: str) -> None:
        state = self._sessions.get(session_id)
        if state is None:
            return
        state.closed = True
        host = state.host
        try:
            if host is None:
                return
            if host.alive:
                with anyio.move_on_after(LEAVE_TIMEOUT_S):
                    try:
                        await host.command("session/leave", {"sessionId": session_id})
                    except (RpcError, ConnectionClosed) as exc:
                        log.info("session/leave failed: %s", type(exc).__name__)
            await self.hosts.stop(host)  # a prompt still running learns it from its queue
        finally:
            if self._sessions.get(session_id) is state:
                del self._sessions[session_id]

    # -- settings ---------------------------------------------------------------------------------------------

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._live_setting(self._sessions[session_id], "mode", mode_id)

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        state = self._sessions[session_id]  # an offered option and one of its values: the core checked both
        if config_id == EFFORT:
            # Sent with each turn/start (MSP's per-turn `reasoningEffort`): nothing to apply now.
            state.effort = value
            return models.options(state)
        await self._live_setting(state, "model", value)
        tiers, _ = state.efforts.get(value, ([], None))
        if state.effort is not None and state.effort not in {tier.value for tier in tiers}:
            # The new model has no such tier: its own default from now on.
            state.effort = None
        return models.options(state)

    async def _live_setting(self, state: MuseSession, name: str, value: str) -> None:
        """Change the session's `mode` or `model` and apply it to a running host now (a released
        host gets it when it restarts); on failure the session keeps the old one."""
        previous = getattr(state, name)
        setattr(state, name, value)
        try:
            async with self.hosts.using(state), state.lock:
                host = state.host
                if host is None or not host.alive or state.needs_resume:
                    return
                async with self._phase(Phase.PREPARING, "settings"):
                    await sessions.apply_settings(host, state, None, force_mode=name == "mode",
                                                  force_model=name == "model")
        except BaseException:
            setattr(state, name, previous)
            raise

    # -- turns -------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        return await self.turns.prompt(self._sessions[session_id], prompt, turn)

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        state = self._sessions.get(session_id)
        return state is not None and await self.turns.steer(state, prompt, turn)

    async def cancel(self, session_id: str) -> None:
        state = self._sessions.get(session_id)
        if state is not None:
            self.turns.cancel(state)

    async def aclose(self) -> None:
        await self.hosts.aclose()


@asynccontextmanager
async def open_muse_runtime(context: RuntimeContext) -> AsyncIterator[MuseRuntime]:
    """The runtime for one agent process; hosts start with their sessions."""
    async with anyio.create_task_group() as task_group:
        runtime = MuseRuntime(context, task_group)
        try:
            yield runtime
        finally:
            await runtime.aclose()
            task_group.cancel_scope.cancel()


__all__ = ["MODES", "MuseRuntime", "open_muse_runtime"]
