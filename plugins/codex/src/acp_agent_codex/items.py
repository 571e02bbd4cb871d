"""Pure mapping between app-server items and ACP content, both ways.

app-server → ACP: streamed deltas become message/thought chunks; `commandExecution`,
`fileChange`, `mcpToolCall`, `webSearch` and `imageView` items become tool calls (with output,
diffs, results); `turn/plan/updated` becomes a plan, a plan item (plan mode's markdown plan) a
plan document; token usage a `usage_update`; stored turns
become the replay of `session/load`. ACP → app-server: prompt blocks become `UserInput`s and
approval requests become `session/request_permission` questions. No I/O here.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from acp_agent.provider import (
    PLAN_STATUS,
    TOOL_STATUS,
    AgentMessageChunk,
    AgentThoughtChunk,
    Answer,
    Compaction,
    ContentBlock,
    Event,
    FilePatch,
    GoalSnapshot,
    HistoryFailure,
    ImageContent,
    PermissionOption,
    Plan,
    PlanDocument,
    PlanEntry,
    Question,
    SessionTitle,
    TerminalExited,
    TerminalStarted,
    TextContent,
    TextStyle,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
    ToolContent,
    ToolDiff,
    ToolKind,
    ToolLocation,
    ToolStatus,
    TurnUsage,
    UrlQuestion,
    UsageUpdate,
    UserMessageChunk,
    agent_text,
    json_int,
    json_list,
    json_object,
    json_text,
    prompt_payload,
    question_form,
    redact_legacy,
    split_unified_diff,
    text_blocks,
    text_content,
    thought_text,
    usage_update,
    user_text,
)
from acp_agent_codex.classify import turn_error_observation

JsonObject = Mapping[str, Any]
_SHELLS: Final = frozenset({"bash", "sh", "zsh", "dash"})
_STATUS: Final[Mapping[str, ToolStatus]] = {**TOOL_STATUS, "declined": "failed"}
COMMAND_OPTIONS: Final = (
    PermissionOption("accept", "Allow", "allow_once"),
    PermissionOption("acceptForSession", "Allow for this session", "allow_always"),
    PermissionOption("decline", "Deny", "reject_once"),
)
FILE_CHANGE_OPTIONS: Final = COMMAND_OPTIONS


MESSAGE_KINDS: Final = frozenset({"agentMessage", "reasoning"})


def message_chunk(item: JsonObject) -> AgentMessageChunk | AgentThoughtChunk | None:
    """A finished `agentMessage` as agent text, a `reasoning` item's summary as a thought (None:
    it says nothing); the item's id is the chunk's message id, live and in `thread/read`."""
    message_id = json_text(item.get("id")) or None
    if item.get("type") == "agentMessage":
        return agent_text(item["text"], message_id) if json_text(item.get("text")) else None
    summary = [part for part in json_list(item.get("summary")) if isinstance(part, str) and part]
    return thought_text("\n\n".join(summary), message_id) if summary else None


# --- tool calls -------------------------------------------------------------------------------------


def command_title(item: JsonObject) -> str:
    """The command as the user would type it: `/bin/bash -lc 'x'` shows as `x`."""
    command = json_text(item.get("command"))
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and os.path.basename(argv[0]) in _SHELLS and argv[1] in ("-lc", "-c"):
        return argv[2]
    return command


def _change_kind(change: JsonObject) -> str:
    kind = change.get("kind")
    return json_text(kind.get("type")) if isinstance(kind, Mapping) else "update"


def file_diffs(changes: Sequence[Any]) -> list[ToolCallContent]:
    """`fileChange.changes` as ACP diffs: an add is all new text, a delete all old text."""
    diffs: list[ToolCallContent] = []
    for change in changes:
        if not isinstance(change, Mapping):
            continue
        path = json_text(change.get("path"))
        diff = json_text(change.get("diff"))
        kind = _change_kind(change)
        if kind == "add":
            diffs.append(ToolDiff(path=path, new_text=diff, old_text=None))
        elif kind == "delete":
            diffs.append(ToolDiff(path=path, new_text="", old_text=diff))
        else:
            old, new = split_unified_diff(diff)
            moved = json_text(json_object(change.get("kind")).get("move_path"))
            diffs.append(ToolDiff(path=moved or path, new_text=new, old_text=old))
    return diffs


def file_patches(changes: Sequence[Any]) -> tuple[FilePatch, ...]:
    """`fileChange.changes` as their exact changes: an add's whole text, a delete's, an update's
    unified diff (a move's `Moved to:` trailer dropped, as codex-acp drops it)."""
    patches: list[FilePatch] = []
    for change in changes:
        if not isinstance(change, Mapping):
            continue
        path, diff, kind = json_text(change.get("path")), json_text(change.get("diff")), _change_kind(change)
        if kind == "add":
            patches.append(FilePatch(path, "add", new_text=diff))
        elif kind == "delete":
            patches.append(FilePatch(path, "delete", old_text=diff))
        else:
            moved = json_text(json_object(change.get("kind")).get("move_path"))
            patches.append(FilePatch(moved or path, "update", hunks=_MOVED.sub("", diff),
                                     old_path=path if moved else None))
    return tuple(patches)


_MOVED = re.compile(r"\n\nMoved to: .*$")


def _file_change_title(changes: Sequence[Any]) -> str:
    paths = [(_change_kind(c), json_text(c.get("path"))) for c in changes if isinstance(c, Mapping)]
    if len(paths) == 1:
        verb = {"add": "Add", "delete": "Delete"}.get(paths[0][0], "Edit")
        return f"{verb} {paths[0][1]}"
    return f"Edit {len(paths)} files" if paths else "Edit files"


def _locations(changes: Sequence[Any]) -> list[ToolLocation]:
    return [ToolLocation(path=json_text(c.get("path"))) for c in changes if isinstance(c, Mapping) and c.get("path")]


def _mcp_content(item: JsonObject) -> list[ToolCallContent]:
    result, error = item.get("result"), item.get("error")
    texts = text_blocks(result.get("content")) if isinstance(result, Mapping) else []
    message = error.get("message") if isinstance(error, Mapping) else None
    return [ToolContent(TextContent(text)) for text in [*texts, *([message] if isinstance(message, str) else [])]]


def _web_search_title(item: JsonObject) -> str:
    query = json_text(item.get("query"))
    action = item.get("action")
    if not query and isinstance(action, Mapping):
        query = json_text(action.get("query")) or json_text(action.get("url"))
    return f"Web search: {query}" if query else "Web search"


def tool_call(item: JsonObject, *, final: bool = False) -> ToolCall | None:
    """An item as an ACP tool call: its start, or (`final`) its finished state for history replay."""
    kind_name = item.get("type")
    item_id = json_text(item.get("id"))
    status: ToolStatus = _STATUS.get(json_text(item.get("status")), "completed") if final else "in_progress"
    title: str
    kind: ToolKind
    content: list[ToolCallContent] = []
    locations: list[ToolLocation] = []
    raw_input: Any
    patches: tuple[FilePatch, ...] = ()
    if kind_name == "commandExecution":
        title, kind = command_title(item), "execute"
        raw_input = {"command": item.get("command"), "cwd": item.get("cwd")}
        if final:
            content = text_content(json_text(item.get("aggregatedOutput")))
    elif kind_name == "fileChange":
        changes = json_list(item.get("changes"))
        title, kind = _file_change_title(changes), "edit"
        content, locations, patches = file_diffs(changes), _locations(changes), file_patches(changes)
        raw_input = {"changes": [{"path": c.get("path"), "kind": _change_kind(c)} for c in changes
                                 if isinstance(c, Mapping)]}
    elif kind_name == "mcpToolCall":
        title, kind = f"{json_text(item.get('server'))}: {json_text(item.get('tool'))}", "other"
        raw_input = item.get("arguments")
        if final:
            content = _mcp_content(item)
    elif kind_name == "webSearch":
        title, kind = _web_search_title(item), "fetch"
        raw_input = {"query": item.get("query")}
        status = "completed" if final else status
    elif kind_name == "imageView":
        path = json_text(item.get("path"))
        title, kind, locations = f"View image {path}", "read", [ToolLocation(path=path)]
        raw_input = {"path": path}
        status = "completed" if final else status
    else:
        return None
    return ToolCall(tool_call_id=item_id, title=title, kind=kind, status=status, content=content,
                    locations=locations, raw_input=raw_input, patches=patches)


def tool_call_update(item: JsonObject) -> ToolCallUpdate | None:
    """A completed item as the update that finishes its tool call."""
    kind_name = item.get("type")
    item_id = json_text(item.get("id"))
    status: ToolStatus = _STATUS.get(json_text(item.get("status")), "completed")
    if kind_name == "commandExecution":
        output = json_text(item.get("aggregatedOutput"))
        return ToolCallUpdate(tool_call_id=item_id, status=status, content=text_content(output),
                              raw_output={"exitCode": item.get("exitCode"), "output": output})
    if kind_name == "fileChange":
        changes = json_list(item.get("changes"))
        return ToolCallUpdate(tool_call_id=item_id, status=status, content=file_diffs(changes),
                              patches=file_patches(changes))
    if kind_name == "mcpToolCall":
        return ToolCallUpdate(tool_call_id=item_id, status=status, content=_mcp_content(item),
                              raw_output=item.get("result"))
    if kind_name in ("webSearch", "imageView"):
        return ToolCallUpdate(tool_call_id=item_id, status="completed")
    return None


def command_output(item_id: str, output: str) -> ToolCallUpdate:
    """Streamed command output so far (ACP replaces a tool call's content with each update)."""
    return ToolCallUpdate(tool_call_id=item_id, content=text_content(output))


def replayed_command(item: JsonObject) -> list[Event]:
    """A stored command: one finished tool call for clients without terminals, a terminal with
    its output and exit code for the others."""
    call = tool_call(item, final=True)
    if call is None:
        return []
    update = tool_call_update(item) or ToolCallUpdate(tool_call_id=call.tool_call_id)
    code = item.get("exitCode")
    return [TerminalStarted(call, json_text(item.get("cwd")) or None),
            TerminalExited(call.tool_call_id, update, json_int(code),
                           output=json_text(item.get("aggregatedOutput")), legacy=False)]


def session_title(params: JsonObject) -> SessionTitle:
    """`thread/name/updated`: the thread's name (None: cleared); the core makes it one line."""
    name = params.get("threadName")
    return SessionTitle(name if isinstance(name, str) else None)


GOAL_STATUSES: Final = {"active": "active", "paused": "paused", "blocked": "blocked", "complete": "complete",
                         "usageLimited": "limited", "budgetLimited": "limited"}


def goal_snapshot(method: str, params: JsonObject) -> GoalSnapshot | None:
    """`thread/goal/updated` / `thread/goal/cleared` as AIR's goal snapshot, in codex-acp's shape
    (`toThreadGoalSnapshot`: codex's seconds as milliseconds, both limits `limited`)."""
    if method == "thread/goal/cleared":
        return GoalSnapshot(None)
    goal = params.get("goal")
    if not isinstance(goal, Mapping) or not isinstance(goal.get("objective"), str):
        return None

    def ms(key: str) -> int | None:
        value = json_int(goal.get(key))
        return value * 1000 if value is not None else None

    return GoalSnapshot({
        "objective": goal["objective"].strip(), "status": GOAL_STATUSES.get(str(goal.get("status")), "active"),
        "tokenBudget": json_int(goal.get("tokenBudget")), "tokensUsed": json_int(goal.get("tokensUsed")),
        "timeUsedSeconds": json_int(goal.get("timeUsedSeconds")), "createdAt": ms("createdAt"),
        "updatedAt": ms("updatedAt"), "controlMethod": "_session/goal"})


# --- plan and usage ------------------------------------------------------------------------------------


def plan(params: JsonObject) -> Plan:
    entries = []
    for step in json_list(params.get("plan")):
        if isinstance(step, Mapping) and isinstance(step.get("step"), str):
            status = PLAN_STATUS.get(json_text(step.get("status")), "pending")
            entries.append(PlanEntry(content=step["step"], status=status))
    return Plan(entries=entries)


USAGE_FIELDS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                ("thought_tokens", "reasoningOutputTokens"), ("cached_read_tokens", "cachedInputTokens"),
                ("total_tokens", "totalTokens"))
