"""Attrs types for the ACP messages the agent reads and writes, and their method names.

Knows the shape of ACP messages; knows nothing of providers or failures. Use `make_converter()`
from `acp_agent.wire` to move between these classes and JSON.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from attrs import field, frozen

from acp_agent.wire import UNSET, FieldProblem, Unset, clip

PROTOCOL_VERSION = 1

Meta = dict[str, Any]


# --- content blocks ---------------------------------------------------------------------------


@frozen
class TextContent:
    text: str
    annotations: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    type: Literal["text"] = "text"


@frozen
class ImageContent:
    data: str
    mime_type: str
    uri: str | Unset | None = UNSET
    annotations: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    type: Literal["image"] = "image"


@frozen
class AudioContent:
    data: str
    mime_type: str
    annotations: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    type: Literal["audio"] = "audio"


@frozen
class ResourceLink:
    uri: str
    name: str
    mime_type: str | Unset | None = UNSET
    title: str | Unset | None = UNSET
    description: str | Unset | None = UNSET
    size: int | Unset | None = UNSET
    annotations: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    type: Literal["resource_link"] = "resource_link"


@frozen
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class BlobResourceContents:
    uri: str
    blob: str
    mime_type: str | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class EmbeddedResource:
    resource: TextResourceContents | BlobResourceContents
    annotations: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    type: Literal["resource"] = "resource"


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource

CONTENT_TYPES: dict[str, type] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}


# --- tool calls ------------------------------------------------------------------------------

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]


@frozen
class ToolContent:
    content: ContentBlock
    type: Literal["content"] = "content"


@frozen
class ToolDiff:
    path: str
    new_text: str
    old_text: str | None = None
    type: Literal["diff"] = "diff"


@frozen
class ToolTerminal:
    terminal_id: str
    type: Literal["terminal"] = "terminal"


ToolCallContent = ToolContent | ToolDiff | ToolTerminal


@frozen
class ToolLocation:
    path: str
    line: int | Unset | None = UNSET


# --- session updates ---------------------------------------------------------------------------


@frozen
class UserMessageChunk:
    content: ContentBlock
    meta: Meta | Unset = UNSET
    session_update: Literal["user_message_chunk"] = "user_message_chunk"


@frozen
class AgentMessageChunk:
    content: ContentBlock
    meta: Meta | Unset = UNSET
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"


@frozen
class AgentThoughtChunk:
    content: ContentBlock
    meta: Meta | Unset = UNSET
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"


@frozen
class ToolCall:
    tool_call_id: str
    title: str
    kind: ToolKind | Unset = UNSET
    status: ToolStatus | Unset = UNSET
    content: list[ToolCallContent] | Unset = UNSET
    locations: list[ToolLocation] | Unset = UNSET
    raw_input: Any | Unset = UNSET
    raw_output: Any | Unset = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["tool_call"] = "tool_call"


@frozen
class ToolCallFields:
    """A tool call's fields as an update carries them; `session/request_permission` sends exactly these."""

    tool_call_id: str
    title: str | Unset | None = UNSET
    kind: ToolKind | Unset | None = UNSET
    status: ToolStatus | Unset | None = UNSET
    content: list[ToolCallContent] | Unset | None = UNSET
    locations: list[ToolLocation] | Unset | None = UNSET
    raw_input: Any | Unset = UNSET
    raw_output: Any | Unset = UNSET
    meta: Meta | Unset = UNSET


@frozen
class ToolCallUpdate(ToolCallFields):
    session_update: Literal["tool_call_update"] = "tool_call_update"


@frozen
class PlanEntry:
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"] = "pending"


@frozen
class Plan:
    entries: list[PlanEntry]
    meta: Meta | Unset = UNSET
    session_update: Literal["plan"] = "plan"


@frozen
class AvailableCommandInput:
    hint: str


@frozen
class AvailableCommand:
    name: str
    description: str
    input: AvailableCommandInput | Unset | None = UNSET


@frozen
class AvailableCommandsUpdate:
    available_commands: list[AvailableCommand]
    meta: Meta | Unset = UNSET
    session_update: Literal["available_commands_update"] = "available_commands_update"


@frozen
class CurrentModeUpdate:
    current_mode_id: str
    meta: Meta | Unset = UNSET
    session_update: Literal["current_mode_update"] = "current_mode_update"


@frozen
class ConfigOptionValue:
    value: str
    name: str
    description: str | Unset | None = UNSET


@frozen
class ConfigOption:
    id: str
    name: str
    current_value: str
    options: list[ConfigOptionValue]
    description: str | Unset | None = UNSET
    category: str | Unset | None = UNSET
    type: Literal["select"] = "select"


@frozen
class ConfigOptionUpdate:
    config_options: list[ConfigOption]
    meta: Meta | Unset = UNSET
    session_update: Literal["config_option_update"] = "config_option_update"


@frozen
class SessionInfoUpdate:
    """`title: None` clears the title on the client; UNSET leaves it alone."""

    title: str | Unset | None = UNSET
    updated_at: str | Unset | None = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["session_info_update"] = "session_info_update"


