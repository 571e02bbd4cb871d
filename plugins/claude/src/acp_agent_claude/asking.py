"""The CLI's own control requests (`answer`): permission to use a tool, AskUserQuestion and
ExitPlanMode among them, and an MCP server's elicitation; the agent registers no hook callbacks
and no in-process MCP servers, so any other request is refused.

AskUserQuestion (a `can_use_tool` request) is asked as a question (the core's: an elicitation,
else permission options) and answered as the tool's `updatedInput` with `answers`, as
claude-agent-acp's `elicitation.js` does; ExitPlanMode offers claude-agent-acp's choices for
leaving plan mode. An MCP server's `elicitation` request is asked the same way.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from acp_agent.provider import (
    Answer,
    Choice,
    CurrentModeUpdate,
    PermissionOption,
    Question,
    QuestionField,
    SessionChannel,
    ToolCallUpdate,
    TurnChannel,
    UrlQuestion,
)
from acp_agent_claude import content
from acp_agent_claude.session import ClaudeSession, available_modes
from acp_agent_claude.transport import ControlError

ASK_TOOL: Final = "AskUserQuestion"
EXIT_PLAN_TOOL: Final = "ExitPlanMode"
ASK_MESSAGE: Final = "Claude needs your input to continue."
EXIT_PLAN_TITLE: Final = "Ready to code?"
KEEP_PLANNING: Final = "reject"
# claude-agent-acp's option ids, and the mode each switches to.
EXIT_PLAN_MODES: Final[dict[str, str]] = {
    "exit-plan-bypass": "bypassPermissions",
    "exit-plan-accept-edits": "acceptEdits",
    "exit-plan-default": "default",
}


def _field_id(index: int) -> str:
    return f"question_{index}"


def _questions(tool_input: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tool's valid questions: a question text and at least one option."""
    raw = tool_input.get("questions")
    return [q for q in raw if isinstance(q, Mapping) and isinstance(q.get("question"), str)
            and isinstance(q.get("options"), list) and q["options"]] if isinstance(raw, list) else []


def question(tool_input: Mapping[str, Any], tool_call_id: str | None = None) -> Question | None:
    """AskUserQuestion's questions as one form (None: none is valid), asked on the tool's own call."""
    questions = _questions(tool_input)
    if not questions:
        return None
    fields = []
    for index, entry in enumerate(questions):
        choices = tuple(Choice(str(o["label"]), str(o["description"]) if o.get("description") else None)
                        for o in entry["options"] if isinstance(o, Mapping) and o.get("label"))
        fields.append(QuestionField(_field_id(index), str(entry["question"]), str(entry.get("header") or ""),
                                    choices, bool(entry.get("multiSelect"))))
    message = fields[0].question if len(fields) == 1 else ASK_MESSAGE
    return Question(message, tuple(fields), tool_call_id=tool_call_id)


def _joined(labels: Sequence[str]) -> str:
    """A multi-select's labels in the CLI's own form: comma-joined, a label holding ", " or a
    quote JSON-quoted (claude-agent-acp's `joinMultiSelectAnswer`)."""
    return ", ".join(json.dumps(label, ensure_ascii=False) if ", " in label or '"' in label else label
                     for label in labels)


