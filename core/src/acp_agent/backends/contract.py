"""The contract between the core and a provider plugin.

A plugin registers a `ProviderSpec` (a frozen record) through the `acp_agent_providers` hook. The
spec's `open_runtime` yields a `ProviderRuntime`, the async object that drives the vendor backend
inside the core's task groups. The runtime talks back through the channels the core hands it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

import attrs
from attrs import field

from acp_agent.wire.records import frozen

if TYPE_CHECKING:  # what a runtime handles; not needed to register a provider or answer `initialize`
    from acp_agent.backends.events import Event, PlanFileCall, TurnEnd
    from acp_agent.backends.phases import PhaseClock
    from acp_agent.backends.process import EarlyProcess
    from acp_agent.backends.questions import Answer, Question, UrlQuestion
    from acp_agent.failures.hooks import FailureHooks
    from acp_agent.failures.protocol import FailureObservation
    from acp_agent.failures.redaction import Redactor
    from acp_agent.gateways import GatewaySlot
    from acp_agent.sessions.routing import SessionRouter
    from acp_agent.wire.acp import (
        ConfigOption,
        ContentBlock,
        McpServer,
        PermissionOption,
        SessionInfo,
        SessionModeState,
        ToolCallUpdate,
    )


class NotSupported(Exception):
    """The provider does not implement this operation; the agent answers -32601 for it."""


class TurnFailed(Exception):
    """Raised by `ProviderRuntime.prompt` when the turn ended in a failure."""

    def __init__(self, observation: FailureObservation) -> None:
        super().__init__(observation.title or observation.native_kind)
        self.observation = observation


@frozen
class BackendStatus:
    """Whether the vendor backend can run here; `detail` says where it is or how to install it."""

    usable: bool
    detail: str


@frozen
class TerminalLogin:
    """A sign-in the vendor's own CLI runs in a terminal: `acp-agent --provider X --cli *args`.

    Offered as a `terminal` auth method to clients that can open a terminal; `id` is the method
    id, `label` the terminal's title. `where` says which machines it suits: `local` needs a
    browser on this machine, `remote` works without one (SSH, `NO_BROWSER`), `any` both.
    """

    id: str
    name: str
    description: str
    args: tuple[str, ...]
    label: str
    where: Literal["any", "local", "remote"] = "any"


@frozen
class CredentialSpec:
    """Where a provider's credentials can come from, in the order the core checks them.

    `env_vars` are read from the environment; the keyring entry is service `acp-agent`, username
    the provider name, handed to the backend as `keyring_env_var`; `stored_files` are paths whose
    existence and size (above `stored_min_bytes`) count as configuration evidence, never read.
    """

    env_vars: tuple[str, ...] = ()
    keyring_env_var: str | None = None
    stored_files: Callable[[Mapping[str, str]], Sequence[str]] = lambda environ: ()
    stored_min_bytes: int = 0
    login_hint: str = ""
    vendor_cli: Callable[[Mapping[str, str]], str | None] | None = None
    """Finds the vendor's own CLI when it is needed (`acp-agent --provider X --cli ...`, logout),
    never at start-up."""
    logout_args: tuple[str, ...] = ()
    """Arguments for the vendor CLI that `logout` runs too (e.g. `("logout",)`); empty: nothing."""
    terminal_logins: tuple[TerminalLogin, ...] = ()
    """The vendor CLI's own sign-ins, offered to clients that run terminal auth methods."""
    status_args: tuple[str, ...] = ()
    """Arguments for the vendor CLI that exit 0 when signed in (e.g. `("auth", "status")`);
    `authenticate` runs them after a terminal sign-in. Empty: the credential evidence decides."""
    client_env_vars: tuple[str, ...] = ()
    """Further variables a client may hand over with a session's credentials (e.g. a gateway URL)."""
    per_session: bool = True
    """Whether the runtime can give one session its own credentials (one backend per session)."""


