"""The Claude runtime: one Claude Code CLI per ACP session, driven over its stream-json protocol.

Owns the CLIs (spawn, handshake, resume, stop) through `transport`, feeds each turn's lines
through the pure `TurnFold`, bridges permission requests to the editor, and marks phase
boundaries. claude-agent-sdk is imported only to read stored sessions (load, list, resume).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
import unicodedata
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
import attrs
from attrs import define, field

from acp_agent.backends.contract import (
    ProviderRuntime,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionNotFound,
    SessionStart,
    TurnChannel,
    TurnFailed,
    additional_directories,
)
from acp_agent.backends.events import RuntimeReplaced, SessionFailure, SessionTitle, TurnEnd
from acp_agent.backends.files import UnsafeFile
from acp_agent.backends.idle import IdleRelease, idle_release_s
from acp_agent.backends.phases import Phase, PhaseDeadlineExceeded, PhaseFailed
from acp_agent.failures.hooks import bound
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.acp import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOption,
    ContentBlock,
    CurrentModeUpdate,
    McpServer,
    PermissionOption,
    SessionInfo,
    SessionMode,
    SessionModeState,
    TextContent,
    ToolCallUpdate,
)
from acp_agent.wire.convert import UNSET
from acp_agent_claude import asking, classify, commands, content, history, settings, store, titles
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.prestart import BYPASS_REFUSED, SPARE_MODE, bypass_allowed, command, environment, spare
from acp_agent_claude.tasks import TaskPlan
from acp_agent_claude.transport import ClaudeCLI, CLIGone, ControlError

log = logging.getLogger(__name__)

PROVIDER = "claude"

STOP_GRACE_S = 5.0  # after stdin EOF, as the SDK waited, then SIGTERM, then (after 2 s) SIGKILL
EXIT_GRACE_S = 0.05  # at the agent's exit, a settled idle CLI: stdin EOF and SIGTERM, then SIGKILL
SETTLED_S = 1.0  # a CLI whose last turn ended this long ago has written its transcript
CUT_OFF_TERM_S = 1.0
"""At the agent's exit, how long a CLI whose turn was cut off has after SIGTERM before SIGKILL:
it acts on SIGTERM itself (writes out its transcript, then exits), in about 30 ms on a quiet
machine; the bound leaves room for a loaded one."""
MAX_LIVE_VAR = "ACP_AGENT_CLAUDE_MAX_LIVE_CLIS"
DEFAULT_MAX_LIVE = 32  # a safety bound (about 150 MB per idle CLI); the idle release frees memory
IDLE_VAR = "ACP_AGENT_CLAUDE_IDLE_RELEASE_MS"
DEFAULT_IDLE_MS = 600_000
PRIVATE_DIR_PREFIX = "acp-agent-claude-"  # then the agent's PID: what a killed agent left is found again
INTERRUPT_BUDGET_S = 5.0
PAGE_SIZE = 50
MODES: tuple[tuple[str, str, str], ...] = (
    ("default", "Default", "Ask before running commands and editing files"),
    ("acceptEdits", "Accept edits", "Edit files without asking; still ask before commands"),
    ("plan", "Plan", "Analyse and plan only; no edits or commands"),
    ("auto", "Auto", "Claude decides which actions are safe to run and asks about the rest"),
    ("bypassPermissions", "Bypass permissions", "Run everything without asking"),
)
PERMISSION_OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("allow_always", "Always allow", "allow_always"),
    PermissionOption("reject", "Reject", "reject_once"),
)


def max_live_clis(environ: Mapping[str, str]) -> int | None:
    """How many sessions may keep a CLI running between turns, beyond which the least recently
    used idle one is released (None: no bound, when set to 0). Memory goes back through the idle
    release (`idle_release_s`): the default is only a safety bound, far above the sessions one
    user keeps in use, so that a session in use never pays a CLI restart."""
    raw = environ.get(MAX_LIVE_VAR, "").strip()
    if raw.isdigit():
        return int(raw) if int(raw) > 0 else None
    return DEFAULT_MAX_LIVE


def available_modes(environ: Mapping[str, str], *, auto: bool = True) -> list[tuple[str, str, str]]:
    """The modes a CLI started with `environ` can enter: `bypassPermissions` only where the CLI
    allows it (`bypass_allowed`: not as root without IS_SANDBOX=1), and then the CLI is started so
    that it can switch to it; `auto` only where the session's model supports it (the CLI's
    `supportsAutoMode`)."""
    bypass_works = bypass_allowed(environment(environ, {}, ""))
    return [mode for mode in MODES if (mode[0] != "bypassPermissions" or bypass_works)
            and (mode[0] != "auto" or auto)]


@define(eq=False)
class ClaudeSession:
    session_id: str
    cwd: str
    mode: str = "default"
    model: str | None = None
    choose_mode: bool = False  # a new session: its mode (and model) follow settings and the model
    resumed_mode: str | None = None  # a reopened transcript's last permission mode
    effort: str | None = None  # the session's reasoning effort; None: the CLI's settings decide
    fast: bool = False  # fast mode
    add_dirs: tuple[str, ...] = ()  # the request's additionalDirectories (`--add-dir`)
    cli: ClaudeCLI | None = None
    dead: bool = False
    turn: TurnChannel | None = None
    fold: TurnFold | None = None
    lock: anyio.Lock = field(factory=anyio.Lock)
    models: list[dict[str, Any]] = field(factory=list)
    commands: list[dict[str, Any]] = field(factory=list)
    account: dict[str, Any] = field(factory=dict)  # the CLI's `account` report: credential sources
    version: str | None = None  # the CLI's `claude_code_version`
    credentials: dict[str, str] = field(factory=dict)
    mcp_servers: dict[str, dict[str, Any]] = field(factory=dict)
    mcp_config: Path | None = None  # the servers as a 0600 file, never on the CLI's command line
    last_used: float = field(factory=time.monotonic)  # when its last turn ended (or it was opened)
    prompted: bool = False  # a user message reached its CLI: the CLI keeps a transcript of it
    released: bool = False  # its CLI was stopped while idle; the next prompt or setting starts one
    stopping: anyio.Event | None = None  # set once the released CLI is gone (it may still write)
    steers: set[str] = field(factory=set)  # uuids of messages steered into the turn, not started yet
    steer_running: bool = False  # a steered message started after the turn's last result
    turn_over: bool = True  # the running turn's last result is in: nothing can join it
    asking: int = 0  # permission requests and questions open: a steer waits for them
    tasks: TaskPlan = field(factory=TaskPlan)  # the task tools' plan, across turns
    window: content.ContextWindow = field(factory=content.ContextWindow)  # as last reported
    titled: bool = False  # its title was asked for (and published) or is being asked for
    untitled: bool = False  # a new session yet to show a title: its first turn's prompt is one
    renew: bool = False  # the agent's environment changed: its next prompt runs on a new CLI


def _written_transcript(session_id: str, directory: str) -> Path | None:
    """The transcript where the CLI writes it for `directory` (`<config>/projects/<directory with
    every other character than a letter or digit a dash>/<id>.jsonl`), found without importing
    claude-agent-sdk (over a second of CPU: the load's first update would wait for it). None
    where only the SDK's fuller search can tell (no such file, a path long enough to be hashed,
    a git worktree's transcript, an id that is not a UUID)."""
    try:
        uuid.UUID(session_id)
    except ValueError:
        return None
    name = re.sub(r"[^a-zA-Z0-9]", "-", unicodedata.normalize("NFC", os.path.realpath(directory)))
    if len(name) > store.LONG_KEY:
        return None
    path = Path(store.projects_dir(), name, f"{session_id}.jsonl")
    try:
        status = path.stat()
    except OSError:
        return None
    return path if stat.S_ISREG(status.st_mode) and status.st_size > 0 else None


def _transcript_path(session_id: str, directory: str) -> Path | None:
    """The session's stored transcript, found as claude-agent-sdk finds it (the project directory,
    then its git worktrees): where the CLI writes it, else by the store's search."""
    written = _written_transcript(session_id, directory)
    if written is not None:
        return written
    found = store.transcript_path(session_id, directory)
    return Path(found) if found is not None else None


@define(frozen=True)
class _Kept:
    """What a closed session was set to (a resume or load in this agent opens it so again)."""

    mode: str
    model: str | None
    effort: str | None
    fast: bool

    @classmethod
    def of(cls, session: ClaudeSession) -> _Kept:
        return cls(session.mode, session.model, session.effort, session.fast)


@define(eq=False)
class SpareCLI:
    """The CLI the command line started for the first session (`acp_agent_claude.prestart`)."""

    session_id: str
    argv: list[str]
    env: dict[str, str]
    cli: ClaudeCLI


class _NotSubmitted(Exception):
    """Writing the user message to the CLI failed: the CLI is gone and nothing was submitted."""


def _remove_stale_dirs() -> None:
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
    except PermissionError:
        return True
    return True


def _start_failure(what: str) -> FailureObservation:
    phase = Phase.INITIALIZING if what == "started" else Phase.PREPARING
    return FailureObservation(
        kind=FailureKind.TRANSPORT_LOST, native_kind="cliStartFailed", title=f"Claude Code could not be {what}.",
        source="host", outcome="failed", execution="notSubmitted", phase=phase.value,
        recovery_hint="Check that the Claude Code CLI runs on this machine (acp-agent providers) before trying again.")


class ClaudeRuntime(ProviderRuntime):
    """The CLIs of every session; `task_group` (owned by `open_runtime`) runs their connects and stops."""

    def __init__(self, context: RuntimeContext, cli_path: str | None, task_group: anyio.abc.TaskGroup) -> None:
        self.context = context
        self.cli_path = cli_path
        self.sessions: dict[str, ClaudeSession] = {}
        self._kept_settings: dict[str, _Kept] = {}
        """A closed session's mode, model, effort and fast mode, for its resume or load in this process."""
        self._unwritten: set[str] = set()  # closed before any prompt: deleting them has nothing to do
        self._tg = task_group
        self._dir: Path | None = None
        self._files = 0
        _remove_stale_dirs()  # MCP secrets that agents killed before their `aclose` left behind
        self.max_live = max_live_clis(context.environ)
        self._idle_release = IdleRelease(idle_release_s(context.environ, IDLE_VAR, default_ms=DEFAULT_IDLE_MS),
                                         self._idle_since, functools.partial(self._release, why="idle"))
        task_group.start_soon(self._idle_release.run)
        self._spare = self._claim_spare()

    # -- the spare CLI: started by the command line, offered to the first new session -------------

    def _claim_spare(self) -> SpareCLI | None:
        """Own the spare the command line started under the session id it is tagged with (it was
        built from the agent's own environment and directory, hence `os.environ` here); whether a
        session may use it is `_fits`'s call."""
        started_as = self.context.prestarted.tag(PROVIDER)
        wanted = spare(os.environ, started_as) if started_as is not None else None
        if wanted is None:
            return None
        session_id, argv, env = wanted
        popen = self.context.prestarted.take(PROVIDER, argv, env)
        if popen is None:
            return None
        cli = ClaudeCLI.adopt(popen, self._before_adoption)
        self._tg.start_soon(cli.run)
        return SpareCLI(session_id, argv, env, cli)

    @staticmethod
    async def _before_adoption(request: dict[str, Any]) -> dict[str, Any]:
        raise ControlError(f"no session yet for {request.get('subtype')}")

    def _fits(self, spare_cli: SpareCLI, session: ClaudeSession) -> bool:
        """Whether the session would start exactly the spare's command (but for the permission
        mode, set after the handshake) with exactly its environment (so its cwd and credentials)."""
        if self.cli_path is None or session.mcp_servers or not spare_cli.cli.alive:
            return False
        env = environment(self.context.environ, session.credentials, session.cwd)
        argv = command(self.cli_path, session_id=spare_cli.session_id, resume=False, mode=SPARE_MODE,
                       model=session.model, mcp_config=None, effort=session.effort, fast=session.fast,
                       add_dirs=session.add_dirs, allow_bypass=bypass_allowed(env))
        return argv == spare_cli.argv and env == spare_cli.env

    def _adopt_spare(self, session: ClaudeSession) -> ClaudeCLI | None:
        """The spare for the first new session if it fits (the session takes its id); else it is
        stopped, and the session starts its own CLI."""
        spare_cli, self._spare = self._spare, None
        if spare_cli is None:
            return None
        if not self._fits(spare_cli, session):
            self._drop(spare_cli, "it does not fit the first session")
            return None
        session.session_id = spare_cli.session_id
        spare_cli.cli.on_request = functools.partial(self._on_request, session)
        log.debug("session %s adopts the spare claude CLI (pid %d)", session.session_id,
                  spare_cli.cli.process.pid)
        return spare_cli.cli

    def _drop_spare(self, why: str) -> None:
        spare_cli, self._spare = self._spare, None
        if spare_cli is not None:
            self._drop(spare_cli, why)

    def _drop(self, spare_cli: SpareCLI, why: str) -> None:
        """Stop an unused spare at once: it holds no transcript and no turn."""
        log.debug("stopping the spare claude CLI (pid %d): %s", spare_cli.cli.process.pid, why)
        self._tg.start_soon(functools.partial(spare_cli.cli.stop, grace_s=0, term_s=0))

    # -- private files: the CLI launcher and MCP configurations -------------------------------------

    def _private_dir(self) -> Path:
        """A directory only the agent's user can enter (0700), removed by `aclose`; those that agents
        killed before their `aclose` left behind are removed when the next runtime starts."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_DIR_PREFIX}{os.getpid()}-"))
        return self._dir

    def _mcp_config(self, session: ClaudeSession) -> str | None:
        """The session's MCP servers as a path: their env values and headers are secrets, and on
        the CLI's command line they would be readable by every local user."""
        if not session.mcp_servers:
            return None
        if session.mcp_config is None:
            self._files += 1
            path = self._private_dir() / f"mcp-{self._files}.json"
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                json.dump({"mcpServers": session.mcp_servers}, handle)
            session.mcp_config = path
        return str(session.mcp_config)

    @staticmethod
    def _forget_files(session: ClaudeSession) -> None:
        """The session ended (closed, replaced, never started): its MCP configuration goes."""
        path, session.mcp_config = session.mcp_config, None
        if path is not None:
            path.unlink(missing_ok=True)

    # -- the CLI ----------------------------------------------------------------------------------

    async def _connect(self, session: ClaudeSession, *, resume: bool,
                       started: ClaudeCLI | None = None, mode_known: anyio.Event | None = None) -> None:
        """Start (or, `started`, adopt) and prepare a CLI for the session. On any failure the CLI
        is killed before the error answers: it holds no turn (nor any transcript but the one an
        earlier CLI wrote), and a kill takes milliseconds, so the error still answers within its
        deadline and nothing of the failed attempt outlives it (an orderly stop in the background
        kept a CLI that ignores the end of its input running for seconds, and the agent's exit
        waited for it). `mode_known`: the stored mode is being read alongside; the settings wait."""
        cli: ClaudeCLI | None = started
        try:
            async with self.context.clock.phase(Phase.INITIALIZING, label="claude"):
                if cli is None:
                    cli = await self._spawn(session, resume=resume)
                try:
                    info = await cli.request("initialize", hooks=None)
                except (CLIGone, ControlError) as exc:
                    log.warning("claude CLI failed to start: %s", type(exc).__name__)
                    raise PhaseFailed(_start_failure("started")) from None
            session.models = [m for m in info.get("models") or [] if isinstance(m, dict) and m.get("value")]
            if mode_known is not None:
                await mode_known.wait()
            if session.choose_mode:
                self._choose_defaults(session, await self._read(
                    settings.configured, self.context.environ, session.cwd, label="claude settings files"))
            async with self.context.clock.phase(Phase.PREPARING, label="claude settings"):
                # Apply and verify the session's settings: the CLI answers only once they hold.
                try:
                    await cli.request("set_permission_mode", mode=session.mode)
                except (CLIGone, ControlError) as exc:
                    log.warning("claude CLI rejected the session settings: %s", type(exc).__name__)
                    raise PhaseFailed(_start_failure("prepared")) from None
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

    # -- idle CLIs: released after the idle time; beyond a safety bound, least recently used first -

    def _idle(self, session: ClaudeSession) -> bool:
        return (session.cli is not None and not session.dead and session.turn is None
                and not session.lock.locked())

    def _make_room(self, keep: ClaudeSession) -> None:
        """Release the least recently used idle CLIs beyond `max_live` (busy ones stay)."""
        if self.max_live is None:
            return
        live = [s for s in self.sessions.values() if s is not keep and s.cli is not None and not s.dead]
        excess = len(live) + 1 - self.max_live
        for session in sorted((s for s in live if self._idle(s)), key=lambda s: s.last_used)[:max(excess, 0)]:
            self._release(session, "least recently used")

    def _release(self, session: ClaudeSession, why: str) -> None:
        """Stop an idle session's CLI; the session keeps its settings, MCP configuration and
        transcript, and its next prompt or mode/model change starts a CLI again (resuming it)."""
        cli, session.cli = session.cli, None
        session.released = True
        if cli is not None:
            log.info("released the CLI of session %s (%s)", session.session_id, why)
            stopped = session.stopping = anyio.Event()

            async def stop() -> None:
                try:
                    await self._stop(cli)
                finally:
                    stopped.set()

            self._tg.start_soon(stop)

    def _idle_since(self) -> Iterator[tuple[ClaudeSession, float]]:
        return ((s, s.last_used) for s in self.sessions.values() if self._idle(s))

    async def _revive(self, session: ClaudeSession) -> None:
        """A CLI again for a released session: resuming its transcript, or, never prompted (no
        transcript yet), under the same session id."""
        if session.stopping is not None:
            await session.stopping.wait()  # never two CLIs on one transcript (bounded: `_stop`)
            session.stopping = None
        await self._connect(session, resume=session.prompted)

    async def _spawn(self, session: ClaudeSession, *, resume: bool) -> ClaudeCLI:
        """The CLI process, its reader running in the runtime's task group."""
        if self.cli_path is None:
            log.warning("claude CLI not found")
            raise PhaseFailed(_start_failure("started"))
        env = environment(self.context.environ, session.credentials, session.cwd)
        argv = command(self.cli_path, session_id=session.session_id, resume=resume, mode=session.mode,
                       model=session.model, mcp_config=self._mcp_config(session), effort=session.effort,
                       fast=session.fast, add_dirs=session.add_dirs, allow_bypass=bypass_allowed(env))
        try:
            cli = await ClaudeCLI.start(argv, env=env, cwd=session.cwd,
                                        on_request=functools.partial(self._on_request, session))
        except OSError as exc:
            log.warning("claude CLI failed to start: %s", type(exc).__name__)
            raise PhaseFailed(_start_failure("started")) from None
        self._tg.start_soon(cli.run)
        return cli

    def _retire(self, cli: ClaudeCLI) -> None:
        """Stop a CLI of a failed attempt in the runtime's task group (shielded, bounded, reaped)."""
        self._tg.start_soon(self._stop, cli)

    def _abandon(self, session: ClaudeSession) -> None:
        """The session's CLI failed a phase: it is stopped now; the next prompt starts another."""
        session.dead = True
        cli, session.cli = session.cli, None
        if cli is not None:
            self._retire(cli)

    @staticmethod
    async def _stop(cli: ClaudeCLI) -> None:
        """Stop a CLI: stdin EOF, SIGTERM after STOP_GRACE_S, SIGKILL; reaped, its group killed."""
        await cli.stop(grace_s=STOP_GRACE_S)

    def _session(self, session_id: str) -> ClaudeSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def _modes(self, session: ClaudeSession) -> SessionModeState:
        auto = session.mode == "auto" or settings.supports_auto_mode(session.models, session.model)
        return SessionModeState(current_mode_id=session.mode, available_modes=[
            SessionMode(mode_id, name, description)
            for mode_id, name, description in available_modes(self.context.environ, auto=auto)])

    def _config_options(self, session: ClaudeSession) -> list[ConfigOption]:
        return settings.config_options(session.models, session.model, session.effort, session.fast)

    async def _announce(self, session: ClaudeSession, channel: SessionChannel) -> None:
        commands = [AvailableCommand(
            name=str(c["name"]), description=str(c.get("description") or ""),
            input=AvailableCommandInput(str(c["argumentHint"])) if c.get("argumentHint") else UNSET)
            for c in session.commands]
        if commands:
            await channel.emit(AvailableCommandsUpdate(commands))

    # -- sessions ----------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        session = ClaudeSession(str(uuid.uuid4()), cwd, credentials=dict(channel.credentials),
                                mcp_servers=content.mcp_servers(mcp_servers),
                                add_dirs=additional_directories(channel), choose_mode=True, untitled=True)
        try:
            await self._connect(session, resume=False, started=self._adopt_spare(session))
        except BaseException:
            self._forget_files(session)
            raise
        self.sessions[session.session_id] = session
        await self._announce(session, channel)
        return SessionStart(session.session_id, self._modes(session), self._config_options(session))

    async def _read(self, function: Any, *args: Any, label: str = "claude transcript", **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` on a worker thread (files are read off the event loop), within
        the reading deadline."""
        async with self.context.clock.phase(Phase.READING, label=label):
            return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs), abandon_on_cancel=True)

    async def _check_transcript(self, session_id: str, directory: str) -> None:
        """A stored transcript that is not a regular file (a FIFO, a link to a device) is no
        session: the SDK's reader would block on it or read without end. A regular file where the
        CLI writes it ends the check at once (the store's fuller search imports claude-agent-sdk,
        which the load's first update would wait for)."""
        if await self._read(_written_transcript, session_id, directory, label="claude store") is not None:
            return
        try:
            await self._read(store.check_transcript, session_id, directory, label="claude store")
        except UnsafeFile:
            raise SessionNotFound(session_id) from None

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        self._drop_spare("the first session is a loaded one")
        await self._check_transcript(session_id, cwd)
        if await self._read(_written_transcript, session_id, cwd) is None and not await self._listed(session_id, cwd):
            live = self.sessions.get(session_id)
            if live is None or await self._stored(live):  # (a transcript elsewhere is not moved here)
                raise SessionNotFound(session_id)
            return await self._reopen_unwritten(live, cwd, mcp_servers, channel)
        existing = self.sessions.pop(session_id, None)
        if existing is not None:
            self._kept_settings[session_id] = _Kept.of(existing)
            if existing.cli is not None:
                await self._stop(existing.cli)
            self._forget_files(existing)
        kept = self._kept_settings.pop(session_id, None)  # the CLI starts with them
        session = ClaudeSession(session_id, cwd, credentials=dict(channel.credentials),
                                mcp_servers=content.mcp_servers(mcp_servers),
                                add_dirs=additional_directories(channel), choose_mode=kept is None)
        if kept is not None:
            session.mode, session.model, session.effort, session.fast = kept.mode, kept.model, kept.effort, kept.fast
        try:
            await self._replay_and_resume(session, channel, replay=replay, read_mode=kept is None)
        except BaseException:
            self._forget_files(session)
            raise
        self.sessions[session_id] = session
        await self._announce(session, channel)
        return SessionStart(session_id, self._modes(session), self._config_options(session))

    async def _replay_and_resume(self, session: ClaudeSession, channel: SessionChannel, *, replay: bool,
                                 read_mode: bool) -> None:
        """Replay the transcript while the CLI starts resuming it (its resume reads it too).

        The transcript is read once, in a worker thread, and each batch of entries is sent on as it
        comes, under a deadline on progress (`PhaseClock.paced`), so a long history is never cut
        off; the stored permission mode comes from the same pass, and the CLI waits for it only
        before its settings are applied. Either side failing stops the other."""
        mode_known = anyio.Event()
        failures: list[BaseException] = []
        async with anyio.create_task_group() as tg:
            async def resume() -> None:
                try:
                    await self._connect(session, resume=True, mode_known=mode_known)
                except Exception as exc:
                    failures.append(exc)
                    tg.cancel_scope.cancel()

            tg.start_soon(resume)
            try:
                if replay or read_mode:
                    mode = await self._stream_transcript(session, channel if replay else None)
                    session.resumed_mode = mode if read_mode else None
            except Exception as exc:
                failures.append(exc)
                tg.cancel_scope.cancel()
            mode_known.set()
        if failures:
            raise failures[0]

    async def _stream_transcript(self, session: ClaudeSession, channel: SessionChannel | None) -> str | None:
        """Send the transcript's replay to `channel` (None: only read the mode); its stored mode."""
        path = await self._read(_transcript_path, session.session_id, session.cwd)
        if path is None:  # none found by the store's search: the SDK's whole-file reader decides
            return await self._replay_all(session, channel)
        reader = history.TranscriptReader(entries=channel is not None)
        replayer = history.Replayer(session.cwd, functools.partial(self.context.hooks.recognise_history, PROVIDER))
        send, receive = anyio.create_memory_object_stream[list[dict[str, Any]]](4)

        def read() -> None:
            def deliver(batch: list[dict[str, Any]]) -> None:
                anyio.from_thread.run(send.send, batch)

            with path.open("rb") as handle:
                reader.read(handle, deliver)

        async def produce() -> None:
            async with send:
                try:
                    await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
                except OSError as exc:  # gone or unreadable: what was read is the replay (as the SDK's)
                    log.warning("could not read the transcript of session %s: %s", session.session_id,
                                type(exc).__name__)

        failures: list[Exception] = []
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(produce)
            try:
                await self._replay_batches(receive, channel, replayer)
            except Exception as exc:  # raised below, not as a task group's exception group
                failures.append(exc)
                tg.cancel_scope.cancel()
        if failures:
            raise failures[0]
        return reader.mode

    async def _replay_batches(self, receive: anyio.abc.ObjectReceiveStream[list[dict[str, Any]]],
                              channel: SessionChannel | None, replayer: history.Replayer) -> None:
        batches = self.context.clock.paced(Phase.READING, receive, label="claude transcript")
        async with aclosing(batches):
            async for batch in batches:
                if channel is None:
                    continue
                for entry in batch:
                    for event in replayer.feed(entry):
                        await channel.emit(event)
        if channel is not None:
            for event in replayer.finish():
                await channel.emit(event)

    async def _replay_all(self, session: ClaudeSession, channel: SessionChannel | None) -> str | None:
        from claude_agent_sdk import get_session_messages

        if channel is not None:
            messages = await self._read(get_session_messages, session.session_id, directory=session.cwd)
            entries = [{"type": m.type, "uuid": m.uuid, "sessionId": m.session_id, "message": m.message}
                       for m in messages]
            recogniser = functools.partial(self.context.hooks.recognise_history, PROVIDER)
            for event in history.replay(entries, session.session_id, session.cwd, recogniser):
                await channel.emit(event)
        return None

    async def _listed(self, session_id: str, cwd: str) -> bool:
        """Whether claude-agent-sdk finds the session's transcript for `cwd` (its worktrees too)."""
        from claude_agent_sdk import get_session_info

        return await self._read(get_session_info, session_id, directory=cwd) is not None

    async def _stored(self, session: ClaudeSession) -> bool:
        """Whether the CLI wrote this session's transcript (a CLI killed early never did)."""
        from claude_agent_sdk import get_session_info

        return await self._read(get_session_info, session.session_id, directory=session.cwd) is not None

    async def _reopen_unwritten(self, session: ClaudeSession, cwd: str, mcp_servers: Sequence[McpServer],
                                channel: SessionChannel) -> SessionStart:
        """Resume or load of a session the agent holds that was never prompted (no transcript yet).

        There is nothing to replay and nothing the CLI could resume: the session stays as it is. New
        settings (cwd, MCP servers, credentials) retire its CLI, so the next prompt starts one with
        them under the same session id.
        """
        servers = content.mcp_servers(mcp_servers)
        credentials = dict(channel.credentials)
        dirs = additional_directories(channel)
        if (cwd, servers, credentials, dirs) != (session.cwd, session.mcp_servers, session.credentials,
                                                 session.add_dirs):
            session.cwd, session.mcp_servers, session.credentials = cwd, servers, credentials
            session.add_dirs = dirs
            if session.cli is not None:
                cli, session.cli = session.cli, None
                await self._stop(cli)
        await self._announce(session, channel)
        return SessionStart(session.session_id, self._modes(session), self._config_options(session))

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        """A copy of the stored transcript under a new id (claude-agent-sdk's `fork_session`, as
        claude-agent-acp forks), opened like a resumed session; the source stays as it was. A
        source the agent holds that was never prompted has nothing to copy: the fork starts empty."""
        from claude_agent_sdk import fork_session

        self._drop_spare("the first session is a fork")
        source = self.sessions.get(session_id)
        if source is not None and not source.prompted:
            return await self.new_session(cwd, mcp_servers, channel)
        directory = source.cwd if source is not None else cwd
        await self._check_transcript(session_id, directory)
        try:
            forked = await self._read(fork_session, session_id, directory=directory)
        except (FileNotFoundError, ValueError):
            raise SessionNotFound(session_id) from None
        session = ClaudeSession(forked.session_id, cwd, credentials=dict(channel.credentials),
                                mcp_servers=content.mcp_servers(mcp_servers),
                                add_dirs=additional_directories(channel),
                                mode=source.mode if source is not None else "default",
                                model=source.model if source is not None else None,
                                effort=source.effort if source is not None else None,
                                fast=source.fast if source is not None else False)
        try:
            await self._connect(session, resume=True)
        except BaseException:
            self._forget_files(session)
            raise
        self.sessions[session.session_id] = session
        await self._announce(session, channel)
        return SessionStart(session.session_id, self._modes(session), self._config_options(session))

    async def delete_session(self, session_id: str) -> None:
        """Remove the stored transcript (and its subagents' transcripts) as claude-agent-sdk's
        `delete_session` does; the core closed the session first if it held it."""
        from claude_agent_sdk import delete_session

        try:
            await self._read(delete_session, session_id)
        except (FileNotFoundError, ValueError):
            if session_id not in self._unwritten:
                raise SessionNotFound(session_id) from None
        self._unwritten.discard(session_id)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        import claude_agent_sdk  # noqa: F401 (most of a second: imported before the reading deadline starts)

        offset = int(cursor) if cursor and cursor.isdigit() else 0
        found = await self._read(store.list_sessions, cwd, limit=PAGE_SIZE + 1, offset=offset,
                                 label="claude session list")
        infos = [SessionInfo(
            session_id=info.session_id, cwd=info.cwd or cwd or "",
            title=info.custom_title or info.summary or UNSET,
            updated_at=datetime.fromtimestamp(info.last_modified / 1000, UTC).isoformat().replace("+00:00", "Z")
            if info.last_modified else UNSET) for info in found[:PAGE_SIZE] if info.cwd or cwd]
        return SessionListing(infos, str(offset + PAGE_SIZE) if len(found) > PAGE_SIZE else None)

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        """CLIs started from now on get `environ`; each open session's CLI is replaced at its
        next prompt (resuming its transcript)."""
        self.context = attrs.evolve(self.context, environ=dict(environ))
        for session in self.sessions.values():
            session.renew = session.cli is not None
        return True

    async def close_session(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._kept_settings[session_id] = _Kept.of(session)
            if session.cli is not None:
                await self._stop(session.cli)
            self._forget_files(session)
            if not session.prompted:
                self._unwritten.add(session_id)

    def why_not_offered(self, session_id: str, mode_id: str) -> str | None:
        """`bypassPermissions` where the CLI refuses it (`bypass_allowed`); every other mode the
        sessions do not offer is unknown to them."""
        if mode_id == "bypassPermissions" and not bypass_allowed(environment(self.context.environ, {}, "")):
            return BYPASS_REFUSED
        return None

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        session = self._session(session_id)
        if session.released:
            await self._revive_with(session, mode=mode_id)
            return
        if session.cli is not None and not session.dead:
            await self._apply(session.cli, "mode", mode_id)
            session.last_used = time.monotonic()
        session.mode = mode_id

    @staticmethod
    async def _apply(cli: ClaudeCLI, name: str, value: str | bool | None) -> None:
        """One setting to a running CLI, which answers once it holds (or refuses it)."""
        if name == "mode":
            await cli.request("set_permission_mode", mode=value)
        elif name == "model":
            await cli.request("set_model", model=value)
        elif name == "fast":
            await cli.request("apply_flag_settings", settings={"fastMode": value})
        else:  # effort; null clears the session's level (the CLI's settings decide again)
            await cli.request("apply_flag_settings", settings={"effortLevel": value})

    async def _revive_with(self, session: ClaudeSession, **changes: Any) -> None:
        """A mode, model or effort change of a released session: its CLI starts again with the new
        setting (which it verifies); on failure the session keeps the old one."""
        async with session.lock:
            if not session.released:  # a prompt brought it back meanwhile
                if session.cli is not None and not session.dead:
                    for name, value in changes.items():
                        await self._apply(session.cli, name, value)
                for name, value in changes.items():
                    setattr(session, name, value)
                return
            previous = {name: getattr(session, name) for name in changes}
            for name, value in changes.items():
                setattr(session, name, value)
            try:
                await self._revive(session)
            except BaseException:
                for name, value in previous.items():
                    setattr(session, name, value)
                raise

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        session = self._session(session_id)  # one of its options and one of its values: the core checked
        changes: dict[str, str | bool | None]
        if config_id == settings.EFFORT:
            changes = {"effort": settings.effort_value(value)}
        elif config_id == settings.FAST:
            changes = {"fast": value == settings.FAST_ON}
        else:
            changes = {"model": value}
            if session.effort is not None and session.effort not in settings.effort_levels(session.models, value):
                changes["effort"] = None  # the new model has no such level
            if session.fast and not settings.supports_fast_mode(session.models, value):
                changes["fast"] = False
        if session.released:
            await self._revive_with(session, **changes)
            return self._config_options(session)
        if session.cli is not None and not session.dead:
            for name, setting in changes.items():
                await self._apply(session.cli, name, setting)
            session.last_used = time.monotonic()
        for name, setting in changes.items():
            setattr(session, name, setting)
        return self._config_options(session)

    # -- turns -------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        session = self._session(session_id)
        async with session.lock:
            if session.cli is not None and not session.dead and not session.cli.alive:
                await self._lost_while_idle(session, turn)
            if session.renew:
                # New credentials (a sign-in, a key stored meanwhile): a CLI with them takes over
                # the session, resuming its transcript, as a released session comes back.
                session.renew = False
                if session.cli is not None and not session.dead and not session.released:
                    self._release(session, "new credentials")
            await self._ensure_cli(session, turn)
            local = commands.local_command(prompt)
            if local == commands.MCP:
                return await self._answer_mcp(session, turn)
            if local == commands.STATUS:
                await turn.emit(AgentMessageChunk(TextContent(self._status(session))))
                return TurnEnd("end_turn")
            fold = TurnFold(cwd=session.cwd, observe=bound(self.context.hooks, PROVIDER), tasks=session.tasks,
                            window=session.window)
            session.fold, session.turn = fold, turn
            session.steers.clear()
            session.steer_running = session.turn_over = False
            try:
                try:
                    outcome = await self._run_turn(session, prompt, turn, fold)
                except _NotSubmitted:
                    # The CLI had died before our message reached it: replace it and submit for the first time.
                    await self._lost_while_idle(session, turn)
                    await self._ensure_cli(session, turn)
                    fold = TurnFold(cwd=session.cwd, observe=bound(self.context.hooks, PROVIDER), tasks=session.tasks,
                                    window=session.window)
                    session.fold = fold
                    try:
                        outcome = await self._run_turn(session, prompt, turn, fold)
                    except _NotSubmitted:
                        session.dead = True
                        outcome = attrs.evolve(classify.lost_while_idle(), execution="notSubmitted",
                                               phase=Phase.SUBMITTING.value)
            finally:
                session.turn = None
                session.turn_over = True
                if session.steers:
                    # A steered message the CLI never started (the turn was cancelled or cut
                    # off): it could still run and answer into the next prompt. Replaced first.
                    session.dead = True
                session.last_used = time.monotonic()
        if isinstance(outcome, FailureObservation):
            raise TurnFailed(outcome)
        await self._ask_title(session, prompt, turn)
        return outcome

    async def _answer_mcp(self, session: ClaudeSession, turn: TurnChannel) -> TurnEnd:
        """`/mcp`, which the CLI answers only with a count in stream-json: its servers' states."""
        assert session.cli is not None
        try:
            status = await session.cli.request("mcp_status")
        except (CLIGone, ControlError) as exc:
            log.info("claude mcp_status failed: %s", type(exc).__name__)
            status = None
        session.last_used = time.monotonic()
        answer = commands.mcp_text(status) if status is not None else "The MCP servers' state is not available."
        await turn.emit(AgentMessageChunk(TextContent(answer)))
        return TurnEnd("end_turn")

    def _status(self, session: ClaudeSession) -> str:
        """`/status`: what the session runs with, from the agent's state and the CLI's report."""
        info = settings.model_info(session.models, session.model)
        model = str(session.model or "default")
        if info is not None:
            name = str(info.get("displayName") or info.get("value"))
            resolved = info.get("resolvedModel")
            model = f"{name} ({resolved})" if isinstance(resolved, str) and resolved else name
        mode = next((name for mode_id, name, _ in MODES if mode_id == session.mode), session.mode)
        fast = session.fast if settings.supports_fast_mode(session.models, session.model) else None
        return commands.status_text(version=session.version, session_id=session.session_id, cwd=session.cwd,
                                    directories=session.add_dirs, model=model, mode=mode, effort=session.effort,
                                    fast=fast, account=session.account)

    async def _ask_title(self, session: ClaudeSession, prompt: Sequence[ContentBlock], turn: TurnChannel) -> None:
        """A new session's first turn that ended publishes its prompt as the title at once (as
        the Codex provider does; claude-agent-acp shows the stored first prompt where the CLI
        gives no title). Until the CLI has named the session, each turn that ended asks it for a
        title, in the background, which replaces the prompt. Not before the turn: the CLI stores
        the title in the transcript at once, and a transcript holding only a title is one
        `--resume` cannot open (a CLI lost in its first turn would leave the session unresumable)."""
        if session.untitled and (shown := titles.provisional(prompt)):
            session.untitled = False
            await turn.emit(SessionTitle(shown))  # the core makes it one short line
        text = titles.description(prompt)
        if session.titled or not text or session.cli is None or session.dead:
            return
        session.titled = True

        async def ask(cli: ClaudeCLI) -> None:
            session.titled = await titles.publish(cli, text, turn.emit)

        self._tg.start_soon(ask, session.cli)

    async def _lost_while_idle(self, session: ClaudeSession, turn: TurnChannel) -> None:
        log.warning("claude CLI of session %s exited between turns", session.session_id)
        session.dead = True
        await turn.emit(SessionFailure(classify.lost_while_idle()))

    async def _ensure_cli(self, session: ClaudeSession, turn: TurnChannel) -> None:
        """A running CLI for the session: started (resuming its transcript) if it has none or it died."""
        if session.cli is not None and not session.dead:
            return
        if session.released and not session.dead:
            await self._revive(session)
            return
        replaced = session.dead
        if session.cli is not None:
            cli, session.cli = session.cli, None
            await self._stop(cli)
        await self._connect(session, resume=await self._stored(session))
        if replaced:
            await turn.emit(RuntimeReplaced())

    async def _run_turn(self, session: ClaudeSession, prompt: Sequence[ContentBlock], turn: TurnChannel,
                        fold: TurnFold) -> TurnEnd | FailureObservation:
        message = {"type": "user", "message": {"role": "user", "content": content.prompt_blocks(prompt)},
                   "parent_tool_use_id": None, "session_id": session.session_id, "uuid": turn.turn_id}
        cli = session.cli
        assert cli is not None
        try:
            async with self.context.clock.phase(Phase.SUBMITTING, label="claude"):
                try:
                    await cli.send_user(message)
                except CLIGone:
                    log.info("claude CLI took no input")
                    raise _NotSubmitted from None
                session.prompted = True
                first = await cli.receive()
            await self._handle(session, fold, first, turn)
            if not self._turn_ended(session, fold):
                async with self.context.clock.phase(Phase.RUNNING, label="claude"):
                    while not self._turn_ended(session, fold):
                        await self._handle(session, fold, await cli.receive(), turn)
        except anyio.EndOfStream:
            pass
        except PhaseDeadlineExceeded as exc:
            turn.record_failure(exc.observation)
            self._abandon(session)
            raise
        except BaseException:
            # Cut off before the turn's result (the cancel grace ran out, shutdown, or an error
            # while handling a line): the CLI may still be on this turn and its stream would hand
            # the rest to the next prompt. The CLI is replaced before the next prompt instead.
            if fold.outcome is None:
                session.dead = True
            raise
        if fold.outcome is None:
            self._abandon(session)
            return fold.finish_without_result()
        return fold.outcome

    async def _handle(self, session: ClaudeSession, fold: TurnFold, message: dict[str, Any],
                      turn: TurnChannel) -> None:
        steered = message.get("command_uuid")
        if message.get("type") == "command_lifecycle" and isinstance(steered, str) and steered in session.steers:
            # The CLI took up (or dropped) a steered message; a started one owes a result.
            if message.get("state") in ("started", "cancelled", "completed"):
                session.steers.discard(steered)
                session.steer_running = session.steer_running or message.get("state") == "started"
        elif message.get("type") == "result":
            session.steer_running = False
        for event in fold.feed(message):
            await turn.emit(event)

    @staticmethod
    def _turn_ended(session: ClaudeSession, fold: TurnFold) -> bool:
        """Whether the turn is over: its result is in and no steered message is queued or running
        (a steer at priority `now` aborts the cycle, whose result comes first; the steered
        message's own cycle ends with the result that answers the turn). A cancel ends it at once."""
        if not fold.finished:
            return False
        if (session.steers or session.steer_running) and not fold.cancel_requested:
            fold.outcome = None  # the aborted cycle's result: the turn goes on with the steer
            return False
        session.turn_over = True
        return True

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """A user message into the running turn, as claude-agent-acp sends it: priority `now`
        (the CLI aborts the current cycle and runs the message next), `later` while a permission
        request or question is open (so the user's answer is not thrown away). Its output streams
        into `turn`, which ends with the result after it. False when the turn is already over."""
        session = self.sessions.get(session_id)
        if (session is None or session.turn is not turn or session.turn_over or session.cli is None
                or session.dead or session.fold is None or session.fold.cancel_requested):
            return False
        steer_id = str(uuid.uuid4())
        message = {"type": "user", "message": {"role": "user", "content": content.prompt_blocks(prompt)},
                   "parent_tool_use_id": None, "session_id": session.session_id, "uuid": steer_id,
                   "priority": "later" if session.asking else "now"}
        session.steers.add(steer_id)  # before the write: the turn must not end without it
        try:
            async with self.context.clock.phase(Phase.SUBMITTING, label="claude steer"):
                await session.cli.send_user(message)
        except CLIGone:
            session.steers.discard(steer_id)
            log.info("claude CLI took no steered input")
            return False
        return True

    async def cancel(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is None or session.fold is None or session.turn is None:
            return
        session.fold.cancel_requested = True
        if session.cli is not None and not session.dead:
            try:
                await session.cli.request("interrupt", timeout_s=INTERRUPT_BUDGET_S)
            except (CLIGone, ControlError) as exc:
                log.info("claude interrupt failed: %s", type(exc).__name__)

    async def _on_request(self, session: ClaudeSession, request: dict[str, Any]) -> dict[str, Any]:
        """The CLI's control requests: permission to use a tool, an MCP server's elicitation. The
        agent registers no hook callbacks and no in-process MCP servers, so any other is refused."""
        subtype = request.get("subtype")
        if subtype not in ("can_use_tool", "elicitation"):
            raise ControlError(f"unsupported control request {subtype}")
        session.asking += 1
        try:
            if subtype == "elicitation":
                return await self._elicit(session, request)
            return await self._can_use_tool(session, request)
        finally:
            session.asking -= 1

    @staticmethod
    async def _elicit(session: ClaudeSession, request: dict[str, Any]) -> dict[str, Any]:
        """An MCP server asks the user (a form or a URL): asked through the core; outside a turn,
        or for a request it cannot carry, the answer is `cancel`."""
        question = asking.elicitation_question(request)
        turn = session.turn
        if question is None or turn is None or (session.fold is not None and session.fold.cancel_requested):
            return {"action": "cancel"}
        return asking.elicitation_result(await turn.ask(question))

    async def _can_use_tool(self, session: ClaudeSession, request: dict[str, Any]) -> dict[str, Any]:
        tool_name = str(request.get("tool_name"))
        raw_input = request.get("input")
        tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        turn = session.turn
        if turn is None or (session.fold is not None and session.fold.cancel_requested):
            return {"behavior": "deny", "message": "The turn was cancelled.", "interrupt": True}
        if tool_name == asking.ASK_TOOL:
            tool_use_id = request.get("tool_use_id")
            return await self._ask_user(session, turn, tool_input, tool_use_id if isinstance(tool_use_id, str) else None)
        call = content.tool_call(request.get("tool_use_id") or f"permission-{uuid.uuid4()}", tool_name, tool_input,
                                 session.cwd)
        exit_plan = tool_name == asking.EXIT_PLAN_TOOL
        update = ToolCallUpdate(tool_call_id=call.tool_call_id,
                                title=asking.EXIT_PLAN_TITLE if exit_plan else request.get("title") or call.title,
                                kind=call.kind, status="pending", content=call.content, locations=call.locations,
                                raw_input=dict(tool_input))
        if exit_plan:
            return await self._leave_plan_mode(session, turn, update, tool_input)
        choice = await turn.request_permission(update, PERMISSION_OPTIONS)
        if choice in ("allow", "allow_always"):
            # Allowed: the CLI runs the tool now; its result completes or fails the call.
            await turn.emit(ToolCallUpdate(tool_call_id=call.tool_call_id, status="in_progress"))
        if choice == "allow":
            return {"behavior": "allow", "updatedInput": tool_input}
        if choice == "allow_always":
            suggestions = request.get("permission_suggestions")
            allowed: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input}
            if isinstance(suggestions, list) and suggestions:
                allowed["updatedPermissions"] = suggestions
            return allowed
        cancelled = choice is None and session.fold is not None and session.fold.cancel_requested
        denied: dict[str, Any] = {"behavior": "deny", "message": "The user rejected this tool call."}
        if cancelled:
            denied["interrupt"] = True
        return denied

    async def _ask_user(self, session: ClaudeSession, turn: TurnChannel, tool_input: dict[str, Any],
                        tool_use_id: str | None) -> dict[str, Any]:
        """AskUserQuestion: the core asks (elicitation or permission options) on the tool's own
        call; the answers go back as the tool's input. A dismissed question (or a cancelled turn)
        refuses the tool."""
        question = asking.question(tool_input, tool_use_id)
        if question is None:
            return {"behavior": "deny", "message": "AskUserQuestion called with no valid questions."}
        answer = await turn.ask(question)
        if answer.action == "cancel":
            denied: dict[str, Any] = {"behavior": "deny", "message": "The user dismissed the question."}
            if session.fold is not None and session.fold.cancel_requested:
                denied["interrupt"] = True
            return denied
        return {"behavior": "allow", "updatedInput": asking.answered_input(tool_input, answer)}

    async def _leave_plan_mode(self, session: ClaudeSession, turn: TurnChannel, update: ToolCallUpdate,
                               tool_input: dict[str, Any]) -> dict[str, Any]:
        """ExitPlanMode: approve the plan and switch to a mode (the CLI switches; the client hears
        `current_mode_update`), or keep planning (the turn stops, as in claude-agent-acp)."""
        modes = [mode[0] for mode in available_modes(self.context.environ)]
        choice = await turn.request_permission(update, asking.exit_plan_options(modes))
        mode = asking.EXIT_PLAN_MODES.get(choice or "")
        if mode is None:
            cancelled = choice is None and session.fold is not None and session.fold.cancel_requested
            if session.fold is not None:
                # The interrupt ends the turn with an error result: an intended stop, so the
                # turn ends `cancelled` (as claude-agent-acp maps it) and the user types feedback.
                session.fold.cancel_requested = True
            message = "The turn was cancelled." if cancelled else "User chose to keep planning"
            return {"behavior": "deny", "message": message, "interrupt": True}
        session.mode = mode
        await turn.emit(ToolCallUpdate(tool_call_id=update.tool_call_id, status="in_progress"))
        await turn.emit(CurrentModeUpdate(current_mode_id=mode))
        return asking.exit_plan_approval(tool_input, mode)

    @staticmethod
    async def _stop_at_exit(session: ClaudeSession, cli: ClaudeCLI) -> None:
        """The agent is exiting. A CLI that never had a prompt holds nothing: it is killed. One
        between turns whose last turn ended SETTLED_S ago has written its transcript: stdin EOF
        and SIGTERM at once (its own orderly exit), SIGKILL after EXIT_GRACE_S. One whose turn
        was cut off (answered as shut down on a signal, or cut off otherwise) or is being cut
        off by the exit is not kept either: stdin EOF and SIGTERM at once, on which the CLI
        writes out its transcript and exits, SIGKILL after CUT_OFF_TERM_S. So the agent exits
        at once and leaves nothing behind. One that was just busy gets the orderly stop."""
        if session.turn is None and not session.prompted:
            await cli.stop(grace_s=0, term_s=0)  # nothing of it to keep: no transcript, no turn
        elif session.turn is None and time.monotonic() - session.last_used >= SETTLED_S:
            await cli.stop(grace_s=0, term_s=EXIT_GRACE_S)
        elif session.dead or session.turn is not None:
            await cli.stop(grace_s=0, term_s=CUT_OFF_TERM_S)
        else:
            await cli.stop(grace_s=STOP_GRACE_S)

    async def aclose(self) -> None:
        """Stop every session's CLI and remove the private files; stops of failed attempts still
        running in the runtime's task group finish before `open_runtime` returns."""
        self._idle_release.stop()
        sessions, self.sessions = list(self.sessions.values()), {}
        spare_cli, self._spare = self._spare, None
        try:
            async with anyio.create_task_group() as task_group:
                if spare_cli is not None:
                    log.debug("stopping the spare claude CLI (pid %d): never used", spare_cli.cli.process.pid)
                    task_group.start_soon(functools.partial(spare_cli.cli.stop, grace_s=0, term_s=0))
                for session in sessions:
                    if session.cli is not None:
                        task_group.start_soon(self._stop_at_exit, session, session.cli)
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
