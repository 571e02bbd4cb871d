"""What the agent's methods share: the provider and settings, the sessions, the runtime, the client's
declarations, and the helpers every method uses (parameters, provider errors, session lookup).

`acp_agent.agent.Agent` is this plus the method table and serving; the ACP methods themselves are
in `acp_agent.initialization` (initialize, authenticate, logout) and `acp_agent.session_methods`.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import anyio.abc
import attrs
import cattrs
from attrs import define, field

from acp_agent.backends.contract import (
    MessageNotFound,
    NotSupported,
    ProviderRuntime,
    ProviderSpec,
    RuntimeContext,
    SessionNotFound,
    TurnFailed,
)
from acp_agent.backends.home import RuntimeHome, RuntimeOpening
from acp_agent.backends.phases import PhaseClock, PhaseDeadlineExceeded, PhaseFailed
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.auth_status import AuthStatusFeed, CredentialState, KeyringStore, with_keyring_credential
from acp_agent.failures.hooks import FailureHooks
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.failures.redaction import Redactor
from acp_agent.sessions.prompt_runner import InputWatch, TurnRunner
from acp_agent.signin import SignIn
from acp_agent.startup.prestart import Prestarted
from acp_agent.wire import acp
from acp_agent.wire.convert import clip, describe_error
from acp_agent.wire.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, ClientLink, Connection, Methods, RpcError

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.gateways import Gateways
    from acp_agent.sessions.holds import SessionHolds
    from acp_agent.sessions.index import SessionIndex
    from acp_agent.sessions.instructions import InstructionStore
    from acp_agent.sessions.routing import SessionRouter
    from acp_agent.sessions.session import Outbox, Session


log = logging.getLogger(__name__)

T = TypeVar("T")


class Surface(Protocol):
    """A connection's translation to the protocol version `initialize` negotiated
    (`acp_agent.v2.V2Surface`): its method table and how the sessions write to the client."""

    def methods(self, v1: Methods) -> Methods: ...

    def client(self, connection: Connection) -> ClientLink: ...

RESOURCE_NOT_FOUND = -32002


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


class AgentBase:
    """The agent's state and shared helpers (see the module docstring)."""

    def __init__(self, settings: AgentSettings, *, cancel_grace_s: float, input_gone_cancel_grace_s: float,
                 logout_budget_s: float) -> None:
        self.settings = settings
        self.provider = settings.provider
        self.signin = SignIn(self.provider, settings.environ, settings.keyring, settings.redact,
                             settings.agent_command, backend_environ=self._backend_environ,
                             logout_budget_s=logout_budget_s)
        self.converter = acp.make_acp_converter()
        self.sessions: dict[str, Session] = {}
        self._opens = _Opens()
        """Loads and resumes of one session id take turns; its other requests wait for them."""
        self._holds: SessionHolds | None = None
        self._instructions: InstructionStore | None = None
        self._router: SessionRouter | None = None
        self._outbox: Outbox | None = None
        self.capable = False
        """The client negotiated the failure extension (`initialize`)."""
        self.index_declared = False
        """The client declared AIR's `sessionIndex` and the provider can serve it (`initialize`)."""
        self._index: SessionIndex | None = None
        self.auth_status = False
        """The client negotiated auth status (`initialize`)."""
        self.auth_feed = AuthStatusFeed(title=self.provider.title, env_vars=self.provider.credentials.env_vars,
                                        environ=self.settings.environ)
        """What the client was told through ACP's `auth/status` (kept up to date once it asked)."""
        self.client_capabilities = acp.ClientCapabilities()
        self.connection: Connection | None = None
        self.shared_client: ClientLink | None = None
        """Where the sessions write when this agent serves beside others on one connection (the
        front of every provider, `acp_agent.federation`); None: its own connection."""
        self.surface: Surface | None = None
        """The v2 translation of the connection, when `initialize` negotiated ACP v2 (`acp_agent.v2`)."""
        self._task_group: anyio.abc.TaskGroup | None = None
        self.backend = RuntimeHome(self.provider, self.settings.prestarted)
        """Opens, replaces and closes the provider runtime."""
        self._gateways: Gateways | None = None
        self._answered: anyio.Event | None = None
        self._answered_once = False
        self._input: InputWatch | None = None
        self.turns = TurnRunner(self.provider.name, start_runtime=self.runtime,
                                running_runtime=lambda: self.backend.running,
                                cancel_grace_s=cancel_grace_s, input_gone_cancel_grace_s=input_gone_cancel_grace_s)
        """Runs the prompts: a turn's lifecycle, its cancellation, each session's prompt line."""

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
                                  self.provider.credentials.env_vars, connection=self._client(),
                                  auth_feed=self.auth_feed)
            self._negotiate(self._outbox)
        return self._outbox

    @property
    def session_index(self) -> SessionIndex | None:
        """AIR's session index of this connection (`acp_agent.sessions.index`), for a client that
        declared `sessionIndex`; None for every other client (today's `session/list`)."""
        if not self.index_declared:
            return None
        if self._index is None:
            from acp_agent.sessions.index import ArchiveStore, SessionIndex, store_path
            from acp_agent.state import state_directory

            archived = self.provider.capabilities.archive_sessions
            self._index = SessionIndex(
                fetch=self._list_page, fetch_archived=self._list_archived_page if archived else None,
                store=ArchiveStore(store_path(state_directory(self.settings.environ), self.provider.name)),
                notify=self._push_list_changes, poll_s=_poll_s(self.settings.environ))
        return self._index

    async def _list_page(self, cwd: str | None, cursor: str | None) -> Any:
        return await (await self.runtime()).list_sessions(cwd, cursor)

    async def _list_archived_page(self, cwd: str | None, cursor: str | None) -> Any:
        return await (await self.runtime()).list_archived_sessions(cwd, cursor)

    async def _push_list_changes(self, changes: dict[str, Any]) -> None:
        client = self._client()  # beside other providers: the front's link (`acp_agent.federation`)
        if client is not None:
            await client.notify(acp.MethodNames.SESSION_LIST_CHANGES, changes)

    def methods(self) -> Methods:
        """The v1 method table (`acp_agent.agent.Agent`)."""
        raise NotImplementedError

    def _client(self) -> ClientLink | None:
        """Where the sessions write: the connection, or its v2 translation."""
        if self.shared_client is not None:
            return self.shared_client
        if self.surface is None or self.connection is None:
            return self.connection
        return self.surface.client(self.connection)

    def _link(self) -> None:
        """The connection speaks the version `initialize` negotiated: the v1 methods and frames,
        or their v2 translation (`acp_agent.v2.V2Surface`)."""
        if self.connection is None:
            return
        v1 = self.methods()
        self.connection.methods = v1 if self.surface is None else self.surface.methods(v1)
        if self._outbox is not None:
            self._outbox.connection = self._client()

    def _negotiate(self, outbox: Outbox, v2: bool | None = None) -> None:
        """The outbox follows what the client declared (`v2`: the connection speaks ACP v2; None:
        as the surface says)."""
        from acp_agent.sessions.presentation import ClientFeatures

        capabilities = self.client_capabilities
        outbox.capable = self.capable
        outbox.auth_status = self.auth_status
        features = ClientFeatures.from_capabilities(capabilities.meta, capabilities.elicitation,
                                                    capabilities.session, plan=capabilities.plan,
                                                    subagents=capabilities.subagents)
        if v2 is None:
            v2 = self.surface is not None
        if v2:  # a v2 diff carries its own git patch (`acp_agent.wire.v2`)
            features = attrs.evolve(features, air=features.air - {"diffPatch"})
        if v2 or not (self.capable and self.provider.capabilities.background_subagents):
            # not advertised (ACP v2 keeps the hold, as claude-agent-acp): the turns are held
            features = attrs.evolve(features, air=features.air - {"backgroundSubagents"})
        outbox.features = features

    @property
    def gateways(self) -> Gateways:
        """The client's routing of the provider's LLM slots, for sessions opened from now on
        (`acp_agent.gateways`; made on first use, not on the way to `initialize`)."""
        if self._gateways is None:
            from acp_agent.gateways import Gateways

            self._gateways = Gateways(self.provider.gateways, self.settings.environ, self.settings.redact)
        return self._gateways

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
    def _opening(self) -> RuntimeOpening | None:
        """The runtime's current opening (tests reach the runtime through it)."""
        return self.backend.current

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
            raise session_not_found(session_id)
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
            raise session_not_found(str(exc)) from None
        except MessageNotFound as exc:
            raise RpcError(INVALID_PARAMS, f"The session has no message {clip(str(exc))!r} to fork at",
                           {"field": "_meta.jetbrains.air.fork.messageId"}) from None
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

    async def _end_session(self, session: Session) -> None:
        self.sessions.pop(session.session_id, None)
        if self._index is not None:
            self._index.closed(session.session_id)
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


def _poll_s(environ: Mapping[str, str]) -> float:
    """How often a session list subscription re-lists its directory for changes made elsewhere
    (`ACP_AGENT_SESSION_LIST_POLL_S`, default 10 s, at least 0.2 s)."""
    from acp_agent.sessions.index import POLL_S

    try:
        return max(0.2, float(environ.get("ACP_AGENT_SESSION_LIST_POLL_S", POLL_S)))
    except ValueError:
        return POLL_S


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


def session_not_found(session_id: str) -> RpcError:
    """The one -32002 text for a session id the agent does not hold or the backend does not know."""
    return RpcError(RESOURCE_NOT_FOUND, f"Session not found: {clip(session_id)}", {"field": "sessionId"})