"""`TurnUsage`'s fields and the `tokenUsage.total` counts they come from."""


def plan_document(item_id: str, text: str, *, completed: bool) -> PlanDocument:
    """A plan item (codex's plan mode: the model's `<proposed_plan>` block) as it streams
    (`item/plan/delta`: its text so far) or `completed`: a `plan` client gets it as `plan_update`
    (the plan item's id as plan id), another the completed plan as agent text, as codex-acp's
    `CodexPlanStream` sends it to a client of neither `plan` nor AIR."""
    otherwise = agent_text(text, item_id) if completed and text else None
    return PlanDocument(item_id, text, streamed=True, otherwise=otherwise, partial=not completed)


def turn_usage(at_start: Any, params: JsonObject) -> TurnUsage | None:
    """The turn's tokens so far: the thread's `tokenUsage.total` now minus at the turn's start
    (codex-acp's reading), None when app-server reports no totals."""
    token_usage = params.get("tokenUsage")
    total = token_usage.get("total") if isinstance(token_usage, Mapping) else None
    if not isinstance(total, Mapping) or json_int(total.get("totalTokens")) is None:
        return None
    before = at_start.get("total") if isinstance(at_start, Mapping) else None
    before = before if isinstance(before, Mapping) else {}
    counts = {field: max((json_int(total.get(key)) or 0) - (json_int(before.get(key)) or 0), 0)
              for field, key in USAGE_FIELDS}
    return TurnUsage(**counts)


