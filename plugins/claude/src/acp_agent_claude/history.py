"""Pure recognition of a stored Claude transcript for `session/load` replay.

Input: the transcript's visible messages in order (`type`, `uuid`, raw API `message`), as the SDK's
`get_session_messages` returns them. Output: what to replay, in place: user and agent text, tool
calls, and the synthetic usage-limit failures as `HistoryFailure`s with the id the live failure had.
Only messages the CLI itself wrote (`<synthetic>` model) with an SDK-owned usage-limit prefix count;
model prose that merely looks like one does not. Each entry is first offered to `recogniser` (the
runtime passes the core's history hook, so any plugin may recognise its own failures; this
provider's answer is `recognise_entry`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from acp_agent.acp import (
    agent_text,
    thought_text,
    user_text,
)
from acp_agent.events import Event, HistoryFailure
from acp_agent.failures import FailureKind
from acp_agent_claude import classify, content
from acp_agent_claude.tasks import TASK_TOOLS, TaskPlan


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    body = message.get("content")
    if isinstance(body, str):
        return [{"type": "text", "text": body}]
    return [block for block in body or () if isinstance(block, Mapping)]


def _text(blocks: Sequence[Mapping[str, Any]]) -> str:
    return "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


Recogniser = Callable[[Mapping[str, Any], str | None], HistoryFailure | None]


def recognise_entry(entry: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    """One transcript entry → the failure it stored, or None (the history hook's built-in answer).

    A usage-limit message is a typed record; a "run /login" message is replayed as text only
    (`typed=False`); anything else is not a failure.
    """
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    if message.get("model") != classify.SYNTHETIC_MODEL:
        return None
    text, uuid = _text(_blocks(message)), str(entry.get("uuid") or "")
    if classify.is_usage_limit_text(text):
        return HistoryFailure(classify.failure(FailureKind.QUOTA_EXHAUSTED, "usage_limit", text),
                              message_id=uuid, user_message_id=user_message_id, legacy_updates=(agent_text(text),))
    if classify.is_login_text(text):
        return HistoryFailure(classify.failure(FailureKind.AUTH_REQUIRED, "authentication_failed", text),
                              message_id=uuid, user_message_id=user_message_id,
                              legacy_updates=(agent_text(text),), typed=False)
    return None


def recognise(entries: Sequence[Mapping[str, Any]], session_id: str = "") -> list[tuple[str, str | None]]:
    """(message id, preceding user message id) of every replayable failure, in order."""
    return [(event.message_id, event.user_message_id) for event in replay(entries, session_id)
            if isinstance(event, HistoryFailure)]


def replay(entries: Sequence[Mapping[str, Any]], session_id: str = "", cwd: str | None = None,
           recogniser: Recogniser = recognise_entry) -> list[Event]:
    """The transcript as replay events; only the latest unrecovered typed failure stays active."""
    events: list[Event] = []
    user_message_id: str | None = None
    tools: dict[str, str] = {}
    inputs: dict[str, Mapping[str, Any]] = {}
    tasks = TaskPlan()  # the task tools replay as the plan they built, as they showed live
    latest_failure: int | None = None
    for entry in entries:
        kind, uuid = entry.get("type"), str(entry.get("uuid") or "")
        message = entry.get("message") or {}
        blocks = _blocks(message)
        if kind == "user":
            text_blocks = [b for b in blocks if b.get("type") == "text" and b.get("text")]
            for block in blocks:
                if block.get("type") == "tool_result":
                    tool_id = str(block.get("tool_use_id", ""))
                    if tools.get(tool_id) in TASK_TOOLS:
                        plan = tasks.apply(tools[tool_id], inputs.get(tool_id, {}), block.get("content"), None,
                                           bool(block.get("is_error")))
                        events.extend([plan] if plan is not None else [])
                        continue
                    events.append(content.tool_result(tool_id, block.get("content"), bool(block.get("is_error")),
                                                      tools.get(tool_id)))
            if text_blocks:
                user_message_id = uuid or user_message_id
                events.extend(user_text(str(b["text"])) for b in text_blocks)
            continue
        if kind != "assistant":
            continue
        recognised = recogniser(entry, user_message_id)
        if recognised is not None:
            events.append(attrs.evolve(recognised, active=False))
            if recognised.typed:
                latest_failure = len(events) - 1
            continue
        text = _text(blocks)
        if message.get("model") == classify.SYNTHETIC_MODEL:
            if text:
                events.append(agent_text(text))
            continue
        latest_failure = None  # a real model answer: the quota recovered
        for block in blocks:
            block_type = block.get("type")
            if block_type == "text" and block.get("text"):
                events.append(agent_text(str(block["text"])))
            elif block_type == "thinking" and block.get("thinking"):
                events.append(thought_text(str(block["thinking"])))
            elif block_type == "tool_use":
                tool_id, name = str(block.get("id", "")), str(block.get("name", ""))
                tools[tool_id] = name
                raw_input = block.get("input")
                tool_input: Mapping[str, Any] = raw_input if isinstance(raw_input, Mapping) else {}
                inputs[tool_id] = tool_input
                if name not in TASK_TOOLS:
                    events.append(content.tool_call(tool_id, name, tool_input, cwd))
    if latest_failure is not None:
        failure = events[latest_failure]
        assert isinstance(failure, HistoryFailure)
        events[latest_failure] = attrs.evolve(failure, active=True)
    return events
