"""Pure mapping of Claude Code content to ACP session updates: text, thinking, tools, plans, usage.

Takes the claude-agent-sdk's content blocks and raw stream events; returns `acp_agent.wire.acp` updates.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define

from acp_agent.provider import (
    UNSET,
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentBlock,
    Cost,
    FilePatch,
    McpServer,
    McpServerStdio,
    Plan,
    PlanDocument,
    PlanEntry,
    PlanFileCall,
    TextContent,
    TextStyle,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
    ToolContent,
    ToolDiff,
    ToolKind,
    ToolLocation,
    TurnUsage,
    UsageUpdate,
    agent_text,
    first_text,
    is_count,
    mcp_server_config,
    prompt_payload,
    text_blocks,
    thought_text,
)

log = logging.getLogger(__name__)

TOOL_KINDS: Mapping[str, ToolKind] = {
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute", "KillBash": "execute",
    "Read": "read", "NotebookRead": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "Glob": "search", "Grep": "search", "LS": "search", "ToolSearch": "search",
    "WebFetch": "fetch", "WebSearch": "fetch",
    "Task": "think", "Agent": "think", "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
}


def stream_delta(event: Mapping[str, Any], message_id: str | None = None) -> AgentMessageChunk | AgentThoughtChunk | None:
    """A raw Anthropic stream event's text or thinking delta, as a chunk of the API message
    `message_id` (its `message_start` id: text and thinking of one message share it)."""
    if event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta")
    if not isinstance(delta, dict):
        return None
    kind = delta.get("type")
    key = "text" if kind == "text_delta" else "thinking" if kind == "thinking_delta" else None
    if key is None:
        return None
    value = delta.get(key)
    if not isinstance(value, str):
        if value is not None:
            log.warning("claude CLI wrote a malformed %s (%s is not a string): skipped", kind, key)
        return None
    if not value:
        return None
    return agent_text(value, message_id) if key == "text" else thought_text(value, message_id)


def _short(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return os.path.relpath(path, cwd)
    return path


def tool_title(name: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> str:
    """What an editor shows for a tool call: the command, the file, the pattern."""
    path = first_text(tool_input, "file_path", "notebook_path", "path")
    if name == "Bash" and (command := first_text(tool_input, "command")):
        return f"`{command}`"
    if name in ("Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead") and path:
        return f"{name} {_short(path, cwd)}"
    if name in ("Glob", "Grep") and (pattern := first_text(tool_input, "pattern")):
        return f"{name} {pattern}"
    if name in ("WebFetch",) and (url := first_text(tool_input, "url")):
        return f"Fetch {url}"
    if name == "WebSearch" and (query := first_text(tool_input, "query")):
        return f"Search: {query}"
    if name in ("Task", "Agent") and (description := first_text(tool_input, "description")):
        return description
    return name


def tool_locations(tool_input: Mapping[str, Any]) -> list[ToolLocation]:
    path = first_text(tool_input, "file_path", "notebook_path")
    return [ToolLocation(path)] if path else []


def _diff(path: str, new_text: Any, old_text: Any) -> list[ToolCallContent]:
    """One edit as a diff; none when its texts are not strings."""
    if not isinstance(new_text, str) or not (old_text is None or isinstance(old_text, str)):
        return []
    return [ToolDiff(path=path, new_text=new_text, old_text=old_text)]


def tool_diffs(name: str, tool_input: Mapping[str, Any]) -> list[ToolCallContent]:
    """Diff content for edits, from the tool's own input (before it runs)."""
    path = tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return []
    if name == "Write":
        return _diff(path, tool_input.get("content"), None)
    if name == "Edit":
        return _diff(path, tool_input.get("new_string"), tool_input.get("old_string"))
    edits = tool_input.get("edits")
    if name == "MultiEdit" and isinstance(edits, list):
        return [diff for edit in edits if isinstance(edit, dict)
                for diff in _diff(path, edit.get("new_string", ""), edit.get("old_string"))]
    return []


