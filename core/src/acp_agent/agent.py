"""The provider-neutral ACP agent: routes ACP methods to the provider runtime.

It owns the runtime and the sessions; running a prompt (a turn's start, the provider's turn,
its cancellation, its end) lives in `acp_agent.sessions.prompt_runner`, what a turn does with the neutral
events the provider emits (ACP updates, failure records, baseline errors, auth status) in
`acp_agent.sessions.session`, and sign-in in `acp_agent.signin`. It never imports a vendor SDK and knows no
vendor's event shapes.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import cattrs
from attrs import define, field

from acp_agent.backends.contract import (
    NotSupported,
    ProviderRuntime,
    ProviderSpec,
    RuntimeContext,
    SessionNotFound,
    SessionStart,
    TurnFailed,
)
from acp_agent.backends.home import BackendHost, RuntimeHost
from acp_agent.backends.phases import PhaseClock, PhaseDeadlineExceeded, PhaseFailed
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.auth_status import (
    CredentialState,
    KeyringStore,
    auth_status_negotiated,
    with_keyring_credential,
)
from acp_agent.failures.hooks import FailureHooks
from acp_agent.failures.protocol import (
    FailureKind,
    FailureObservation,
    IncidentRegistry,
    advertised_meta,
    negotiated,
)
from acp_agent.failures.redaction import Redactor, mcp_secret_values
from acp_agent.failures.scrub import ScrubbingSendStream
from acp_agent.sessions.prompt_runner import InputWatch, TurnRunner
from acp_agent.signin import SignIn
from acp_agent.startup.prestart import Prestarted
from acp_agent.wire import acp
from acp_agent.wire.acp import Methods as M
from acp_agent.wire.convert import UNSET, Unset, clip, describe_error
from acp_agent.wire.rpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Connection,
    Methods,
    Reply,
    RpcError,
)

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.holds import SessionHolds
    from acp_agent.sessions.routing import SessionRouter
    from acp_agent.sessions.session import PERMISSION_TIMEOUT_S, Outbox, PendingSession, Session, Turn

log = logging.getLogger(__name__)

T = TypeVar("T")
RESOURCE_NOT_FOUND = -32002
SHUTDOWN_BUDGET_S = 4.5
EOF_GRACE_S = 3.0
"""Requests received before stdin's EOF may finish this long; then they are answered -32800."""
STOP_BUDGET_S = EOF_GRACE_S + SHUTDOWN_BUDGET_S + 1.0
"""After a signal (`Agent.stop`), how long the orderly exit may take before it is cut short."""
CANCEL_GRACE_S = 10.0
INPUT_GONE_CANCEL_GRACE_S = 1.0
"""With the client gone nobody waits for the answer, and shutdown closes every backend anyway."""
LOGOUT_COMMAND_BUDGET_S = 20.0


@define
class AgentSettings:
    """Everything the agent needs that comes from outside the protocol."""

    provider: ProviderSpec
    environ: Mapping[str, str]
    clock: PhaseClock
    redact: Redactor
    keyring: KeyringStore | None = None
    epoch: str = field(factory=lambda: uuid.uuid4().hex[:12])
    agent_version: str = "0"
    hooks: FailureHooks = field(factory=installed_hooks)
    agent_command: tuple[str, ...] = ("acp-agent",)
    """How a terminal starts this agent again (`_meta["terminal-auth"]` of terminal auth methods)."""
    prestarted: Prestarted = field(factory=Prestarted)
    """Backends the command line started before the agent's imports, for the runtime to claim."""


