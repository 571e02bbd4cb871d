"""Pure mapping between MSP transcript items and ACP content, both ways. No I/O.

MSP → ACP: `agentMessage` and `reasoning` items become message and thought chunks; `toolCall`,
`userShell`, `webSearch` and every other kind (unknown kinds included, rendered generically)
become tool calls with a status; `session/todoListChanged` becomes a plan; context usage a
`usage_update`; approvals become permission questions offering only the host's own choices; a
resumed session's items become the replay of `session/load`. ACP → MSP: prompt blocks become
`TurnInputPart`s; ACP MCP servers become the session's `config.mcpServers`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from acp_agent.provider import (
    PLAN_STATUS,
    TOOL_STATUS,
    UNSET,
    AgentMessageChunk,
    AgentThoughtChunk,
    Answer,
    Compaction,
    ContentBlock,
    Event,
    FailureObservation,
    HistoryFailure,
    McpServer,
    McpServerHttp,
    McpServerStdio,
    MessageNotFound,
    PermissionKind,
    PermissionOption,
    Plan,
    PlanEntry,
    Question,
    SessionInfo,
    SessionTitle,
    TerminalExited,
    TerminalStarted,
    TextStyle,
    ToolCall,
    ToolCallUpdate,
    ToolKind,
    ToolLocation,
    ToolStatus,
    TurnUsage,
    UsageUpdate,
    agent_text,
    first_line,
    first_text,
    json_int,
    json_list,
    json_object,
    json_text,
    mcp_server_config,
    prompt_payload,
    question_form,
    redact_legacy,
    text_content,
    thought_text,
    usage_update,
    user_text,
)
from acp_agent_muse.classify import classify_terminal

JsonObject = Mapping[str, Any]
MESSAGE_KINDS: Final = frozenset({"agentMessage", "reasoning"})
_STATUS: Final[Mapping[str, ToolStatus]] = {**TOOL_STATUS, "cancelled": "failed", "rejected": "failed", "timedOut": "failed"}
# Substrings of a tool name → ACP tool kind, first match wins.
_TOOL_KINDS: Final[tuple[tuple[tuple[str, ...], ToolKind], ...]] = (
    (("shell", "bash", "exec", "command", "terminal", "run"), "execute"),
    (("delete", "remove", "unlink"), "delete"),
    (("move", "rename"), "move"),
    (("write", "edit", "patch", "apply", "create"), "edit"),
    (("grep", "search", "glob", "find", "list", "ls"), "search"),
    (("read", "view", "open", "cat"), "read"),
    (("fetch", "web", "http", "url", "browse"), "fetch"),
    (("think", "plan", "todo"), "think"),
)
_ITEM_KINDS: Final[Mapping[str, ToolKind]] = {
    "userShell": "execute", "webSearch": "fetch", "subagent": "think", "reasoning": "think",
}
_SUBJECT_KINDS: Final[Mapping[str, ToolKind]] = {
    "shell": "execute",
    "command": "execute",
    "exec": "execute",
    "write": "edit",
    "edit": "edit",
    "patch": "edit",
    "fileWrite": "edit",
    "delete": "delete",
    "network": "fetch",
    "fetch": "fetch",
    "read": "read",
    "fileRead": "read",
    "mcp": "other",
}
_GENERIC_TITLES: Final[Mapping[str, str]] = {
    "compaction": "Compacted the conversation",
    "subagent": "Subagent",
    "workflow": "Workflow",
    "hookRun": "Hook",
    "webSearch": "Web search",
    "damagedRange": "Part of the session log could not be read",
    "monitorFeed": "Monitor",
    "scheduledFire": "Scheduled task",
    "backgroundTerminalCompletion": "Background command finished",
    "overdueNotice": "Overdue task",
    "sideChat": "Side chat",
    "reminderChild": "Reminder",
}
_PATH_KEYS: Final = ("path", "file_path", "filePath", "file", "target")
# approval decision → permission option kind, by the choice's scope.
_ALLOW: Final = frozenset({"approved", "approvedForSession", "approvedPolicyAmendment"})
_REJECT: Final = frozenset({"denied", "deniedPolicyAmendment", "abort"})


def kind_of(item: JsonObject) -> str:
    """An item's `kind` ("" when it is not a string: never hashed or shown as it is)."""
    return json_text(item.get("kind"))


