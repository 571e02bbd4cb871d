"""Tools through which Claude Code asks the user something rather than for permission.

AskUserQuestion and ExitPlanMode reach the agent as `can_use_tool` control requests. The first is
a question (`acp_agent.sessions.questions`: an ACP elicitation, else permission requests whose options are
the answers), answered to the CLI as the tool's `updatedInput` with `answers`, as
claude-agent-acp's `elicitation.js` does. The second offers claude-agent-acp's choices for
leaving plan mode (approve and switch to a mode, or keep planning). An MCP server's elicitation
arrives as an `elicitation` control request and is asked the same way. Pure translation: the
runtime asks and answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from acp_agent.backends.questions import Answer, Choice, Question, QuestionField, UrlQuestion
from acp_agent.wire.acp import PermissionOption

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
