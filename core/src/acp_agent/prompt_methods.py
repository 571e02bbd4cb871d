"""The ACP methods of a session's turns: prompts (queued in each session's line), steering,
cancel, and the mode and config options a prompt runs with."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acp_agent.session_methods import SessionMethods
from acp_agent.sessions.choices import check_mode, check_option
from acp_agent.wire import acp
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import INVALID_PARAMS, Reply, RpcError

if TYPE_CHECKING:  # a session's machinery loads with the first session, after `initialize`
    from acp_agent.sessions.session import Session


log = logging.getLogger(__name__)


class PromptMethods(SessionMethods):
    """Prompts (queued in each session's line), steering, cancel, and setting a mode or option."""

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
        if queued:
            await self.turns.prompt_waiting(session)
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