def usage(params: JsonObject) -> UsageUpdate | None:
    """Tokens in context (the last request's total) against the model's context window."""
    token_usage = params.get("tokenUsage")
    if not isinstance(token_usage, Mapping):
        return None
    last = token_usage.get("last")
    return usage_update(last.get("totalTokens") if isinstance(last, Mapping) else None,
                        token_usage.get("modelContextWindow"))


# --- approvals -------------------------------------------------------------------------------------------


def approval_request(method: str, params: JsonObject, item: JsonObject | None
                     ) -> tuple[ToolCallUpdate, Sequence[PermissionOption]]:
    """An app-server approval request as the tool call and options to ask the client about."""
    item_id = json_text(params.get("itemId"))
    reason = params.get("reason")
    if method == "item/commandExecution/requestApproval":
        command = {"command": params.get("command"), "cwd": params.get("cwd")}
        title = command_title(command) if command["command"] else command_title(item or {})
        raw: dict[str, Any] = {**command, "reason": reason}
        return ToolCallUpdate(tool_call_id=item_id, title=title, kind="execute", status="pending",
                              raw_input=raw), COMMAND_OPTIONS
    changes = json_list((item or {}).get("changes"))
    return ToolCallUpdate(tool_call_id=item_id, title=_file_change_title(changes), kind="edit", status="pending",
                          content=file_diffs(changes), locations=_locations(changes),
                          raw_input={"reason": reason}), FILE_CHANGE_OPTIONS