def tool_call(tool_use_id: str, name: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> ToolCall:
    diffs = tool_diffs(name, tool_input)
    locations = tool_locations(tool_input)
    return ToolCall(
        tool_call_id=tool_use_id,
        title=tool_title(name, tool_input, cwd),
        kind=TOOL_KINDS.get(name, "other"),
        status="pending",
        content=diffs or UNSET,
        locations=locations or UNSET,
        raw_input=dict(tool_input),
    )


EXIT_PLAN_TOOL = "ExitPlanMode"
PLAN_MODE_PLAN_ID = "plan-mode"
"""The id of the plan a session's plan mode approved (claude-agent-acp's `PLAN_MODE_PLAN_ID`)."""


def plan_review(call: ToolCall | ToolCallUpdate, tool_input: Mapping[str, Any]) -> PlanFileCall:
    """ExitPlanMode's call (or the permission request that asks to approve it): the CLI
    completes its input with the plan file's text (`plan`) and path (`planFilePath`)."""
    path = tool_input.get("planFilePath")
    return PlanFileCall(call, tool_input, path if isinstance(path, str) else None)


def plan_reviewed(update: ToolCallUpdate, tool_input: Mapping[str, Any], result: Any, is_error: bool,
                  main: bool) -> list[PlanFileCall | PlanDocument]:
    """ExitPlanMode's result: the review (its plan file, released once approved), then for the
    main conversation the approved plan (claude-agent-acp's `approvedPlan`: the structured
    result's plan, which has the user's edits, else the input's; none for a subagent's plan or one
    that waits for its team lead)."""
    structured = result if isinstance(result, Mapping) else {}
    path = tool_input.get("planFilePath")
    if not isinstance(path, str) or not path:
        path = structured.get("filePath")
    events: list[PlanFileCall | PlanDocument] = [
        PlanFileCall(update, tool_input, path if isinstance(path, str) else None, released=not is_error)]
    if is_error or not main or structured.get("isAgent") is True or structured.get("awaitingLeaderApproval") is True:
        return events
    plan = structured.get("plan") if isinstance(structured.get("plan"), str) else tool_input.get("plan")
    if isinstance(plan, str) and plan.strip():
        events.append(PlanDocument(PLAN_MODE_PLAN_ID, plan.strip(), update.tool_call_id))
    return events


def plan_from_todos(tool_input: Mapping[str, Any]) -> Plan | None:
    """TodoWrite's list as an ACP plan."""
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status, priority = todo.get("status"), todo.get("priority")
        entries.append(PlanEntry(
            content=todo["content"],
            priority=priority if priority in ("high", "medium", "low") else "medium",
            status=status if status in ("pending", "in_progress", "completed") else "pending",
        ))
    return Plan(entries)


def _result_text(content: Any) -> str:
    return content if isinstance(content, str) else "\n".join(text_blocks(content))


def _shell_streams(tool_use_result: Any) -> str:
    """A Bash result's stdout then stderr (those that are non-empty strings)."""
    if not isinstance(tool_use_result, dict):
        return ""
    return "\n".join(part for part in (tool_use_result.get("stdout"), tool_use_result.get("stderr"))
                     if isinstance(part, str) and part)


def tool_result(tool_use_id: str, content: Any, is_error: bool | None, name: str | None,
                tool_use_result: Any = None) -> ToolCallUpdate:
    """A tool's result: completed or failed, with its output as text (shell output for Bash)."""
    text = _result_text(content)
    if name == "Bash" and not is_error:
        text = _shell_streams(tool_use_result) or text
    blocks: list[ToolCallContent] = [ToolContent(TextContent(f"```\n{text}\n```" if name == "Bash" else text))] if text else []
    return ToolCallUpdate(
        tool_call_id=tool_use_id,
        status="failed" if is_error else "completed",
        content=blocks or UNSET,
        raw_output=tool_use_result if tool_use_result is not None else UNSET,
        patches=() if is_error else edit_patches(name, tool_use_result),
    )


def edit_patches(name: str | None, result: Any) -> tuple[FilePatch, ...]:
    """The exact change of a finished Edit or Write, from its `tool_use_result` (the file before
    it and what the tool wrote), as claude-agent-acp builds its patch. None where the result
    cannot tell it exactly: an Edit with an empty `old_string` (a created file and a filled empty
    one look alike), a file with CR line endings or a byte order mark (the CLI converts them)."""
    if name not in ("Edit", "Write") or not isinstance(result, Mapping):
        return ()
    path, original = result.get("filePath"), result.get("originalFile")
    if not isinstance(path, str) or not path:
        return ()
    if name == "Write":
        text = result.get("content")
        if not isinstance(text, str) or not _exact(text):
            return ()
        if result.get("type") == "create":
            return (FilePatch(path, "add", new_text=text),)
        if result.get("type") != "update" or not isinstance(original, str) or original == text:
            return ()
        return (FilePatch(path, "update", old_text=original, new_text=text),) if _exact(original) else ()
    old, new = result.get("oldString"), result.get("newString")
    if not (isinstance(original, str) and isinstance(old, str) and isinstance(new, str)) or not old:
        return ()
    if old == new or not _exact(original) or not _exact(new) or old not in original:
        return ()
    return (FilePatch(path, "update", old_text=original,
                      new_text=_replaced(original, old, new, result.get("replaceAll") is True)),)


def _exact(text: str) -> bool:
    return "\r" not in text and "\ufeff" not in text and "\0" not in text


def _replaced(text: str, old: str, new: str, replace_all: bool) -> str:
    """The file after the CLI's Edit: an empty `new` also removes the line break after `old`."""
    target = f"{old}\n" if not new and not old.endswith("\n") and f"{old}\n" in text else old
    return text.replace(target, new) if replace_all else text.replace(target, new, 1)


@define
class ContextWindow:
    """A session's context window as the CLI last reported it (results' `modelUsage`): a
    compaction's boundary carries the tokens kept but not the window."""

    size: int | None = None


def usage_update(usage: Mapping[str, Any] | None, model_usage: Mapping[str, Any] | None,
                 window: ContextWindow | None = None, used: int | None = None,
                 cost_usd: Any = None) -> UsageUpdate | None:
    """Context use after a turn: tokens sent and produced (or `used`, when known otherwise)
    against the model's context window, and the session's cost so far (`cost_usd`, the result's
    `total_cost_usd`); `window` learns the size."""
    if not usage or not isinstance(usage, dict):
        return None
    if used is None:
        used = sum(_tokens(usage.get(key)) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))
    entries = model_usage.values() if isinstance(model_usage, dict) else ()
    size = max((_tokens(entry.get("contextWindow")) for entry in entries if isinstance(entry, dict)), default=0)
    if size <= 0:
        return None
    if window is not None:
        window.size = size
    spent = cost(cost_usd)
    return UsageUpdate(used=used, size=size, cost=spent if spent is not None else UNSET)