def message_text(item: JsonObject) -> str:
    """An agent message's text, or a reasoning item's text (its summary when it has no text)."""
    text = json_text(item.get("text"))
    if text or item.get("kind") != "reasoning":
        return text
    summary = [part for part in json_list(item.get("summary")) if isinstance(part, str) and part]
    return "\n\n".join(summary)


def message_chunk(item: JsonObject, text: str) -> AgentMessageChunk | AgentThoughtChunk:
    """A piece of an agent message or reasoning item, of the message `itemId` (live and in history)."""
    message_id = json_text(item.get("itemId")) or None
    return thought_text(text, message_id) if item.get("kind") == "reasoning" else agent_text(text, message_id)


# --- tool calls -----------------------------------------------------------------------------------------


def parse_args(raw: Any) -> Any:
    """A tool's `args` (a JSON string on the wire) as a value; text that is not JSON stays text."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def tool_kind(name: str) -> ToolKind:
    lowered = name.lower()
    for needles, kind in _TOOL_KINDS:
        if any(needle in lowered for needle in needles):
            return kind
    return "other"


def item_tool_kind(item: JsonObject) -> ToolKind:
    kind = kind_of(item)
    return tool_kind(json_text(item.get("tool"))) if kind == "toolCall" else _ITEM_KINDS.get(kind, "other")


def tool_status(item: JsonObject) -> ToolStatus:
    """MSP item status → ACP tool status; an unknown value is terminal, rendered as completed."""
    status = json_text(item.get("status"))
    return _STATUS.get(status, "completed" if status else "in_progress")


def _args_summary(args: Any) -> str:
    if isinstance(args, Mapping):
        for key in ("command", "cmd", *_PATH_KEYS, "query", "url", "pattern"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
                return shlex.join(value)
    if isinstance(args, str):
        return args
    return ""


def tool_title(item: JsonObject) -> str:
    """The host's own words (`displayLabel` by status, `commandText`, `label`), else the tool and its target."""
    label = item.get("displayLabel")
    status = json_text(item.get("status"))
    if isinstance(label, Mapping):
        form = "active" if status == "inProgress" else "done" if status else "neutral"
        for key in (form, "neutral", "done", "active"):
            if json_text(label.get(key)):
                return json_text(label.get(key))
    for key in ("commandText", "label", "displayText", "objective"):
        if json_text(item.get(key)).strip():
            return first_line(json_text(item[key]))
    tool = json_text(item.get("tool"))
    if tool:
        target = _args_summary(parse_args(item.get("args")))
        return f"{tool}: {first_line(target)}" if target else tool
    kind = json_text(item.get("kind"))
    summary = item.get("summary")
    if isinstance(summary, list) and summary and isinstance(summary[0], str) and summary[0].strip():
        return first_line(summary[0])
    return _GENERIC_TITLES.get(kind, kind or "Tool call")


def tool_locations(item: JsonObject) -> list[ToolLocation]:
    args = parse_args(item.get("args"))
    path = first_text(args, *_PATH_KEYS) if isinstance(args, Mapping) else None
    return [ToolLocation(path)] if path else []


def tool_output(item: JsonObject, streamed: str = "") -> str:
    output = json_text(item.get("visibleOutput")) or streamed
    if item.get("truncated") is True and output:
        output += "\n…"
    reason = json_text(item.get("failureReason"))
    if reason and reason not in output:
        output = f"{output}\n{reason}" if output else reason
    return output


