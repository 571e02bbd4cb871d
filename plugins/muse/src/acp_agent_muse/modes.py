"""Muse Code's ACP session modes and the MSP approval modes they stand for.

`rejectApprovals` is the adapter's own: the host asks, and every question is answered with
Muse Code's deny choice (`AUTO_DENY_MODES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from acp_agent.provider import SessionMode, json_object

MODES: Final = (
    SessionMode("default", "Default", "Muse Code asks before any action its policy does not already allow."),
    SessionMode("readOnly", "Read only", "Muse Code itself denies every action its policy does not already allow."),
    SessionMode("plan", "Plan", "Muse Code works on request: it asks only when the model requests an escalation."),
    SessionMode("bypassApprovals", "Bypass approvals", "Muse Code runs every action without asking."),
    SessionMode("rejectApprovals", "Reject approvals",
                "Muse Code asks, and the adapter answers every question with Muse Code's own deny choice."),
)
DEFAULT_MODE: Final = "default"
APPROVAL_MODES: Final[Mapping[str, str]] = {
    "default": "promptUnmatched",
    "readOnly": "denyUnmatched",
    "plan": "onRequest",
    "bypassApprovals": "allowAll",
    "rejectApprovals": "promptUnmatched",
}
MODE_OF_APPROVAL: Final[Mapping[str, str]] = {
    "promptUnmatched": "default",
    "denyUnmatched": "readOnly",
    "onRequest": "plan",
    "allowAll": "bypassApprovals",
}
AUTO_DENY_MODES: Final = frozenset({"rejectApprovals"})


mapping: Final = json_object


def served_mode(session: Mapping[str, Any]) -> str | None:
    mode = mapping(session.get("approvalMode")).get("mode")
    return mode if isinstance(mode, str) else None
