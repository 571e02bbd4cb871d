"""The provider-neutral ACP agent: routes ACP methods to the provider runtime.

It owns the runtime and the sessions; running a prompt (a turn's start, the provider's turn,
its cancellation, its end) lives in `acp_agent.sessions.prompt_runner`, what a turn does with the neutral
events the provider emits (ACP updates, failure records, baseline errors, auth status) in
`acp_agent.sessions.session`, and sign-in in `acp_agent.signin`. It never imports a vendor SDK and knows no
vendor's event shapes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from acp_agent.agent_base import AgentSettings
from acp_agent.air_methods import AirMethods
from acp_agent.failures.auth_status import CredentialState
from acp_agent.failures.scrub import ScrubbingSendStream
from acp_agent.initialization import Initialization
from acp_agent.sessions.prompt_runner import InputWatch
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import Connection, Methods

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.session import PERMISSION_TIMEOUT_S, Session, Turn


log = logging.getLogger(__name__)

SHUTDOWN_BUDGET_S = 4.5
EOF_GRACE_S = 3.0
"""Requests received before stdin's EOF may finish this long; then they are answered -32800."""
STOP_BUDGET_S = EOF_GRACE_S + SHUTDOWN_BUDGET_S + 1.0
"""After a signal (`Agent.stop`), how long the orderly exit may take before it is cut short."""
CANCEL_GRACE_S = 10.0
INPUT_GONE_CANCEL_GRACE_S = 1.0
"""With the client gone nobody waits for the answer, and shutdown closes every backend anyway."""
LOGOUT_COMMAND_BUDGET_S = 20.0


class Agent(Initialization, AirMethods):
    """The ACP agent for one provider over one connection: the method table and serving."""

    def __init__(self, settings: AgentSettings) -> None:
        super().__init__(settings, cancel_grace_s=CANCEL_GRACE_S, input_gone_cancel_grace_s=INPUT_GONE_CANCEL_GRACE_S,
                         logout_budget_s=LOGOUT_COMMAND_BUDGET_S)

    def methods(self) -> Methods:
        handlers: dict[str, Callable[[Any], Any]] = {
            M.INITIALIZE: self.initialize,
            M.AUTHENTICATE: self.authenticate,
            M.LOGOUT: self.logout,
            M.AUTH_STATUS: self.auth_status_request,
            M.SESSION_NEW: self.new_session,
            M.SESSION_LOAD: self.load_session,
            M.SESSION_LIST: self.list_sessions,
            M.SESSION_RESUME: self.resume_session,
            M.SESSION_FORK: self.fork_session,
            M.SESSION_CLOSE: self.close_session,
            M.SESSION_DELETE: self.delete_session,
            M.SESSION_SET_TITLE: self.set_title,
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
            M.SESSION_SET_TITLE: caps.set_title,
        }
        for method, supported in unsupported.items():
            if not supported:
                handlers.pop(method)
        if caps.steering:
            handlers[M.SESSION_STEERING] = self.steer
        if caps.goal_actions:  # AIR's goal (method-not-found unless declared)
            handlers[M.SESSION_GOAL] = self.goal
        if caps.async_tasks:  # AIR's asyncTasks (method-not-found unless declared)
            handlers[M.SESSION_ASYNC_TASK_STOP] = self.stop_async_task
        if caps.codex_hooks:  # AIR's codexHooks (method-not-found unless declared)
            handlers.update({M.CODEX_HOOKS_LIST: self.list_hooks, M.CODEX_HOOKS_TRUST: self.trust_hooks})
        if caps.list_sessions and caps.set_title:  # AIR's session index (method-not-found unless declared)
            handlers.update({
                M.SESSION_BATCH_GET: self.batch_get_sessions,
                M.SESSION_RENAME: self.rename_session,
                M.SESSION_ARCHIVE: self.archive_session,
                M.SESSION_UNARCHIVE: self.unarchive_session,
                M.SESSION_LIST_SUBSCRIBE: self.subscribe_session_list,
                M.SESSION_LIST_UNSUBSCRIBE: self.unsubscribe_session_list,
            })
        if self.provider.gateways:
            handlers.update({M.PROVIDERS_LIST: self.providers_list, M.PROVIDERS_SET: self.providers_set,
                             M.PROVIDERS_DISABLE: self.providers_disable})
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
        if self.surface is not None:  # a v2 `initialize` answered before the event loop
            self._link()
        if max_line_bytes:
            self.connection.max_line_bytes = max_line_bytes
        self.connection.eof_grace_s = EOF_GRACE_S
        self.connection.end_when_output_fails = True  # a client that closed stdout is gone
        async with anyio.create_task_group() as task_group:
            self.start_beside(task_group)
            try:
                await self.connection.serve()
            finally:
                with anyio.CancelScope(shield=True):
                    await self.shutdown()
                task_group.cancel_scope.cancel()

    def start_beside(self, task_group: anyio.abc.TaskGroup, *, early: bool = True) -> None:
        """What runs beside the connection, in `task_group`: the runtime's home, an early runtime
        (unless not `early`: beside other providers, a backend starts with its first use), the
        keyring's load, AIR's first auth push (`serve`, or the front of every provider)."""
        self._task_group = task_group
        self.backend.attach(task_group)
        if early and self.provider.start_early:
            task_group.start_soon(self._open_early)
        if self.signin.keyring_needed():
            task_group.start_soon(self._load_keyring)
        if self._answered_once and self.capable:  # answered before the loop: AIR's first push
            task_group.start_soon(self.outbox.push_auth_status)

    async def _open_early(self) -> None:
        """Open a `start_early` runtime as soon as `initialize` is answered (or a request needs it).

        Not before: building its context and importing its modules would delay the answer, and
        the backend itself is already booting (`acp_agent.startup.prestart`). Without the keyring:
        loading its backends is slow; a secret found there makes the first session reopen it.
        """
        await self._initialize_answered.wait()
        if self.backend.current is None:
            self.backend.open(self.runtime_context(dict(self.settings.environ)), early=True)

    async def _load_keyring(self) -> None:
        """Load the keyring's backend from a thread of its own once `initialize` is answered (not
        before: it would compete with the answer), so that the first session only asks it instead
        of first importing and probing keyring's backends. Bounded like every
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
            if self._index is not None:
                self._index.close()
            try:
                await self.backend.close()
            finally:
                if self._holds is not None:
                    self._holds.release_all()


def __getattr__(name: str) -> Any:
    """`Session`, `Turn` and `PERMISSION_TIMEOUT_S`, as this module exported them, loaded on first use."""
    if name in ("PERMISSION_TIMEOUT_S", "Session", "Turn"):
        from acp_agent.sessions import session as turn

        return getattr(turn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PERMISSION_TIMEOUT_S", "Agent", "AgentSettings", "CredentialState", "Session", "Turn"]