def _raw_input(item: JsonObject) -> Any:
    if item.get("kind") == "userShell":
        return {"command": json_text(item.get("commandText"))}
    args = parse_args(item.get("args"))
    return UNSET if args is None else args


def _raw_output(item: JsonObject) -> Any:
    """A finished item's facts (exit code, signal, ...), UNSET while it runs or has none."""
    keys = ("exitCode", "exitSignal", "failureKind", "durationMs", "truncated")
    output = {key: item[key] for key in keys if key in item} if tool_status(item) != "in_progress" else {}
    return output or UNSET


def tool_call(item: JsonObject, streamed: str = "") -> ToolCall:
    """A tool-like item as the ACP tool call that introduces it."""
    return ToolCall(tool_call_id=json_text(item.get("itemId")), title=tool_title(item), kind=item_tool_kind(item),
                    status=tool_status(item), content=text_content(tool_output(item, streamed)),
                    locations=tool_locations(item), raw_input=_raw_input(item), raw_output=_raw_output(item))


def tool_call_update(item: JsonObject, streamed: str = "") -> ToolCallUpdate:
    """A later revision of a tool-like item: title, status and output as they are now."""
    return ToolCallUpdate(tool_call_id=json_text(item.get("itemId")), title=tool_title(item),
                          status=tool_status(item), content=text_content(tool_output(item, streamed)) or UNSET,
                          raw_output=_raw_output(item))


def is_terminal(item: JsonObject) -> bool:
    """A shell command (a `userShell`, or a tool call of an execute kind): shown as a terminal to
    clients that render terminals."""
    return item.get("kind") in ("userShell", "toolCall") and item_tool_kind(item) == "execute"


def exit_code(item: JsonObject) -> int | None:
    return json_int(item.get("exitCode"))


_COMPACTION_STATUS: Final[Mapping[str, Literal["completed", "failed", "cancelled"]]] = {
    "compacted": "completed", "noop": "completed", "failed": "failed", "cancelled": "cancelled",
}


def compaction(item: JsonObject) -> Compaction:
    """A `compaction` item: running until the host settles its `outcome`."""
    outcome = json_text(item.get("outcome"))
    done = item.get("status") not in ("inProgress", None) or bool(outcome)
    status = _COMPACTION_STATUS.get(outcome, "completed") if done else "in_progress"
    ended = status in ("failed", "cancelled")
    error = json_text(item.get("failureReason")) or json_text(item.get("message")) if ended else ""
    return Compaction(json_text(item.get("itemId")), status, trigger=json_text(item.get("trigger")) or None,
                      tokens_before=json_int(item.get("tokensBefore")), tokens_after=json_int(item.get("tokensAfter")),
                      error=error or None)


def session_title(params: JsonObject) -> SessionTitle:
    """`session/nameChanged`: the session's name (first naming or a rename) as its title."""
    return SessionTitle(json_text(params.get("name")) or None)


USER_INPUT_MESSAGE: Final = "Muse Code needs your input to continue."


def user_input_question(params: JsonObject) -> Question:
    """A `userInput` prompt's questions as a form (one field per question)."""
    return question_form(params.get("questions"), USER_INPUT_MESSAGE, lambda entry: isinstance(
        selection := entry.get("selection"), Mapping) and selection.get("mode") == "multiple")


def user_input_answers(question: Question, answer: Answer) -> list[dict[str, Any]] | None:
    """`userInput/answer`'s answers (every question must be answered), or None: decline it."""
    if answer.action != "accept":
        return None
    answers: list[dict[str, Any]] = []
    for entry in question.fields:
        values = answer.values.get(entry.id)
        if not values:
            return None
        labels = {choice.label for choice in entry.choices}
        if entry.multiple:
            answers.append({"questionId": entry.id, "selectedLabels": list(values)})
        elif values[0] in labels:
            answers.append({"questionId": entry.id, "selectedLabel": values[0]})
        else:
            answers.append({"questionId": entry.id, "freeText": values[0][:500]})
    return answers