@frozen
class RuntimeCapabilities:
    load_session: bool = False
    list_sessions: bool = False
    resume_session: bool = False
    close_session: bool = True
    fork_session: bool = False
    delete_session: bool = False
    set_title: bool = False
    """`ProviderRuntime.set_title` renames a stored session in the backend (`session/set_title`)."""
    fork_at_message: bool = False
    """`fork_session` branches at the message `fork_at(channel)` names (AIR's
    `_meta.jetbrains.air.fork.messageId`), raising `MessageNotFound` for an id the session lacks;
    off, a fork that names a message is refused (-32602)."""
    additional_directories: bool = False
    """The runtime widens a session's workspace to the request's `additionalDirectories` (read
    from `SessionChannel.additional_directories`); off, a request that names some is refused."""
    image: bool = False
    audio: bool = False
    embedded_context: bool = False
    mcp_http: bool = False
    mcp_sse: bool = False
    archive_sessions: bool = False
    """The backend keeps an archive state of its own: `ProviderRuntime.archive_session` and
    `list_archived_sessions` work, and `list_sessions` lists the unarchived sessions only. Off,
    the core keeps AIR's archive marks itself (`acp_agent.sessions.index.ArchiveStore`)."""
    subagents: bool = False
    """The runtime reports its subagents (`events.SubagentStarted` and the rest), which the core
    shows as child sessions to a client that takes them (AIR's `nativeSubagentSessions`, ACP's
    `subagents`); `takes_subagents(channel)` says whether this client does (a replay need not
    read stored subagent histories for one that does not)."""
    background_subagents: bool = False
    """A turn's subagents may run in the background past the turn's end (Claude's Agent tool
    with `run_in_background`): the runtime holds a turn's answer until they end, unless the
    client takes them after it (`background_subagents(channel)`): AIR's `backgroundSubagents`."""
    custom_instructions: bool = False
    """The runtime hands `custom_instructions(channel)` to the model through the backend's own
    instruction mechanism (an appended system prompt, developer instructions) whenever it starts
    or reopens a session's backend: the core then serves AIR's `customInstructions`
    (`acp_agent.sessions.instructions`), keeping the text with the session."""
    steering: bool = False
    """`ProviderRuntime.steer` works: the core then offers `_session/steering` (advertised in
    `initialize` as `_meta.steering.supported`)."""
    file_changes: bool = False
    """The backend's file edits reach the core as tool calls of kind edit, delete or move that
    name their files (diffs or locations): the core serves AIR's `agentFileChangeReport`."""
    file_patches: bool = False
    """Edit tool calls carry their exact changes (`acp.FilePatch`): the core serves AIR's
    `diffPatch`."""
    recommended_values: bool = False
    """Config options name the value the backend recommends (`ConfigOption.recommended`): the
    core serves AIR's `recommendedValue`."""
    raw_input: bool = False
    """Tool calls carry their input as `rawInput` and no display copy of it in `content`: the
    agent serves AIR's `rawInputRendering` (the client renders `rawInput` itself)."""
    plan_file: bool = False
    """The runtime reports plan reviews whose plan is a file (`events.PlanFileCall`): AIR's
    `planFile` is advertised."""
    plan_content_delta: bool = False
    """The runtime streams plans as they grow (`events.PlanDocument.streamed`): AIR's
    `planContentDelta` is advertised (ACP v1: codex-acp offers it there only)."""
    goal_actions: tuple[str, ...] = ()
    """The backend keeps a goal per session: the actions of AIR's `_session/goal` it carries (of
    `set`, `pause`, `resume`, `clear`), run as the prompt `/goal <objective>` (`/goal pause`, ...)
    in the session's line; it reports the goal as `GoalSnapshot` events. Empty: no goals."""
    async_tasks: bool = False
    """The runtime reports its backend's background tasks (`events.AsyncTask`) and stops one with
    `ProviderRuntime.stop_async_task`: the agent serves AIR's `asyncTasks`."""
    goal_if_declared: bool = False
    """AIR's `goal` (and `_meta.jetbrains.air.goal`) is advertised only to a client that declared
    it, whose `initialize` answer alone changes (Claude), not to every client of the extension
    (Codex, as codex-acp)."""
    codex_hooks: bool = False
    """`ProviderRuntime.list_hooks` and `trust_hooks` work: the agent serves AIR's `codexHooks`
    (`_codex/hooks/list`, `_codex/hooks/trust`)."""


def _new_router() -> SessionRouter:
    from acp_agent.sessions.routing import SessionRouter

    return SessionRouter()


class PrestartedBackends(Protocol):
    """Backends the command line started before the agent's imports, for their runtimes to claim
    (`acp_agent.startup.prestart.Prestarted`)."""

    def tag(self, provider: str) -> str | None:
        """What the provider's prestart hook returned with its process (None: nothing, or no tag)."""
        ...

    def take(self, provider: str, argv: Sequence[str], env: Mapping[str, str],
             greeting: bytes = b"") -> EarlyProcess | None:
        """The provider's process, if it runs with exactly this argv and environment and was sent
        exactly this greeting; else None (it is stopped, and the runtime starts its own)."""
        ...


