"""The sessions' live CLIs: started (or adopted from the spare the command line started),
prepared with the session's settings, released when idle or beyond a safety bound, started
again resuming the transcript, and stopped at the agent's exit, all in the runtime's task group.
A session's MCP servers reach its CLI as a private file: their env values and headers are
secrets, which on the CLI's command line every local user could read."""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from attrs import define

from acp_agent.provider import (
    ChildGone,
    FailureKind,
    FailureObservation,
    IdleRelease,
    Phase,
    PhaseFailed,
    RuntimeContext,
    RuntimeReplaced,
    TurnChannel,
    count_setting,
    idle_release_s,
    stop_in_background,
)
from acp_agent_claude import asking, commands, settings, store
from acp_agent_claude.prestart import BYPASS_REFUSED, SPARE_MODE, bypass_allowed, command, environment, spare
from acp_agent_claude.session import PROVIDER, ClaudeSession, available_modes
from acp_agent_claude.transport import ClaudeCLI, ControlError

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # after stdin EOF, as the SDK waited, then SIGTERM, then (after 2 s) SIGKILL
EXIT_GRACE_S = 0.05  # at the agent's exit, a settled idle CLI: stdin EOF and SIGTERM, then SIGKILL
SETTLED_S = 1.0  # a CLI whose last turn ended this long ago has written its transcript
CUT_OFF_TERM_S = 1.0
"""At the agent's exit, how long a CLI whose turn was cut off has after SIGTERM before SIGKILL:
it acts on SIGTERM itself (writes out its transcript, then exits); the bound leaves room for a
loaded machine."""
MAX_LIVE_VAR = "ACP_AGENT_CLAUDE_MAX_LIVE_CLIS"
DEFAULT_MAX_LIVE = 32
"""How many sessions may keep a CLI between turns (0: no bound) before the least recently used
idle one is released: a safety bound far above what one user keeps in use; memory goes back
through the idle release (`IDLE_VAR`)."""
IDLE_VAR = "ACP_AGENT_CLAUDE_IDLE_RELEASE_MS"
DEFAULT_IDLE_MS = 600_000
PRIVATE_DIR_PREFIX = "acp-agent-claude-"  # then the agent's PID: what a killed agent left is found again


def start_failure(what: str) -> FailureObservation:
    phase = Phase.INITIALIZING if what == "started" else Phase.PREPARING
    return FailureObservation(
        kind=FailureKind.TRANSPORT_LOST, native_kind="cliStartFailed", title=f"Claude Code could not be {what}.",
        source="host", outcome="failed", execution="notSubmitted", phase=phase.value,
        recovery_hint="Check that the Claude Code CLI runs on this machine (acp-agent providers) before trying again.")