def tool_output_update(item_id: str, output: str) -> ToolCallUpdate:
    """Streamed output of a running tool so far."""
    return ToolCallUpdate(tool_call_id=item_id, content=text_content(output))


# --- plans and usage ---------------------------------------------------------------------------------------


def plan(params: JsonObject) -> Plan:
    """`session/todoListChanged`: the whole list, replaced; cancelled entries are dropped."""
    entries: list[PlanEntry] = []
    for todo in json_list(params.get("items")):
        if not isinstance(todo, Mapping):
            continue
        status = PLAN_STATUS.get(json_text(todo.get("status")))
        text = json_text(todo.get("text")).strip()
        if status is None or not text:
            continue
        entries.append(PlanEntry(content=text, status=status))
    return Plan(entries)


def turn_usage(usage: Any, total: Any = None) -> TurnUsage | None:
    """A turn's tokens from MSP's raw counters (`turn/completed.usage`, a `session/tokenUsage`'s
    `usage`) and the host's counted-once `total` where it gives one; None when they are not counts."""
    if not isinstance(usage, Mapping):
        return None
    input_tokens, output_tokens = json_int(usage.get("inputTokens")), json_int(usage.get("outputTokens"))
    if input_tokens is None or output_tokens is None:
        return None
    return TurnUsage(input_tokens, output_tokens, json_int(usage.get("reasoningTokens")),
                     json_int(usage.get("cacheReadTokens")) if "cacheReadTokens" in usage
                     else json_int(usage.get("cachedTokens")), json_int(usage.get("cacheWriteTokens")),
                     json_int(total))


def session_cost(params: JsonObject) -> float | None:
    """`session/tokenUsage`'s `cumulative.cost.usd`: what the session has cost so far, in dollars
    (an estimate the host computes)."""
    cumulative = params.get("cumulative")
    cost = cumulative.get("cost") if isinstance(cumulative, Mapping) else None
    usd = cost.get("usd") if isinstance(cost, Mapping) else None
    return float(usd) if isinstance(usd, int | float) and not isinstance(usd, bool) and usd >= 0 else None


def usage(params: JsonObject) -> UsageUpdate | None:
    """`session/contextUsage`: the context window's occupancy (only when the window size is known)."""
    return usage_update(params.get("usedTokens"), params.get("windowTokens"))


# --- approvals -----------------------------------------------------------------------------------------------


def approval_stage(params: JsonObject) -> str:
    """The per-stage latch key: one decision per approval and requirement (multi-stage shells)."""
    requirement = json_object(params.get("currentRequirementId"))
    return f"{json_text(params.get('approvalId'))} {json_text(requirement.get('approvalId'))}:{requirement.get('sourceIndex')}"


def permission_kind(choice: JsonObject) -> PermissionKind | None:
    """The host's choice as an ACP option kind; a decision this version does not know is not offered."""
    decision = json_text(choice.get("decision"))
    scope = json_text(choice.get("scope")) or "once"
    if decision in _ALLOW:
        once = decision == "approved" and scope == "once"
        return "allow_once" if once else "allow_always"
    if decision in _REJECT:
        lasting = decision == "deniedPolicyAmendment" or (decision == "denied" and scope != "once")
        return "reject_always" if lasting else "reject_once"
    return None


def permission_options(params: JsonObject) -> list[PermissionOption]:
    """Exactly the host's `availableChoices` (select, never create), in the host's order and words."""
    options: list[PermissionOption] = []
    for choice in json_list(params.get("availableChoices")):
        if not isinstance(choice, Mapping) or not json_text(choice.get("choiceId")):
            continue
        kind = permission_kind(choice)
        if kind is None:
            continue
        options.append(PermissionOption(option_id=choice["choiceId"], name=json_text(choice.get("label")) or
                                        choice["choiceId"], kind=kind))
    return options


