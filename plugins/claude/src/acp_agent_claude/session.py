"""A Claude session as the runtime holds it, and the modes it offers."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from attrs import define, field

from acp_agent.provider import (
    UNSET,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOption,
    SessionChannel,
    SessionMode,
    SessionModeState,
    TurnChannel,
    TurnEnd,
)
from acp_agent_claude import content, settings
from acp_agent_claude.bash_tasks import BashTasks
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.goals import Goals
from acp_agent_claude.prestart import bypass_allowed, environment
from acp_agent_claude.subagents import Children
from acp_agent_claude.tasks import TaskPlan
from acp_agent_claude.transport import ClaudeCLI

PROVIDER = "claude"


@define
class Hold:
    """A turn held for the subagents it started in the background: its own outcome, the results
    read since (of cycles the CLI ran on their notifications), and the scope of the read a cancel
    ends."""

    outcome: TurnEnd
    results: int = 0
    scope: anyio.CancelScope | None = None
    handed_over: bool = False
    """A prompt waits behind it: it answers now, with its own outcome (`holding.hand_over`)."""


MODES: tuple[tuple[str, str, str], ...] = (
    ("default", "Default", "Ask before running commands and editing files"),
    ("acceptEdits", "Accept edits", "Edit files without asking; still ask before commands"),
    ("plan", "Plan", "Analyse and plan only; no edits or commands"),
    ("auto", "Auto", "Claude decides which actions are safe to run and asks about the rest"),
    ("bypassPermissions", "Bypass permissions", "Run everything without asking"),
)


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
    instructions: str | None = None  # AIR's customInstructions (`--append-system-prompt`)
    recommending: bool = False  # the client shows recommended values: concrete model and effort
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
    routing: dict[str, str] = field(factory=dict, repr=False)
    """The CLI's environment for the client's gateway as the session was opened (`gateway`)."""
    mcp_servers: dict[str, dict[str, Any]] = field(factory=dict)
    mcp_reported: set[str] = field(factory=set)  # its MCP servers whose failure was told
    mcp_config: Path | None = None  # the servers as a 0600 file, never on the CLI's command line
    route_file: Path | None = None  # its gateway route as a 0600 settings file (`--settings`)
    last_used: float = field(factory=time.monotonic)  # when its last turn ended (or it was opened)
    prompted: bool = False  # a user message reached its CLI: the CLI keeps a transcript of it
    released: bool = False  # its CLI was stopped while idle; the next prompt or setting starts one
    stopping: anyio.Event | None = None  # set once the released CLI is gone (it may still write)
    steers: set[str] = field(factory=set)  # uuids of messages steered into the turn, not started yet
    steer_running: bool = False  # a steered message started after the turn's last result
    turn_over: bool = True  # the running turn's last result is in: nothing can join it
    asking: int = 0  # permission requests and questions open: a steer waits for them
    tasks: TaskPlan = field(factory=TaskPlan)  # the task tools' plan, across turns
    children: Children = field(factory=Children)  # its subagents, across turns
    bash_tasks: BashTasks = field(factory=BashTasks)  # its background commands, across turns
    own_turn: TurnFold | None = None
    """The turn the CLI runs on its own (after a background task or subagent ended), read
    between prompts."""
    queued_behind: bool = False  # the prompt's message waits in the CLI behind a turn of its own
    listening: tuple[anyio.CancelScope, anyio.Event] | None = None  # the reader between prompts
    goals: Goals = field(factory=Goals)  # its goal (`/goal`), as published
    window: content.ContextWindow = field(factory=content.ContextWindow)  # as last reported
    titled: bool = False  # its title was asked for (and published) or is being asked for
    chosen_title: str | None = None  # set by the client before the CLI kept a transcript
    renamed: bool = False  # the client set the title: no generated one is published
    untitled: bool = False  # a new session yet to show a title: its first turn's prompt is one
    renew: bool = False  # the agent's environment changed: its next prompt runs on a new CLI
    channel: SessionChannel | None = None  # the core's side of it: asks between prompts
    hold: Hold | None = None  # its turn's result is in, the answer waits for its background subagents


    def overrides(self) -> dict[str, str]:
        """What the CLI's environment takes from the session: its credentials, then its routing."""
        return {**self.credentials, **self.routing}

    def cancelling(self) -> bool:
        """Its turn was asked to stop (by the client, or by a choice that ends it)."""
        return self.fold is not None and self.fold.cancel_requested

    @property
    def live(self) -> bool:
        """It has a CLI that was not found dead."""
        return self.cli is not None and not self.dead

    def mode_state(self, environ: Mapping[str, str]) -> SessionModeState:
        auto = self.mode == "auto" or settings.supports_auto_mode(self.models, self.model)
        return SessionModeState(current_mode_id=self.mode, available_modes=[
            SessionMode(mode_id, name, description)
            for mode_id, name, description in available_modes(environ, auto=auto)])

    def config_options(self) -> list[ConfigOption]:
        return settings.config_options(self.models, self.model, self.effort, self.fast, self.recommending)

    async def announce(self, channel: SessionChannel) -> None:
        """The CLI's slash commands, to a client that opened the session."""
        commands = [AvailableCommand(
            name=str(c["name"]), description=str(c.get("description") or ""),
            input=AvailableCommandInput(str(c["argumentHint"])) if c.get("argumentHint") else UNSET)
            for c in self.commands]
        if commands:
            await channel.emit(AvailableCommandsUpdate(commands))