class PrivateFiles:
    """A 0700 directory made when first needed and removed by `remove`; those that agents killed
    before their `remove` left behind go when the next runtime starts (`remove_stale`)."""

    def __init__(self) -> None:
        self._dir: Path | None = None

    def mcp_config(self, session: ClaudeSession) -> str | None:
        """The session's MCP servers as the path of a 0600 file (None: it has none)."""
        if not session.mcp_servers:
            return None
        if session.mcp_config is None:
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_DIR_PREFIX}{os.getpid()}-"))
            descriptor, path = tempfile.mkstemp(prefix="mcp-", suffix=".json", dir=self._dir)
            with os.fdopen(descriptor, "w") as handle:
                json.dump({"mcpServers": session.mcp_servers}, handle)
            session.mcp_config = Path(path)
        return str(session.mcp_config)

    def route_settings(self, session: ClaudeSession) -> str | None:
        """The session's gateway route (`gateway`) as the path of a 0600 settings file for the
        CLI's `--settings` (None: it has none), written afresh for each start. Claude Code applies
        the `env` of the user's settings.json over its environment; the `--settings` tier wins
        over theirs, so their `ANTHROPIC_BASE_URL` or `apiKeyHelper` cannot send the session (and
        the gateway's headers) elsewhere. A file, as the headers are secrets: never an argument."""
        if not session.routing:
            return None
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_DIR_PREFIX}{os.getpid()}-"))
        if session.route_file is None:
            descriptor, path = tempfile.mkstemp(prefix="route-", suffix=".json", dir=self._dir)
            os.close(descriptor)
            session.route_file = Path(path)
        content = {"env": session.routing, "apiKeyHelper": "", **({"fastMode": True} if session.fast else {})}
        session.route_file.write_text(json.dumps(content))
        return str(session.route_file)

    @staticmethod
    def forget(session: ClaudeSession) -> None:
        """The session ended (closed, replaced, never started): its MCP configuration and route go."""
        for path in (session.mcp_config, session.route_file):
            if path is not None:
                path.unlink(missing_ok=True)
        session.mcp_config = session.route_file = None

    def remove(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @staticmethod
    def remove_stale() -> None:
        """Private directories of this user's agents that are no longer running (their MCP secrets)."""
        root = Path(tempfile.gettempdir())
        for path in root.glob(f"{PRIVATE_DIR_PREFIX}*-*"):
            owner = path.name[len(PRIVATE_DIR_PREFIX):].split("-", 1)[0]
            try:
                mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
            except OSError:
                continue
            if mine and owner.isdigit() and not _running(int(owner)):
                log.debug("removing %s, left by an agent that is gone", path.name)
                shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


@define(eq=False)
class Spare:
    """The CLI the command line started for the first session (`acp_agent_claude.prestart`), with
    the session id, command and environment it was started with."""

    session_id: str
    argv: list[str]
    env: dict[str, str]
    cli: ClaudeCLI

    @classmethod
    def claim(cls, context: RuntimeContext, task_group: anyio.abc.TaskGroup) -> Spare | None:
        """Own the spare the command line started under the session id it is tagged with (it was
        built from the agent's own environment and directory, hence `os.environ` here)."""
        started_as = context.prestarted.tag(PROVIDER)
        wanted = spare(os.environ, started_as) if started_as is not None else None
        popen = context.prestarted.take(PROVIDER, wanted[1], wanted[2]) if wanted is not None else None
        if wanted is None or popen is None:
            return None
        cli = ClaudeCLI.adopt(popen, on_request=_before_adoption)
        task_group.start_soon(cli.run)
        return cls(wanted[0], wanted[1], wanted[2], cli)

    def fits(self, session: ClaudeSession, cli_path: str | None, environ: Mapping[str, str]) -> bool:
        """Whether the session would start exactly this command (but for the permission mode, set
        after the handshake) with exactly this environment (so its cwd and credentials)."""
        if cli_path is None or session.mcp_servers or not self.cli.alive:
            return False
        env = environment(environ, session.overrides(), session.cwd)
        argv = command(cli_path, session_id=self.session_id, resume=False, mode=SPARE_MODE,
                       model=session.model, mcp_config=None, effort=session.effort, fast=session.fast,
                       add_dirs=session.add_dirs, allow_bypass=bypass_allowed(env),
                       instructions=session.instructions)
        return argv == self.argv and env == self.env

    async def stop(self) -> None:
        """Stop it at once: unused, it holds no transcript and no turn."""
        await self.cli.stop(grace_s=0, term_s=0)


async def _before_adoption(request: dict[str, Any]) -> dict[str, Any]:
    raise ControlError(f"no session yet for {request.get('subtype')}")


class LiveCLIs:
    """The CLIs of the sessions in `sessions` (the runtime's table, read here). `context` is the
    runtime's, replaced when the agent's environment is renewed: CLIs started later get it."""

    def __init__(self, context: RuntimeContext, cli_path: str | None, task_group: anyio.abc.TaskGroup,
                 sessions: Mapping[str, ClaudeSession]) -> None:
        self.context = context
        self.cli_path = cli_path
        self._sessions = sessions
        self._tg = task_group
        PrivateFiles.remove_stale()  # MCP secrets that agents killed before their `aclose` left behind
        self.files = PrivateFiles()
        self.max_live = count_setting(context.environ, MAX_LIVE_VAR, default=DEFAULT_MAX_LIVE)
        self._idle_release = IdleRelease(idle_release_s(context.environ, IDLE_VAR, default_ms=DEFAULT_IDLE_MS),
                                         self._idle_since, functools.partial(self.release, why="idle"))
        task_group.start_soon(self._idle_release.run)
        self._spare = Spare.claim(context, task_group)

    def adopt_spare(self, session: ClaudeSession) -> ClaudeCLI | None:
        """The spare for the first new session if it fits (the session takes its id); else it is
        stopped, and the session starts its own CLI."""
        spare_cli = self._spare
        if spare_cli is None or not spare_cli.fits(session, self.cli_path, self.context.environ):
            self.drop_spare("it does not fit the first session")
            return None
        self._spare = None
        session.session_id = spare_cli.session_id
        spare_cli.cli.on_request = functools.partial(self._on_request, session)
        log.debug("session %s adopts the spare claude CLI (pid %d)", session.session_id, spare_cli.cli.process.pid)
        return spare_cli.cli

    def drop_spare(self, why: str) -> None:
        spare_cli, self._spare = self._spare, None
        if spare_cli is not None:
            log.debug("stopping the spare claude CLI (pid %d): %s", spare_cli.cli.process.pid, why)
            self._tg.start_soon(spare_cli.stop)

    async def _on_request(self, session: ClaudeSession, request: dict[str, Any]) -> dict[str, Any]:
        return await asking.answer(session, self.context.environ, request)

    async def connect(self, session: ClaudeSession, *, resume: bool,
                      started: ClaudeCLI | None = None, mode_known: anyio.Event | None = None) -> None:
        """Start (or, `started`, adopt) and prepare a CLI for the session. On any failure the CLI
        is killed before the error answers: it holds no turn, and nothing of the failed attempt
        outlives it. `mode_known`: the stored mode is being read alongside; the settings wait."""
        cli: ClaudeCLI | None = started
        clock = self.context.clock
        try:
            async with clock.phase(Phase.INITIALIZING, label="claude"):
                if cli is None:
                    cli = await self._spawn(session, resume=resume)
                try:
                    info = await cli.request("initialize", hooks=asking.HOOKS)
                except (ChildGone, ControlError) as exc:
                    log.warning("claude CLI failed to start: %s", type(exc).__name__)
                    raise PhaseFailed(start_failure("started")) from None
            session.models = [m for m in info.get("models") or [] if isinstance(m, dict) and m.get("value")]
            if mode_known is not None:
                await mode_known.wait()
            if session.choose_mode:
                self._choose_defaults(session, await store.read(
                    clock, settings.configured, self.context.environ, session.cwd, label="claude settings files"))
            async with clock.phase(Phase.PREPARING, label="claude settings"):
                # Apply and verify the session's settings: the CLI answers only once they hold.
                try:
                    await cli.request("set_permission_mode", mode=session.mode)
                except (ChildGone, ControlError) as exc:
                    log.warning("claude CLI rejected the session settings: %s", type(exc).__name__)
                    raise PhaseFailed(start_failure("prepared")) from None
        except BaseException:
            if cli is not None:
                await cli.stop(grace_s=0, term_s=0)  # shielded, reaped, its process group killed
            raise
        session.commands = commands.with_status(
            [c for c in info.get("commands") or [] if isinstance(c, dict) and c.get("name")])
        session.account = info["account"] if isinstance(info.get("account"), dict) else {}
        version = info.get("claude_code_version")
        session.version = version if isinstance(version, str) else None
        session.cli = cli
        session.own_turn, session.queued_behind = None, False  # (what the last CLI ran on its own is over)
        session.children.background.clear()  # the last CLI's background subagents died with it
        for event in session.bash_tasks.finish_all():  # and its background commands
            await self.context.router.emit(session.session_id, event)
        session.dead = session.released = False
        session.prompted = session.prompted or resume
        session.last_used = time.monotonic()
        self._make_room(keep=session)
        self._idle_release.touched()

    def _choose_defaults(self, session: ClaudeSession, configured: tuple[str | None, str | None]) -> None:
        """A new session's model and permission mode, once the CLI has listed its models (as
        claude-agent-acp: settings' `defaultMode`, else `auto` where the model supports it);
        `configured` is what the settings files choose (`settings.configured`)."""
        configured_mode, settings_model = configured
        if session.model is None:
            session.model = settings.preferred_model(session.models, self.context.environ, settings_model)
        offered = [mode[0] for mode in available_modes(self.context.environ)]
        if configured_mode == "bypassPermissions" and configured_mode not in offered:
            log.warning("permissions.defaultMode bypassPermissions is not used: %s", BYPASS_REFUSED)
        auto = settings.supports_auto_mode(session.models, session.model)
        session.mode = settings.initial_mode(configured_mode, auto, offered, session.resumed_mode)
        session.choose_mode = False

    async def _spawn(self, session: ClaudeSession, *, resume: bool) -> ClaudeCLI:
        """The CLI process, its reader running in the runtime's task group."""
        if self.cli_path is None:
            log.warning("claude CLI not found")
            raise PhaseFailed(start_failure("started"))
        env = environment(self.context.environ, session.overrides(), session.cwd)
        argv = command(self.cli_path, session_id=session.session_id, resume=resume, mode=session.mode,
                       model=session.model, mcp_config=self.files.mcp_config(session), effort=session.effort,
                       fast=session.fast, add_dirs=session.add_dirs, allow_bypass=bypass_allowed(env),
                       settings=self.files.route_settings(session), instructions=session.instructions)
        try:
            cli = await ClaudeCLI.spawn(argv, env=env, cwd=session.cwd,
                                        on_request=functools.partial(self._on_request, session))
        except OSError as exc:
            log.warning("claude CLI failed to start: %s", type(exc).__name__)
            raise PhaseFailed(start_failure("started")) from None
        self._tg.start_soon(cli.run)
        return cli

    async def ensure(self, session: ClaudeSession, turn: TurnChannel) -> None:
        """A running CLI for the session: started (resuming its transcript) if it has none or it died."""
        if session.live:
            return
        if session.released and not session.dead:
            await self.revive(session)
            return
        replaced = session.dead
        if session.cli is not None:
            cli, session.cli = session.cli, None
            await self.stop(cli)
        await self.connect(session, resume=await store.stored(self.context.clock, session.session_id, session.cwd))
        if replaced:
            await turn.emit(RuntimeReplaced())

    async def revive(self, session: ClaudeSession) -> None:
        """A CLI again for a released session: resuming its transcript, or, never prompted (no
        transcript yet), under the same session id."""
        if session.stopping is not None:
            await session.stopping.wait()  # never two CLIs on one transcript (bounded: `stop`)
            session.stopping = None
        await self.connect(session, resume=session.prompted)

    # -- idle CLIs: released after the idle time; beyond a safety bound, least recently used first -

    @staticmethod
    def _idle(session: ClaudeSession) -> bool:
        """A CLI between prompts, with no background command or subagent (which would die with
        it) running."""
        return (session.live and session.turn is None and not session.lock.locked()
                and not session.bash_tasks.running() and not session.children.background)

    def _idle_since(self) -> Iterator[tuple[ClaudeSession, float]]:
        return ((s, s.last_used) for s in self._sessions.values() if self._idle(s))

    def _make_room(self, keep: ClaudeSession) -> None:
        """Release the least recently used idle CLIs beyond `max_live` (busy ones stay)."""
        if self.max_live is None:
            return
        live = [s for s in self._sessions.values() if s is not keep and s.live]
        excess = len(live) + 1 - self.max_live
        for session in sorted((s for s in live if self._idle(s)), key=lambda s: s.last_used)[:max(excess, 0)]:
            self.release(session, "least recently used")

    def release(self, session: ClaudeSession, why: str) -> None:
        """Stop an idle session's CLI; the session keeps its settings, MCP configuration and
        transcript, and its next prompt or mode/model change starts a CLI again (resuming it)."""
        cli, session.cli = session.cli, None
        session.released = True
        if cli is not None:
            log.info("released the CLI of session %s (%s)", session.session_id, why)
            session.stopping = stop_in_background(self._tg, functools.partial(self.stop, cli))

    # -- stops ----------------------------------------------------------------------------------

    def abandon(self, session: ClaudeSession) -> None:
        """The session's CLI failed a phase: it is stopped in the background (shielded, bounded,
        reaped); the next prompt starts another."""
        session.dead = True
        cli, session.cli = session.cli, None
        if cli is not None:
            self._tg.start_soon(self.stop, cli)

    @staticmethod
    async def stop(cli: ClaudeCLI) -> None:
        await cli.stop(grace_s=STOP_GRACE_S)

    @staticmethod
    async def stop_at_exit(session: ClaudeSession, cli: ClaudeCLI) -> None:
        """The agent is exiting: a CLI that never had a prompt is killed; one settled between
        turns gets SIGTERM at once (its transcript is written), SIGKILL after EXIT_GRACE_S; one
        whose turn was or is being cut off gets SIGTERM at once (it writes out its transcript),
        SIGKILL after CUT_OFF_TERM_S; one that was just busy gets the orderly stop."""
        if session.turn is None and not session.prompted:
            await cli.stop(grace_s=0, term_s=0)  # nothing of it to keep: no transcript, no turn
        elif session.turn is None and time.monotonic() - session.last_used >= SETTLED_S:
            await cli.stop(grace_s=0, term_s=EXIT_GRACE_S)
        elif session.dead or session.turn is not None:
            await cli.stop(grace_s=0, term_s=CUT_OFF_TERM_S)
        else:
            await cli.stop(grace_s=STOP_GRACE_S)

    async def aclose(self, sessions: list[ClaudeSession]) -> None:
        """Stop the spare and every one of `sessions`' CLIs at once, then remove the private files."""
        self._idle_release.stop()
        spare_cli, self._spare = self._spare, None
        try:
            async with anyio.create_task_group() as task_group:
                if spare_cli is not None:
                    log.debug("stopping the spare claude CLI (pid %d): never used", spare_cli.cli.process.pid)
                    task_group.start_soon(spare_cli.stop)
                for session in sessions:
                    if session.cli is not None:
                        task_group.start_soon(self.stop_at_exit, session, session.cli)
        finally:
            self.files.remove()
