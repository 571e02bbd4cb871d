"""The ACP methods of sessions: new, fork, load, resume, list, close, delete and titles (the
turns' methods are `acp_agent.prompt_methods`, AIR's own `acp_agent.air_methods`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from acp_agent.agent_base import AgentBase
from acp_agent.backends.contract import ProviderRuntime, ProviderSpec, SessionStart
from acp_agent.failures.protocol import IncidentRegistry
from acp_agent.failures.redaction import Redactor, mcp_secret_values
from acp_agent.sessions.choices import KeptChoices
from acp_agent.wire import acp
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import UNSET, clip
from acp_agent.wire.rpc import INVALID_PARAMS, Reply, RpcError

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.instructions import InstructionStore
    from acp_agent.sessions.session import PendingSession, Session


log = logging.getLogger(__name__)


class SessionMethods(AgentBase):
    """`session/*` and `_session/steering`."""

    @property
    def choices(self) -> KeptChoices:
        """What the user chose for each session, for its resume, load or fork (`sessions.choices`)."""
        return self.outbox.choices

    @property
    def instructions(self) -> InstructionStore:
        """AIR's `customInstructions` of each session, kept across agent processes
        (`acp_agent.sessions.instructions`)."""
        if self._instructions is None:
            from acp_agent.sessions.holds import state_directory
            from acp_agent.sessions.instructions import InstructionStore

            self._instructions = InstructionStore(self.provider.name, state_directory(self.settings.environ))
        return self._instructions

    def _asked_instructions(self, meta: Any) -> str | None:
        """The request's AIR `customInstructions` (None: none asked, or not negotiated: the client
        is not one of the extension, did not declare them, or the provider cannot carry them, so
        `initialize` did not advertise them; the meta is then ignored)."""
        from acp_agent.sessions.instructions import CAPABILITY, requested

        if not (self.provider.capabilities.custom_instructions and self.capable
                and CAPABILITY in self.outbox.features.air):
            return None
        return requested(meta)

    def _kept_instructions(self, session_id: str) -> str | None:
        """The instructions the session was created with (a resume, load or fork runs with them:
        both backends keep a session's first instructions in its history, so the core does not
        take others for it)."""
        if not self.provider.capabilities.custom_instructions:
            return None
        return self.instructions.get(session_id)

    def _setup_fields(self, start: SessionStart) -> dict[str, Any]:
        return setup_fields(start, self.outbox.features.boolean_options, self.outbox.features.recommended_value)

    def _new_session_state(self, session_id: str, cwd: str, credentials: dict[str, str] | None = None) -> Session:
        from acp_agent.sessions.session import Session

        return Session(self.outbox, session_id, cwd, IncidentRegistry(session_id, self.settings.epoch), self.router,
                       credentials=dict(credentials or {}))

    def _hold_mcp_secrets(self, params: Any) -> None:
        """From the raw request, before it is checked, so no answer (an error included) can echo them."""
        self.settings.redact.add(*mcp_secret_values(params.get("mcpServers") if isinstance(params, dict) else None))

    async def new_session(self, params: Any) -> Any:
        self._hold_mcp_secrets(params)
        request = self._parse(params, acp.NewSessionRequest)
        return await self._create_session("session/new", request.cwd, request.meta, request.additional_directories,
                                          lambda runtime, channel: runtime.new_session(request.cwd, request.mcp_servers,
                                                                                       channel),
                                          instructions=self._asked_instructions(request.meta))

    async def fork_session(self, params: Any) -> Any:
        self._hold_mcp_secrets(params)
        request = self._parse(params, acp.ForkSessionRequest)
        at = fork_point(request.meta)
        if at is not None and not self.provider.capabilities.fork_at_message:
            raise RpcError(INVALID_PARAMS, f"The {self.provider.title} provider cannot fork at a message",
                           {"field": "_meta.jetbrains.air.fork"})
        return await self._create_session("session/fork", request.cwd, request.meta, request.additional_directories,
                                          lambda runtime, channel: runtime.fork_session(
                                              request.session_id, request.cwd, request.mcp_servers, channel),
                                          source=request.session_id, fork_at=at,
                                          instructions=self._kept_instructions(request.session_id))

    async def _create_session(self, what: str, cwd: str, meta: Any, directories: Any,
                              start: Callable[[ProviderRuntime, PendingSession], Awaitable[SessionStart]],
                              source: str = "", fork_at: str | None = None,
                              instructions: str | None = None) -> Reply:
        """A session the provider creates (new, or a fork of `source`, with the choices made for
        it): its events wait until the response is written."""
        from acp_agent.sessions.session import PendingSession

        self._check_cwd(cwd)
        pending = PendingSession(self.router, credentials=client_credentials(self.provider, self.settings.redact, meta),
                                 additional_directories=requested_directories(self.provider, directories),
                                 gateways=self.gateways.snapshot(), fork_at=fork_at,
                                 custom_instructions=instructions or None,
                                 recommended_values=self.outbox.features.recommended_value)
        try:
            async with self._provider_call(what):
                runtime = await self.runtime()
                started = await self.choices.reapply(runtime, await start(runtime, pending), source)
        except BaseException:
            pending.abandon()
            raise
        try:
            self._hold(started.session_id)
        except RpcError:  # (a fresh id another process holds: the backend must not keep it open)
            pending.abandon()
            running = self.backend.running
            if running is not None:
                with anyio.CancelScope(shield=True):
                    try:
                        await running.close_session(started.session_id)
                    except Exception as exc:
                        log.warning("closing session %s failed: %s", started.session_id, type(exc).__name__)
            raise
        session = self._new_session_state(started.session_id, cwd, credentials=pending.credentials)
        session.additional_directories = pending.additional_directories
        session.gateways = pending.gateways
        session.custom_instructions = pending.custom_instructions
        if self.provider.capabilities.custom_instructions:
            self.instructions.put(session.session_id, session.custom_instructions)
        session.advertise(started)
        pending.bind(session)
        self.sessions[session.session_id] = session
        self._index_opened(session, forked_from=source or None)
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
        credentials = client_credentials(self.provider, self.settings.redact, request.meta)
        directories = requested_directories(self.provider, request.additional_directories)
        self._hold(request.session_id)  # (an open session is already held here)
        session = existing or self._new_session_state(request.session_id, request.cwd)
        if replay:
            session.subagents.replaying()
        if credentials:
            session.credentials = credentials
        # ACP: the request's list is the session's complete list of additional roots from now on.
        session.additional_directories = directories
        session.gateways = self.gateways.snapshot()  # the routing as it is now (`acp_agent.gateways`)
        session.custom_instructions = self._kept_instructions(request.session_id)
        self.sessions[session.session_id] = session
        self.router.expect(session.session_id)
        from acp_agent.sessions.session import LoadingSession

        channel = LoadingSession(session)
        try:
            async with self._provider_call("session/load" if replay else "session/resume"):
                runtime = await self.runtime()
                start = await self.choices.reapply(runtime, await runtime.load_session(
                    request.session_id, request.cwd, request.mcp_servers, channel, replay=replay), request.session_id)
            # After the history, before the answer: what was kept for the session (process notices
            # included); from now on its events go straight to it.
            channel.loaded = True
            await session.open()
            if replay and self.outbox.features.load_replay_end:
                from acp_agent.sessions.presentation import replay_end

                await session.send_update(replay_end())
        except BaseException:
            if existing is None:
                self.sessions.pop(session.session_id, None)
                self.router.forget(session.session_id)
                self._unhold(session.session_id)
            raise
        session.advertise(start)
        self._index_opened(session)
        return self._dump(acp.SessionSetup(**self._setup_fields(start)))

    async def load_session(self, params: Any) -> Any:
        return await self._open_existing(params, replay=True)

    async def resume_session(self, params: Any) -> Any:
        return await self._open_existing(params, replay=False)

    async def list_sessions(self, params: Any) -> Any:
        request = self._parse(params, acp.ListSessionsRequest)
        index = self.session_index
        if index is not None:  # AIR's session index: `_meta.jetbrains.air.list`, row fields
            from acp_agent.sessions.index import list_options

            options = list_options(request.meta)
            async with self._provider_call("session/list"):
                return await index.page(_text(request.cwd), _text(request.cursor), options, self._dump)
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
            self.choices.forget(request.session_id)
            if self.session_index is not None:
                self.session_index.deleted(request.session_id)
            if self.provider.capabilities.custom_instructions:
                self.instructions.forget(request.session_id)
        finally:
            self._unhold(request.session_id)
        return {}

    async def set_title(self, params: Any) -> Any:
        """`session/set_title`: the backend renames the session; a session open here is told with
        `session_info_update`, as when the backend names it itself."""
        request = self._parse(params, acp.SetTitleRequest)
        return {"title": await self._retitle(request.session_id, request.title, M.SESSION_SET_TITLE)}

    async def _retitle(self, session_id: str, title: str, what: str) -> str:
        from acp_agent.sessions.presentation import client_title

        title = client_title(title)
        await self._opens.settled(session_id)
        async with self._provider_call(what):
            runtime = await self.runtime()
            settled = await runtime.set_title(session_id, title)
        session = self.sessions.get(session_id)
        if session is not None:
            from acp_agent.backends.events import SessionTitle

            await session.take(SessionTitle(settled), None)
        if self.session_index is not None:
            self.session_index.changed()
        return settled

    # -- AIR's session index (`acp_agent.sessions.index`) --------------------------------------------

    def _index_opened(self, session: Session, forked_from: str | None = None) -> None:
        if self.session_index is not None:
            self.session_index.opened(session.session_id, session.cwd, _model(session), forked_from)

    def _index_turn(self, session: Session, *, running: bool) -> None:
        if self.session_index is not None:
            self.session_index.turn(session.session_id, running, _model(session), session.cost)

    # -- AIR's goal and codexHooks -----------------------------------------------------------------


def client_credentials(provider: ProviderSpec, redact: Redactor, meta: Any) -> dict[str, str]:
    """Credentials a client hands over for one session: `_meta["<provider>/credentials"]`.

    Only the provider's own variables are accepted; every value is redacted from then on.
    """
    key = f"{provider.name}/credentials"
    offered = meta.get(key) if isinstance(meta, dict) else None
    if offered is None:
        return {}
    spec = provider.credentials
    if not spec.per_session:
        raise RpcError(INVALID_PARAMS, f"The {provider.title} provider cannot use credentials for one session; "
                       "configure them for the agent instead.", {"field": f"_meta.{key}"})
    allowed = set(spec.env_vars) | set(spec.client_env_vars)
    if not isinstance(offered, dict) or not offered or any(
            name not in allowed or not isinstance(value, str) or not value for name, value in offered.items()):
        raise RpcError(INVALID_PARAMS, f"_meta[{key!r}] must map some of {sorted(allowed)} to non-empty strings",
                       {"field": f"_meta.{key}"})
    for name, value in offered.items():
        if name in spec.env_vars:
            redact.add(value)
    return dict(offered)

def requested_directories(provider: ProviderSpec, value: Any) -> tuple[str, ...]:
    """A request's `additionalDirectories`: absolute existing directories, for a provider that
    can widen its workspace; refused (-32602) rather than silently ignored otherwise."""
    if not isinstance(value, list) or not value:
        return ()
    if not provider.capabilities.additional_directories:
        raise RpcError(INVALID_PARAMS, f"The {provider.title} provider cannot add workspace directories",
                       {"field": "additionalDirectories"})
    for directory in value:
        if not isinstance(directory, str) or not os.path.isabs(directory) or not os.path.isdir(directory):
            raise RpcError(INVALID_PARAMS, "additionalDirectories must be absolute paths of existing "
                           f"directories, got {clip(str(directory))!r}", {"field": "additionalDirectories"})
    return tuple(dict.fromkeys(value))


def _model(session: Session) -> str | None:
    """The model the session runs, as its `model` config option says (None: it has none)."""
    for option in session.config_options:
        if option.id == "model" or option.category == "model":
            value = option.current_value
            return value if isinstance(value, str) and value else None
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def fork_point(meta: Any) -> str | None:
    """AIR's `_meta.jetbrains.air.fork.messageId` of a `session/fork`: the message to branch at,
    without the `:segment:<n>` a client adds to a message it shows in parts; -32602 for one that
    is not a non-empty string."""
    air = meta.get("jetbrains", {}).get("air", {}) if isinstance(meta, dict) else {}
    fork = air.get("fork") if isinstance(air, dict) else None
    if fork is None:
        return None
    message_id = fork.get("messageId") if isinstance(fork, dict) else None
    if not isinstance(message_id, str) or not message_id.strip():
        raise RpcError(INVALID_PARAMS, "_meta.jetbrains.air.fork needs a messageId",
                       {"field": "_meta.jetbrains.air.fork.messageId"})
    return message_id.split(":segment:", 1)[0]


def setup_fields(start: SessionStart, boolean_options: bool, recommended: bool = False) -> dict[str, Any]:
    """The modes and config options of a new/load/resume/fork answer, as the client sees them."""
    from acp_agent.sessions import switches

    return {
        "modes": start.modes if start.modes is not None else UNSET,
        "config_options": (switches.shown(start.config_options, boolean_options, recommended)
                           if start.config_options is not None else UNSET),
    }
