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

A prompt is `turn/start` (`submitting` until the acknowledgement), then the session's view
notifications, in wire order, are folded by a `TurnTranslator` until `turn/completed`. They wait
in a bounded queue (`acp_agent.sessions.queue`): while it is full the host's reader waits, so a client that stops
reading stalls the host rather than growing the agent's memory; the prompt never waits for a host
answer while it should drain that queue (cancels, approvals and questions run in their own tasks).
Approvals become permission questions asked in their own tasks (the turn keeps streaming).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any, Final

import anyio
import anyio.abc
import attrs

from acp_agent.provider import (
    DEFAULT_MAX_ITEMS,
    ConfigOption,
    ConnectionClosed,
    ContentBlock,
    FailureKind,
    FailureObservation,
    McpServer,
    Notice,
    Phase,
    PhaseDeadlineExceeded,
    PhaseFailed,
    ProviderRuntime,
    RpcError,
    RuntimeContext,
    RuntimeReplaced,
    SessionChannel,
    SessionFailure,
    SessionListing,
    SessionModeState,
    SessionNotFound,
    SessionStart,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    TurnQueue,
    additional_directories,
    bound,
    executable_problem,
)
from acp_agent.provider import (
    idle_release_s as read_idle_release,
)
from acp_agent_muse import approvals, find_muse, items, models, sessions
from acp_agent_muse.classify import (
    HOST_TITLE,
    SESSION_NOT_LOADED_CODE,
    fingerprint_notice_text,
    host_lost,
    host_unavailable,
    request_error_observation,
)
from acp_agent_muse.host import MuseHost
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
from acp_agent_muse.sessions import ActiveTurn, Emit, MuseSession, QueueItem
from acp_agent_muse.translate import TurnTranslator

log = logging.getLogger(__name__)
COMMAND_REJECTED_CODE: Final = -32030
"""MSP `commandRejected`: for `turn/steer`, the turn it names is not the running one."""
PROVIDER = "muse"

IDLE_VAR: Final = "ACP_AGENT_MUSE_IDLE_RELEASE_MS"
DEFAULT_IDLE_MS: Final = 60_000
MODELS_BUDGET_S: Final = 5.0
LEAVE_TIMEOUT_S: Final = 5.0
CANCEL_TIMEOUT_S: Final = 10.0
LIST_PAGE: Final = 50
TURN_QUEUE_ITEMS = DEFAULT_MAX_ITEMS
"""How many host notifications a running prompt holds before the host's reader waits (backpressure)."""

def idle_release_s(environ: Mapping[str, str]) -> float:
    """The core's reader; a host is always released in the end (0 is the default, not never)."""
    return read_idle_release(environ, IDLE_VAR, default_ms=DEFAULT_IDLE_MS) or DEFAULT_IDLE_MS / 1000


def _version() -> str:
    try:
        return metadata.version("acp-agent-muse")
    except metadata.PackageNotFoundError:
        return "0"


# --- the runtime -------------------------------------------------------------------------------------------