# --- questions -------------------------------------------------------------------------------------------

USER_INPUT_MESSAGE: Final = "Codex needs your input to continue."
QUESTION_REQUESTS: Final = ("item/tool/requestUserInput", "mcpServer/elicitation/request")


def user_input_question(params: JsonObject) -> Question:
    """`item/tool/requestUserInput` (the model's request_user_input tool) as a form."""
    return question_form(params.get("questions"), USER_INPUT_MESSAGE)


def user_input_result(answer: Answer) -> dict[str, Any]:
    """The answers app-server takes back; a declined or cancelled question answers nothing."""
    if answer.action != "accept":
        return {"answers": {}}
    return {"answers": {field_id: {"answers": list(values)} for field_id, values in answer.values.items()}}


def elicitation_question(params: JsonObject, tool_call_id: str | None = None) -> Question | UrlQuestion | None:
    """`mcpServer/elicitation/request`: an MCP server's form (its schema handed on as it is) or URL,
    asked on the server's running tool call (`tool_call_id`) when there is one; None for a mode
    ACP cannot carry (OpenAI's own forms)."""
    message = json_text(params.get("message"))
    mode = params.get("mode")
    if mode == "url" and json_text(params.get("url")):
        url = json_text(params.get("url"))
        return UrlQuestion(message, url, json_text(params.get("elicitationId")) or url, tool_call_id=tool_call_id)
    if mode == "form":
        schema = params.get("requestedSchema")
        return Question(message, schema=schema if isinstance(schema, Mapping) else None, tool_call_id=tool_call_id)
    return None