@frozen
class Cost:
    amount: float
    currency: str = "USD"


@frozen
class UsageUpdate:
    used: int
    size: int
    cost: Cost | Unset | None = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["usage_update"] = "usage_update"


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCall
    | ToolCallUpdate
    | Plan
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)


def agent_text(text: str) -> AgentMessageChunk:
    """A chunk of the agent's own message text."""
    return AgentMessageChunk(TextContent(text))


def thought_text(text: str) -> AgentThoughtChunk:
    """A chunk of the agent's reasoning."""
    return AgentThoughtChunk(TextContent(text))


def user_text(text: str) -> UserMessageChunk:
    """A chunk of a user message (history replay)."""
    return UserMessageChunk(TextContent(text))


@frozen
class SessionNotification:
    session_id: str
    update: SessionUpdate
    meta: Meta | Unset = UNSET


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


@frozen
class AgentAuthCapabilities:
    logout: Meta | Unset = UNSET


@frozen
class AgentCapabilities:
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = field(factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = field(factory=McpCapabilities)
    session_capabilities: SessionCapabilities = field(factory=SessionCapabilities)
    auth: AgentAuthCapabilities = field(factory=AgentAuthCapabilities)
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


# --- sessions ------------------------------------------------------------------------------------


@frozen
class EnvVariable:
    name: str
    value: str
    meta: Meta | Unset = UNSET


@frozen
class HttpHeader:
    name: str
    value: str
    meta: Meta | Unset = UNSET


@frozen
class McpServerStdio:
    """An MCP server the backend starts as a process (`type` absent or "stdio" on the wire)."""

    name: str
    command: str
    args: list[str] = field(factory=list)
    env: list[EnvVariable] = field(factory=list)
    meta: Meta | Unset = UNSET


@frozen
class McpServerHttp:
    """An MCP server reached over streamable HTTP."""

    name: str
    url: str
    headers: list[HttpHeader] = field(factory=list)
    meta: Meta | Unset = UNSET
    type: Literal["http"] = "http"


@frozen
class McpServerSse:
    """An MCP server reached over HTTP with server-sent events (MCP's older transport)."""

    name: str
    url: str
    headers: list[HttpHeader] = field(factory=list)
    meta: Meta | Unset = UNSET
    type: Literal["sse"] = "sse"


McpServer = McpServerStdio | McpServerHttp | McpServerSse


def parse_mcp_servers(servers: Any) -> list[McpServer]:
    """ACP `mcpServers` as typed records; `FieldProblem` names the first field that departs from ACP.

    stdio `{name, command, args?, env?: [{name, value}]}`; http and sse `{type, name, url,
    headers?: [{name, value}]}`. Absent lists count as empty; anything present must have its
    type. Names must be unique (providers key servers by name).
    """
    if not isinstance(servers, list):
        raise FieldProblem("", "expected an array")
    parsed: list[McpServer] = []
    for index, server in enumerate(servers):
        where = f"[{index}]"
        if not isinstance(server, dict):
            raise FieldProblem(where, "expected an object")
        kind = server.get("type", "stdio")
        if kind not in ("stdio", "http", "sse"):
            raise FieldProblem(f"{where}.type", "expected \"stdio\", \"http\" or \"sse\"")
        for name in ("name", "command") if kind == "stdio" else ("name", "url"):
            if not isinstance(server.get(name), str) or not server[name]:
                raise FieldProblem(f"{where}.{name}", "expected a non-empty string")
        if any(earlier.name == server["name"] for earlier in parsed):
            raise FieldProblem(f"{where}.name", "another server already has this name")
        meta = server["_meta"] if isinstance(server.get("_meta"), dict) else UNSET
        if kind == "stdio":
            env = [EnvVariable(name, value) for name, value in _mcp_pairs(server, "env", where)]
            parsed.append(McpServerStdio(server["name"], server["command"], _mcp_args(server, where), env, meta))
        else:
            headers = [HttpHeader(name, value) for name, value in _mcp_pairs(server, "headers", where)]
            record = McpServerHttp if kind == "http" else McpServerSse
            parsed.append(record(server["name"], server["url"], headers, meta))
    return parsed


def _mcp_list(server: dict[str, Any], name: str, where: str) -> list[Any]:
    value = server.get(name, [])
    if not isinstance(value, list):
        raise FieldProblem(f"{where}.{name}", "expected an array")
    return value


def _mcp_args(server: dict[str, Any], where: str) -> list[str]:
    args = _mcp_list(server, "args", where)
    for position, arg in enumerate(args):
        if not isinstance(arg, str):
            raise FieldProblem(f"{where}.args[{position}]", "expected a string")
    return list(args)


def _mcp_pairs(server: dict[str, Any], name: str, where: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for position, item in enumerate(_mcp_list(server, name, where)):
        if not isinstance(item, dict):
            raise FieldProblem(f"{where}.{name}[{position}]", "expected an object with name and value")
        for key in ("name", "value"):
            if not isinstance(item.get(key), str):
                raise FieldProblem(f"{where}.{name}[{position}].{key}", "expected a string")
        pairs.append((item["name"], item["value"]))
    return pairs


@frozen
class NewSessionRequest:
    cwd: str
    mcp_servers: list[McpServer] = field(factory=list)
    additional_directories: list[str] | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


@frozen
class LoadSessionRequest:
    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = field(factory=list)
    additional_directories: list[str] | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


ResumeSessionRequest = LoadSessionRequest


ForkSessionRequest = LoadSessionRequest


@frozen
class ListSessionsRequest:
    cwd: str | Unset | None = UNSET
    cursor: str | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


@frozen
class SessionIdRequest:
    """`session/close`, `session/delete` and `session/cancel` carry only the session id."""

    session_id: str
    meta: Meta | Unset | None = UNSET


@frozen
class SessionMode:
    id: str
    name: str
    description: str | Unset | None = UNSET


@frozen
class SessionModeState:
    current_mode_id: str
    available_modes: list[SessionMode]


@frozen
class SessionSetup:
    """The part of new/load/resume responses that describes modes and config options."""

    modes: SessionModeState | Unset | None = UNSET
    config_options: list[ConfigOption] | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class NewSessionResponse:
    session_id: str
    modes: SessionModeState | Unset | None = UNSET
    config_options: list[ConfigOption] | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class SessionInfo:
    session_id: str
    cwd: str
    title: str | Unset | None = UNSET
    updated_at: str | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class ListSessionsResponse:
    sessions: list[SessionInfo]
    next_cursor: str | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class PromptRequest:
    session_id: str
    prompt: list[ContentBlock]
    message_id: str | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


@frozen
class PromptResponse:
    stop_reason: StopReason
    meta: Meta | Unset = UNSET


@frozen
class SetModeRequest:
    session_id: str
    mode_id: str
    meta: Meta | Unset | None = UNSET


@frozen
class SetConfigOptionRequest:
    session_id: str
    config_id: str
    value: str
    meta: Meta | Unset | None = UNSET


@frozen
class SetConfigOptionResponse:
    config_options: list[ConfigOption]
    meta: Meta | Unset = UNSET


# --- client methods the agent calls ----------------------------------------------------------------

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@frozen
class PermissionOption:
    option_id: str
    name: str
    kind: PermissionKind


@frozen
class RequestPermissionRequest:
    session_id: str
    tool_call: ToolCallFields
    options: list[PermissionOption]
    meta: Meta | Unset = UNSET


@frozen
class ReadTextFileRequest:
    session_id: str
    path: str
    line: int | Unset | None = UNSET
    limit: int | Unset | None = UNSET


@frozen
class WriteTextFileRequest:
    session_id: str
    path: str
    content: str


class Methods:
    """ACP method names, in one place."""

    INITIALIZE: ClassVar[str] = "initialize"
    AUTHENTICATE: ClassVar[str] = "authenticate"
    LOGOUT: ClassVar[str] = "logout"
    SESSION_NEW: ClassVar[str] = "session/new"
    SESSION_LOAD: ClassVar[str] = "session/load"
    SESSION_LIST: ClassVar[str] = "session/list"
    SESSION_RESUME: ClassVar[str] = "session/resume"
    SESSION_FORK: ClassVar[str] = "session/fork"
    SESSION_CLOSE: ClassVar[str] = "session/close"
    SESSION_DELETE: ClassVar[str] = "session/delete"
    SESSION_PROMPT: ClassVar[str] = "session/prompt"
    SESSION_CANCEL: ClassVar[str] = "session/cancel"
    SESSION_SET_MODE: ClassVar[str] = "session/set_mode"
    SESSION_SET_CONFIG_OPTION: ClassVar[str] = "session/set_config_option"
    SESSION_STEERING: ClassVar[str] = "_session/steering"
    """The steering extension of claude-agent-acp and codex-acp: input into the running turn."""
    SESSION_UPDATE: ClassVar[str] = "session/update"
    REQUEST_PERMISSION: ClassVar[str] = "session/request_permission"
    FS_READ: ClassVar[str] = "fs/read_text_file"
    FS_WRITE: ClassVar[str] = "fs/write_text_file"


def make_acp_converter() -> Any:
    """The wire converter plus the tagged unions ACP uses (content blocks by `type`)."""
    import cattrs

    from acp_agent.wire import make_converter

    converter = make_converter()

    def structure_content(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("a content block must be an object")
        kind = value.get("type")
        cls = CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unsupported content block type {clip(kind)!r}")
        return converter.structure(value, cls)

    def structure_resource(value: Any, _: Any) -> Any:
        if isinstance(value, dict) and "blob" in value:
            return converter.structure(value, BlobResourceContents)
        return converter.structure(value, TextResourceContents)

    converter.register_structure_hook(ContentBlock, structure_content)
    converter.register_structure_hook_func(lambda tp: tp == list[McpServer],
                                           lambda value, _: parse_mcp_servers(value))
    converter.register_structure_hook(TextResourceContents | BlobResourceContents, structure_resource)
    assert isinstance(converter, cattrs.Converter)
    return converter