def refusal_choice(params: JsonObject, *, prefer_abort: bool) -> str | None:
    """The host's own deny (or abort) choice, for a question nobody answered."""
    choices = [choice for choice in json_list(params.get("availableChoices")) if isinstance(choice, Mapping)]
    order = ("abort", "denied") if prefer_abort else ("denied", "abort")
    for decision in order:
        for choice in choices:
            if choice.get("decision") == decision and json_text(choice.get("choiceId")):
                return str(choice["choiceId"])
    return None


def _subject_title(subject: JsonObject) -> str:
    for key in ("command", "path", "target", "url", "host", "toolName"):
        value = subject.get(key)
        if isinstance(value, str) and value:
            if key == "host" and isinstance(subject.get("port"), int):
                return f"{value}:{subject['port']}"
            return value
    stages = subject.get("stages")
    if isinstance(stages, list):
        commands = [shlex.join(str(part) for part in stage["argv"]) for stage in stages
                    if isinstance(stage, Mapping) and isinstance(stage.get("argv"), list)]
        if commands:
            return " | ".join(commands)
    return ""


def approval_tool_call(params: JsonObject, item: JsonObject | None) -> ToolCallUpdate:
    """What the approval is about, as the tool call the client is asked to permit."""
    subject = json_object(params.get("subject"))
    tool = json_text(params.get("toolName"))
    title = first_line(_subject_title(subject)) or (tool_title(item) if item is not None else tool) or "Tool call"
    kind = _SUBJECT_KINDS.get(json_text(subject.get("kind"))) or (item_tool_kind(item) if item is not None else
                                                               tool_kind(tool))
    raw = parse_args(params.get("rawArgs"))
    path = subject.get("path")
    return ToolCallUpdate(
        tool_call_id=json_text(params.get("itemId")) or json_text(params.get("toolCallId")),
        title=title,
        kind=kind,
        status="pending",
        locations=[ToolLocation(path)] if isinstance(path, str) and path else UNSET,
        raw_input={"toolName": tool, "subject": dict(subject), **({"args": raw} if raw is not None else {})},
    )


def decide_params(params: JsonObject, choice_id: str) -> dict[str, Any]:
    """`approval/decide` params for one choice (`commandId` is added by the command layer)."""
    return {
        "approvalId": json_text(params.get("approvalId")),
        "choiceId": choice_id,
        "requirementId": params.get("currentRequirementId"),
        "sessionId": json_text(params.get("sessionId")),
    }


# --- prompts and configuration ------------------------------------------------------------------------------------


TEXT_STYLE = TextStyle(links="file_paths")
"""File mentions are text in MSP (`@relative/path`), so a `file://` link is written that way."""


