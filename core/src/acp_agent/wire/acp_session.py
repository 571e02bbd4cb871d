"""The ACP wire types of sessions: content blocks, tool calls, session updates, session requests
and responses, and the client methods the agent calls during a turn.

Building these attrs classes is most of what the wire layer costs at start-up, and answering
`initialize` needs none of them, so they live apart from `acp_agent.wire.acp` (which keeps the
`initialize` and auth types) and are imported on first use: read them as `acp.ToolCall` or
`from acp_agent.wire.acp import ToolCall`, which loads this module the first time. Knows the shape of
ACP messages; knows nothing of providers or failures.
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import field

from acp_agent.wire.convert import NOT_ON_WIRE, UNSET, FieldProblem, Meta, Unset
from acp_agent.wire.records import frozen

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
    meta: Meta | Unset = UNSET


@frozen
class FilePatch:
    """The exact change a tool call made to one file, from which the core builds a git patch for
    a client of AIR's `diffPatch` (`acp_agent.sessions.patches`). Never on the wire itself.

    `add`: `new_text` is the whole new file; `delete`: `old_text` the whole old file; `update`:
    `hunks`, the unified diff the backend gave (its `@@` hunks, file headers optional), or the
    whole `old_text` and `new_text`. `old_path`: where a moved file was.
    """

    path: str
    change: Literal["add", "delete", "update"]
    old_text: str | None = None
    new_text: str | None = None
    hunks: str | None = None
    old_path: str | None = None


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
    message_id: str | Unset = field(default=UNSET, kw_only=True)
    """One id per message, the same live and on `session/load` (UNSET: the backend has none)."""
    session_update: Literal["user_message_chunk"] = "user_message_chunk"


@frozen
class AgentMessageChunk:
    content: ContentBlock
    meta: Meta | Unset = UNSET
    message_id: str | Unset = field(default=UNSET, kw_only=True)
    """One id per message, the same live and on `session/load` (UNSET: the backend has none)."""
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"


@frozen
class AgentThoughtChunk:
    content: ContentBlock
    meta: Meta | Unset = UNSET
    message_id: str | Unset = field(default=UNSET, kw_only=True)
    """One id per message, the same live and on `session/load` (UNSET: the backend has none)."""
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
    patches: tuple[FilePatch, ...] = field(default=(), kw_only=True, metadata=NOT_ON_WIRE)
    """The exact changes of the files it edits, where the provider knows them (neutral)."""


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
    patches: tuple[FilePatch, ...] = field(default=(), kw_only=True, metadata=NOT_ON_WIRE)
    """The exact changes of the files it edits, where the provider knows them (neutral)."""


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
class MarkdownPlan:
    """A plan as markdown: the `plan` of an unstable `plan_update` of type `markdown`."""

    plan_id: str
    content: str
    meta: Meta | Unset = UNSET
    type: Literal["markdown"] = "markdown"


@frozen
class PlanUpdate:
    """ACP's unstable `plan_update` (clients that declare `clientCapabilities.plan`): the plan
    `plan.plan_id` is now this content."""

    plan: MarkdownPlan
    meta: Meta | Unset = UNSET
    session_update: Literal["plan_update"] = "plan_update"


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
    meta: Meta | Unset = UNSET
    recommended: str | None = field(default=None, kw_only=True, metadata=NOT_ON_WIRE)
    """The value the backend recommends (its default model, the model's default effort), for a
    client of AIR's `recommendedValue` (neutral: never on the wire itself)."""


@frozen
class BooleanConfigOption:
    """An on/off option as a switch (`session.configOptions.boolean` clients)."""

    id: str
    name: str
    current_value: bool
    description: str | Unset | None = UNSET
    category: str | Unset | None = UNSET
    type: Literal["boolean"] = "boolean"


@frozen
class ConfigOptionUpdate:
    config_options: list[ConfigOption | BooleanConfigOption]
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


@frozen
class NoticeUpdate:
    """A live notice for the user (`session.notices` clients); no id, never replayed."""

    severity: Literal["info", "warning", "error"]
    title: str
    description: str | Unset = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["notice"] = "notice"


@frozen
class CompactionUpdate:
    """A compaction's state (`session.compaction` clients): `in_progress`, then exactly one of
    `completed`, `failed`, `cancelled`; the fields given replace what the client has."""

    compaction_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    summary: list[ContentBlock] | Unset = UNSET
    error: str | Unset = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["compaction_update"] = "compaction_update"


@frozen
class CompactionSummaryChunk:
    """A piece of a running compaction's summary (`session.compaction` clients)."""

    compaction_id: str
    content: ContentBlock
    meta: Meta | Unset = UNSET
    session_update: Literal["compaction_summary_chunk"] = "compaction_summary_chunk"


@frozen
class SubagentSpawned:
    """AIR's `nativeSubagentSessions`: a child session started (`subagentSessionId`), on its
    parent, before any update of the child."""

    subagent_session_id: str
    name: str
    task: str
    prompt: str | Unset = UNSET
    capabilities: dict[str, Any] = field(factory=dict)
    meta: Meta | Unset = UNSET
    session_update: Literal["subagent_spawned"] = "subagent_spawned"


@frozen
class SubagentStateUpdate:
    """AIR's `nativeSubagentSessions`: a child session ended, on its parent (once)."""

    subagent_session_id: str
    state: Literal["completed", "failed", "cancelled", "disconnected"]
    meta: Meta | Unset = UNSET
    session_update: Literal["subagent_state_update"] = "subagent_state_update"


@frozen
class AsyncTaskSpawned:
    """AIR's `asyncTasks`: a background task started (claude-agent-acp's `async_task_spawned`)."""

    async_task_id: str
    name: str
    task_type: str
    description: str
    show_in_transcript: bool
    can_stop: bool
    output_file_path: str | Unset = UNSET
    tool_call_id: str | Unset = UNSET
    session_update: Literal["async_task_spawned"] = "async_task_spawned"


@frozen
class AsyncTaskProgress:
    """AIR's `asyncTasks`: what changed of a running task (only the fields that changed)."""

    async_task_id: str
    description: str | Unset = UNSET
    summary: str | Unset = UNSET
    output_file_path: str | Unset = UNSET
    tool_call_id: str | Unset = UNSET
    session_update: Literal["async_task_progress"] = "async_task_progress"


@frozen
class AsyncTaskStateUpdate:
    """AIR's `asyncTasks`: a task's state (`running`, `paused`, or once `completed`, `failed`,
    `stopped`), with its summary and the output path or tool call when they changed."""

    async_task_id: str
    state: Literal["running", "paused", "completed", "failed", "stopped"]
    summary: str | Unset = UNSET
    output_file_path: str | Unset = UNSET
    tool_call_id: str | Unset = UNSET
    session_update: Literal["async_task_state_update"] = "async_task_state_update"


@frozen
class SubagentUpdate:
    """ACP's unstable `subagent_update` (client `subagents`): announces a child session on its
    parent (the first one) and patches its labels and work state (`state`: `{"state": "running"}`,
    `{"state": "idle", "stopReason": ...}`, `{"state": "unknown"}`)."""

    session_id: str
    title: str | Unset = UNSET
    description: str | Unset = UNSET
    state: dict[str, Any] | Unset = UNSET
    meta: Meta | Unset = UNSET
    session_update: Literal["subagent_update"] = "subagent_update"


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCall
    | ToolCallUpdate
    | Plan
    | PlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | NoticeUpdate
    | CompactionUpdate
    | CompactionSummaryChunk
    | SubagentSpawned
    | SubagentStateUpdate
    | SubagentUpdate
    | AsyncTaskSpawned
    | AsyncTaskProgress
    | AsyncTaskStateUpdate
)