class Agent:
    """The ACP agent for one provider over one connection."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.provider = settings.provider
        self.signin = SignIn(self.provider, settings.environ, settings.keyring, settings.redact,
                             settings.agent_command, backend_environ=self._backend_environ,
                             logout_budget_s=LOGOUT_COMMAND_BUDGET_S)
        self.converter = acp.make_acp_converter()
        self.sessions: dict[str, Session] = {}
        self._opens = _Opens()
        """Loads and resumes of one session id take turns; its other requests wait for them."""
        self._holds: SessionHolds | None = None
        self._router: SessionRouter | None = None
        self._outbox: Outbox | None = None
        self.capable = False
        """The client negotiated the failure extension (`initialize`)."""
        self.auth_status = False
        """The client negotiated auth status (`initialize`)."""
        self.client_capabilities = acp.ClientCapabilities()
        self.connection: Connection | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self.backend = BackendHost(self.provider, self.settings.prestarted)
        """Opens, replaces and closes the provider runtime."""
        self._answered: anyio.Event | None = None
        self._answered_once = False
        self._input: InputWatch | None = None
        self.turns = TurnRunner(self.provider.name, start_runtime=self.runtime,
                                running_runtime=lambda: self.backend.running,
                                cancel_grace_s=CANCEL_GRACE_S, input_gone_cancel_grace_s=INPUT_GONE_CANCEL_GRACE_S)
        """Runs the prompts: a turn's lifecycle, its cancellation, each session's prompt line."""

    # -- a session's machinery, built with the first session ----------------------------------------

    @property
    def router(self) -> SessionRouter:
        """The one place the runtime's events go, to a running turn or a session (and its backlog)."""
        if self._router is None:
            from acp_agent.sessions.routing import SessionRouter

            self._router = SessionRouter()
        return self._router

    @property
    def outbox(self) -> Outbox:
        """The client as `initialize` negotiated it, for the sessions (built on first use, so
        `initialize` is answered without loading the session machinery)."""
        if self._outbox is None:
            from acp_agent.sessions.session import Outbox

            self._outbox = Outbox(self.converter, self.settings.redact, self.provider.name, self.credentials,
                                  self.provider.credentials.env_vars, connection=self.connection)
            self._negotiate(self._outbox)
        return self._outbox

    def _negotiate(self, outbox: Outbox) -> None:
        from acp_agent.sessions.presentation import ClientFeatures

        capabilities = self.client_capabilities
        outbox.capable = self.capable
        outbox.auth_status = self.auth_status
        outbox.features = ClientFeatures.from_capabilities(capabilities.meta, capabilities.elicitation)

    @property
    def holds(self) -> SessionHolds:
        """The sessions this agent process holds against other agent processes (`acp_agent.sessions.holds`)."""
        if self._holds is None:
            from acp_agent.sessions.holds import SessionHolds, state_directory

            self._holds = SessionHolds(self.provider.name, state_directory(self.settings.environ))
        return self._holds

    def _hold(self, session_id: str) -> None:
        """Hold the session for this agent process, or say where it is open and what to do."""
        from acp_agent.sessions.holds import HeldElsewhere

        try:
            self.holds.acquire(session_id)
        except HeldElsewhere as exc:
            where = f"another acp-agent process (pid {exc.holder})" if exc.holder else "another acp-agent process"
            raise RpcError(INVALID_PARAMS, f"Session {clip(session_id)} is open in {where}, e.g. another editor "
                           "window: close it there (or quit that window), then open it here.",
                           {"field": "sessionId", "heldBy": exc.holder}) from None

    def _unhold(self, session_id: str) -> None:
        if self._holds is not None:
            self._holds.release(session_id)

    # -- wiring ------------------------------------------------------------------------------

    def methods(self) -> Methods:
        handlers: dict[str, Callable[[Any], Any]] = {
            M.INITIALIZE: self.initialize,
            M.AUTHENTICATE: self.authenticate,
            M.LOGOUT: self.logout,
            M.SESSION_NEW: self.new_session,
            M.SESSION_LOAD: self.load_session,
            M.SESSION_LIST: self.list_sessions,
            M.SESSION_RESUME: self.resume_session,
            M.SESSION_FORK: self.fork_session,
            M.SESSION_CLOSE: self.close_session,
            M.SESSION_DELETE: self.delete_session,
            M.SESSION_PROMPT: self.prompt,
            M.SESSION_SET_MODE: self.set_mode,
            M.SESSION_SET_CONFIG_OPTION: self.set_config_option,
        }
        caps = self.provider.capabilities
        unsupported = {
            M.SESSION_LOAD: caps.load_session,
            M.SESSION_LIST: caps.list_sessions,
            M.SESSION_RESUME: caps.resume_session,
            M.SESSION_CLOSE: caps.close_session,
            M.SESSION_FORK: caps.fork_session,
            M.SESSION_DELETE: caps.delete_session,
        }
        for method, supported in unsupported.items():
            if not supported:
                handlers.pop(method)
        if caps.steering:
            handlers[M.SESSION_STEERING] = self.steer
        return Methods(requests=handlers, notifications={M.SESSION_CANCEL: self.cancel})

    async def serve(self, receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream,
                    *, max_line_bytes: int | None = None) -> None:
        """Serve one connection until EOF (or cancellation), then close every session and backend.

        Every frame goes out through the scrubber, so no secret the redactor holds reaches the
        client, whichever part of the agent wrote it.
        """
        self._input = InputWatch(receive, self.turns)
        self.connection = Connection(self._input, ScrubbingSendStream(send, self.settings.redact), self.methods())
        if self._outbox is not None:
            self._outbox.connection = self.connection
        if max_line_bytes:
            self.connection.max_line_bytes = max_line_bytes
        self.connection.eof_grace_s = EOF_GRACE_S
        self.connection.end_when_output_fails = True  # a client that closed stdout is gone
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            self.backend.attach(task_group)
            if self.provider.start_early:
                task_group.start_soon(self._open_early)
            if self.signin.keyring_needed():
                task_group.start_soon(self._load_keyring)
            try:
                await self.connection.serve()
            finally:
                with anyio.CancelScope(shield=True):
                    await self.shutdown()
                task_group.cancel_scope.cancel()

    async def _open_early(self) -> None:
        """Open a `start_early` runtime as soon as `initialize` is answered (or a request needs it).

        Not before: building its context and importing its modules would delay the answer, and
        the backend itself is already booting (`acp_agent.startup.prestart`). Without the keyring:
        loading its backends costs ~200 ms; a secret found there makes the first session reopen it.
        """
        await self._initialize_answered.wait()
        if self.backend.current is None:
            self.backend.open(self.runtime_context(dict(self.settings.environ)), early=True)

    async def _load_keyring(self) -> None:
        """Load the keyring's backend from a thread of its own once `initialize` is answered (not
        before: it would compete with the answer), so that the first session only asks it instead
        of first importing and probing keyring's backends (100-200 ms here). Bounded like every
        keyring call; a session that needs it sooner waits for the same load (`KeyringStore`)."""
        await self._initialize_answered.wait()
        await self.signin.load_keyring()

    def stop(self) -> None:
        """Exit as asked (a signal): every running prompt is answered with a worker-shutdown
        failure, then the input ends as at EOF, so `serve` returns once the answers are written
        and the backends are closed (`shutdown`)."""
        self.turns.stop()
        if self._input is not None:
            self._input.end()

    async def shutdown(self) -> None:
        """Close every session and the backend within the shutdown budget."""
        with anyio.move_on_after(SHUTDOWN_BUDGET_S):
            for session in list(self.sessions.values()):
                if session.turn is not None and session.turn.run_scope is not None:
                    session.turn.run_scope.cancel()
            self.sessions.clear()
            try:
                await self.backend.close()
            finally:
                if self._holds is not None:
                    self._holds.release_all()

    # -- the runtime ------------------------------------------------------------------------------

    @property
    def _initialize_answered(self) -> anyio.Event:
        """Set once `initialize` is answered (created on first use: an event needs the loop)."""
        if self._answered is None:
            self._answered = anyio.Event()
            if self._answered_once:  # before the loop ran (`initialize_now`)
                self._answered.set()
        return self._answered

    def runtime_context(self, environ: dict[str, str]) -> RuntimeContext:
        return RuntimeContext(
            environ=environ,
            clock=self.settings.clock,
            redact=self.settings.redact,
            client_fs_read=self.client_capabilities.fs.read_text_file,
            client_fs_write=self.client_capabilities.fs.write_text_file,
            client_terminal=self.client_capabilities.terminal,
            hooks=self.settings.hooks,
            router=self.router,
            prestarted=self.settings.prestarted,
        )

    async def _fresh_context(self) -> RuntimeContext:
        """The context a runtime opened now gets (its environment carries a keyring key)."""
        return self.runtime_context(await self._backend_environ())

    async def _backend_environ(self) -> dict[str, str]:
        state = await self.credentials()
        if state.source == "keyring":
            self.settings.redact.add(state.secret)
        return with_keyring_credential(self.settings.environ, state, self.provider.credentials)

    async def runtime(self) -> ProviderRuntime:
        self._initialize_answered.set()  # a request needs the runtime: an early one opens now too
        return await self.backend.runtime(self._fresh_context, sessions_open=bool(self.sessions))

    @property
    def _host(self) -> RuntimeHost | None:
        """The runtime's current opening (tests reach the runtime through it)."""
        return self.backend.current

    # -- helpers ----------------------------------------------------------------------------------

    def _parse(self, params: Any, cls: type[T]) -> T:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object", {"field": "params"})
        try:
            structured: T = self.converter.structure(params, cls)
            return structured
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            path, message = describe_error(exc)
            raise RpcError(INVALID_PARAMS, f"Invalid params: {path}: {message}", {"field": path}) from None

    def _dump(self, value: Any) -> Any:
        return self.converter.unstructure(value)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _session_not_found(session_id)
        return session

    async def _opened(self, session_id: str) -> Session:
        """The session, once a load or resume of it under way has finished (it may fail)."""
        await self._opens.settled(session_id)
        return self._session(session_id)

    @staticmethod
    def _check_cwd(cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path, got {clip(cwd)!r}", {"field": "cwd"})
        if not os.path.isdir(cwd):
            raise RpcError(INVALID_PARAMS, f"cwd does not exist or is not a directory: {clip(cwd)}", {"field": "cwd"})

    @asynccontextmanager
    async def _provider_call(self, what: str) -> AsyncIterator[None]:
        """Turn provider exceptions outside turns into JSON-RPC errors with failure data."""
        try:
            yield
        except RpcError:
            raise
        except NotSupported:
            raise RpcError(METHOD_NOT_FOUND, f"{what} is not supported by the {self.provider.title} provider") from None
        except SessionNotFound as exc:
            raise _session_not_found(str(exc)) from None
        except (PhaseDeadlineExceeded, PhaseFailed, TurnFailed) as exc:
            from acp_agent.sessions.session import baseline_error

            raise baseline_error(exc.observation, self.settings.redact) from None
        except Exception:
            from acp_agent.sessions.session import baseline_error

            log.exception("%s failed in provider %s", what, self.provider.name)
            raise baseline_error(FailureObservation(
                kind=FailureKind.INTERNAL_ERROR, native_kind="internalError",
                title=f"The agent hit an internal error during {what}.", source="adapter",
                execution="notSubmitted"), self.settings.redact) from None

    async def credentials(self) -> CredentialState:
        return await self.signin.credentials()

    # -- initialize and auth ------------------------------------------------------------------------

    async def initialize(self, params: Any) -> Any:
        request = self._parse(params, acp.InitializeRequest)
        wanted = auth_status_negotiated(request.client_capabilities.meta, self.provider.name)
        return self._initialized(request, await self.signin.auth_meta(wanted))

    def initialize_now(self, params: Any) -> Reply | None:
        """`initialize` answered without the event loop (`acp_agent.startup.early`): the same answer, or
        None when it needs the loop (a client that negotiated auth status: the keyring is asked).
        Raises RpcError as `initialize` does, before anything changes."""
        request = self._parse(params, acp.InitializeRequest)
        if auth_status_negotiated(request.client_capabilities.meta, self.provider.name):
            return None
        return self._initialized(request, UNSET)

    def _initialized(self, request: acp.InitializeRequest, auth_meta: dict[str, Any] | Unset) -> Reply:
        """What the client declared is recorded and the answer built (`initialize` may come again:
        the newest declaration wins)."""
        self.client_capabilities = self.signin.client_capabilities = request.client_capabilities
        client_meta = request.client_capabilities.meta
        self.capable = negotiated(client_meta)
        self.auth_status = auth_status_negotiated(client_meta, self.provider.name)
        if self._outbox is not None:  # sessions opened before `initialize` follow what it negotiated
            self._negotiate(self._outbox)
        caps = self.provider.capabilities
        session_caps = acp.SessionCapabilities(
            list={} if caps.list_sessions else UNSET,
            resume={} if caps.resume_session else UNSET,
            close={} if caps.close_session else UNSET,
            fork={} if caps.fork_session else UNSET,
            delete={} if caps.delete_session else UNSET,
            additional_directories={} if caps.additional_directories else UNSET,
        )
        meta: dict[str, Any] = {}
        if caps.steering:
            # Where claude-agent-acp and codex-acp advertise `_session/steering`: the top-level
            # `_meta` of the initialize response, beside `agentCapabilities`.
            meta["steering"] = {"supported": True}
        if self.capable:
            meta.update(advertised_meta())
        if isinstance(auth_meta, dict):
            meta.update(auth_meta)
        response = acp.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=acp.AgentCapabilities(
                load_session=caps.load_session,
                prompt_capabilities=acp.PromptCapabilities(
                    image=caps.image, audio=caps.audio, embedded_context=caps.embedded_context),
                mcp_capabilities=acp.McpCapabilities(http=caps.mcp_http, sse=caps.mcp_sse),
                session_capabilities=session_caps,
                auth=acp.AgentAuthCapabilities(logout={}),
            ),
            auth_methods=self.signin.auth_methods(),
            agent_info=acp.Implementation(name=f"acp-agent-{self.provider.name}",
                                          version=self.settings.agent_version,
                                          title=f"{self.provider.title} (acp-agent)"),
            meta=meta or UNSET,
        )
        return Reply(self._dump(response), self._mark_answered)

    def _mark_answered(self, written: bool) -> None:
        self._answered_once = True
        if self._answered is not None:
            self._answered.set()

    async def authenticate(self, params: Any) -> Any:
        request = self._parse(params, acp.AuthenticateRequest)
        await self.signin.authenticate(request.method_id)
        await self.backend.replace_when_idle(sessions_open=bool(self.sessions))
        return self._dump(acp.MetaOnlyResponse(meta=await self.signin.auth_meta(self.auth_status)))

    async def logout(self, params: Any) -> Any:
        self._parse(params, acp.LogoutRequest)
        for session in list(self.sessions.values()):
            await self._end_session(session)
        await self.backend.close()
        await self.signin.logout()
        return self._dump(acp.MetaOnlyResponse(meta=await self.signin.auth_meta(self.auth_status)))

    # -- sessions ---------------------------------------------------------------------------------

    def _setup_fields(self, start: SessionStart) -> dict[str, Any]:
        return {
            "modes": start.modes if start.modes is not None else UNSET,
            "config_options": list(start.config_options) if start.config_options is not None else UNSET,
        }

    def _new_session_state(self, session_id: str, cwd: str, credentials: dict[str, str] | None = None) -> Session:
        from acp_agent.sessions.session import Session

        return Session(self.outbox, session_id, cwd, IncidentRegistry(session_id, self.settings.epoch), self.router,
                       credentials=dict(credentials or {}))

    def _client_credentials(self, meta: Any) -> dict[str, str]:
        """Credentials a client hands over for one session: `_meta["<provider>/credentials"]`.

        Only the provider's own variables are accepted; every value is redacted from then on.
        """
        key = f"{self.provider.name}/credentials"
        offered = meta.get(key) if isinstance(meta, dict) else None
        if offered is None:
            return {}
        spec = self.provider.credentials
        if not spec.per_session:
            raise RpcError(INVALID_PARAMS, f"The {self.provider.title} provider cannot use credentials for one session; "
                           "configure them for the agent instead.", {"field": f"_meta.{key}"})
        allowed = set(spec.env_vars) | set(spec.client_env_vars)
        if not isinstance(offered, dict) or not offered or any(
                name not in allowed or not isinstance(value, str) or not value for name, value in offered.items()):
            raise RpcError(INVALID_PARAMS, f"_meta[{key!r}] must map some of {sorted(allowed)} to non-empty strings",
                           {"field": f"_meta.{key}"})
        for name, value in offered.items():
            if name in spec.env_vars:
                self.settings.redact.add(value)
        return dict(offered)

    def _additional_directories(self, value: Any) -> tuple[str, ...]:
        """A request's `additionalDirectories`: absolute existing directories, for a provider that
        can widen its workspace; refused (-32602) rather than silently ignored otherwise."""
        if not isinstance(value, list) or not value:
            return ()
        if not self.provider.capabilities.additional_directories:
            raise RpcError(INVALID_PARAMS, f"The {self.provider.title} provider cannot add workspace directories",
                           {"field": "additionalDirectories"})
        for directory in value:
            if not isinstance(directory, str) or not os.path.isabs(directory) or not os.path.isdir(directory):
                raise RpcError(INVALID_PARAMS, "additionalDirectories must be absolute paths of existing "
                               f"directories, got {clip(str(directory))!r}", {"field": "additionalDirectories"})
        return tuple(dict.fromkeys(value))

    def _hold_mcp_secrets(self, params: Any) -> None:
        """From the raw request, before it is checked, so no answer (an error included) can echo them."""
        if isinstance(params, dict):
            self.settings.redact.add(*mcp_secret_values(params.get("mcpServers")))

    async def new_session(self, params: Any) -> Any:
        self._hold_mcp_secrets(params)
        request = self._parse(params, acp.NewSessionRequest)
        return await self._create_session("session/new", request.cwd, request.meta, request.additional_directories,
                                          lambda runtime, channel: runtime.new_session(request.cwd, request.mcp_servers,
                                                                                       channel))

    async def fork_session(self, params: Any) -> Any:
        self._hold_mcp_secrets(params)
        request = self._parse(params, acp.ForkSessionRequest)
        return await self._create_session("session/fork", request.cwd, request.meta, request.additional_directories,
                                          lambda runtime, channel: runtime.fork_session(
                                              request.session_id, request.cwd, request.mcp_servers, channel))

    async def _create_session(self, what: str, cwd: str, meta: Any, directories: Any,
                              start: Callable[[ProviderRuntime, PendingSession], Awaitable[SessionStart]]) -> Reply:
        """A session the provider creates (new or fork): its events wait until the response is written."""
        from acp_agent.sessions.session import PendingSession

        self._check_cwd(cwd)
        pending = PendingSession(self.router, credentials=self._client_credentials(meta),
                                 additional_directories=self._additional_directories(directories))
        try:
            async with self._provider_call(what):
                started = await start(await self.runtime(), pending)
        except BaseException:
            pending.abandon()
            raise
        try:
            self._hold(started.session_id)
        except RpcError:  # (a fresh id another process holds: the backend must not keep it open)
            pending.abandon()
            runtime = self.backend.running
            if runtime is not None:
                with anyio.CancelScope(shield=True):
                    try:
                        await runtime.close_session(started.session_id)
                    except Exception as exc:
                        log.warning("closing session %s failed: %s", started.session_id, type(exc).__name__)
            raise
        session = self._new_session_state(started.session_id, cwd, credentials=pending.credentials)
        session.additional_directories = pending.additional_directories
        session.advertise(started)
        pending.bind(session)
        self.sessions[session.session_id] = session
        response = acp.NewSessionResponse(session_id=session.session_id, **self._setup_fields(started))
        return Reply(self._dump(response), lambda ok: self._announce(session, ok))

    def _announce(self, session: Session, written: bool) -> None:
        if not written or self._task_group is None:
            return
        # What the provider emitted meanwhile, in order, once the client knows the session (a
        # prompt that comes first opens it itself, before its own events).
        self._task_group.start_soon(session.open)

    async def _open_existing(self, params: Any, *, replay: bool) -> Any:
        self._hold_mcp_secrets(params)
        request = self._parse(params, acp.LoadSessionRequest)
        self._check_cwd(request.cwd)
        # One at a time per session: two at once would each start a backend for it. The second
        # finds the session open and opens it again (a load replays its history again).
        async with self._opens.turn(request.session_id):
            return await self._open_one(request, replay=replay)

    async def _open_one(self, request: acp.LoadSessionRequest, *, replay: bool) -> Any:
        existing = self.sessions.get(request.session_id)
        if existing is not None and (existing.turn is not None or self.turns.line(existing).busy):
            raise RpcError(INVALID_PARAMS, "The session has a prompt running", {"field": "sessionId"})
        credentials = self._client_credentials(request.meta)
        directories = self._additional_directories(request.additional_directories)
        self._hold(request.session_id)  # (an open session is already held here)
        session = existing or self._new_session_state(request.session_id, request.cwd)
        if credentials:
            session.credentials = credentials
        # ACP: the request's list is the session's complete list of additional roots from now on.
        session.additional_directories = directories
        self.sessions[session.session_id] = session
        self.router.expect(session.session_id)
        from acp_agent.sessions.session import LoadingSession

        channel = LoadingSession(session)
        try:
            async with self._provider_call("session/load" if replay else "session/resume"):
                runtime = await self.runtime()
                start = await runtime.load_session(request.session_id, request.cwd, request.mcp_servers, channel,
                                                   replay=replay)
            # After the history, before the answer: what was kept for the session (process notices
            # included); from now on its events go straight to it.
            channel.loaded = True
            await session.open()
        except BaseException:
            if existing is None:
                self.sessions.pop(session.session_id, None)
                self.router.forget(session.session_id)
                self._unhold(session.session_id)
            raise
        session.advertise(start)
        return self._dump(acp.SessionSetup(**self._setup_fields(start)))

    async def load_session(self, params: Any) -> Any:
        return await self._open_existing(params, replay=True)


    async def resume_session(self, params: Any) -> Any:
        return await self._open_existing(params, replay=False)

    async def list_sessions(self, params: Any) -> Any:
        request = self._parse(params, acp.ListSessionsRequest)
        async with self._provider_call("session/list"):
            runtime = await self.runtime()
            listing = await runtime.list_sessions(_text(request.cwd), _text(request.cursor))
        return self._dump(acp.ListSessionsResponse(
            sessions=list(listing.sessions),
            next_cursor=listing.next_cursor if listing.next_cursor else UNSET))

    async def close_session(self, params: Any) -> Any:
        request = self._parse(params, acp.SessionIdRequest)
        session = await self._opened(request.session_id)
        await self._end_session(session)
        return {}

    async def delete_session(self, params: Any) -> Any:
        """Close the session if it is open here (its turn cancelled), then have the backend remove it
        (refused while another agent process holds it)."""
        request = self._parse(params, acp.SessionIdRequest)
        await self._opens.settled(request.session_id)
        session = self.sessions.get(request.session_id)
        if session is not None:
            await self._end_session(session)
        self._hold(request.session_id)  # not from under another agent process that has it open
        try:
            async with self._provider_call("session/delete"):
                runtime = await self.runtime()
                await runtime.delete_session(request.session_id)
        finally:
            self._unhold(request.session_id)
        return {}

    async def _end_session(self, session: Session) -> None:
        self.sessions.pop(session.session_id, None)
        self.router.close(session.session_id)
        self.turns.line(session).drop_waiting()
        if session.turn is not None:
            await self.turns.cancel_turn(session.turn)
        try:
            runtime = self.backend.running
            if runtime is not None:
                async with self._provider_call("session/close"):
                    await runtime.close_session(session.session_id)
        finally:
            self._unhold(session.session_id)  # after its backend stopped writing its history

    async def set_mode(self, params: Any) -> Any:
        request = self._parse(params, acp.SetModeRequest)
        session = await self._opened(request.session_id)
        offered = [mode.id for mode in session.modes.available_modes] if session.modes is not None else []
        if request.mode_id not in offered:
            runtime = self.backend.running
            why = runtime.why_not_offered(session.session_id, request.mode_id) if runtime is not None else None
            said = f"Mode {clip(request.mode_id)!r} is not available: {why}" if why else \
                f"Unknown mode {clip(request.mode_id)!r}"
            raise RpcError(INVALID_PARAMS, f"{said}; {_choices(offered)}", {"field": "modeId"})
        async with self._provider_call("session/set_mode"):
            runtime = await self.runtime()
            await runtime.set_mode(session.session_id, request.mode_id)
        await session.send_update(acp.CurrentModeUpdate(current_mode_id=request.mode_id))
        return {}

    async def set_config_option(self, params: Any) -> Any:
        request = self._parse(params, acp.SetConfigOptionRequest)
        session = await self._opened(request.session_id)
        option = next((option for option in session.config_options if option.id == request.config_id), None)
        if option is None:
            offered = [option.id for option in session.config_options]
            raise RpcError(INVALID_PARAMS, f"Unknown config option {clip(request.config_id)!r}; {_choices(offered)}",
                           {"field": "configId"})
        values = [choice.value for choice in option.options]
        if request.value not in values:
            raise RpcError(INVALID_PARAMS, f"Unknown value {clip(request.value)!r} for {clip(option.name)}; "
                           f"{_choices(values)}", {"field": "value"})
        async with self._provider_call("session/set_config_option"):
            runtime = await self.runtime()
            options = await runtime.set_config_option(session.session_id, request.config_id, request.value)
        session.config_options = tuple(options)
        return self._dump(acp.SetConfigOptionResponse(config_options=list(options)))

    # -- turns ------------------------------------------------------------------------------------

    async def prompt(self, params: Any) -> Any:
        request = self._parse(params, acp.PromptRequest)
        session = await self._opened(request.session_id)
        return await self._queued_prompt(session, request.prompt)

    async def _queued_prompt(self, session: Session, prompt: Sequence[acp.ContentBlock]) -> Any:
        """A prompt in its session's line: it runs after the prompts before it, with its own answer.

        A prompt that arrives while a turn runs waits (it is not refused); a `session/cancel`, the
        session closed or the client gone answers it `cancelled` without running it. The next
        prompt starts only once this one's answer is written (`ReleaseOnce` as `on_written`), so
        no update of the next turn precedes it.
        """
        line = self.turns.line(session)
        queued = line.busy
        if not await line.enter():
            return self._dump(acp.PromptResponse(stop_reason="cancelled"))
        from acp_agent.sessions.admission import ReleaseOnce

        release = ReleaseOnce(line)
        try:
            if queued and (self.turns.input_ended or self.sessions.get(session.session_id) is not session):
                result: Any = self._dump(acp.PromptResponse(stop_reason="cancelled"))
            else:
                result = await self.turns.run(session, prompt)
        except RpcError as exc:
            exc.on_written = _both(exc.on_written, release)
            raise
        except BaseException:
            release()
            raise
        if isinstance(result, Reply):
            return Reply(result.result, _both(result.on_written, release))
        return Reply(result, release)

    async def steer(self, params: Any) -> Any:
        """`_session/steering`: the prompt joins the running turn (`injected`); with no turn running
        it starts a turn of its own (`startedNewTurn`, its answer goes nowhere), or, when the
        request asks `_meta.steering.idleBehavior: "promptRequired"`, is handed back
        (`promptRequired`) for the client to send as a `session/prompt`. As claude-agent-acp."""
        request = self._parse(params, acp.PromptRequest)
        meta = request.meta if isinstance(request.meta, dict) else {}
        steering = meta.get("steering")
        if steering is not None and not isinstance(steering, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: _meta.steering must be an object",
                           {"field": "_meta.steering"})
        idle_behavior = steering.get("idleBehavior") if steering else None
        if idle_behavior not in (None, "promptRequired"):
            raise RpcError(INVALID_PARAMS, "Invalid params: unsupported steering idleBehavior",
                           {"field": "_meta.steering.idleBehavior"})
        if not request.prompt:
            raise RpcError(INVALID_PARAMS, "Invalid params: prompt: must not be empty", {"field": "prompt"})
        session = await self._opened(request.session_id)
        turn = session.turn
        if turn is not None and not turn.cancel_requested and not turn.backend_done:
            async with self._provider_call(M.SESSION_STEERING):
                runtime = await self.runtime()
                if await runtime.steer(session.session_id, request.prompt, turn):
                    return {"outcome": "injected"}
        if idle_behavior == "promptRequired":
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        assert self._task_group is not None
        self._task_group.start_soon(self._detached_prompt, session, request.prompt)
        return {"outcome": "startedNewTurn"}

    async def _detached_prompt(self, session: Session, prompt: Sequence[acp.ContentBlock]) -> None:
        """A turn a steer started with no turn running: queued like any prompt, answered to nobody."""
        try:
            result = await self._queued_prompt(session, prompt)
        except RpcError as exc:
            if exc.on_written is not None:
                exc.on_written(False)  # releases the session for the next prompt
            log.info("a turn started by _session/steering failed: %s", exc.message)
            return
        if isinstance(result, Reply):
            result.on_written(False)

    async def cancel(self, params: Any) -> None:
        request = self._parse(params, acp.SessionIdRequest)
        session = self.sessions.get(request.session_id)
        if session is not None:
            await self.turns.cancel(session)