def cost(total_cost_usd: Any) -> Cost | None:
    """A result's `total_cost_usd` (the CLI's running total for the session) as the
    `usage_update` cost, as claude-agent-acp sends it; None where the CLI reports no sum."""
    if isinstance(total_cost_usd, int | float) and not isinstance(total_cost_usd, bool) and total_cost_usd >= 0:
        return Cost(float(total_cost_usd))
    return None


RESULT_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def add_turn_usage(total: TurnUsage | None, usage: Any) -> TurnUsage | None:
    """`total` plus one result's `usage` (a turn with steered messages has several results):
    input, output, cache read and cache creation tokens, summed as claude-agent-acp sums them for
    `PromptResponse.usage`. `total` unchanged when the result reports none."""
    if not isinstance(usage, dict) or not any(is_count(usage.get(key)) for key in RESULT_TOKENS):
        return total  # none: a local command's result
    before = total or TurnUsage(0, 0, cached_read_tokens=0, cached_write_tokens=0)
    read, write, given, made = (_tokens(usage.get(key)) for key in (
        "cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens", "output_tokens"))
    return TurnUsage(before.input_tokens + given, before.output_tokens + made,
                     cached_read_tokens=(before.cached_read_tokens or 0) + read,
                     cached_write_tokens=(before.cached_write_tokens or 0) + write)