def is_mcp_tool_approval(params: JsonObject) -> bool:
    """codex asking whether an MCP tool may run: an elicitation of its own, a form without fields
    marked `_meta.codex_approval_kind: mcp_tool_call`. Asked as a permission, as codex-acp does."""
    meta, schema = params.get("_meta"), params.get("requestedSchema")
    return (isinstance(meta, Mapping) and meta.get("codex_approval_kind") == "mcp_tool_call"
            and params.get("mode") == "form"
            and (schema is None or (isinstance(schema, Mapping) and not schema.get("properties"))))


def running_mcp_call(known: Mapping[str, JsonObject], server: Any) -> str | None:
    """The id of the last `mcpToolCall` item of `server` that is still running (what an elicitation
    of that server belongs to: app-server names no item in it)."""
    running = [item_id for item_id, item in known.items() if item.get("type") == "mcpToolCall"
               and item.get("server") == server and item.get("status") == "inProgress"]
    return running[-1] if running else None


MCP_ALLOW, MCP_ALLOW_SESSION, MCP_ALLOW_ALWAYS, MCP_CANCEL = "allow", "allow_session", "allow_always", "cancel"
_MCP_PERSIST: Final[Mapping[str, str]] = {MCP_ALLOW_SESSION: "session", MCP_ALLOW_ALWAYS: "always"}


def mcp_approval_request(params: JsonObject, item_id: str, item: JsonObject | None
                         ) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """An MCP tool approval as the tool call and options to ask about: Allow, the remembered
    allowances codex offers (`_meta.persist`), Cancel."""
    meta = json_object(params.get("_meta"))
    persist = meta.get("persist")
    offered = {persist} if isinstance(persist, str) else {part for part in json_list(persist) if isinstance(part, str)}
    options = [PermissionOption(MCP_ALLOW, "Allow", "allow_once")]
    if "session" in offered:
        options.append(PermissionOption(MCP_ALLOW_SESSION, "Allow for this session", "allow_always"))
    if "always" in offered:
        options.append(PermissionOption(MCP_ALLOW_ALWAYS, "Always allow", "allow_always"))
    options.append(PermissionOption(MCP_CANCEL, "Cancel", "reject_once"))
    title = f"{json_text(item.get('server'))}: {json_text(item.get('tool'))}" if item else json_text(params.get("message"))
    arguments = item.get("arguments") if item else meta.get("tool_params")
    return ToolCallUpdate(tool_call_id=item_id, title=title, kind="other", status="pending",
                          raw_input=arguments), options


def mcp_approval_result(choice: str | None) -> dict[str, Any]:
    """The elicitation answer codex takes for the user's choice (no choice: cancel)."""
    if choice == MCP_ALLOW:
        return {"action": "accept", "content": None, "_meta": None}
    persist = _MCP_PERSIST.get(choice) if choice is not None else None
    if persist is not None:
        return {"action": "accept", "content": None, "_meta": {"persist": persist}}
    return {"action": "cancel", "content": None, "_meta": None}


