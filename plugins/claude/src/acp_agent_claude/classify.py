"""Pure classification of Claude Code CLI output: failure kinds, titles, retries and notices.

Failures are classified from the CLI's stream-json lines as plain JSON (`classify_failure`,
`failure_title`: this provider's answers to the core's failure hooks), exactly as the runtime read
them from the CLI. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

import attrs
from attrs import define, field

from acp_agent.provider import Category, FailureKind, FailureObservation, Notice, RetryProgress, program_unavailable

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
    **dict.fromkeys((400, 404, 413, 422), FailureKind.BAD_REQUEST),
    **dict.fromkeys((401, 403), FailureKind.AUTH_REQUIRED),
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
    kind = ERROR_KINDS.get(error or "") or STATUS_KINDS.get(api_error_status or 0)
    return kind or FailureKind.PROVIDER_ERROR


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
    """A `system/api_retry` line as a warning on the turn's incident, in our words (the CLI has
    none); without an HTTP status the retry is a reconnect."""
    attempt, maximum = data.get("attempt"), data.get("max_retries")
    status = data.get("error_status")
    if status is None:
        return RetryProgress(f"Reconnecting to Claude, attempt {attempt} of {maximum}.",
                             FailureKind.TRANSPORT_LOST, Category.CONNECTION)
    error = data.get("error")
    return RetryProgress(f"Retrying Claude, attempt {attempt} of {maximum}.",
                         error_kind(error if isinstance(error, str) else None,
                                    status if isinstance(status, int) else None))


def fallback_notice(data: Mapping[str, Any]) -> Notice | None:
    """`system/model_refusal_fallback`: a warning, and the model-fallback line for legacy clients."""
    text = data.get("content")
    if not isinstance(text, str) or not text.strip():
        return None
    return Notice(text, legacy_text=f"**Model fallback:** {text}\n\n", severity="warning")


MAX_NOTICE_TITLE = 256
_MARKDOWN = ((re.compile(r"^[ \t]*#{1,6}[ \t]+", re.M), ""), (re.compile(r"(\*\*|__)(?=\S)([\s\S]*?\S)\1"), r"\2"),
             (re.compile(r"(?<![\w`])`([^`\n]+)`(?![\w`])"), r"\1"))


def split_notice(text: str, fallback_title: str) -> tuple[str, str | None]:
    """Free text as a notice's title and description (claude-agent-acp's `splitNoticeText`): its
    first line, when short enough, is the title; else all of it is the description under
    `fallback_title`. Light markdown is dropped (a notice is plain text)."""
    for pattern, replacement in _MARKDOWN:
        text = pattern.sub(replacement, text)
    text = text.strip()
    if not text:
        return fallback_title, None
    first, _, rest = text.partition("\n")
    first = first.rstrip()
    if len(first) > MAX_NOTICE_TITLE:
        return fallback_title, text
    return first, rest.strip() or None


def informational_notice(data: Mapping[str, Any]) -> Notice | None:
    """`system/informational` (a hook's message, say) as a notice: `warning` for its warning
    level, else `info`; none for the `info` level, as claude-agent-acp shows it to notice clients.
    Clients without notices see nothing (as before)."""
    text, level = data.get("content"), data.get("level")
    if not isinstance(text, str) or not text.strip() or level == "info":
        return None
    severity: Literal["info", "warning"] = "warning" if level == "warning" else "info"
    title, details = split_notice(text, "Claude reported a warning" if severity == "warning"
                                  else "Claude reported a notice")
    return Notice(title, details, severity=severity)


def mcp_notice(server: Mapping[str, Any]) -> Notice | None:
    """A server of the session's `system/init` that failed to start (a warning) or needs
    authentication (information), in claude-agent-acp's words; None for any other state."""
    name, status = server.get("name"), server.get("status")
    if not isinstance(name, str):
        return None
    if status == "failed":
        return Notice(f'MCP server "{name}" failed to start',
                      "Its tools are unavailable in this session. Run /mcp for the error.", severity="warning")
    if status == "needs-auth":
        return Notice(f'MCP server "{name}" needs authentication',
                      "Its tools are unavailable until the server is authenticated.", severity="info")
    return None


@define
class McpWatch:
    """The client's MCP servers (the CLI's own are its user's to check) and those whose state a
    notice told already: each is told once a session."""

    names: Collection[str] = ()
    reported: set[str] = field(factory=set)

    def notices(self, servers: Any) -> list[Notice]:
        """The notices of `system/init`'s servers that failed or need authentication."""
        events: list[Notice] = []
        for server in servers if isinstance(servers, list) else ():
            if not isinstance(server, dict) or server.get("name") not in self.names:
                continue
            notice = mcp_notice(server)
            if notice is not None and server["name"] not in self.reported:
                self.reported.add(server["name"])
                events.append(notice)
        return events


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


# --- the CLI's own lines, for the failure hooks -------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _status(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def assistant_text(line: Mapping[str, Any]) -> str:
    """The text blocks of an `assistant` line (or a transcript entry), joined."""
    content = _mapping(line.get("message")).get("content")
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if isinstance(block, Mapping)
                   and block.get("type") == "text" and isinstance(block.get("text"), str)) \
        if isinstance(content, list) else ""


