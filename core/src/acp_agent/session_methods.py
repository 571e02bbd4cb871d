"""The ACP methods of sessions: new, fork, load, resume, list, close, delete, modes and config
options, prompts (queued in each session's line), steering and cancel."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from acp_agent.agent_base import AgentBase
from acp_agent.backends.contract import ProviderRuntime, ProviderSpec, SessionStart
from acp_agent.failures.protocol import IncidentRegistry
from acp_agent.failures.redaction import Redactor, mcp_secret_values
from acp_agent.sessions.choices import KeptChoices, check_mode, check_option
from acp_agent.wire import acp
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import UNSET, clip
from acp_agent.wire.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, Reply, RpcError

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.index import SessionIndex
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
                                 custom_instructions=instructions or None)
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
            self.session_index.turn(session.session_id, running, _model(session))

    def _index_for(self, method: str) -> SessionIndex:
        """The index, for a client that declared `sessionIndex`; method-not-found for another."""
        from acp_agent.sessions.index import not_offered

        index = self.session_index
        if index is None:
            raise not_offered(method)
        return index

    async def batch_get_sessions(self, params: Any) -> Any:
        """`_session/batch_get {sessionIds}` → `{sessions}`: the rows of the ids the backend (or
        this process) knows, in any directory and archive state; unknown ids are left out."""
        from acp_agent.sessions.index import session_ids_param

        index = self._index_for(M.SESSION_BATCH_GET)
        ids = session_ids_param(params)
        async with self._provider_call(M.SESSION_BATCH_GET):
            return await index.batch_get(ids, self._dump)

    async def rename_session(self, params: Any) -> Any:
        """`_session/rename {sessionId, title}`: as `session/set_title`, answered `{}`."""
        from acp_agent.sessions.index import session_id_param

        self._index_for(M.SESSION_RENAME)
        session_id = session_id_param(params, M.SESSION_RENAME)
        title = params.get("title")
        if not isinstance(title, str):
            raise RpcError(INVALID_PARAMS, "title must be a non-empty string", {"field": "title"})
        await self._retitle(session_id, title, M.SESSION_RENAME)
        return {}

    async def archive_session(self, params: Any) -> Any:
        return await self._set_archived(params, M.SESSION_ARCHIVE, True)

    async def unarchive_session(self, params: Any) -> Any:
        return await self._set_archived(params, M.SESSION_UNARCHIVE, False)

    async def _set_archived(self, params: Any, method: str, archived: bool) -> Any:
        """`_session/archive` / `_session/unarchive {sessionId}`: idempotent; the session need not
        be open (one open here stays open and is told `_meta.jetbrains.air.archived`); an id
        neither the backend nor this process knows is not found."""
        from acp_agent.agent_base import session_not_found
        from acp_agent.sessions.index import session_id_param

        index = self._index_for(method)
        session_id = session_id_param(params, method)
        async with self._provider_call(method):
            found = (await index.find([session_id], self._dump)).get(session_id)
            if found is None:
                raise session_not_found(session_id)
            if found["_meta"]["jetbrains"]["air"]["archived"] != archived:
                if self.provider.capabilities.archive_sessions:
                    runtime = await self.runtime()
                    await runtime.archive_session(session_id, archived)
                else:
                    index.store.set_archived(session_id, archived)
        session = self.sessions.get(session_id)
        if session is not None:
            await session.send_update(acp.SessionInfoUpdate(
                meta={"jetbrains": {"air": {"version": 1, "archived": archived}}}))
        index.changed()
        return {}

    async def subscribe_session_list(self, params: Any) -> Any:
        """`_session/list/subscribe {cwd}` → `{subscriptionId}`; `_session/list/changes` follow."""
        index = self._index_for(M.SESSION_LIST_SUBSCRIBE)
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "params require an absolute cwd", {"field": "cwd"})
        assert self._task_group is not None
        async with self._provider_call(M.SESSION_LIST_SUBSCRIBE):
            return {"subscriptionId": await index.subscribe(cwd, self._dump, self._task_group)}

    async def unsubscribe_session_list(self, params: Any) -> Any:
        index = self._index_for(M.SESSION_LIST_UNSUBSCRIBE)
        subscription_id = params.get("subscriptionId") if isinstance(params, dict) else None
        if not isinstance(subscription_id, str):
            raise RpcError(INVALID_PARAMS, "params require a subscriptionId", {"field": "subscriptionId"})
        index.unsubscribe(subscription_id)
        return {}

    # -- AIR's goal and codexHooks -----------------------------------------------------------------

    async def goal(self, params: Any) -> Any:
        """`_session/goal {sessionId, action, objective?}` → `{}`: run in the session's line as the
        prompt `/goal <objective>` (`/goal pause`, `/goal resume`, `/goal clear`), the backend's
        own goal command, as claude-agent-acp runs it; answered once that turn has ended. The
        snapshot reaches the client as `session_info_update` with `_meta.jetbrains.air.goal`."""
        if not self.outbox.features.goal:
            raise _not_offered(M.SESSION_GOAL)
        actions = self.provider.capabilities.goal_actions
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "goal params must be an object")
        session_id, action, objective = params.get("sessionId"), params.get("action"), params.get("objective")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(INVALID_PARAMS, "goal params require a non-empty sessionId", {"field": "sessionId"})
        if action not in actions:
            raise RpcError(INVALID_PARAMS, "goal action must be one of " + ", ".join(f'"{a}"' for a in actions),
                           {"field": "action"})
        if action == "set":
            if not isinstance(objective, str) or not objective.strip():
                raise RpcError(INVALID_PARAMS, 'goal action "set" requires a non-empty objective',
                               {"field": "objective"})
            if len(objective.strip()) > MAX_GOAL_OBJECTIVE:
                raise RpcError(INVALID_PARAMS, f"goal objective is longer than {MAX_GOAL_OBJECTIVE} characters",
                               {"field": "objective"})
        session = await self._opened(session_id)
        command = f"/goal {objective.strip()}" if isinstance(objective, str) and action == "set" else f"/goal {action}"
        result = await self._queued_prompt(session, [acp.TextContent(command)])
        return Reply({}, result.on_written) if isinstance(result, Reply) else {}

    async def list_hooks(self, params: Any) -> Any:
        """`_codex/hooks/list {cwd}` → `{cwd, hooks, warnings, errors}` (codex-acp's)."""
        cwd = self._hooks_cwd(M.CODEX_HOOKS_LIST, params)
        async with self._provider_call(M.CODEX_HOOKS_LIST):
            runtime = await self.runtime()
            return dict(await runtime.list_hooks(cwd))

    async def trust_hooks(self, params: Any) -> Any:
        """`_codex/hooks/trust {cwd, hooks: [{key, currentHash}]}` → `{trusted}`."""
        cwd = self._hooks_cwd(M.CODEX_HOOKS_TRUST, params)
        hooks = params.get("hooks")
        if not isinstance(hooks, list) or not hooks or not all(
                isinstance(hook, dict) and all(isinstance(hook.get(key), str) and hook[key]
                                               for key in ("key", "currentHash")) for hook in hooks):
            raise RpcError(INVALID_PARAMS, "hooks must be a non-empty array of {key, currentHash} strings",
                           {"field": "hooks"})
        requested = [{"key": hook["key"], "currentHash": hook["currentHash"]} for hook in hooks]
        async with self._provider_call(M.CODEX_HOOKS_TRUST):
            runtime = await self.runtime()
            return {"trusted": await runtime.trust_hooks(cwd, requested)}

    def _hooks_cwd(self, method: str, params: Any) -> str:
        if not self.outbox.features.codex_hooks:
            raise _not_offered(method)
        cwd = params.get("cwd") if isinstance(params, dict) else None
        if not isinstance(cwd, str) or not os.path.isabs(cwd.strip()):
            raise RpcError(INVALID_PARAMS, "params require an absolute cwd", {"field": "cwd"})
        return cwd.strip()

    async def set_mode(self, params: Any) -> Any:
        request = self._parse(params, acp.SetModeRequest)
        session = await self._opened(request.session_id)
        runtime = self.backend.running
        check_mode(session.modes, request.mode_id,
                   functools.partial(runtime.why_not_offered, session.session_id) if runtime is not None else None)
        async with self._provider_call("session/set_mode"):
            runtime = await self.runtime()
            await runtime.set_mode(session.session_id, request.mode_id)
        self.choices.chose(session.session_id, ("mode", ""), request.mode_id)
        await session.send_update(acp.CurrentModeUpdate(current_mode_id=request.mode_id))
        return {}

    async def set_config_option(self, params: Any) -> Any:
        request = self._parse(params, acp.SetConfigOptionRequest)
        session = await self._opened(request.session_id)
        from acp_agent.sessions import switches

        boolean = self.outbox.features.boolean_options
        config_id, value = switches.requested(session.config_options, request, boolean)
        check_option(session.config_options, config_id, value)
        async with self._provider_call("session/set_config_option"):
            runtime = await self.runtime()
            options = await runtime.set_config_option(session.session_id, config_id, value)
        self.choices.chose(session.session_id, ("option", config_id), value)
        session.config_options = tuple(options)
        return self._dump(acp.SetConfigOptionResponse(config_options=switches.shown(
            options, boolean, self.outbox.features.recommended_value)))

    async def prompt(self, params: Any) -> Any:
        request = self._parse(params, acp.PromptRequest)
        session = await self._opened(request.session_id)
        return await self._queued_prompt(session, request.prompt, self._file_report(session, request.meta))

    def _file_report(self, session: Session, meta: Any) -> str | None:
        """The prompt's `agentFileChangeReportRequest` id, where the client declared AIR's
        `agentFileChangeReport` and the provider serves it (None: no report; an id the session
        had already is answered once, as claude-agent-acp does)."""
        if not (self.outbox.features.file_change_report and self.provider.capabilities.file_changes):
            return None
        from acp_agent.sessions.file_changes import requested_id

        request_id = requested_id(meta)
        if request_id is None or request_id in session.file_change_requests:
            return None
        session.file_change_requests.add(request_id)
        return request_id

    async def _queued_prompt(self, session: Session, prompt: Sequence[acp.ContentBlock],
                             file_report: str | None = None) -> Any:
        """A prompt in its session's line: it runs after the prompts before it, with its own answer.

        A prompt that arrives while a turn runs waits (it is not refused); a `session/cancel`, the
        session closed or the client gone answers it `cancelled` without running it. The next
        prompt starts only once this one's answer is written (`ReleaseOnce` as `on_written`), so
        no update of the next turn precedes it.
        """
        line = self.turns.line(session)
        queued = line.busy
        if not await line.enter():
            await self._report_not_run(session, file_report)
            return self._dump(acp.PromptResponse(stop_reason="cancelled"))
        from acp_agent.sessions.admission import ReleaseOnce

        release = ReleaseOnce(line)
        try:
            if queued and (self.turns.input_ended or self.sessions.get(session.session_id) is not session):
                await self._report_not_run(session, file_report)
                result: Any = self._dump(acp.PromptResponse(stop_reason="cancelled"))
            else:
                self._index_turn(session, running=True)
                try:
                    result = await self.turns.run(session, prompt, file_report)
                finally:
                    self._index_turn(session, running=False)
        except RpcError as exc:
            exc.on_written = _both(exc.on_written, release)
            raise
        except BaseException:
            release()
            raise
        if isinstance(result, Reply):
            return Reply(result.result, _both(result.on_written, release))
        return Reply(result, release)

    @staticmethod
    async def _report_not_run(session: Session, file_report: str | None) -> None:
        """A prompt cancelled before its turn ran: its file-change report is `cancelled`."""
        if file_report is not None:
            from acp_agent.sessions.file_changes import ChangedFiles, report_update

            await session.send_update(report_update(ChangedFiles(file_report).unavailable("cancelled")))

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


MAX_GOAL_OBJECTIVE = 4000
"""The longest objective codex-acp's `/goal` takes."""


def _not_offered(method: str) -> RpcError:
    """-32601 for an AIR method the client did not declare, as for a method the agent lacks."""
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")


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