class _NothingPrestarted:
    """No backend was started early (a runtime opened without the command line: tests, the kit)."""

    def tag(self, provider: str) -> str | None:
        return None

    def take(self, provider: str, argv: Sequence[str], env: Mapping[str, str],
             greeting: bytes = b"") -> EarlyProcess | None:
        return None


NOTHING_PRESTARTED: PrestartedBackends = _NothingPrestarted()


@frozen
class RuntimeContext:
    """What a runtime gets from the core: environment (credentials applied), deadlines, redaction,
    and the failure hooks, through which a runtime classifies its backend's failures, titles them
    and recognises them in history, so any installed plugin can answer before the provider's own."""

    environ: Mapping[str, str]
    clock: PhaseClock
    redact: Redactor
    client_fs_read: bool = False
    client_fs_write: bool = False
    client_terminal: bool = False
    hooks: FailureHooks = field(kw_only=True)
    """The agent's (`acp_agent.backends.plugins.installed_hooks()` for a runtime started without one)."""
    router: SessionRouter = field(factory=_new_router)
    """Where a runtime sends what its backend reader reads, keyed by session id (the core's own,
    shared with the sessions it opens): see `acp_agent.sessions.routing`."""
    prestarted: PrestartedBackends = NOTHING_PRESTARTED
    """Backends the command line started before the agent's imports (`acp_agent.startup.prestart`): a
    runtime claims its own with `prestarted.take(name, argv, env)`."""


@frozen
class SessionStart:
    """What the provider reports after creating, loading, resuming or forking a session.

    The core checks `session/set_mode` and `session/set_config_option` against these `modes` and
    `config_options` (and the options the last `set_config_option` returned), and answers -32602
    itself for a mode, option or value the session did not offer.
    """

    session_id: str
    modes: SessionModeState | None = None
    config_options: Sequence[ConfigOption] | None = None


@frozen
class SessionListing:
    sessions: Sequence[SessionInfo]
    next_cursor: str | None = None


class SessionChannel(Protocol):
    """The core's side of one session, as a provider sees it.

    `credentials` are environment variables the client handed over for this session only
    (`_meta["<provider>/credentials"]`); the runtime must give them to this session's backend.
    The core's channels also carry `additional_directories`: read them with
    `additional_directories(channel)`.
    """

    @property
    def session_id(self) -> str: ...

    @property
    def credentials(self) -> dict[str, str]: ...

    async def emit(self, event: Event) -> None:
        """Publish a neutral event; inside a turn it belongs to that turn."""

    async def request_permission(self, tool_call: ToolCallUpdate | PlanFileCall,
                                 options: Sequence[PermissionOption]) -> str | None:
        """Ask the client; returns the chosen option id, or None when cancelled. A plan review
        (`PlanFileCall`) is asked about as the client sees plan reviews."""


def additional_directories(channel: SessionChannel) -> tuple[str, ...]:
    """The workspace roots beside `cwd` the session's request named (absolute, existing; empty
    unless the provider declared `additional_directories`). A channel that does not carry them
    (a test's stand-in, say) has none."""
    value = getattr(channel, "additional_directories", ())
    return tuple(value) if isinstance(value, tuple | list) else ()


def fork_at(channel: SessionChannel) -> str | None:
    """The message a `session/fork` asked to branch at: the new session keeps the history up to
    and including it (None: the whole history). Only with `RuntimeCapabilities.fork_at_message`."""
    value = getattr(channel, "fork_at", None)
    return value if isinstance(value, str) and value else None


def custom_instructions(channel: SessionChannel) -> str | None:
    """The instructions the client gave the session (AIR's `customInstructions`, kept by the core
    across resume, load and fork), for the backend's own instruction mechanism; None: none. Only
    with `RuntimeCapabilities.custom_instructions`."""
    value = getattr(channel, "custom_instructions", None)
    return value if isinstance(value, str) and value else None


def recommends_values(channel: SessionChannel) -> bool:
    """Whether the client shows the value a config option recommends (AIR's `recommendedValue`,
    only with `RuntimeCapabilities.recommended_values`): such a client is shown concrete values,
    so an option may leave out an entry that means "the backend decides" and run the recommended
    value instead, as claude-agent-acp does for it."""
    return getattr(channel, "recommended_values", False) is True


def takes_subagents(channel: SessionChannel) -> bool:
    """Whether the client takes subagents as child sessions (AIR's `nativeSubagentSessions` or
    ACP's `subagents`): only then is a subagent's stored history worth reading for a replay (the
    core drops it for any other client). Only with `RuntimeCapabilities.subagents`."""
    return getattr(channel, "subagent_sessions", False) is True