class MuseRuntime(ProviderRuntime):
    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup) -> None:
        self.context = context
        self.clock = context.clock
        self._tg = task_group
        self._sessions: dict[str, MuseSession] = {}
        self._hosts: set[MuseHost] = set()
        self._idle_s = idle_release_s(context.environ)
        self._version = _version()
        self._fingerprint_noticed = False
        self._router = context.router
        self._router.serve(self._outside)
        self._kept_efforts: dict[str, str] = {}
        """The effort chosen per session, kept after it closes so a resume or fork runs with it."""

    # -- phases ------------------------------------------------------------------------------------------

    def _phase(self, phase: Phase, label: str, *, mutation: bool = False) -> Any:
        """A backend wait under its phase's deadline (the core's texts name the phase and the budget)."""
        return self.clock.phase(phase, label=label, mutation=mutation)

    # -- hosts ---------------------------------------------------------------------------------------------

    async def _spawn(self, label: str, cwd: str | None) -> MuseHost:
        """Start a host and complete the MSP handshake, all under the `initializing` budget."""
        executable = find_muse(self.context.environ)
        if executable is None:
            raise PhaseFailed(host_unavailable(Phase.INITIALIZING.value, "was not found (no `muse` on PATH)"))
        host = MuseHost(name=label, route=self._route, on_lost=self._host_lost)
        try:
            async with self._phase(Phase.INITIALIZING, f"{label}: spawn and initialize"):
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
            await self._stop(host)
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
            self._router.keep_notice(Notice(text))

    async def _route(self, host: MuseHost, method: str, params: Mapping[str, Any]) -> None:
        """Every frame a host sends, in wire order: into the running prompt, or handled outside one."""
        state = self._sessions.get(host.session_id) if host.session_id else None
        if state is None or state.host is not host:
            return
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
        else:
            log.debug("dropped %s outside a prompt of session %s", method, state.session_id)

    async def _stop(self, host: MuseHost) -> None:
        """Stop a host (and reap it); a prompt still running on it learns it from its queue."""
        await host.stop()
        self._ended(host)

    def _ended(self, host: MuseHost) -> None:
        self._hosts.discard(host)
        state = self._sessions.get(host.session_id) if host.session_id else None
        active = state.active if state is not None and state.host is host else None
        if active is not None and active.host is host:
            active.queue.fail()  # never waits: the reader that fills the queue has ended

    async def _host_lost(self, host: MuseHost) -> None:
        """A host that exited (or closed its output) without being asked to."""
        self._ended(host)
        state = self._sessions.get(host.session_id) if host.session_id else None
        if state is None or state.host is not host:
            return
        active = state.active
        state.lost = True
        log.warning("the host of session %s exited unexpectedly", state.session_id)
        if active is None:
            observation = FailureObservation(
                kind=FailureKind.TRANSPORT_LOST, native_kind="transportError",
                title=f"{HOST_TITLE} exited; it will be started again for the next prompt.", source="transport",
                outcome="failed", execution="notSubmitted",
                recovery_hint="Send the next prompt; the session is resumed in a new host.")
            # Awaited, in the host's task: nothing the session gets later overtakes it.
            await self._router.emit(state.session_id, SessionFailure(observation))

    # -- opening sessions ------------------------------------------------------------------------------------

    def _emit(self, state: MuseSession) -> Emit:
        return functools.partial(self._router.emit, state.session_id)

    def _setup(self, state: MuseSession) -> SessionStart:
        return SessionStart(state.session_id,
                            modes=SessionModeState(current_mode_id=state.mode, available_modes=list(MODES)),
                            config_options=models.options(state))

    def _adopt(self, state: MuseSession, host: MuseHost) -> None:
        host.session_id = state.session_id
        state.host = host
        state.needs_resume = False
        self._sessions[state.session_id] = state

    def _state(self, session_id: str) -> MuseSession:
        state = self._sessions.get(session_id)
        if state is None:
            raise SessionNotFound(session_id)
        return state

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        state = MuseSession(mint(), cwd, mcp=items.mcp_servers(mcp_servers),
                            roots=additional_directories(channel))
        state.busy += 1
        try:
            host = await self._spawn("muse serve (new session)", cwd)
            try:
                async with self._phase(Phase.PREPARING, "session/resume|start"):
                    served = await sessions.open_session(host, state, self._emit(state), restart=False)
                await models.discover(host, state)
                async with self._phase(Phase.PREPARING, "settings"):
                    await sessions.apply_settings(host, state, served)
            except BaseException:
                await self._stop(host)
                raise
            self._adopt(state, host)
            return self._setup(state)
        finally:
            state.busy -= 1
            self._arm_idle(state)

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        previous = self._sessions.get(session_id)
        state = MuseSession(session_id, cwd, mcp=items.mcp_servers(mcp_servers),
                            roots=additional_directories(channel), effort=self._kept_efforts.get(session_id))
        state.busy += 1
        try:
            host = await self._spawn("muse serve (load)" if replay else "muse serve (resume)", cwd)
            try:
                async with self._phase(Phase.READING, "session/resume"):
                    params: dict[str, Any] = {"sessionId": session_id, "excludeItems": not replay,
                                              **await sessions.mcp_config(host, state, self._emit(state))}
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
                        self._disarm_idle(previous)
                        await self._stop(host)
                        host = held
                        result = await sessions.ask(host, "session/resume", params, Phase.READING, command=True,
                                                 missing=session_id)
                await models.discover(host, state)
            except BaseException:
                if previous is not None and host is previous.host:
                    self._arm_idle(previous)  # still the session's host: it stays, as before the load
                else:
                    await self._stop(host)
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
                self._disarm_idle(previous)
                previous.closed = True
                if previous.host is not None and previous.host is not host:
                    await self._stop(previous.host)
            self._adopt(state, host)
            if replay:
                recogniser = functools.partial(self.context.hooks.recognise_history, PROVIDER)
                for event in items.history_events(result, self.context.redact, recogniser):
                    await channel.emit(event)
            return self._setup(state)
        finally:
            state.busy -= 1
            self._arm_idle(state)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        host = await self._spawn("muse serve (list)", cwd)
        try:
            params: dict[str, Any] = {"limit": LIST_PAGE}
            if cwd:
                params["workspaceRoot"] = cwd
            if cursor:
                params["cursor"] = cursor
            async with self._phase(Phase.READING, "session/list"):
                result = await sessions.ask(host, "session/list", params, Phase.READING)
        finally:
            await self._stop(host)
        listed = [info for info in (items.session_info(row, cwd) for row in result.get("sessions") or []
                                    if isinstance(row, Mapping)) if info is not None]
        next_cursor = result.get("nextCursor")
        return SessionListing(listed, next_cursor if isinstance(next_cursor, str) and next_cursor else None)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        host = await self._spawn("muse serve (fork)", cwd)
        try:
            async with self._phase(Phase.READING, "session/read (fork source)"):
                await sessions.ask(host, "session/read", {"sessionId": session_id, "excludeItems": True},
                                Phase.READING, missing=session_id)
            async with self._phase(Phase.FORKING, "session/fork", mutation=True):
                result = await sessions.ask(host, "session/fork", {"sessionId": session_id, "excludeItems": True},
                                         Phase.FORKING, command=True, mutation=True)
            served = mapping(result.get("session"))
            new_id = served.get("sessionId")
            if not isinstance(new_id, str) or not new_id:
                raise PhaseFailed(request_error_observation(-32603, f"{HOST_TITLE} answered session/fork without "
                                                            "a session id.", None, Phase.FORKING.value,
                                                            mutation=True))
            state = MuseSession(new_id, cwd, mcp=items.mcp_servers(mcp_servers),
                                roots=additional_directories(channel), effort=self._kept_efforts.get(session_id))
            if state.effort is not None:
                self._kept_efforts[new_id] = state.effort
            state.mode = MODE_OF_APPROVAL.get(served_mode(served) or "", DEFAULT_MODE)
            model = served.get("modelId")
            state.model = model if isinstance(model, str) and model else None
            await models.discover(host, state)
        except BaseException:
            await self._stop(host)
            raise
        self._adopt(state, host)
        self._arm_idle(state)
        return self._setup(state)

    async def close_session(self, session_id: str) -> None:
        state = self._sessions.get(session_id)
        if state is None:
            return
        state.closed = True
        self._disarm_idle(state)
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
            await self._stop(host)  # a prompt still running learns it from its queue
        finally:
            if self._sessions.get(session_id) is state:
                del self._sessions[session_id]

    # -- settings ---------------------------------------------------------------------------------------------

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        state = self._state(session_id)
        previous = state.mode
        state.mode = mode_id
        try:
            await self._live_settings(state, force_mode=True)
        except BaseException:
            state.mode = previous
            raise

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        state = self._state(session_id)  # an offered option and one of its values: the core checked both
        if config_id == EFFORT:
            # Sent with each turn/start (MSP's per-turn `reasoningEffort`): nothing to apply now.
            state.effort = self._kept_efforts[session_id] = value
            return models.options(state)
        previous = state.model
        state.model = value
        try:
            await self._live_settings(state, force_model=True)
        except BaseException:
            state.model = previous
            raise
        tiers, _ = state.efforts.get(value, ([], None))
        if state.effort is not None and state.effort not in {tier.value for tier in tiers}:
            # The new model has no such tier: its own default from now on.
            state.effort = None
            self._kept_efforts.pop(session_id, None)
        return models.options(state)

    async def _live_settings(self, state: MuseSession, *, force_mode: bool = False, force_model: bool = False) -> None:
        """Apply a changed setting to a running host now; a released host gets it when it restarts."""
        state.busy += 1
        self._disarm_idle(state)
        try:
            async with state.lock:
                host = state.host
                if host is None or not host.alive or state.needs_resume:
                    return
                async with self._phase(Phase.PREPARING, "settings"):
                    await sessions.apply_settings(host, state, None, force_mode=force_mode, force_model=force_model)
        finally:
            state.busy -= 1
            self._arm_idle(state)

    # -- idle release --------------------------------------------------------------------------------------

    def _disarm_idle(self, state: MuseSession) -> None:
        if state.idle_scope is not None:
            state.idle_scope.cancel()
            state.idle_scope = None

    def _arm_idle(self, state: MuseSession) -> None:
        self._disarm_idle(state)
        if state.busy or state.closed or state.host is None or not state.host.alive:
            return
        scope = anyio.CancelScope()
        state.idle_scope = scope
        self._tg.start_soon(self._release_when_idle, state, scope)

    async def _release_when_idle(self, state: MuseSession, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep(self._idle_s)
            async with state.lock:
                host = state.host
                if state.busy or state.idle_scope is not scope or host is None or not host.alive:
                    return
                log.info("releasing the idle host of session %s (pid %s)", state.session_id, host.pid)
                state.host = None
                state.idle_scope = None
                await self._stop(host)

    async def _ensure_host(self, state: MuseSession) -> MuseHost:
        """The session's live host: started again and the session resumed when it was released or died."""
        async with state.lock:
            host = state.host
            if host is not None and host.alive and not state.needs_resume:
                return host
            if host is not None and host.alive:
                async with self._phase(Phase.PREPARING, "session/resume (unloaded)"):
                    served = await sessions.open_session(host, state, self._emit(state), restart=True)
                    await sessions.apply_settings(host, state, served)
                state.needs_resume = False
                return host
            host = await self._spawn("muse serve (restart)", state.cwd)
            try:
                async with self._phase(Phase.PREPARING, "session/resume (restart)"):
                    served = await sessions.open_session(host, state, self._emit(state), restart=True)
                    await sessions.apply_settings(host, state, served)
            except BaseException:
                await self._stop(host)
                raise
            self._adopt(state, host)
            if state.lost:
                state.lost = False
                await self._router.emit(state.session_id, RuntimeReplaced())
            return host

    # -- turns -------------------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        state = self._state(session_id)
        state.busy += 1
        self._disarm_idle(state)
        try:
            host = await self._ensure_host(state)
            active = ActiveTurn(channel=turn, host=host, queue=TurnQueue[QueueItem](TURN_QUEUE_ITEMS))
            state.active = active
            self._router.start_turn(session_id, active.queue)
            try:
                return await self._run_turn(state, host, active, prompt)
            except anyio.get_cancelled_exc_class():
                # Cut off before the host said the turn is over (the cancel grace ran out, or
                # shutdown): the host would queue every later turn behind it. Stop that host; the
                # session is resumed in a new one for the next prompt.
                log.warning("the turn of session %s did not end in time; stopping its host", state.session_id)
                await self._stop(active.host)
                raise
            finally:
                state.active = None
                active.known.set()
                await self._router.end_turn(session_id, active.queue)
        finally:
            state.busy -= 1
            self._arm_idle(state)

    async def _submit(self, state: MuseSession, host: MuseHost, active: ActiveTurn,
                      prompt: Sequence[ContentBlock]) -> Mapping[str, Any]:
        params: dict[str, Any] = {"sessionId": state.session_id, "input": items.prompt_input(prompt)}
        if state.effort is not None:
            params["reasoningEffort"] = state.effort
        if state.roots:
            params["workspaceRoots"] = [state.cwd, *state.roots]
        turn = active.channel
        try:
            async with self._phase(Phase.SUBMITTING, "turn/start"):
                return await host.command("turn/start", params)
        except ConnectionClosed:
            observation = host_lost(Phase.SUBMITTING.value, submitted=True)
            turn.record_failure(observation)
            raise TurnFailed(observation) from None
        except PhaseDeadlineExceeded:
            # The acknowledgement never came: stop that host (and whatever it may be running); the
            # session is resumed in a new one for the next prompt. The deadline stays the cause.
            await self._stop(host)
            raise

    async def _run_turn(self, state: MuseSession, host: MuseHost, active: ActiveTurn,
                        prompt: Sequence[ContentBlock]) -> TurnEnd:
        turn = active.channel
        try:
            ack = await self._submit(state, host, active, prompt)
        except RpcError as exc:
            if exc.code != SESSION_NOT_LOADED_CODE:
                raise TurnFailed(request_error_observation(exc.code, exc.message, exc.data,
                                                           Phase.SUBMITTING.value)) from None
            # The host unloaded the session (nothing was admitted): resume it and submit once more.
            state.needs_resume = True
            host = await self._ensure_host(state)
            active.host = host
            try:
                ack = await self._submit(state, host, active, prompt)
            except RpcError as again:
                raise TurnFailed(request_error_observation(again.code, again.message, again.data,
                                                           Phase.SUBMITTING.value)) from None
        turn_id = ack.get("turnId")
        if not isinstance(turn_id, str) or not turn_id:
            observation = request_error_observation(-32603, f"{HOST_TITLE} acknowledged the turn without a turn id.",
                                                    None, Phase.SUBMITTING.value)
            observation = attrs.evolve(observation, execution="possiblySubmitted", outcome="unknown")
            turn.record_failure(observation)
            raise TurnFailed(observation)
        translator = TurnTranslator(turn_id, classify=bound(self.context.hooks, PROVIDER), window=state.window)
        active.translator = translator
        active.acknowledged(turn_id)
        if active.cancel_requested:
            self._tg.start_soon(self._send_cancel, state, active)
        try:
            async with self._phase(Phase.RUNNING, "turn"), anyio.create_task_group() as questions:
                end = await active.consume(functools.partial(approvals.take, state, active, questions),
                                           functools.partial(self._gone, active))
                questions.cancel_scope.cancel()
        finally:
            state.window = translator.window
        return active.outcome(end)

    @staticmethod
    def _gone(active: ActiveTurn) -> TurnEnd | FailureObservation:
        """The turn's queue ended: its host is gone."""
        if active.cancel_requested and active.host.stop_requested:
            return TurnEnd("cancelled")  # we stopped the host of a cancelled turn (close, logout)
        return host_lost(Phase.RUNNING.value, submitted=True)

    async def _send_cancel(self, state: MuseSession, active: ActiveTurn) -> None:
        if active.cancel_sent or active.turn_id is None or not active.host.alive:
            return
        active.cancel_sent = True
        with anyio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                await active.host.command("turn/cancel", {"sessionId": state.session_id, "turnId": active.turn_id})
            except (RpcError, ConnectionClosed) as exc:
                log.info("turn/cancel failed: %s", type(exc).__name__)

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """MSP `turn/steer` naming the running turn (`expectedTurnId`): the host puts the input into
        it. `-32030 commandRejected` (that turn is no longer the running one) means the turn is over."""
        state = self._sessions.get(session_id)
        active = state.active if state is not None else None
        if state is None or active is None or active.channel is not turn or active.cancel_requested:
            return False
        async with self._phase(Phase.SUBMITTING, "turn/steer"):
            await active.known.wait()  # turn/start acknowledged
            if active.turn_id is None or state.active is not active or not active.host.alive:
                return False
            params = {"sessionId": state.session_id, "expectedTurnId": active.turn_id,
                      "input": items.prompt_input(prompt)}
            try:
                await active.host.command("turn/steer", params)
            except ConnectionClosed:
                raise PhaseFailed(host_lost(Phase.SUBMITTING.value, submitted=True)) from None
            except RpcError as exc:
                if state.active is not active or exc.code == COMMAND_REJECTED_CODE:
                    log.info("turn/steer found the turn over (%d)", exc.code)
                    return False
                raise PhaseFailed(request_error_observation(exc.code, exc.message, exc.data,
                                                            Phase.SUBMITTING.value)) from None
        return True

    async def cancel(self, session_id: str) -> None:
        state = self._sessions.get(session_id)
        active = state.active if state is not None else None
        if state is None or active is None:
            return
        active.cancel_requested = True
        # In the background: the turn's own `turn/completed` (or its host's end) says when it is over.
        self._tg.start_soon(self._send_cancel, state, active)

    # -- shutdown ----------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for state in self._sessions.values():
                state.closed = True
                self._disarm_idle(state)
            hosts = list(self._hosts)
            async with anyio.create_task_group() as stopping:
                for host in hosts:
                    stopping.start_soon(self._stop, host)


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