def answered_input(tool_input: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
    """The tool's input with `answers` (question text -> the chosen labels, joined), as the
    built-in tool reads them back; a declined question answers none."""
    answers: dict[str, str] = {}
    if answer.action == "accept":
        for index, entry in enumerate(_questions(tool_input)):
            picked = answer.values.get(_field_id(index))
            if picked:
                answers[str(entry["question"])] = _joined(picked) if entry.get("multiSelect") else picked[0]
    return {**tool_input, "answers": answers}


def exit_plan_options(available_modes: Sequence[str]) -> list[PermissionOption]:
    """claude-agent-acp's choices for leaving plan mode, for the modes this session offers."""
    options = []
    if "bypassPermissions" in available_modes:
        options.append(PermissionOption("exit-plan-bypass", "Yes, and bypass permissions", "allow_always"))
    options += [
        PermissionOption("exit-plan-accept-edits", "Yes, auto-accept edits", "allow_always"),
        PermissionOption("exit-plan-default", "Yes, manually approve edits", "allow_once"),
        PermissionOption(KEEP_PLANNING, "No, keep planning", "reject_once"),
    ]
    return options


def exit_plan_approval(tool_input: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The CLI leaves plan mode for `mode` (for this session) and runs the tool."""
    return {"behavior": "allow", "updatedInput": dict(tool_input),
            "updatedPermissions": [{"type": "setMode", "mode": mode, "destination": "session"}]}


def elicitation_question(request: Mapping[str, Any]) -> Question | UrlQuestion | None:
    """The CLI's `elicitation` control request: the MCP server's form (its schema handed on as it
    is) or URL; None for what ACP cannot carry."""
    message = str(request.get("message") or "")
    if request.get("mode") == "url":
        url = request.get("url")
        if not isinstance(url, str) or not url:
            return None
        return UrlQuestion(message, url, str(request.get("elicitation_id") or url))
    schema = request.get("requested_schema")
    return Question(message, schema=schema if isinstance(schema, Mapping) else None)


def elicitation_result(answer: Answer) -> dict[str, Any]:
    """MCP's ElicitResult, which the CLI hands to the server."""
    if answer.action == "accept":
        return {"action": "accept", "content": dict(answer.content)}
    return {"action": answer.action}


PERMISSION_OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("allow_always", "Always allow", "allow_always"),
    PermissionOption("reject", "Reject", "reject_once"),
)


def _deny(message: str, *, interrupt: bool = False) -> dict[str, Any]:
    """The tool is refused; `interrupt` stops the turn too."""
    return {"behavior": "deny", "message": message, **({"interrupt": True} if interrupt else {})}


async def answer(session: ClaudeSession, environ: Mapping[str, str], request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one control request of the session's CLI; `environ` is the one its CLIs
    start with (which modes a plan can leave to)."""
    subtype = request.get("subtype")
    if subtype == "hook_callback" and request.get("callback_id") == POST_COMPACT:
        return post_compact(session, request.get("input"))
    if subtype not in ("can_use_tool", "elicitation"):
        raise ControlError(f"unsupported control request {subtype}")
    session.asking += 1
    try:
        if subtype == "elicitation":
            return await _elicit(session, request)
        return await _can_use_tool(session, environ, request)
    finally:
        session.asking -= 1


POST_COMPACT = "acp_agent_post_compact"
"""The callback id of the PostCompact hook each CLI is started with (`HOOKS`)."""
HOOKS = {"PostCompact": [{"matcher": None, "hookCallbackIds": [POST_COMPACT]}]}
"""The hooks of the CLI's `initialize`: the PostCompact hook hands over the compaction's summary
(the CLI awaits it before it ends the compaction), as claude-agent-acp registers it."""


def post_compact(session: ClaudeSession, hook_input: Any) -> dict[str, Any]:
    """The PostCompact hook: the session's own compaction (not a subagent's) keeps its summary
    for the compaction's end. The CLI goes on whatever this finds."""
    data = hook_input if isinstance(hook_input, dict) else {}
    if session.fold is not None and not data.get("agent_id"):
        session.fold.compaction.summary = content.compaction_summary(data.get("compact_summary"))
    return {"continue": True}


async def _elicit(session: ClaudeSession, request: dict[str, Any]) -> dict[str, Any]:
    """An MCP server asks the user (a form or a URL): asked through the core; outside a turn,
    or for a request it cannot carry, the answer is `cancel`."""
    asked = elicitation_question(request)
    turn = session.turn
    if asked is None or turn is None or session.cancelling():
        return {"action": "cancel"}
    return elicitation_result(await turn.ask(asked))


async def _can_use_tool(session: ClaudeSession, environ: Mapping[str, str],
                        request: dict[str, Any]) -> dict[str, Any]:
    tool_name = str(request.get("tool_name"))
    raw_input = request.get("input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    turn = session.turn
    if turn is None and session.listening is not None and session.channel is not None and tool_name not in (
            ASK_TOOL, EXIT_PLAN_TOOL):
        # read between prompts (a background subagent after the answer, the CLI's own turn): asked on the session
        return await _permission(session.channel, request, tool_name, tool_input, session.cwd)
    if turn is None or session.cancelling():
        return _deny("The turn was cancelled.", interrupt=True)
    if tool_name == ASK_TOOL:
        tool_use_id = request.get("tool_use_id")
        return await _ask_user(session, turn, tool_input, tool_use_id if isinstance(tool_use_id, str) else None)
    if tool_name == EXIT_PLAN_TOOL:
        update = _asked(request, tool_name, tool_input, session.cwd)
        modes = [mode[0] for mode in available_modes(environ)]
        return await _leave_plan_mode(session, turn, update, tool_input, modes)
    return await _permission(turn, request, tool_name, tool_input, session.cwd, session.cancelling)


def _asked(request: dict[str, Any], tool_name: str, tool_input: dict[str, Any], cwd: str) -> ToolCallUpdate:
    """The call a permission request asks about."""
    call = content.tool_call(request.get("tool_use_id") or f"permission-{uuid.uuid4()}", tool_name, tool_input, cwd)
    return ToolCallUpdate(tool_call_id=call.tool_call_id,
                          title=EXIT_PLAN_TITLE if tool_name == EXIT_PLAN_TOOL else request.get("title") or call.title,
                          kind=call.kind, status="pending", content=call.content, locations=call.locations,
                          raw_input=dict(tool_input))


async def _permission(asker: SessionChannel, request: dict[str, Any], tool_name: str, tool_input: dict[str, Any],
                      cwd: str, cancelling: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """Allow or deny a tool call as the user chooses (`asker`: the turn, or the session between
    turns); no answer while the turn is `cancelling` stops the turn too."""
    update = _asked(request, tool_name, tool_input, cwd)
    choice = await asker.request_permission(update, PERMISSION_OPTIONS)
    if choice in ("allow", "allow_always"):
        # Allowed: the CLI runs the tool now; its result completes or fails the call.
        await asker.emit(ToolCallUpdate(tool_call_id=update.tool_call_id, status="in_progress"))
        allowed: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input}
        suggestions = request.get("permission_suggestions")
        if choice == "allow_always" and isinstance(suggestions, list) and suggestions:
            allowed["updatedPermissions"] = suggestions
        return allowed
    return _deny("The user rejected this tool call.", interrupt=choice is None and cancelling())


async def _ask_user(session: ClaudeSession, turn: TurnChannel, tool_input: dict[str, Any],
                    tool_use_id: str | None) -> dict[str, Any]:
    """AskUserQuestion: the core asks (elicitation or permission options) on the tool's own
    call; the answers go back as the tool's input. A dismissed question (or a cancelled turn)
    refuses the tool."""
    asked = question(tool_input, tool_use_id)
    if asked is None:
        return _deny("AskUserQuestion called with no valid questions.")
    answered = await turn.ask(asked)
    if answered.action == "cancel":
        return _deny("The user dismissed the question.", interrupt=session.cancelling())
    return {"behavior": "allow", "updatedInput": answered_input(tool_input, answered)}


async def _leave_plan_mode(session: ClaudeSession, turn: TurnChannel, update: ToolCallUpdate,
                           tool_input: dict[str, Any], modes: list[str]) -> dict[str, Any]:
    """ExitPlanMode: approve the plan and switch to a mode (the CLI switches; the client hears
    `current_mode_update`), or keep planning (the turn stops, as in claude-agent-acp)."""
    review = content.plan_review(update, tool_input)
    choice = await turn.request_permission(review, exit_plan_options(modes))
    mode = EXIT_PLAN_MODES.get(choice or "")
    if mode is None:
        cancelled = choice is None and session.cancelling()
        if session.fold is not None:
            # The interrupt ends the turn with an error result: an intended stop, so the
            # turn ends `cancelled` (as claude-agent-acp maps it) and the user types feedback.
            session.fold.cancel_requested = True
        return _deny("The turn was cancelled." if cancelled else "User chose to keep planning", interrupt=True)
    session.mode = mode
    await turn.emit(ToolCallUpdate(tool_call_id=update.tool_call_id, status="in_progress"))
    await turn.emit(CurrentModeUpdate(current_mode_id=mode))
    return exit_plan_approval(tool_input, mode)
