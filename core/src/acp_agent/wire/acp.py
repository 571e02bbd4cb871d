"""Attrs types for the ACP messages the agent reads and writes, and their method names.

This module holds what answering `initialize` (and auth) needs; the types of sessions (content,
updates, session requests, permission asks) are in `acp_agent.wire.acp_session`, built on first use
and read through this module all the same (`acp.ToolCall`, `from acp_agent.wire.acp import ToolCall`),
so the agent answers `initialize` before it pays for them. Knows the shape of ACP messages; knows
nothing of providers or failures. Use `make_acp_converter()` to move between these classes and JSON.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from attrs import field

from acp_agent.wire.convert import UNSET, Meta, Unset, clip
from acp_agent.wire.records import frozen

if TYPE_CHECKING:
    from acp_agent.wire.acp_session import *  # noqa: F403 - the session types, read through this module
    from acp_agent.wire.acp_session import AgentMessageChunk, AgentThoughtChunk, UserMessageChunk

PROTOCOL_VERSION = 1

_SESSION_TYPES = "acp_agent.wire.acp_session"


def __getattr__(name: str) -> Any:
    """The session types, loaded the first time one is asked for (then they are plain globals)."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from acp_agent.wire import acp_session

    exported = {public: getattr(acp_session, public) for public in acp_session.__all__}
    globals().update(exported)
    if name in exported:
        return exported[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _session_types() -> types.ModuleType:
    """`acp_agent.wire.acp_session`, imported on first use. The chunk helpers below run once per
    streamed delta: an import statement in them would cost as much as building the chunk."""
    module = sys.modules.get(_SESSION_TYPES)
    if module is not None:
        return module
    from acp_agent.wire import acp_session

    return acp_session


def agent_text(text: str, message_id: str | None = None) -> AgentMessageChunk:
    """A chunk of the agent's own message text, of the message `message_id` (None: the backend gives none)."""
    session = _session_types()
    chunk: AgentMessageChunk = session.AgentMessageChunk(session.TextContent(text),
                                 message_id=UNSET if message_id is None else message_id)
    return chunk


def thought_text(text: str, message_id: str | None = None) -> AgentThoughtChunk:
    """A chunk of the agent's reasoning, of the message `message_id` (None: the backend gives none)."""
    session = _session_types()
    chunk: AgentThoughtChunk = session.AgentThoughtChunk(session.TextContent(text),
                                 message_id=UNSET if message_id is None else message_id)
    return chunk


def user_text(text: str, message_id: str | None = None) -> UserMessageChunk:
    """A chunk of a user message (history replay), of the message `message_id` (None: the backend gives none)."""
    session = _session_types()
    chunk: UserMessageChunk = session.UserMessageChunk(session.TextContent(text),
                                 message_id=UNSET if message_id is None else message_id)
    return chunk


# --- initialize / auth ---------------------------------------------------------------------------


@frozen
class FileSystemCapability:
    read_text_file: bool = False
    write_text_file: bool = False


@frozen
class ClientAuthCapabilities:
    terminal: bool = False


@frozen
class ClientCapabilities:
    fs: FileSystemCapability = field(factory=FileSystemCapability)
    terminal: bool = False
    auth: ClientAuthCapabilities = field(factory=ClientAuthCapabilities)
    elicitation: dict[str, Any] | Unset | None = UNSET
    """ACP's unstable elicitation capabilities (`{"form": {}, "url": {}}`), read as given."""
    session: dict[str, Any] | Unset | None = UNSET
    """The session extensions the client presents (`{"notices": {}, "compaction": {}, …}`), read as given."""
    plan: dict[str, Any] | Unset | None = UNSET
    """ACP's unstable plan capability (`{}`: the client takes `plan_update`), read as given."""
    subagents: dict[str, Any] | Unset | None = UNSET
    """ACP's unstable `subagents: {}`: the client takes child sessions (`subagent_update`)."""
    meta: Meta | Unset | None = UNSET


@frozen
class Implementation:
    name: str
    version: str
    title: str | Unset | None = UNSET


@frozen
class InitializeRequest:
    protocol_version: int
    client_capabilities: ClientCapabilities = field(factory=ClientCapabilities)
    client_info: Implementation | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


@frozen
class PromptCapabilities:
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


@frozen
class McpCapabilities:
    http: bool = False
    sse: bool = False


@frozen
class SessionCapabilities:
    """Each present capability is `{}`; absent means unsupported."""

    list: Meta | Unset = UNSET
    resume: Meta | Unset = UNSET
    close: Meta | Unset = UNSET
    fork: Meta | Unset = UNSET
    delete: Meta | Unset = UNSET
    additional_directories: Meta | Unset = UNSET
    title: Meta | Unset = UNSET
    """`session/set_title` (unstable)."""


@frozen
class AgentAuthCapabilities:
    logout: Meta | Unset = UNSET
    status: Meta | Unset = UNSET
    """`auth/status` and `auth/status_update` (unstable)."""


@frozen
class AgentCapabilities:
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = field(factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = field(factory=McpCapabilities)
    session_capabilities: SessionCapabilities = field(factory=SessionCapabilities)
    auth: AgentAuthCapabilities = field(factory=AgentAuthCapabilities)
    providers: dict[str, Any] | Unset = UNSET
    """ACP's unstable `providers/*` (LLM routing slots a client may point at its gateway)."""
    meta: Meta | Unset = UNSET


@frozen
class AuthMethod:
    """An auth method: `type` UNSET is ACP's default agent method; "terminal" runs a command."""

    id: str
    name: str
    description: str | Unset | None = UNSET
    type: Literal["terminal"] | Unset = UNSET
    args: list[str] | Unset = UNSET
    env: dict[str, str] | Unset = UNSET
    meta: Meta | Unset = UNSET


@frozen
class InitializeResponse:
    protocol_version: int
    agent_capabilities: AgentCapabilities
    auth_methods: list[AuthMethod]
    agent_info: Implementation | Unset = UNSET
    meta: Meta | Unset = UNSET


@frozen
class AuthenticateRequest:
    method_id: str
    meta: Meta | Unset | None = UNSET


@frozen
class MetaOnlyResponse:
    """`authenticate`, `logout`, `session/close`, `session/set_mode`: `{}` plus optional `_meta`."""

    meta: Meta | Unset = UNSET


@frozen
class LogoutRequest:
    meta: Meta | Unset | None = UNSET


@frozen
class AuthStatusRequest:
    meta: Meta | Unset | None = UNSET


class MethodNames:
    """ACP method names, in one place."""

    INITIALIZE: ClassVar[str] = "initialize"
    AUTHENTICATE: ClassVar[str] = "authenticate"
    LOGOUT: ClassVar[str] = "logout"
    AUTH_STATUS: ClassVar[str] = "auth/status"
    AUTH_STATUS_UPDATE: ClassVar[str] = "auth/status_update"
    AIR_AUTH_STATUS_UPDATE: ClassVar[str] = "_auth/status_update"
    """The reference adapters' push of the agent's own sign-in (AIR)."""
    SESSION_NEW: ClassVar[str] = "session/new"
    SESSION_LOAD: ClassVar[str] = "session/load"
    SESSION_LIST: ClassVar[str] = "session/list"
    SESSION_RESUME: ClassVar[str] = "session/resume"
    SESSION_FORK: ClassVar[str] = "session/fork"
    SESSION_CLOSE: ClassVar[str] = "session/close"
    SESSION_DELETE: ClassVar[str] = "session/delete"
    SESSION_SET_TITLE: ClassVar[str] = "session/set_title"
    SESSION_PROMPT: ClassVar[str] = "session/prompt"
    SESSION_CANCEL: ClassVar[str] = "session/cancel"
    SESSION_SET_MODE: ClassVar[str] = "session/set_mode"
    SESSION_SET_CONFIG_OPTION: ClassVar[str] = "session/set_config_option"
    SESSION_STEERING: ClassVar[str] = "_session/steering"
    SESSION_GOAL: ClassVar[str] = "_session/goal"
    SESSION_ASYNC_TASK_STOP: ClassVar[str] = "_session/async_task/stop"
    CODEX_HOOKS_LIST: ClassVar[str] = "_codex/hooks/list"
    CODEX_HOOKS_TRUST: ClassVar[str] = "_codex/hooks/trust"
    """The steering extension of claude-agent-acp and codex-acp: input into the running turn."""
    SESSION_BATCH_GET: ClassVar[str] = "_session/batch_get"
    SESSION_RENAME: ClassVar[str] = "_session/rename"
    SESSION_ARCHIVE: ClassVar[str] = "_session/archive"
    SESSION_UNARCHIVE: ClassVar[str] = "_session/unarchive"
    SESSION_LIST_SUBSCRIBE: ClassVar[str] = "_session/list/subscribe"
    SESSION_LIST_UNSUBSCRIBE: ClassVar[str] = "_session/list/unsubscribe"
    SESSION_LIST_CHANGES: ClassVar[str] = "_session/list/changes"
    """AIR's session index (claude-agent-acp `session-index/*`): `acp_agent.sessions.index`."""
    SESSION_UPDATE: ClassVar[str] = "session/update"
    PROVIDERS_LIST: ClassVar[str] = "providers/list"
    PROVIDERS_SET: ClassVar[str] = "providers/set"
    PROVIDERS_DISABLE: ClassVar[str] = "providers/disable"
    """ACP's unstable gateway routing (`acp_agent.gateways`)."""
    REQUEST_PERMISSION: ClassVar[str] = "session/request_permission"
    FS_READ: ClassVar[str] = "fs/read_text_file"
    FS_WRITE: ClassVar[str] = "fs/write_text_file"


def make_acp_converter() -> Any:
    """The wire converter plus the tagged unions ACP uses (content blocks by `type`).

    Those unions are session types: their hooks match only once `acp_agent.wire.acp_session` is
    loaded (no value of them can exist before), so building the converter does not load it.
    """
    import cattrs

    from acp_agent.wire.convert import make_converter

    converter = make_converter()

    def session_type(name: str) -> Any:
        """A session type if they are loaded, else None (nothing can be asked for as it)."""
        module = sys.modules.get(_SESSION_TYPES)
        return getattr(module, name) if module is not None else None

    def structure_content(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("a content block must be an object")
        kind = value.get("type")
        cls = session_type("CONTENT_TYPES").get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unsupported content block type {clip(kind)!r}")
        return converter.structure(value, cls)

    def structure_resource(value: Any, _: Any) -> Any:
        if isinstance(value, dict) and "blob" in value:
            return converter.structure(value, session_type("BlobResourceContents"))
        return converter.structure(value, session_type("TextResourceContents"))

    def is_content(tp: Any) -> bool:
        content = session_type("ContentBlock")
        return content is not None and bool(tp == content)

    def is_mcp_server_list(tp: Any) -> bool:
        server = session_type("McpServer")
        return server is not None and bool(tp == types.GenericAlias(list, (server,)))

    def is_resource(tp: Any) -> bool:
        text, blob = session_type("TextResourceContents"), session_type("BlobResourceContents")
        return text is not None and bool(tp == text | blob)

    def structure_mcp_servers(value: Any, _: Any) -> Any:
        from acp_agent.wire.acp_session import parse_mcp_servers

        return parse_mcp_servers(value)

    # In the order they were registered when the session types were built eagerly (a later hook
    # wins over an earlier one).
    converter.register_structure_hook_func(is_content, structure_content)
    converter.register_structure_hook_func(is_mcp_server_list, structure_mcp_servers)
    converter.register_structure_hook_func(is_resource, structure_resource)
    assert isinstance(converter, cattrs.Converter)
    return converter