def background_subagents(channel: SessionChannel) -> bool:
    """Whether the client takes a turn's background subagents after the turn's answer (AIR's
    `backgroundSubagents`, with `RuntimeCapabilities.background_subagents`): the turn answers at
    its own end and their updates follow on the session. False: the runtime holds the answer
    until they end, so nothing of the turn comes after it."""
    return getattr(channel, "background_subagents", False) is True


class TurnChannel(SessionChannel, Protocol):
    """The core's side of one turn."""

    turn_id: str

    def record_failure(self, observation: FailureObservation) -> None:
        """Remember a failure as it is observed; the first one wins over anything later."""

    def adopt_turn_id(self, backend_turn_id: str) -> bool:
        """Use the backend's own turn id for this turn's incident (only before anything was published)."""

    async def ask(self, question: Question | UrlQuestion) -> Answer:
        """Ask the user a question (`acp_agent.sessions.questions`): an ACP elicitation for a client that
        offers it, else permission requests whose options are the answers; `cancel` when the user
        dismissed it or the turn was cancelled."""


class SessionNotFound(Exception):
    """The backend has no session with that id."""


class MessageNotFound(Exception):
    """The session has no message with that id (a fork asked to branch at it): -32602."""


_Session = TypeVar("_Session")


class SessionTable(dict[str, _Session]):
    """A runtime's open sessions by session id, one shape for every runtime: `table[session_id]`
    raises `SessionNotFound` (the core answers -32002) for an id the runtime does not hold;
    `get`, `pop` and `in` work as on any dict. What a closed session was set to is the core's to
    keep (it re-applies the user's choices to a resume, load or fork): drop the session here."""

    def __missing__(self, session_id: str) -> _Session:
        raise SessionNotFound(session_id)


class ProviderRuntime(abc.ABC):
    """Drives one vendor backend for one agent process. Default methods say "not supported".

    What reaches it is already checked: MCP servers arrive as typed records (`acp.McpServer`), a
    mode or option value is one the session offered; `acp_agent.wire.prompt.prompt_parts` turns a prompt
    into text for a backend that takes text.
    """

    @abc.abstractmethod
    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart: ...

    @abc.abstractmethod
    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        """Run one turn to its end; raise `TurnFailed` for a turn-ending failure."""

    @abc.abstractmethod
    async def cancel(self, session_id: str) -> None:
        """Ask the backend to stop the running turn; `prompt` then returns `cancelled`."""

    async def prompt_waiting(self, session_id: str) -> None:
        """A prompt waits behind the session's running turn: a turn that goes on only for
        background work (subagents it started, `RuntimeCapabilities.background_subagents`) may
        answer now with its own outcome. By default nothing happens."""
        return None

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """Add input to the running turn `turn` (the backend takes input mid-turn); its output
        streams into that turn. False when that turn is already over on the backend (the core
        then treats the session as idle). Only called with `RuntimeCapabilities.steering`."""
        raise NotSupported("_session/steering")

    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel, *, replay: bool
    ) -> SessionStart:
        """Open a stored session; with replay, emit its history (content and `HistoryFailure`s) first."""
        raise NotSupported("session/load")

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        raise NotSupported("session/list")

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        """Branch a stored session into a new one (ACP's unstable `session/fork`)."""
        raise NotSupported("session/fork")

    async def close_session(self, session_id: str) -> None:
        return None

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        """The backend's environment changed while sessions are open (a sign-in, a key stored in
        the keyring by `authenticate` or `acp-agent auth set`): backends started from now on get
        `environ`, and each open session's backend is replaced by one with it before that
        session's next prompt, keeping its history. False (the default): not supported, the
        backend is replaced once no session is open."""
        return False

    async def set_title(self, session_id: str, title: str) -> str:
        """Rename the stored session `session_id` in the backend (open here or not) and return the
        title the backend settled on (it may normalise it); raise `SessionNotFound` for an id the
        backend does not know. Its `session/list` shows the new title from now on."""
        raise NotSupported("session/set_title")

    async def archive_session(self, session_id: str, archived: bool) -> None:
        """Archive (or unarchive) the stored session in the backend; raise `SessionNotFound` for an
        id it does not know. Only with `RuntimeCapabilities.archive_sessions`."""
        raise NotSupported("_session/archive")

    async def list_archived_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        """The archived sessions, as `list_sessions` pages. Only with `archive_sessions`."""
        raise NotSupported("session/list")

    async def delete_session(self, session_id: str) -> None:
        """Remove a stored session so `session/list` no longer shows it (ACP's `session/delete`).

        The core has closed the session first if it held it open; raise `SessionNotFound` for an
        id the backend does not know.
        """
        raise NotSupported("session/delete")

    async def list_hooks(self, cwd: str) -> Mapping[str, object]:
        """AIR's `_codex/hooks/list`: the hooks the backend would run for `cwd` that the client
        may trust (`{cwd, hooks, warnings, errors}`). Only with `codex_hooks`."""
        raise NotSupported("_codex/hooks/list")

    async def trust_hooks(self, cwd: str, hooks: Sequence[Mapping[str, str]]) -> bool:
        """AIR's `_codex/hooks/trust`: record each hook (`{key, currentHash}`, as listed) as
        trusted; True when every one of them is trusted now. Only with `codex_hooks`."""
        raise NotSupported("_codex/hooks/trust")

    async def stop_async_task(self, session_id: str, task_id: str) -> bool | None:
        """AIR's `_session/async_task/stop`: stop the background task `task_id` of the session
        (the turn goes on). True once stopped, False when it cannot be stopped (it ended, or a
        stop of it is under way), None when the session never reported such a task. Only with
        `RuntimeCapabilities.async_tasks`."""
        raise NotSupported("_session/async_task/stop")

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        """Switch to `mode_id`, always one of the modes the session advertised (the core checked)."""
        raise NotSupported("session/set_mode")

    def why_not_offered(self, session_id: str, mode_id: str) -> str | None:
        """Why the session does not offer `mode_id`, where the provider withholds a mode its
        backend has (the backend refuses it here, say): the core's -32602 answer to a
        `session/set_mode` to it says so. None (the default): a mode the core calls unknown."""
        return None

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        """Set an advertised option to one of its advertised values; return the options as they now are."""
        raise NotSupported("session/set_config_option")


