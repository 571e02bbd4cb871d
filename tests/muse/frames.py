"""MSP frames for the pure tables, shaped as `muse-code-msp` declares them (checked in test_frames_*)."""

from __future__ import annotations

import json
from typing import Any

SESSION = "0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
TURN = "turn-0001"
OTHER_TURN = "turn-0000"
_sequence = 0


def view() -> dict[str, Any]:
    global _sequence
    _sequence += 1
    position = {"id": f"rec-{_sequence}", "sequence": _sequence}
    return {"sessionId": SESSION, "viewCursor": f"v{_sequence:08d}",
            "sourceRange": {"first": position, "last": position, "stream": {"id": SESSION, "kind": "session"}}}


def item(item_id: str, kind: str, status: str = "inProgress", revision: int = 1, turn: str = TURN,
         **fields: Any) -> dict[str, Any]:
    return {"itemId": item_id, "kind": kind, "revision": revision, "status": status, "turnId": turn, **fields}


def started(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "item/started", {**view(), "item": entry}


def updated(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "item/updated", {**view(), "item": entry}


def completed(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "item/completed", {**view(), "item": entry}


def delta(item_id: str, text: str, field: str | None = None) -> tuple[str, dict[str, Any]]:
    params = {"sessionId": SESSION, "itemId": item_id, "delta": text, "viewCursor": view()["viewCursor"]}
    if field is not None:
        params["field"] = field
    return "item/delta", params


def turn_completed(terminal: str, error: dict[str, Any] | None = None, turn: str = TURN) -> tuple[str, dict[str, Any]]:
    params = {**view(), "turnId": turn, "terminal": terminal}
    if error is not None:
        params["error"] = error
    return "turn/completed", params


def turn_error(kind: str, message: str, retryable: bool = False, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, "retryable": retryable, **extra}


def retry_scheduled(reason: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return "turn/retryScheduled", {**view(), "turnId": TURN, "attempt": 1, "maxAttempts": 3, "nextAttempt": 2,
                                   "retryDelayMs": 1000, "reason": reason, **extra}


def model_retry_scheduled(**extra: Any) -> tuple[str, dict[str, Any]]:
    return "turn/modelRetryScheduled", {**view(), "turnId": TURN, "attempt": 2, "maxAttempts": 3, "nextAttempt": 3,
                                        "retryDelayMs": 2000, **extra}


CHOICES = [
    {"choiceId": "allow-once", "decision": "approved", "label": "Allow once", "scope": "once"},
    {"choiceId": "allow-session", "decision": "approvedForSession", "label": "Allow for this session",
     "scope": "session"},
    {"choiceId": "always", "decision": "approvedPolicyAmendment", "label": "Always allow `rm`", "scope":
     "localPersistent", "rulePreview": "rm *"},
    {"choiceId": "deny", "decision": "denied", "label": "Deny", "scope": "once", "acceptsFeedback": True},
    {"choiceId": "never", "decision": "deniedPolicyAmendment", "label": "Never allow `rm`", "scope": "localPersistent"},
    {"choiceId": "abort", "decision": "abort", "label": "Deny and stop", "scope": "once"},
    {"choiceId": "later", "decision": "snooze", "label": "Ask me later", "scope": "once"},
]


def approval(choices: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {**view(), "approvalId": "ap-1", "availableChoices": choices if choices is not None else CHOICES,
            "currentRequirementId": {"approvalId": "ap-1", "sourceIndex": 0}, "itemId": "tool-1",
            "judgeEscalated": False, "protectedWrite": False, "rawArgs": json.dumps({"command": ["rm", "-rf", "build"]}),
            "subject": {"kind": "shell", "command": "rm -rf build"}, "taskId": "task-1", "toolCallId": "call-1",
            "toolName": "shell", "turnId": TURN, **extra}