def assistant_failure_kind(line: Mapping[str, Any]) -> FailureKind | None:
    """The failure an `assistant` line reports, or None: a `<synthetic>` message the CLI wrote for
    a failure (not a refusal), or a model message with an `error`."""
    message = _mapping(line.get("message"))
    error = line.get("error") if isinstance(line.get("error"), str) else None
    if message.get("model") == SYNTHETIC_MODEL:
        if message.get("stop_reason") == "refusal":
            return None
        return synthetic_failure_kind(assistant_text(line), error, _status(line.get("api_error_status")))
    return error_kind(error) if error else None


def classify_failure(native: Mapping[str, Any]) -> FailureObservation | None:
    """`{"assistant": <the turn's failing assistant line>?, "result": <its error result>}` → the
    failure, its title left to `failure_title` (the failure-title hook, so a plugin can word it)."""
    result = _mapping(native.get("result"))
    if not result.get("is_error"):
        return None
    subtype = result.get("subtype")
    if subtype in RESULT_LIMIT_KINDS:
        return failure(RESULT_LIMIT_KINDS[str(subtype)], str(subtype), None, source="host")
    if subtype == "error_during_execution":
        return failure(FailureKind.PROVIDER_ERROR, subtype, None, source="host")
    status = _status(result.get("api_error_status"))
    assistant = _mapping(native.get("assistant"))
    pending = assistant_failure_kind(assistant) if assistant else None
    if pending is not None:
        error = assistant.get("error") if isinstance(assistant.get("error"), str) else None
        kind = error_kind(error, status) if pending is FailureKind.PROVIDER_ERROR else pending
        native_kind = error or "unknown"
        if pending is FailureKind.QUOTA_EXHAUSTED and is_usage_limit_text(assistant_text(assistant)):
            native_kind = "usage_limit"
    else:
        kind, native_kind = error_kind(None, status), "unknown"
    return failure(kind, native_kind, None, retryable=kind in RETRYABLE)


def failure_title(native: Mapping[str, Any], kind: FailureKind | None = None) -> str | None:
    """The CLI's own words: its failure message, else the result text, else the result's `errors`."""
    assistant = _mapping(native.get("assistant"))
    text = assistant_text(assistant) if assistant else ""
    if text:
        return text
    result = _mapping(native.get("result"))
    if isinstance(result.get("result"), str) and result["result"].strip():
        return str(result["result"])
    errors = "; ".join(error for error in result.get("errors") or [] if isinstance(error, str) and error.strip())
    return errors or None


def observe_failure(native: Mapping[str, Any]) -> FailureObservation | None:
    """The built-in answer alone (classified, then titled), for a fold run without plugins."""
    observation = classify_failure(native)
    if observation is None or observation.title is not None:
        return observation
    return attrs.evolve(observation, title=failure_title(native, observation.kind))