def prompt_input(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """ACP prompt blocks as MSP `TurnInputPart`s: text and images; resources are quoted as text."""
    return prompt_payload(blocks, TEXT_STYLE, lambda text: {"type": "text", "text": text},
                          lambda image: {"type": "image", "base64Data": image.data, "mediaType": image.mime_type})


def mcp_servers(servers: Sequence[McpServer]) -> dict[str, Any]:
    """ACP `mcpServers` as MSP `SessionConfig.mcpServers` (stdio and streamable HTTP; SSE has no arm)."""

    def entry(server: McpServer, pairs: dict[str, str]) -> dict[str, Any] | None:
        if isinstance(server, McpServerStdio):
            return {"transport": "stdio", "command": server.command, "args": list(server.args),
                    **({"env": pairs} if pairs else {})}
        if isinstance(server, McpServerHttp):
            return {"transport": "streamableHttp", "url": server.url, **({"headers": pairs} if pairs else {})}
        return None

    return mcp_server_config(servers, entry)


def session_info(session: JsonObject, fallback_cwd: str | None) -> SessionInfo | None:
    """A `session/list` row; a session without a workspace is listed only under the asked directory."""
    session_id = json_text(session.get("sessionId"))
    cwd = json_text(session.get("workspaceRoot")) or fallback_cwd
    if not session_id or not cwd:
        return None
    title = next((first_line(json_text(session.get(key)), 120) for key in ("name", "title", "generatedName",
                                                                          "firstUserPrompt")
                  if json_text(session.get(key)).strip()), None)
    updated = json_text(session.get("updatedAt")) or json_text(session.get("lastActivityAt")) or None
    return SessionInfo(session_id=session_id, cwd=cwd, title=title, updated_at=updated)


# --- history -----------------------------------------------------------------------------------------------------


def history_items(result: JsonObject) -> list[JsonObject]:
    """The items a resume/fork/read result serves: inline items, else the snapshot's."""
    history = json_object(result.get("history"))
    items = history.get("items")
    if not isinstance(items, list):
        items = json_object(json_object(history.get("snapshot")).get("state")).get("items")
    return [item for item in json_list(items) if isinstance(item, Mapping)]


def turn_holding(result: JsonObject, item_id: str) -> str:
    """The turn that holds the item `item_id` (a message: its chunks' message id) in a read
    result's history; `MessageNotFound` when none does."""
    for item in history_items(result):
        if item.get("itemId") == item_id and json_text(item.get("turnId")):
            return json_text(item.get("turnId"))
    raise MessageNotFound(item_id)


def recognise_last_turn(last_turn: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    """A session's stored `lastTurn` → its failure, or None (the history hook's built-in answer),
    identified by that turn's user message as the live failure was."""
    if last_turn.get("terminal") in ("completed", "cancelled"):
        return None
    outcome = classify_terminal(last_turn)
    if not isinstance(outcome, FailureObservation):
        return None
    legacy = (agent_text(outcome.title),) if outcome.title else ()
    return HistoryFailure(outcome, message_id=json_text(last_turn.get("turnId")) or "last-turn",
                          user_message_id=user_message_id, active=True, legacy_updates=legacy)


Recogniser = Callable[[Mapping[str, Any], str | None], HistoryFailure | None]


def history_events(result: JsonObject, redact: Callable[[str], str],
                   recogniser: Recogniser = recognise_last_turn) -> list[Event]:
    """A resumed session's stored items as the replay of `session/load`.

    User text, agent text, thoughts and tool calls (with their final status) are replayed in
    order. The last turn (`lastTurn`) is offered to `recogniser` (the runtime passes the core's
    history hook): a failed one is replayed as a typed record in place of text, identified by
    that turn's user message; legacy clients see the host's (redacted) message as agent text
    instead, as they would have in a transcript.
    """
    events: list[Event] = []
    user_message_of: dict[str, str] = {}
    for item in history_items(result):
        kind = kind_of(item)
        if kind == "userMessage":
            turn_id = json_text(item.get("turnId"))
            if turn_id and turn_id not in user_message_of:
                user_message_of[turn_id] = json_text(item.get("itemId"))
            if json_text(item.get("text")) and item.get("retracted") is not True:
                events.append(user_text(item["text"], json_text(item.get("itemId")) or None))
        elif kind in MESSAGE_KINDS:
            text = message_text(item)
            if text:
                events.append(message_chunk(item, text))
        elif kind == "compaction":
            events.append(compaction(item))
        elif is_terminal(item):  # a tool call for clients without terminals; a finished terminal otherwise
            call = tool_call(item)
            events.append(TerminalStarted(call))
            if call.status != "in_progress":
                events.append(TerminalExited(call.tool_call_id, tool_call_update(item), exit_code(item),
                                             output=tool_output(item), legacy=False))
        else:
            events.append(tool_call(item))
    last = result.get("lastTurn")
    if isinstance(last, Mapping):
        failure = recogniser(last, user_message_of.get(json_text(last.get("turnId"))) or None)
        if failure is not None:
            events.append(redact_legacy(failure, redact, active=True))
    return events
