"""Codex's ACP session modes and the app-server sandbox and approval policies they stand for.

A mode is sent as `thread/start`, `thread/resume` and `thread/fork` fields (`policy_params`) and,
once the user changed it, with the next `turn/start` (`turn_policy`). Neither is sent when the
user's `config.toml` chooses a policy itself (`user_config_sets_policy`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Final

from acp_agent.provider import SETTINGS_LIMIT, SessionMode, UnsafeFile, read_regular_file
from acp_agent_codex import codex_home

log = logging.getLogger(__name__)

MODES: Final = (
    SessionMode("read-only", "Read-only", "Codex reads files; it asks before editing files or running commands."),
    SessionMode("auto", "Workspace access",
                "Codex edits files and runs commands in the workspace; it asks you before going beyond it."),
    SessionMode("auto-review", "Auto review",
                "Like Workspace access, but Codex's automatic reviewer decides the requests to go beyond the "
                "workspace instead of asking you."),
    SessionMode("full-access", "Full access", "Codex edits files and runs commands anywhere without asking."),
)
DEFAULT_MODE: Final = "auto-review"
"""codex-acp's default (its `agent` mode): workspace-write, on-request, approvals to the reviewer."""
# mode → (turn/start sandboxPolicy, approvalPolicy, thread/start sandbox)
_POLICIES: Final[Mapping[str, tuple[dict[str, str], str, str]]] = {
    "read-only": ({"type": "readOnly"}, "on-request", "read-only"),
    "auto": ({"type": "workspaceWrite"}, "on-request", "workspace-write"),
    "auto-review": ({"type": "workspaceWrite"}, "on-request", "workspace-write"),
    "full-access": ({"type": "dangerFullAccess"}, "never", "danger-full-access"),
}
_REVIEWER: Final[Mapping[str, str]] = {"auto-review": "auto_review"}
"""Who decides approval requests (app-server's `approvalsReviewer`) where it is not the user."""
_MODE_OF_SANDBOX: Final[Mapping[str, str]] = {
    "readOnly": "read-only",
    "workspaceWrite": "auto",
    "dangerFullAccess": "full-access",
}


def user_config_sets_policy(environ: Mapping[str, str]) -> bool:
    """Whether the user's config.toml chooses a sandbox mode or approval policy (then we pass neither).
    Only a regular file within the settings bound is read: a FIFO or a device there is skipped
    (logged), never waited on."""
    path = os.path.join(codex_home(environ), "config.toml")
    try:
        data = read_regular_file(path, SETTINGS_LIMIT)
    except FileNotFoundError:
        return False
    except UnsafeFile as exc:
        log.warning("codex config skipped: %s", exc)
        return True  # as for any unreadable config: codex reports it; we override nothing
    except OSError:
        return True  # let codex report its own configuration problems; do not override them
    import tomllib  # only when there is a file to read: not on the way to every first session

    try:
        config = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    profile = config.get("profile")
    profiles = config.get("profiles")
    chosen = profiles.get(profile) if isinstance(profile, str) and isinstance(profiles, Mapping) else None
    tables = [config, *([chosen] if isinstance(chosen, Mapping) else [])]
    return any("sandbox_mode" in table or "approval_policy" in table for table in tables)


def mode_of(result: Mapping[str, Any]) -> str:
    """The ACP mode that a thread/start or thread/resume result's sandbox amounts to."""
    sandbox = result.get("sandbox")
    kind = sandbox.get("type") if isinstance(sandbox, Mapping) else None
    mode = _MODE_OF_SANDBOX.get(kind, "auto") if isinstance(kind, str) else "auto"
    if mode == "auto" and result.get("approvalsReviewer") in ("auto_review", "guardian_subagent"):
        return "auto-review"
    return mode


def policy_params(mode: str) -> dict[str, str]:
    """thread/start, thread/resume and thread/fork fields that put a thread in `mode`."""
    _, approval, sandbox = _POLICIES[mode]
    return {"sandbox": sandbox, "approvalPolicy": approval, "approvalsReviewer": _REVIEWER.get(mode, "user")}


def turn_policy(mode: str) -> dict[str, Any]:
    """`turn/start` fields that put the thread in `mode` from this turn on."""
    sandbox_policy, approval, _ = _POLICIES[mode]
    return {"sandboxPolicy": sandbox_policy, "approvalPolicy": approval,
            "approvalsReviewer": _REVIEWER.get(mode, "user")}


def mode_name(mode: str) -> str:
    """The mode's name as the client shows it (`/status`)."""
    return next((m.name for m in MODES if m.id == mode), mode)