@frozen
class SessionNotification:
    session_id: str
    update: SessionUpdate
    meta: Meta | Unset = UNSET



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
class SetTitleRequest:
    """`session/set_title` (unstable): the session need not be open on this connection."""

    session_id: str
    title: str
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
    config_options: list[ConfigOption | BooleanConfigOption] | Unset | None = UNSET
    meta: Meta | Unset = UNSET


@frozen
class NewSessionResponse:
    session_id: str
    modes: SessionModeState | Unset | None = UNSET
    config_options: list[ConfigOption | BooleanConfigOption] | Unset | None = UNSET
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
class Usage:
    """A turn's tokens (`PromptResponse.usage`, unstable)."""

    total_tokens: int
    input_tokens: int
    output_tokens: int
    thought_tokens: int | Unset = UNSET
    cached_read_tokens: int | Unset = UNSET
    cached_write_tokens: int | Unset = UNSET


@frozen
class PromptResponse:
    stop_reason: StopReason
    usage: Usage | Unset = UNSET
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
    value: Any
    """A select's value (a string), or a switch's (`type: "boolean"`, a boolean): checked by the
    core (`acp_agent.sessions.switches`)."""
    type: str | Unset | None = UNSET
    meta: Meta | Unset | None = UNSET


@frozen
class SetConfigOptionResponse:
    config_options: list[ConfigOption | BooleanConfigOption]
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


__all__ = [
    "CONTENT_TYPES",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "AsyncTaskProgress",
    "AsyncTaskSpawned",
    "AsyncTaskStateUpdate",
    "AudioContent",
    "AvailableCommand",
    "AvailableCommandInput",
    "AvailableCommandsUpdate",
    "BlobResourceContents",
    "BooleanConfigOption",
    "CompactionSummaryChunk",
    "CompactionUpdate",
    "ConfigOption",
    "ConfigOptionUpdate",
    "ConfigOptionValue",
    "ContentBlock",
    "Cost",
    "CurrentModeUpdate",
    "EmbeddedResource",
    "EnvVariable",
    "FilePatch",
    "ForkSessionRequest",
    "HttpHeader",
    "ImageContent",
    "ListSessionsRequest",
    "ListSessionsResponse",
    "LoadSessionRequest",
    "MarkdownPlan",
    "McpServer",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "NewSessionRequest",
    "NewSessionResponse",
    "NoticeUpdate",
    "PermissionKind",
    "PermissionOption",
    "Plan",
    "PlanEntry",
    "PlanUpdate",
    "PromptRequest",
    "PromptResponse",
    "ReadTextFileRequest",
    "RequestPermissionRequest",
    "ResourceLink",
    "ResumeSessionRequest",
    "SessionIdRequest",
    "SessionInfo",
    "SessionInfoUpdate",
    "SessionMode",
    "SessionModeState",
    "SessionNotification",
    "SessionSetup",
    "SessionUpdate",
    "SetConfigOptionRequest",
    "SetConfigOptionResponse",
    "SetModeRequest",
    "SetTitleRequest",
    "StopReason",
    "SubagentSpawned",
    "SubagentStateUpdate",
    "SubagentUpdate",
    "TextContent",
    "TextResourceContents",
    "ToolCall",
    "ToolCallContent",
    "ToolCallFields",
    "ToolCallUpdate",
    "ToolContent",
    "ToolDiff",
    "ToolKind",
    "ToolLocation",
    "ToolStatus",
    "ToolTerminal",
    "Usage",
    "UsageUpdate",
    "UserMessageChunk",
    "WriteTextFileRequest",
    "parse_mcp_servers",
]
