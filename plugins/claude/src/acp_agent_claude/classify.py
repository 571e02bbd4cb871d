"""Pure classification of Claude Code CLI output: failure kinds, titles, retries and notices.

Works on the claude-agent-sdk's typed messages (`AssistantMessage`, `ResultMessage`,
`SystemMessage`) and plain values; no I/O. Tested from tables of real CLI 2.1.332 output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from acp_agent.events import Notice, RetryProgress
from acp_agent.executables import program_unavailable
from acp_agent.failures import Category, FailureKind, FailureObservation

SYNTHETIC_MODEL = "<synthetic>"
CONNECTION_LOST = "The connection to Claude was lost."
WORKER_SHUTDOWN = "Claude is shutting down."

USAGE_LIMIT_PREFIXES = (
    "You've hit your",
    "You've reached your",
    "You're out of usage credits",
    "Your org is out of usage · add funds to continue",
    "Your org is out of usage · contact your admin",
    "Your seat type doesn't include usage credits",
    "Your seat type doesn't include usage",
    "Your usage allocation has been disabled by your admin",
    "Your group's usage limit is set to $0",
    "You're out of extra usage",
    "Your seat type doesn't include extra usage",
)
_LOGIN = re.compile(r"\brun /login\b", re.IGNORECASE)

ERROR_KINDS: Mapping[str, FailureKind] = {
    "authentication_failed": FailureKind.AUTH_REQUIRED,
    "oauth_org_not_allowed": FailureKind.AUTH_REQUIRED,
    "billing_error": FailureKind.QUOTA_EXHAUSTED,
    "account_on_hold": FailureKind.QUOTA_EXHAUSTED,
    "rate_limit": FailureKind.RATE_LIMITED,
    "overloaded": FailureKind.OVERLOADED,
    "invalid_request": FailureKind.BAD_REQUEST,
    "model_not_found": FailureKind.BAD_REQUEST,
    "max_output_tokens": FailureKind.CONTEXT_EXHAUSTED,
    "verification_required": FailureKind.ACCESS_DENIED,
    "cloud_credential_error": FailureKind.ACCESS_DENIED,
}
STATUS_KINDS: Mapping[int, FailureKind] = {
    400: FailureKind.BAD_REQUEST,
    404: FailureKind.BAD_REQUEST,
    413: FailureKind.BAD_REQUEST,
    422: FailureKind.BAD_REQUEST,
    401: FailureKind.AUTH_REQUIRED,
    403: FailureKind.AUTH_REQUIRED,
    429: FailureKind.RATE_LIMITED,
    529: FailureKind.OVERLOADED,
}
RESULT_LIMIT_KINDS: Mapping[str, FailureKind] = {
    "error_max_budget_usd": FailureKind.BUDGET_EXHAUSTED,
    "error_max_turns": FailureKind.CONTEXT_EXHAUSTED,
    "error_max_structured_output_retries": FailureKind.PROVIDER_ERROR,
}


def is_usage_limit_text(text: str) -> bool:
    return text.startswith(USAGE_LIMIT_PREFIXES)


def is_login_text(text: str) -> bool:
    return bool(_LOGIN.search(text)) and not is_usage_limit_text(text)


def error_kind(error: str | None, api_error_status: int | None = None) -> FailureKind:
    """The neutral kind of an assistant `error`; unknown kinds are provider errors, refined by status."""
    kind = ERROR_KINDS.get(error or "")
    if kind is not None:
        return kind
    if api_error_status is not None and api_error_status in STATUS_KINDS:
        return STATUS_KINDS[api_error_status]
    return FailureKind.PROVIDER_ERROR


def message_text(content: Any) -> str:
    """The text of an SDK message's content (text blocks joined), or the string itself."""
    if isinstance(content, str):
        return content
    parts = [getattr(block, "text", None) for block in content or ()]
    return "".join(part for part in parts if isinstance(part, str))


def synthetic_failure_kind(text: str, error: str | None, api_error_status: int | None) -> FailureKind | None:
    """For a `<synthetic>` assistant message: the failure it reports, or None for ordinary text."""
    if is_usage_limit_text(text):
        return FailureKind.QUOTA_EXHAUSTED
    if is_login_text(text):
        return FailureKind.AUTH_REQUIRED
    if error:
        return error_kind(error, api_error_status)
    return None


def retry_progress(data: Mapping[str, Any]) -> RetryProgress:
    """A `system/api_retry` line as a warning on the turn's incident.

    The CLI gives no user-facing text for retries, so the title is ours; without an HTTP status
    the retry is a reconnect (category connection).
    """
    attempt, maximum = data.get("attempt"), data.get("max_retries")
    status = data.get("error_status")
    if status is None:
        return RetryProgress(f"Reconnecting to Claude, attempt {attempt} of {maximum}.",
                             FailureKind.TRANSPORT_LOST, Category.CONNECTION)
    return RetryProgress(f"Retrying Claude, attempt {attempt} of {maximum}.",
                         error_kind(data.get("error"), status if isinstance(status, int) else None))


def fallback_notice(data: Mapping[str, Any]) -> Notice | None:
    """`system/model_refusal_fallback`: an advisory, and the model-fallback line for legacy clients."""
    text = data.get("content")
    if not isinstance(text, str) or not text.strip():
        return None
    return Notice(text, legacy_text=f"**Model fallback:** {text}\n\n")


def failure(kind: FailureKind, native_kind: str, title: str | None, *, source: str = "provider",
            outcome: str = "failed", retryable: bool | None = None) -> FailureObservation:
    return FailureObservation(
        kind=kind, native_kind=native_kind, title=title, source=source,  # type: ignore[arg-type]
        outcome=outcome, execution="possiblySubmitted", phase="running", retryable=retryable,  # type: ignore[arg-type]
        native_data={"errorKind": native_kind},
    )


def transport_lost(*, worker_shutting_down: bool = False) -> FailureObservation:
    """The CLI's stream ended without a result: the adapter's own words, never exception text."""
    if worker_shutting_down:
        return failure(FailureKind.WORKER_SHUTDOWN, "workerShutdown", WORKER_SHUTDOWN, source="host",
                       outcome="unknown")
    return failure(FailureKind.TRANSPORT_LOST, "transportLost", CONNECTION_LOST, source="transport",
                   outcome="unknown")


def lost_while_idle() -> FailureObservation:
    """The CLI died between turns: a session-scoped loss (no turn was running)."""
    return FailureObservation(kind=FailureKind.TRANSPORT_LOST, native_kind="transportLost", title=CONNECTION_LOST,
                              source="transport", outcome="failed")


RETRYABLE = frozenset({FailureKind.RATE_LIMITED, FailureKind.OVERLOADED, FailureKind.PROVIDER_ERROR})


INSTALL_RECOVERY = ("Reinstall acp-agent-claude (its claude-agent-sdk bundles the CLI) or set ACP_AGENT_CLAUDE_CLI "
                    "to a Claude Code CLI, then start a new session.")


def cli_unavailable(problem: str) -> FailureObservation:
    """The Claude Code CLI is missing or cannot run: nothing started."""
    return program_unavailable("Claude Code", "Claude Code CLI", problem, recovery=INSTALL_RECOVERY,
                               native_kinds=("cliNotFound", "cliStartFailed"))
