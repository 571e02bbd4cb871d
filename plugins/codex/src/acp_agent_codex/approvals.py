"""app-server's requests to the user during a turn: command and file-change approvals, questions
(`request_user_input`), MCP servers' elicitations and codex's approval of an MCP tool call.

Each is asked through the client once the turn's notifications queued before it reached the
client (the tool call it is about first: `caught_up`); no answer, a cancelled one or a turn that
is over declines.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final

import anyio

from acp_agent.provider import Answer, Question, ToolCall, ToolCallUpdate, UrlQuestion
from acp_agent_codex import items
from acp_agent_codex.threads import ActiveTurn, Barrier, tool_items

APPROVALS: Final = ("item/commandExecution/requestApproval", "item/fileChange/requestApproval")
REQUESTS: Final = (*APPROVALS, *items.QUESTION_REQUESTS)
"""Every request app-server sends the runtime."""


async def answer(active: ActiveTurn | None, method: str, params: Mapping[str, Any],
                 child_items: Mapping[str, Any] | None = None) -> Any:
    """The answer to a request of the running turn `active` (None: no turn of ours runs);
    `child_items`: the items of the child thread that asks (a subagent's; the core asks in its
    child session, and not at all a client that is not shown the child), else the turn's own."""
    if method in items.QUESTION_REQUESTS:
        if child_items is not None:
            active = None  # (a child's question or elicitation: not asked, as before)
        return await _question(active, method, params)
    if active is None or not await caught_up(active):
        return {"decision": "decline"}
    item_id = params.get("itemId")
    known = child_items if child_items is not None else tool_items(active)
    item = known.get(item_id) if isinstance(item_id, str) else None
    tool_call, options = items.approval_request(method, params, item)
    choice = await active.channel.request_permission(tool_call, options)
    decision = choice if choice in {option.option_id for option in options} else "decline"
    return {"decision": decision}


async def caught_up(active: ActiveTurn) -> bool:
    """Wait until the turn's notifications queued before now reached the client (the item's
    tool call first); False when the turn is over."""
    barrier = Barrier()
    try:
        await active.queue.put(barrier)  # this handler is its own task: it may wait for room
    except anyio.ClosedResourceError:
        return False
    await barrier.reached.wait()
    return True


async def _question(active: ActiveTurn | None, method: str, params: Mapping[str, Any]) -> Any:
    """A question to the user (request_user_input, an MCP server's elicitation): asked through
    the core, which elicits or falls back to permission requests; cancel declines. An MCP
    elicitation belongs to its server's running tool call; codex's own approval of an MCP tool
    call is a permission request on that call (as codex-acp asks it)."""
    if active is not None and not await caught_up(active):
        active = None
    if method == "item/tool/requestUserInput":
        question: Question | UrlQuestion | None = items.user_input_question(params)
        answer = await active.channel.ask(question) if active is not None and question else Answer("cancel")
        return items.user_input_result(answer)
    call_id = items.running_mcp_call(tool_items(active), params.get("serverName")) if active else None
    if items.is_mcp_tool_approval(params):
        return await _mcp_approval(active, params, call_id) if active else items.mcp_approval_result(None)
    question = items.elicitation_question(params, call_id)
    answer = await active.channel.ask(question) if active is not None and question else Answer("cancel")
    return items.elicitation_result(answer)


async def _mcp_approval(active: ActiveTurn, params: Mapping[str, Any], call_id: str | None) -> dict[str, Any]:
    """Ask whether an MCP tool may run, on its tool call (or one of the question's own when
    app-server announced none)."""
    turn = active.channel
    item_id = call_id or f"mcp-approval-{uuid.uuid4().hex[:12]}"
    tool_call, options = items.mcp_approval_request(
        params, item_id, tool_items(active).get(call_id) if call_id else None)
    if call_id is None:
        title = tool_call.title if isinstance(tool_call.title, str) else ""
        await turn.emit(ToolCall(tool_call_id=item_id, title=title, kind="other", status="pending"))
    choice = await turn.request_permission(tool_call, options)
    result = items.mcp_approval_result(choice if choice in {o.option_id for o in options} else None)
    if call_id is None:
        await turn.emit(ToolCallUpdate(item_id, status="completed" if result["action"] == "accept" else "failed"))
    return result