def _reference(_: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    from acp_agent.backends.installed import valid_reference

    if value is not None and not valid_reference(value):
        raise ValueError(f"{attribute.name} must be 'package.module:function', not {value!r}")


@frozen
class ProviderSpec:
    """One provider, as a plugin registers it.

    `open_runtime` is called once per agent process, lazily (not at `initialize`), and must not
    import the vendor SDK before it is called. With `start_early` the core opens the runtime as
    soon as `initialize` is answered (or a request needs it), before any session is asked for, so
    a backend shared by every session (one process per agent, usually already booting from the
    command line: `acp_agent.startup.prestart`) finishes its handshake off the request path; the core
    reopens it if the environment a session would get has changed by the first session request.
    """

    name: str
    title: str
    open_runtime: Callable[[RuntimeContext], AbstractAsyncContextManager[ProviderRuntime]]
    credentials: CredentialSpec = field(factory=CredentialSpec)
    check_backend: Callable[[], BackendStatus] = lambda: BackendStatus(True, "")
    capabilities: RuntimeCapabilities = field(factory=RuntimeCapabilities)
    deadline_aliases: Mapping[str, tuple[str, ...]] = field(factory=dict)
    description: str = ""
    gateways: tuple[GatewaySlot, ...] = ()
    """The backend's LLM routing slots a client may point at its gateway (ACP's unstable
    `providers/*`, `acp_agent.gateways`); empty: the agent offers none."""
    start_early: bool = False
    prestart: str | None = field(default=None, validator=_reference)
    """Where the hook is that starts this provider's backend as the command line starts, before
    the agent's imports: "package.module:function" (see `acp_agent.startup.prestart` for what the
    hook returns). The module is loaded alone, so it imports little and nothing of its own
    package. None: the backend starts when the runtime opens."""
    classify_failure: str | None = field(default=None, validator=_reference)
    """This provider's classification of a native failure, "package.module:function":
    `(native) -> FailureObservation | None`. Every plugin's `acp_agent_classify_failure` hook is
    asked first; this answers when none does. Loaded at the first failure."""
    failure_title: str | None = field(default=None, validator=_reference)
    """This provider's title for a classified failure: `(native, kind) -> str | None`, after every
    plugin's `acp_agent_failure_title` hook (None: the kind's fallback title)."""
    recognise_history: str | None = field(default=None, validator=_reference)
    """This provider's recognition of a stored failure: `(entry, user_message_id) ->
    HistoryFailure | None`, after every plugin's `acp_agent_recognise_history` hook."""