def _tokens(value: Any) -> int:
    """A token count as the CLI reports it; anything but a whole number >= 0 counts as none."""
    return value if is_count(value) else 0


TEXT_STYLE = TextStyle(links="paths", mention_embedded=True, binary_links=False)
"""Claude Code's own `@path` mentions; the CLI reads a mentioned file itself."""


def prompt_blocks(prompt: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """ACP prompt content as Anthropic message content blocks for the CLI's stream-json input."""
    return prompt_payload(prompt, TEXT_STYLE, lambda text: {"type": "text", "text": text}, lambda image: {
        "type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}})


def mcp_servers(servers: Sequence[McpServer]) -> dict[str, dict[str, Any]]:
    """ACP `mcpServers` (stdio, http, sse) as the CLI's MCP configuration, keyed by server name."""

    def entry(server: McpServer, pairs: dict[str, str]) -> dict[str, Any]:
        if isinstance(server, McpServerStdio):
            return {"type": "stdio", "command": server.command, "args": list(server.args),
                    **({"env": pairs} if pairs else {})}
        return {"type": server.type, "url": server.url, **({"headers": pairs} if pairs else {})}

    return mcp_server_config(servers, entry)


def shell_output(content: Any, is_error: bool | None, tool_use_result: Any = None) -> str:
    """A Bash call's output as a terminal shows it: stdout then stderr, else the result's text."""
    joined = _shell_streams(tool_use_result) if not is_error else ""
    return joined or _result_text(content)


def exit_code(content: Any, is_error: bool | None) -> int | None:
    """A Bash call's exit code: 0 for a success; a failure's `Exit code N` line (None: not given)."""
    if not is_error:
        return 0
    match = _EXIT_CODE.search(_result_text(content))
    return int(match[1]) if match else None


_EXIT_CODE = re.compile(r"^Exit code (\d+)", re.MULTILINE)


_ANALYSIS = (re.compile(r"^[ \t]*<analysis>[ \t]*\r?\n[\s\S]*?\n[ \t]*</analysis>[ \t]*$", re.I | re.M),
             re.compile(r"^\s*<analysis>[\s\S]*?</analysis>", re.I))
_SUMMARY_OPEN = re.compile(r"^[ \t]*<summary>[ \t]*\r?\n", re.I | re.M)
_SUMMARY_CLOSE = re.compile(r"^[ \t]*</summary>[ \t]*$", re.I | re.M)
_CONTINUATION = re.compile(r"^\s*This session is being continued from a previous conversation", re.I)
_PERSISTED = re.compile(r"^\s*This session is being continued from a previous conversation[^\n]*\n+"
                        r"(?:[\s\S]*?\n)?Summary:[ \t]*\r?\n")
_TRAILERS = (re.compile(r"\n+If you need specific details from before compaction[\s\S]*$"),
             re.compile(r"\n+(?:Please )?[Cc]ontinue the conversation from where it left (?:it )?off[\s\S]*$"))


def compaction_summary(raw: Any) -> str | None:
    """The summary a compaction kept, as a user reads it (claude-agent-acp's
    `compactionSummaryText`): the PostCompact hook's `compact_summary` (the model's `<summary>`,
    its `<analysis>` dropped) or the stored summary message (its continuation framing for the
    model dropped). None when there is none, or the framing is not one this knows."""
    if not isinstance(raw, str):
        return None
    text = raw
    for block in _ANALYSIS:
        text = block.sub("", text)
    closes = list(_SUMMARY_CLOSE.finditer(text))
    opens = list(_SUMMARY_OPEN.finditer(text, 0, closes[-1].start())) if closes else []
    start, end = text.lower().find("<summary>"), text.lower().rfind("</summary>")
    if opens:
        text = text[opens[-1].end():closes[-1].start()]
    elif 0 <= start < end:
        text = text[start + len("<summary>"):end]
    elif _CONTINUATION.match(text):
        body = _PERSISTED.sub("", text, count=1)
        if body == text:
            return None
        text = body
        for trailer in _TRAILERS:
            text = trailer.sub("", text)
    return text.strip() or None
