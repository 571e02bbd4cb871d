"""Every name a provider plugin needs, in one module: `from acp_agent.provider import ...`.

Each name is defined where it lives (the contract in `acp_agent.backends.contract`, the neutral
events in `acp_agent.backends.events`, the ACP types in `acp_agent.wire.acp`, ...) and is read
through here on first use, so a plugin's `__init__`, imported on every start for every installed
provider, pays only for the modules of the names it takes (`ProviderSpec` loads the contract,
not the session types). `NAMES` says where each one lives; docs/plugin-guide.md explains them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing `typing` is not free on this path
if TYPE_CHECKING:
    from typing import Any

    from acp_agent import hookimpl
    from acp_agent.backends.contract import (
        BackendStatus,
        CredentialSpec,
        MessageNotFound,
        NotSupported,
        PrestartedBackends,
        ProviderRuntime,
        ProviderSpec,
        RuntimeCapabilities,
        RuntimeContext,
        SessionChannel,
        SessionListing,
        SessionNotFound,
        SessionStart,
        SessionTable,
        TerminalLogin,
        TurnChannel,
        TurnFailed,
        additional_directories,
        fork_at,
    )
    from acp_agent.backends.events import (
        AttemptBoundary,
        AuthConfirmed,
        Compaction,
        CompactionSummaryChunk,
        Event,
        GoalSnapshot,
        HistoryFailure,
        Notice,
        RetryProgress,
        RuntimeReplaced,
        SessionFailure,
        SessionTitle,
        TerminalExited,
        TerminalOutput,
        TerminalStarted,
        TurnEnd,
        TurnUsage,
    )
    from acp_agent.backends.executables import executable_problem, program_unavailable
    from acp_agent.backends.files import SETTINGS_LIMIT, UnsafeFile, read_regular_file, regular_file_stat
    from acp_agent.backends.idle import IdleRelease, count_setting, idle_release_s, stop_in_background
    from acp_agent.backends.lines_child import ChildGone, JsonLinesChild
    from acp_agent.backends.phases import Phase, PhaseClock, PhaseDeadlineExceeded, PhaseFailed
    from acp_agent.backends.process import (
        ChildProcess,
        EarlyProcess,
        adopt_child,
        drain_stderr,
        kill_process_group,
        open_child,
        parent_death_argv,
        write_launcher,
    )
    from acp_agent.backends.questions import Answer, Choice, Question, QuestionField, UrlQuestion, question_form
    from acp_agent.backends.rpc_child import RpcChild
    from acp_agent.backends.turns import Attempts, BackendTurn, TurnDone, fold_steps
    from acp_agent.failures.hooks import bound, redact_legacy, titled_classifier
    from acp_agent.failures.protocol import (
        POLICY,
        TITLE_LIMIT,
        Category,
        FailureKind,
        FailureObservation,
        Source,
        split_title,
    )
    from acp_agent.sessions.presentation import now_iso
    from acp_agent.sessions.queue import DEFAULT_MAX_ITEMS, TurnQueue
    from acp_agent.sessions.routing import SessionRouter
    from acp_agent.wire.acp import (
        AgentMessageChunk,
        AgentThoughtChunk,
        AvailableCommand,
        AvailableCommandInput,
        AvailableCommandsUpdate,
        ConfigOption,
        ConfigOptionValue,
        ContentBlock,
        Cost,
        CurrentModeUpdate,
        FilePatch,
        ImageContent,
        McpServer,
        McpServerHttp,
        McpServerStdio,
        PermissionKind,
        PermissionOption,
        Plan,
        PlanEntry,
        SessionInfo,
        SessionMode,
        SessionModeState,
        TextContent,
        ToolCall,
        ToolCallContent,
        ToolCallUpdate,
        ToolContent,
        ToolDiff,
        ToolKind,
        ToolLocation,
        ToolStatus,
        UsageUpdate,
        UserMessageChunk,
        agent_text,
        thought_text,
        user_text,
    )
    from acp_agent.wire.content import (
        PLAN_STATUS,
        TOOL_STATUS,
        first_line,
        first_text,
        is_count,
        json_int,
        json_list,
        json_object,
        json_text,
        json_words,
        mcp_server_config,
        split_unified_diff,
        text_blocks,
        text_content,
        usage_update,
    )
    from acp_agent.wire.convert import UNSET
    from acp_agent.wire.prompt import TextStyle, prompt_parts, prompt_payload
    from acp_agent.wire.rpc import Connection, ConnectionClosed, LineReader, Methods, PendingRequest, RpcError

NAMES: dict[str, tuple[str, ...]] = {
    "acp_agent": ("hookimpl",),
    "acp_agent.backends.contract": (
        "BackendStatus", "CredentialSpec", "MessageNotFound", "NotSupported", "PrestartedBackends", "ProviderRuntime",
        "ProviderSpec", "RuntimeCapabilities", "RuntimeContext", "SessionChannel", "SessionListing",
        "SessionNotFound", "SessionStart", "SessionTable", "TerminalLogin", "TurnChannel", "TurnFailed",
        "additional_directories", "fork_at",
    ),
    "acp_agent.backends.events": (
        "AttemptBoundary", "AuthConfirmed", "Compaction", "CompactionSummaryChunk", "Event",
        "GoalSnapshot", "HistoryFailure", "Notice", "RetryProgress", "RuntimeReplaced", "SessionFailure", "SessionTitle",
        "TerminalExited", "TerminalOutput", "TerminalStarted", "TurnEnd", "TurnUsage",
    ),
    "acp_agent.backends.executables": ("executable_problem", "program_unavailable",),
    "acp_agent.backends.files": ("SETTINGS_LIMIT", "UnsafeFile", "read_regular_file", "regular_file_stat",),
    "acp_agent.backends.idle": ("IdleRelease", "count_setting", "idle_release_s", "stop_in_background"),
    "acp_agent.backends.lines_child": ("ChildGone", "JsonLinesChild"),
    "acp_agent.backends.phases": ("Phase", "PhaseClock", "PhaseDeadlineExceeded", "PhaseFailed",),
    "acp_agent.backends.process": (
        "ChildProcess", "EarlyProcess", "adopt_child", "drain_stderr", "kill_process_group", "open_child",
        "parent_death_argv", "write_launcher",
    ),
    "acp_agent.backends.questions": ("Answer", "Choice", "Question", "QuestionField", "UrlQuestion", "question_form"),
    "acp_agent.backends.rpc_child": ("RpcChild",),
    "acp_agent.backends.turns": ("Attempts", "BackendTurn", "TurnDone", "fold_steps"),
    "acp_agent.failures.hooks": ("bound", "redact_legacy", "titled_classifier"),
    "acp_agent.failures.protocol": (
        "POLICY", "TITLE_LIMIT", "Category", "FailureKind", "FailureObservation", "Source", "split_title",
    ),
    "acp_agent.sessions.presentation": ("now_iso",),
    "acp_agent.sessions.queue": ("DEFAULT_MAX_ITEMS", "TurnQueue",),
    "acp_agent.sessions.routing": ("SessionRouter",),
    "acp_agent.wire.acp": (
        "AgentMessageChunk", "AgentThoughtChunk", "AvailableCommand", "AvailableCommandInput",
        "AvailableCommandsUpdate", "ConfigOption", "ConfigOptionValue", "ContentBlock", "Cost", "CurrentModeUpdate",
        "ImageContent", "McpServer", "McpServerHttp", "McpServerStdio", "PermissionKind", "PermissionOption",
        "Plan", "PlanEntry", "SessionInfo", "SessionMode", "SessionModeState", "TextContent", "ToolCall",
        "ToolCallContent", "ToolCallUpdate", "ToolContent", "ToolDiff", "FilePatch", "ToolKind", "ToolLocation",
        "ToolStatus", "UsageUpdate", "UserMessageChunk", "agent_text", "thought_text", "user_text",
    ),
    "acp_agent.wire.content": (
        "PLAN_STATUS", "TOOL_STATUS", "first_line", "first_text", "is_count", "json_int", "json_list",
        "json_object", "json_text", "json_words", "mcp_server_config",
        "split_unified_diff", "text_blocks", "text_content", "usage_update",
    ),
    "acp_agent.wire.convert": ("UNSET",),
    "acp_agent.wire.prompt": ("TextStyle", "prompt_parts", "prompt_payload"),
    "acp_agent.wire.rpc": (
        "Connection", "ConnectionClosed", "LineReader", "Methods", "PendingRequest", "RpcError",
    ),
}
"""Where each name lives: module -> names."""

_HOME = {name: module for module, names in NAMES.items() for name in names}

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "PLAN_STATUS",
    "POLICY",
    "SETTINGS_LIMIT",
    "TITLE_LIMIT",
    "TOOL_STATUS",
    "UNSET",
    "AgentMessageChunk",
    "AgentThoughtChunk",
    "Answer",
    "AttemptBoundary",
    "Attempts",
    "AuthConfirmed",
    "AvailableCommand",
    "AvailableCommandInput",
    "AvailableCommandsUpdate",
    "BackendStatus",
    "BackendTurn",
    "Category",
    "ChildGone",
    "ChildProcess",
    "Choice",
    "Compaction",
    "CompactionSummaryChunk",
    "ConfigOption",
    "ConfigOptionValue",
    "Connection",
    "ConnectionClosed",
    "ContentBlock",
    "Cost",
    "CredentialSpec",
    "CurrentModeUpdate",
    "EarlyProcess",
    "Event",
    "FailureKind",
    "FailureObservation",
    "FilePatch",
    "GoalSnapshot",
    "HistoryFailure",
    "IdleRelease",
    "ImageContent",
    "JsonLinesChild",
    "LineReader",
    "McpServer",
    "McpServerHttp",
    "McpServerStdio",
    "MessageNotFound",
    "Methods",
    "NotSupported",
    "Notice",
    "PendingRequest",
    "PermissionKind",
    "PermissionOption",
    "Phase",
    "PhaseClock",
    "PhaseDeadlineExceeded",
    "PhaseFailed",
    "Plan",
    "PlanEntry",
    "PrestartedBackends",
    "ProviderRuntime",
    "ProviderSpec",
    "Question",
    "QuestionField",
    "RetryProgress",
    "RpcChild",
    "RpcError",
    "RuntimeCapabilities",
    "RuntimeContext",
    "RuntimeReplaced",
    "SessionChannel",
    "SessionFailure",
    "SessionInfo",
    "SessionListing",
    "SessionMode",
    "SessionModeState",
    "SessionNotFound",
    "SessionRouter",
    "SessionStart",
    "SessionTable",
    "SessionTitle",
    "Source",
    "TerminalExited",
    "TerminalLogin",
    "TerminalOutput",
    "TerminalStarted",
    "TextContent",
    "TextStyle",
    "ToolCall",
    "ToolCallContent",
    "ToolCallUpdate",
    "ToolContent",
    "ToolDiff",
    "ToolKind",
    "ToolLocation",
    "ToolStatus",
    "TurnChannel",
    "TurnDone",
    "TurnEnd",
    "TurnFailed",
    "TurnQueue",
    "TurnUsage",
    "UnsafeFile",
    "UrlQuestion",
    "UsageUpdate",
    "UserMessageChunk",
    "additional_directories",
    "adopt_child",
    "agent_text",
    "bound",
    "count_setting",
    "drain_stderr",
    "executable_problem",
    "first_line",
    "first_text",
    "fold_steps",
    "fork_at",
    "hookimpl",
    "idle_release_s",
    "is_count",
    "json_int",
    "json_list",
    "json_object",
    "json_text",
    "json_words",
    "kill_process_group",
    "mcp_server_config",
    "now_iso",
    "open_child",
    "parent_death_argv",
    "program_unavailable",
    "prompt_parts",
    "prompt_payload",
    "question_form",
    "read_regular_file",
    "redact_legacy",
    "regular_file_stat",
    "split_title",
    "split_unified_diff",
    "stop_in_background",
    "text_blocks",
    "text_content",
    "thought_text",
    "titled_classifier",
    "usage_update",
    "user_text",
    "write_launcher",
]


def __getattr__(name: str) -> Any:
    """A name of `NAMES`, imported from its module the first time it is asked for."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