class _Opens:
    """A lock per session id while a load or resume of it runs or waits (none kept after)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, session_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(session_id) or (anyio.Lock(), 0)
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session_id]
            if users == 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)

    async def settled(self, session_id: str) -> None:
        """Returns once no load or resume of the session is under way (at once if none is)."""
        if session_id in self._locks:
            async with self.turn(session_id):
                pass


def _session_not_found(session_id: str) -> RpcError:
    """The one -32002 text for a session id the agent does not hold or the backend does not know."""
    return RpcError(RESOURCE_NOT_FOUND, f"Session not found: {clip(session_id)}", {"field": "sessionId"})


def _choices(offered: Sequence[str]) -> str:
    """The end of an "unknown mode/option/value" message: what the session does offer."""
    if not offered:
        return "this session offers none."
    return "choose one of " + ", ".join(clip(choice) for choice in offered[:20]) + (
        ", …" if len(offered) > 20 else "") + "."


def _both(first: Callable[[bool], None] | None, then: Callable[[bool], None]) -> Callable[[bool], None]:
    """Two `on_written` callbacks in order (the prompt's own, then the line's release)."""
    if first is None:
        return then

    def both(written: bool) -> None:
        try:
            first(written)
        finally:
            then(written)
    return both


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def __getattr__(name: str) -> Any:
    """`Session`, `Turn` and `PERMISSION_TIMEOUT_S`, as this module exported them, loaded on first use."""
    if name in ("PERMISSION_TIMEOUT_S", "Session", "Turn"):
        from acp_agent.sessions import session as turn

        return getattr(turn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PERMISSION_TIMEOUT_S", "Agent", "AgentSettings", "CredentialState", "Session", "Turn"]
