"""A running turn's approvals and questions: MSP `approval/*` becomes a permission request and
`userInput/*` a question, each asked in its own task; their answers go back as commands."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import anyio
import anyio.abc

from acp_agent.provider import ConnectionClosed, RpcError
from acp_agent_muse import items
from acp_agent_muse.modes import AUTO_DENY_MODES, mapping
from acp_agent_muse.sessions import ActiveTurn, MuseSession, QueueItem

log = logging.getLogger(__name__)

APPROVAL_METHODS: Final = frozenset({"approval/requested", "approval/request", "approval/updated"})
USER_INPUT_METHODS: Final = frozenset({"userInput/requested", "userInput/request"})


async def take(state: MuseSession, active: ActiveTurn, questions: anyio.abc.TaskGroup,
               entry: QueueItem) -> QueueItem | None:
    """A queued frame of the running turn: approvals, questions and `session/closed` are handled
    here (the questions in their own tasks in `questions`: the turn keeps streaming); the rest is
    the translator's."""
    method, params = entry
    if method in APPROVAL_METHODS:
        approval(state, active, method, params, questions)
    elif method == "approval/resolved":
        if isinstance(params.get("approvalId"), str):
            active.resolved.add(params["approvalId"])
    elif method in USER_INPUT_METHODS:
        question(state, active, params, questions)
    elif method == "session/closed":
        state.needs_resume = True
    else:
        return entry
    return None



def approval(state: MuseSession, active: ActiveTurn, method: str, params: Mapping[str, Any],
              questions: anyio.abc.TaskGroup) -> None:
    approval_id = params.get("approvalId")
    if not isinstance(approval_id, str) or approval_id in active.resolved:
        return
    if method == "approval/updated":
        base = active.approvals.get(approval_id)
        if base is None or mapping(params.get("change")).get("kind") == "alreadyTerminal":
            return
        params = {**base, **{key: params[key] for key in ("availableChoices", "currentRequirementId", "subject")
                             if key in params}}
    if active.translator is not None and params.get("turnId") not in (None, active.turn_id):
        return
    active.approvals[approval_id] = params
    stage = items.approval_stage(params)
    if stage in active.decided:
        return
    active.decided.add(stage)
    questions.start_soon(decide, state, active, params)

async def decide(state: MuseSession, active: ActiveTurn, params: Mapping[str, Any]) -> None:
    options = items.permission_options(params)
    choice: str | None
    if state.mode in AUTO_DENY_MODES or not options:
        choice = items.refusal_choice(params, prefer_abort=False)
    else:
        item_id = params.get("itemId")
        item = active.translator.items.get(item_id) if active.translator and isinstance(item_id, str) else None
        choice = await active.channel.request_permission(items.approval_tool_call(params, item), options)
        if choice is None:
            choice = items.refusal_choice(params, prefer_abort=active.cancel_requested)
    approval_id = str(params.get("approvalId"))
    if choice is None:
        log.info("approval %s offers no deny or abort choice; leaving it to the host", approval_id)
        return
    if approval_id in active.resolved:
        return
    decide = {**items.decide_params(params, choice), "sessionId": state.session_id}
    try:
        await active.host.command("approval/decide", decide)
    except (RpcError, ConnectionClosed) as exc:
        log.info("approval/decide for %s failed: %s", approval_id, exc)

def question(state: MuseSession, active: ActiveTurn, params: Mapping[str, Any],
              questions: anyio.abc.TaskGroup) -> None:
    """A `userInput` question, asked through the core (an elicitation, or permission requests
    whose options are the answers); a declined, dismissed or cancelled one is cancelled so the
    model goes on."""
    question_id = params.get("userInputId")
    if not isinstance(question_id, str) or question_id in active.questions:
        return
    active.questions.add(question_id)

    async def settle() -> None:
        question = items.user_input_question(params)
        answers = items.user_input_answers(question, await active.channel.ask(question))
        try:
            if answers is not None:
                await active.host.command("userInput/answer", {
                    "sessionId": state.session_id, "userInputId": question_id, "answers": answers})
            else:
                await active.host.command("userInput/cancel", {
                    "sessionId": state.session_id, "userInputId": question_id,
                    "reason": "The user did not answer; continue without an answer."})
        except (RpcError, ConnectionClosed) as exc:
            log.info("settling user input %s failed: %s", question_id, type(exc).__name__)

    questions.start_soon(settle)
