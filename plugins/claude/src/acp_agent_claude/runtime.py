"""The Claude runtime: one Claude Code CLI per ACP session, driven over its stream-json protocol.

The runtime holds the session table and answers the provider contract; its parts hold the rest:
`clis` the live CLIs (spawn, spare, release, stop), `transcripts` the stored sessions (load,
replay, fork, delete, list), `turn` a turn on a CLI, `asking` the CLI's own requests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import anyio.abc
import attrs

from acp_agent.provider import (
    ConfigOption,
    ContentBlock,
    FailureObservation,
    McpServer,
    MessageNotFound,
    ProviderRuntime,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionNotFound,
    SessionStart,
    SessionTable,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    additional_directories,
    custom_instructions,
    fork_at,
    gateway_route,
    recommends_values,
)
from acp_agent_claude import content, holding, settings
from acp_agent_claude.clis import LiveCLIs
from acp_agent_claude.gateway import SLOT, route_env
from acp_agent_claude.prestart import BYPASS_REFUSED, bypass_allowed, environment
from acp_agent_claude.session import ClaudeSession
from acp_agent_claude.transcripts import Transcripts
from acp_agent_claude.transport import ClaudeCLI
from acp_agent_claude.turn import Turns


class ClaudeRuntime(ProviderRuntime):
    """The sessions and their CLIs; `task_group` (owned by `open_runtime`) runs the CLIs' readers
    and stops."""

    def __init__(self, context: RuntimeContext, cli_path: str | None, task_group: anyio.abc.TaskGroup) -> None:
        self.sessions: SessionTable[ClaudeSession] = SessionTable()
        self._unwritten: set[str] = set()  # closed before any prompt: deleting them has nothing to do
        self.clis = LiveCLIs(context, cli_path, task_group, self.sessions)
        self.transcripts = Transcripts(self.clis)
        self.turns = Turns(self.clis, task_group)

    @property
    def context(self) -> RuntimeContext:
        return self.clis.context

    def _opening(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                 **settings: Any) -> ClaudeSession:
        return ClaudeSession(session_id, cwd, credentials=dict(channel.credentials),
                             routing=route_env(gateway_route(channel, SLOT)),
                             mcp_servers=content.mcp_servers(mcp_servers),
                             add_dirs=additional_directories(channel),
                             instructions=custom_instructions(channel),
                             recommending=recommends_values(channel), **settings)

    async def _open(self, session: ClaudeSession, channel: SessionChannel, started: Awaitable[None]) -> SessionStart:
        """The session joins the table once `started` (its CLI's start) succeeds; its files go if not."""
        try:
            await started
        except BaseException:
            self.clis.files.forget(session)
            raise
        self.sessions[session.session_id] = session
        return await self._opened(session, channel)

    async def _opened(self, session: ClaudeSession, channel: SessionChannel) -> SessionStart:
        session.channel = channel  # what the CLI asks between prompts goes here
        if session.recommending and session.effort is None and not session.released:
            level = settings.recommended_effort(session.models, session.model)
            if level is not None:  # shown as the session's level, so the CLI runs it
                await self._change(session, {"effort": level})
        await session.announce(channel)
        return SessionStart(session.session_id, session.mode_state(self.context.environ), session.config_options())

    async def _stop_session(self, session: ClaudeSession) -> None:
        """The session leaves: its CLI and files go (the core re-applies its settings to a resume)."""
        if session.cli is not None:
            await self.clis.stop(session.cli)
        self.clis.files.forget(session)

    # -- sessions ----------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        session = self._opening(str(uuid.uuid4()), cwd, mcp_servers, channel, choose_mode=True, untitled=True)
        started = self.clis.adopt_spare(session)
        return await self._open(session, channel, self.clis.connect(session, resume=False, started=started))

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        self.clis.drop_spare("the first session is a loaded one")
        await self.transcripts.check(session_id, cwd)
        if not await self.transcripts.found(session_id, cwd):
            live = self.sessions.get(session_id)
            if live is None or await self.transcripts.stored(live):  # (a transcript elsewhere is not moved here)
                raise SessionNotFound(session_id)
            return await self._reopen_unwritten(live, cwd, mcp_servers, channel)
        existing = self.sessions.pop(session_id, None)
        if existing is not None:
            await self._stop_session(existing)
        session = self._opening(session_id, cwd, mcp_servers, channel, choose_mode=True)
        return await self._open(session, channel, self.transcripts.replay_and_resume(
            session, channel, replay=replay, read_mode=True))

    async def _reopen_unwritten(self, session: ClaudeSession, cwd: str, mcp_servers: Sequence[McpServer],
                                channel: SessionChannel) -> SessionStart:
        """Resume or load of a session the agent holds that was never prompted (no transcript yet).

        There is nothing to replay and nothing the CLI could resume: the session stays as it is. New
        settings (cwd, MCP servers, credentials) retire its CLI, so the next prompt starts one with
        them under the same session id.
        """
        servers = content.mcp_servers(mcp_servers)
        credentials = dict(channel.credentials)
        dirs, instructions = additional_directories(channel), custom_instructions(channel)
        routing = route_env(gateway_route(channel, SLOT))
        if (cwd, servers, credentials, dirs, routing, instructions) != (
                session.cwd, session.mcp_servers, session.credentials, session.add_dirs, session.routing,
                session.instructions):
            session.cwd, session.mcp_servers, session.credentials = cwd, servers, credentials
            session.add_dirs, session.routing, session.instructions = dirs, routing, instructions
            if session.cli is not None:
                cli, session.cli = session.cli, None
                await self.clis.stop(cli)
        return await self._opened(session, channel)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        """A copy of the stored transcript under a new id, opened like a resumed session whose mode
        and model follow the settings (the core re-applies the source's choices). A source the
        agent holds that was never prompted has nothing to copy: the fork starts empty. A fork at
        a message (`fork_at`) keeps the history up to and including it."""
        self.clis.drop_spare("the first session is a fork")
        source = self.sessions.get(session_id)
        at = fork_at(channel)
        if source is not None and not source.prompted:
            if at is not None:
                raise MessageNotFound(at)
            return await self.new_session(cwd, mcp_servers, channel)
        forked = await self.transcripts.fork(session_id, source.cwd if source is not None else cwd, at)
        session = self._opening(forked, cwd, mcp_servers, channel, choose_mode=True)
        return await self._open(session, channel, self.clis.connect(session, resume=True))

    async def delete_session(self, session_id: str) -> None:
        """Remove the stored transcript; the core closed the session first if it held it."""
        if not await self.transcripts.delete(session_id) and session_id not in self._unwritten:
            raise SessionNotFound(session_id)
        self._unwritten.discard(session_id)

    async def set_title(self, session_id: str, title: str) -> str:
        """A title the user chose: the session's running CLI renames it (`rename_session`, as
        claude-agent-acp asks it: a CLI that holds a title would write its own back over one
        appended beside it), else the stored transcript gets the `custom-title` line
        claude-agent-sdk's `rename_session` appends. A session of this agent's that has no
        transcript yet is renamed by its CLI after its first turn. No generated title replaces it."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.titled, session.untitled, session.renamed = True, False, True
            if not session.prompted:
                session.chosen_title = title
                return title
            if session.live and session.cli is not None and session.cli.alive:
                await self.turns.rename(session, title)
                return title
        if not await self.transcripts.rename(session_id, title, session.cwd if session is not None else None):
            raise SessionNotFound(session_id)
        return title

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        return await self.transcripts.listing(cwd, cursor)

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        """CLIs started from now on get `environ`; each open session's CLI is replaced at its
        next prompt (resuming its transcript)."""
        self.clis.context = attrs.evolve(self.clis.context, environ=dict(environ))
        for session in self.sessions.values():
            session.renew = session.cli is not None
        return True

    async def close_session(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await self._stop_session(session)
            if not session.prompted:
                self._unwritten.add(session_id)

    # -- settings ----------------------------------------------------------------------------------

    def why_not_offered(self, session_id: str, mode_id: str) -> str | None:
        """`bypassPermissions` where the CLI refuses it (`bypass_allowed`); every other mode the
        sessions do not offer is unknown to them."""
        if mode_id == "bypassPermissions" and not bypass_allowed(environment(self.context.environ, {}, "")):
            return BYPASS_REFUSED
        return None

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._change(self.sessions[session_id], {"mode": mode_id})

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        session = self.sessions[session_id]  # one of its options and one of its values: the core checked
        changes: dict[str, str | bool | None]
        if config_id == settings.EFFORT:
            changes = {"effort": settings.effort_value(value)}
        elif config_id == settings.FAST:
            changes = {"fast": value == settings.FAST_ON}
        else:
            changes = {"model": value}
            if session.effort is not None and session.effort not in settings.effort_levels(session.models, value):
                changes["effort"] = None  # the new model has no such level
                if session.recommending:  # (shown its recommended level, which it then runs)
                    changes["effort"] = settings.recommended_effort(session.models, value)
            if session.fast and not settings.supports_fast_mode(session.models, value):
                changes["fast"] = False
        await self._change(session, changes)
        return session.config_options()

    async def _change(self, session: ClaudeSession, changes: Mapping[str, str | bool | None]) -> None:
        """New settings: applied to the running CLI (which answers once they hold, or refuses
        them), or, released, a CLI started again with them."""
        if session.released:
            await self._revive_with(session, changes)
            return
        if session.live:
            await self._apply(session, changes)
            session.last_used = time.monotonic()
        for name, value in changes.items():
            setattr(session, name, value)

    @staticmethod
    async def _apply(session: ClaudeSession, changes: Mapping[str, str | bool | None]) -> None:
        cli: ClaudeCLI | None = session.cli
        assert cli is not None
        for name, value in changes.items():
            if name == "mode":
                await cli.request("set_permission_mode", mode=value)
            elif name == "model":
                await cli.request("set_model", model=value)
            elif name == "fast":
                await cli.request("apply_flag_settings", settings={"fastMode": value})
            else:  # effort; null clears the session's level (the CLI's settings decide again)
                await cli.request("apply_flag_settings", settings={"effortLevel": value})

    async def _revive_with(self, session: ClaudeSession, changes: Mapping[str, str | bool | None]) -> None:
        """A change of a released session: its CLI starts again with the new settings (which it
        verifies); on failure the session keeps the old ones."""
        async with session.lock:
            if not session.released:  # a prompt brought it back meanwhile
                if session.live:
                    await self._apply(session, changes)
                for name, value in changes.items():
                    setattr(session, name, value)
                return
            previous = {name: getattr(session, name) for name in changes}
            for name, value in changes.items():
                setattr(session, name, value)
            try:
                await self.clis.revive(session)
            except BaseException:
                for name, value in previous.items():
                    setattr(session, name, value)
                raise

    # -- turns -------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        session = self.sessions[session_id]
        async with session.lock:
            outcome = await self.turns.run(session, prompt, turn)
        if isinstance(outcome, FailureObservation):
            raise TurnFailed(outcome)
        await self.turns.ask_title(session, prompt, turn)
        return outcome

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        session = self.sessions.get(session_id)
        return session is not None and await self.turns.steer(session, prompt, turn)

    async def stop_async_task(self, session_id: str, task_id: str) -> bool | None:
        """AIR's `_session/async_task/stop`: a background command of the session's CLI stopped
        (`stop_task`), or the turn the CLI runs on its own interrupted; a running prompt goes on."""
        session = self.sessions.get(session_id)
        return await self.turns.between.stop_task(session, task_id) if session is not None else None

    async def prompt_waiting(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            holding.hand_over(session)

    async def cancel(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            await self.turns.cancel(session)

    async def aclose(self) -> None:
        """Stop every session's CLI and remove the private files; stops of failed attempts still
        running in the runtime's task group finish before `open_runtime` returns."""
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await self.clis.aclose(sessions)
