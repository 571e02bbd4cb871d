"""Questions a backend asks the user (Codex's request_user_input and MCP elicitations, Claude's
AskUserQuestion), asked the way the client can answer them.

A client that advertises ACP elicitation (`clientCapabilities.elicitation.form` / `.url`) gets an
`elicitation/create` request (a form built from the question's fields, or the backend's own JSON
schema, or a URL). Every other client gets `session/request_permission` on a tool call of its own,
whose options are the answers (one request per field, in order), as the reference adapters fall
back; a field that takes several answers is asked again, with the answers not yet chosen and
*Done*, after each pick. The user dismissing a question, or `session/cancel`, is a `cancel`; the provider turns that
into its backend's refusal. Knows nothing of providers.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_agent.backends.questions import CANCELLED, Answer, Question, QuestionField, UrlQuestion
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acp_agent.backends.events import PlanFileCall
    from acp_agent.sessions.presentation import ClientFeatures


class AskingTurn(Protocol):
    """What a request to the user needs of the turn it belongs to: whether `session/cancel` came,
    and where its cancel scope goes (a cancel withdraws the request)."""

    cancel_requested: bool
    permission_scopes: set[anyio.CancelScope]


class Client(Protocol):
    """The way to the client that asking takes (the session's `Outbox`)."""

    features: ClientFeatures

    async def client_request(self, method: str, params: Any, turn: AskingTurn | None, *,
                             timeout_s: float) -> Any: ...

    async def send_update(self, session_id: str, update: Any, *, wait: bool = False) -> bool: ...

    async def request_permission(self, session_id: str, tool_call: acp.ToolCallUpdate | PlanFileCall,
                                 options: Sequence[acp.PermissionOption], turn: AskingTurn | None) -> str | None: ...

log = logging.getLogger(__name__)

ELICITATION_CREATE = "elicitation/create"
QUESTION_TIMEOUT_S = 3600.0
DECLINE_OPTION = "decline"
DONE_OPTION = "done"




def form_schema(question: Question) -> dict[str, Any]:
    """The question's form as ACP's elicitation schema: a titled `oneOf` for one choice, an array
    of a titled `anyOf` for several, a string for free text."""
    if question.schema is not None:
        schema = dict(question.schema)
        schema["type"] = "object"
        schema.setdefault("properties", {})
        return schema
    properties: dict[str, Any] = {}
    for entry in question.fields:
        prop: dict[str, Any] = {"type": "string"}
        if entry.header:
            prop["title"] = entry.header
        if entry.question and (len(question.fields) > 1 or entry.question != question.message):
            prop["description"] = entry.question
        options = [{"const": c.label, "title": c.label, **({"description": c.description} if c.description else {})}
                   for c in entry.choices]
        if options and entry.multiple:
            prop = {**prop, "type": "array", "items": {"anyOf": options}}
        elif options:
            prop["oneOf"] = options
        properties[entry.id] = prop
    return {"type": "object", "properties": properties}


def _values(question: Question, content: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    values: dict[str, tuple[str, ...]] = {}
    for entry in question.fields:
        raw = content.get(entry.id)
        items = raw if isinstance(raw, list) else [raw]
        picked = tuple(str(item) for item in items if isinstance(item, str | int | float) and str(item).strip())
        if picked:
            values[entry.id] = picked
    return values


async def ask(outbox: Client, session_id: str, question: Question | UrlQuestion, turn: AskingTurn | None) -> Answer:
    """Ask the user; see the module docstring for how."""
    features = outbox.features
    if isinstance(question, UrlQuestion):
        if features.elicitation_url:
            params: dict[str, Any] = {"sessionId": session_id, "mode": "url", "message": question.message,
                                      "url": question.url, "elicitationId": question.elicitation_id}
            return _elicitation_answer(await _elicit(outbox, params, question.tool_call_id, turn), None)
        return await _ask_by_permission(outbox, session_id, question, turn)
    if features.elicitation_form:
        params = {"sessionId": session_id, "mode": "form", "message": question.message,
                  "requestedSchema": form_schema(question)}
        return _elicitation_answer(await _elicit(outbox, params, question.tool_call_id, turn), question)
    return await _ask_by_permission(outbox, session_id, question, turn)


async def _elicit(outbox: Client, params: dict[str, Any], tool_call_id: str | None, turn: AskingTurn | None) -> Any:
    if tool_call_id:
        params["toolCallId"] = tool_call_id
    return await outbox.client_request(ELICITATION_CREATE, params, turn, timeout_s=QUESTION_TIMEOUT_S)


def _elicitation_answer(response: Any, question: Question | None) -> Answer:
    action = response.get("action") if isinstance(response, Mapping) else None
    if action == "decline":
        return Answer("decline")
    if action != "accept":
        return CANCELLED
    content = response.get("content")
    content = content if isinstance(content, Mapping) else {}
    return Answer("accept", _values(question, content) if question is not None else {}, dict(content))


async def _ask_by_permission(outbox: Client, session_id: str, question: Question | UrlQuestion,
                             turn: AskingTurn | None) -> Answer:
    """A tool call of the question's own, and one permission request per field whose options are
    the answers (a URL: "Done" after visiting it). A field without choices cannot be asked so:
    the question is declined."""
    if isinstance(question, Question) and (
            (question.schema is not None and question.schema.get("properties"))
            or any(not entry.choices for entry in question.fields)):
        return Answer("decline")
    call_id = question.tool_call_id or f"question-{uuid.uuid4().hex[:12]}"
    if question.tool_call_id is None:
        await outbox.send_update(session_id, acp.ToolCall(tool_call_id=call_id, title=question.message, kind="other",
                                                          status="pending"))
    answer = await _permission_rounds(outbox, session_id, question, call_id, turn)
    if question.tool_call_id is None:
        status: acp.ToolStatus = "completed" if answer.action == "accept" else "failed"
        await outbox.send_update(session_id, acp.ToolCallUpdate(call_id, status=status))
    return answer


async def _permission_rounds(outbox: Client, session_id: str, question: Question | UrlQuestion, call_id: str,
                             turn: AskingTurn | None) -> Answer:
    decline = acp.PermissionOption(DECLINE_OPTION, "Decline", "reject_once")
    if isinstance(question, Question) and question.fields:
        values: dict[str, tuple[str, ...]] = {}
        for entry in question.fields:
            picked = await _pick(outbox, session_id, call_id, turn, entry, question.message, decline)
            if isinstance(picked, Answer):
                return picked
            values[entry.id] = picked
        return Answer("accept", values)
    shown: list[acp.ToolCallContent] = []
    if isinstance(question, UrlQuestion):
        shown = [acp.ToolContent(acp.TextContent(f"{question.message}\n\nOpen {question.url}"))]
        confirm = acp.PermissionOption(DONE_OPTION, "Done", "allow_once")
    else:  # a message to acknowledge
        confirm = acp.PermissionOption("accept", "Accept", "allow_once")
    tool_call = acp.ToolCallUpdate(call_id, title=question.message, kind="other", status="pending",
                                   content=shown or UNSET)
    choice = await outbox.request_permission(session_id, tool_call, [confirm, decline], turn)
    if choice is None:
        return CANCELLED
    return Answer("decline") if choice == DECLINE_OPTION else Answer("accept")


async def _pick(outbox: Client, session_id: str, call_id: str, turn: AskingTurn | None, entry: QuestionField,
                message: str, decline: acp.PermissionOption) -> tuple[str, ...] | Answer:
    """One field's answers by permission requests: one pick, or for a field taking several, a
    request per pick offering the answers not yet chosen and *Done* (once one is chosen) until
    the user is done or none is left. An Answer when the user declined or dismissed it."""
    text = "\n".join(f"{c.label}: {c.description}" for c in entry.choices if c.description)
    shown: list[acp.ToolCallContent] = [acp.ToolContent(acp.TextContent(text))] if text else []
    picked: list[str] = []
    while True:
        options = [acp.PermissionOption(f"choice-{index}", choice.label, "allow_once")
                   for index, choice in enumerate(entry.choices) if choice.label not in picked]
        if picked:
            options.append(acp.PermissionOption(DONE_OPTION, "Done", "allow_once"))
        title = entry.question or message
        if picked:
            title = f"{title} (chosen: {', '.join(picked)})"
        tool_call = acp.ToolCallUpdate(call_id, title=title, kind="other", status="pending",
                                       content=shown or UNSET)
        choice = await outbox.request_permission(session_id, tool_call, [*options, decline], turn)
        if choice is None:
            return CANCELLED
        if choice == DECLINE_OPTION:
            return Answer("decline")
        if choice == DONE_OPTION:
            return tuple(picked)
        label = next((o.name for o in options if o.option_id == choice), None)
        if label is None:  # not an option offered: the client misbehaved; ask no further
            return CANCELLED
        picked.append(label)
        if not entry.multiple or len(picked) == len({c.label for c in entry.choices}):
            return tuple(picked)


__all__ = ["ask", "form_schema"]