def elicitation_result(answer: Answer) -> dict[str, Any]:
    content = dict(answer.content) if answer.action == "accept" else None
    return {"action": answer.action, "content": content, "_meta": None}


# --- prompts ----------------------------------------------------------------------------------------------


def prompt_input(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """ACP prompt blocks as app-server `UserInput`s (resources are quoted as text, like codex-acp)."""
    return prompt_payload(blocks, TextStyle(), lambda text: {"type": "text", "text": text, "text_elements": []},
                          lambda image: {"type": "image", "url": f"data:{image.mime_type};base64,{image.data}"})


# --- history ---------------------------------------------------------------------------------------------


def _user_chunks(item: JsonObject) -> list[Event]:
    chunks: list[Event] = []
    message_id = json_text(item.get("id")) or None
    for content in json_list(item.get("content")):
        if not isinstance(content, Mapping):
            continue
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            chunks.append(user_text(content["text"], message_id))
        elif content.get("type") == "image" and json_text(content.get("url")).startswith("data:"):
            header, _, data = json_text(content.get("url"))[5:].partition(",")
            image = ImageContent(data=data, mime_type=header.split(";")[0])
            chunks.append(UserMessageChunk(image, message_id=message_id) if message_id else UserMessageChunk(image))
    return chunks


def recognise_turn(turn: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    """A stored turn (`thread/read`, `itemsView: full`) → its failure, or None (the history hook's
    built-in answer). Identified by the turn's id, as the live failure was: the runtime adopts
    codex's turn id, so the live incident id is `<codex turn id>:error`."""
    error = turn.get("error")
    if turn.get("status") != "failed" or not isinstance(error, Mapping):
        return None
    observation = turn_error_observation(error)
    legacy = (agent_text(observation.title),) if observation.title else ()
    return HistoryFailure(observation, message_id=json_text(turn.get("id")),
                          user_message_id=json_text(turn.get("id")) or user_message_id, legacy_updates=legacy)


Recogniser = Callable[[Mapping[str, Any], str | None], HistoryFailure | None]


def history_events(turns: Sequence[Any], redact: Callable[[str], str],
                   recogniser: Recogniser = recognise_turn, *, last: bool = True,
                   at_spawn: Callable[[JsonObject], Sequence[Event]] | None = None) -> list[Event]:
    """Stored turns (`itemsView: full`) as the replay of `session/load`.

    Each turn is offered to `recogniser` (the runtime passes the core's history hook): a failed
    turn's error is replayed as a typed record in place of text; legacy clients see the (redacted)
    error text as agent text. Only the last turn's failure stays active (`last`: these turns end
    the thread; a page that others follow has none active). `at_spawn`: what a `spawnAgent`
    collab call replays as, in its place (its children: `acp_agent_codex.child_history`).
    """
    events: list[Event] = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            continue
        user_message_id: str | None = None
        for item in json_list(turn.get("items")):
            if not isinstance(item, Mapping):
                continue
            kind = item.get("type")
            if kind == "userMessage":
                user_message_id = user_message_id or json_text(item.get("id")) or None
                events.extend(_user_chunks(item))
            elif kind in MESSAGE_KINDS:
                chunk = message_chunk(item)
                events.extend([chunk] if chunk is not None else [])
            elif kind == "plan":
                if json_text(item.get("text")):
                    events.append(plan_document(json_text(item.get("id")), item["text"], completed=True))
            elif kind == "contextCompaction":
                events.append(Compaction(json_text(item.get("id")) or f"{json_text(turn.get('id'))}:compaction",
                                         "completed"))
            elif kind == "commandExecution":
                events.extend(replayed_command(item))
            elif kind == "collabAgentToolCall" and item.get("tool") == "spawnAgent" and at_spawn is not None:
                events.extend(at_spawn(item))
            else:
                call = tool_call(item, final=True)
                if call is not None:
                    events.append(call)
        failure = recogniser(turn, user_message_id)
        if failure is not None:
            events.append(redact_legacy(failure, redact, active=last and index == len(turns) - 1))
    return events
