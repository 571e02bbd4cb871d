"""Pure classification of Muse host outcomes into neutral events and failure observations.

`turn/completed` carries the turn's terminal (`completed | failed | cancelled`, an open set) and,
when it failed, the settled `TurnError {kind, message, retryable}`. The title is always the host's
own `message` (the core redacts it); the host's `kind` is the native kind baseline clients see, so
unknown and future kinds stay visible. Error responses to requests (`error.data.kind`), retry
notices, host death and the adapter's own observations live here too. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from acp_agent.provider import (
    FailureKind,
    FailureObservation,
    Notice,
    RetryProgress,
    Source,
    TurnEnd,
    is_count,
    json_int,
    json_object,
    json_text,
    json_words,
    program_unavailable,
    titled_classifier,
)

HOST_TITLE: Final = "Muse Code"

# TurnError.kind → neutral kind (the table); anything else is a provider error.
TURN_ERROR_KINDS: Final[Mapping[str, FailureKind]] = {
    "authRequired": FailureKind.AUTH_REQUIRED,
    "modelError": FailureKind.PROVIDER_ERROR,
    "configError": FailureKind.BAD_REQUEST,
    "environmentError": FailureKind.BAD_REQUEST,
    "projectionError": FailureKind.BAD_REQUEST,
    "launchError": FailureKind.PROVIDER_ERROR,
    "mcpLinkError": FailureKind.PROVIDER_ERROR,
    "workflowLaunchError": FailureKind.PROVIDER_ERROR,
    "logError": FailureKind.PROVIDER_ERROR,
}
# Failures of the model or its API, rather than of the host itself.
PROVIDER_SOURCED: Final = frozenset({"modelError", "authRequired"})
TRANSPORT_SOURCED: Final = frozenset({"terminalUnknown", "transportError"})
STEP_LIMIT: Final = "stepLimit"

# MSP error codes (muse_code_msp.ERRORS).
OVERLOADED_CODE: Final = -32001
BACKPRESSURED_CODE: Final = -32031
SESSION_NOT_FOUND_CODE: Final = -32020
SESSION_NOT_LOADED_CODE: Final = -32024
RETRYABLE_CODES: Final[Mapping[int, str]] = {OVERLOADED_CODE: "overloaded", BACKPRESSURED_CODE: "backpressured"}
_CODE_KINDS: Final[Mapping[int, str]] = {
    -32700: "parseError", -32600: "invalidRequest", -32601: "methodNotFound", -32602: "invalidParams",
    -32603: "internal", -32001: "overloaded", -32002: "inputTooLarge", -32010: "capabilityRequired",
    -32011: "notFound", -32013: "interrupted", -32014: "cancelled", -32020: "sessionNotFound",
    -32021: "sessionInUse", -32022: "sessionAmbiguous", -32023: "forkBoundaryInvalid", -32024: "sessionNotLoaded",
    -32025: "sessionStreamMismatch", -32030: "commandRejected", -32031: "backpressured",
}
_REQUEST_ERROR_KINDS: Final[Mapping[str, FailureKind]] = {
    "invalidRequest": FailureKind.BAD_REQUEST,
    "invalidParams": FailureKind.BAD_REQUEST,
    "methodNotFound": FailureKind.BAD_REQUEST,
    "inputTooLarge": FailureKind.BAD_REQUEST,
    "capabilityRequired": FailureKind.BAD_REQUEST,
    "commandRejected": FailureKind.BAD_REQUEST,
    "forkBoundaryInvalid": FailureKind.BAD_REQUEST,
    "overloaded": FailureKind.OVERLOADED,
    "backpressured": FailureKind.OVERLOADED,
}
_RETRY_HTTP: Final[Mapping[int, FailureKind]] = {
    401: FailureKind.AUTH_REQUIRED,
    403: FailureKind.ACCESS_DENIED,
    429: FailureKind.RATE_LIMITED,
    503: FailureKind.OVERLOADED,
    529: FailureKind.OVERLOADED,
}
_RETRY_ERROR_KINDS: Final[Mapping[str, FailureKind]] = {
    "rateLimited": FailureKind.RATE_LIMITED,
    "rateLimit": FailureKind.RATE_LIMITED,
    "overloaded": FailureKind.OVERLOADED,
    "authRequired": FailureKind.AUTH_REQUIRED,
    "unauthorized": FailureKind.AUTH_REQUIRED,
}


def source_of(native_kind: str) -> Source:
    """spec/004: model and auth errors come from the provider, host death from the transport."""
    if native_kind in PROVIDER_SOURCED:
        return "provider"
    if native_kind in TRANSPORT_SOURCED:
        return "transport"
    return "host"


# --- the terminal of a turn --------------------------------------------------------------------------


def turn_error_observation(error: Mapping[str, Any] | None, *, terminal: str = "failed") -> FailureObservation:
    """A failed turn's settled `TurnError` as an observation: acknowledged, then failed at the host."""
    error = json_object(error)
    native = json_words(error.get("kind")) or (terminal if terminal != "failed" else "unknown")
    kind = TURN_ERROR_KINDS.get(native, FailureKind.PROVIDER_ERROR)
    retryable = error.get("retryable")
    return FailureObservation(
        kind=kind,
        native_kind=native,
        title=json_words(error.get("message")),
        source=source_of(native),
        outcome="failed",
        execution="possiblySubmitted",
        phase="running",
        retryable=retryable if isinstance(retryable, bool) else None,
    )


def classify_terminal(params: Mapping[str, Any]) -> TurnEnd | FailureObservation:
    """`turn/completed` → the turn's end: a stop reason, or the failure that ended it.

    `completed` ends the turn, `cancelled` is ACP's cancelled, a `stepLimit` failure keeps its
    standard stop reason (`max_turn_requests`); every other failure, and every terminal this
    version does not know, is a failure (never success).
    """
    terminal = params.get("terminal")
    error = params.get("error")
    if terminal == "completed":
        return TurnEnd("end_turn")
    if terminal == "cancelled":
        return TurnEnd("cancelled")
    if terminal == "failed" and isinstance(error, Mapping) and error.get("kind") == STEP_LIMIT:
        return TurnEnd("max_turn_requests")
    return turn_error_observation(error if isinstance(error, Mapping) else None,
                                  terminal=terminal if isinstance(terminal, str) and terminal else "failed")


# --- the failure hooks: this provider's answers ------------------------------------------------------


def classify_failure(native: Mapping[str, Any]) -> FailureObservation | None:
    """A failed turn's `turn/completed` params → the failure (None for a turn that did not fail);
    the title is left to `failure_title` (the failure-title hook)."""
    end = classify_terminal(native)
    return attrs.evolve(end, title=None) if isinstance(end, FailureObservation) else None


def failure_title(native: Mapping[str, Any], kind: FailureKind | None = None) -> str | None:
    """The host's own words for the failure (`error.message`)."""
    return json_words(json_object(native.get("error")).get("message"))


observe_failure: Final = titled_classifier(classify_failure, failure_title)
"""The built-in answer alone (classified, then titled), for a translator run without plugins."""


# --- retries -----------------------------------------------------------------------------------------


def _retry_kind(params: Mapping[str, Any]) -> FailureKind:
    status = json_int(params.get("httpStatus"))
    by_status = _RETRY_HTTP.get(status) if status is not None else None
    return by_status or _RETRY_ERROR_KINDS.get(json_text(params.get("errorKind")), FailureKind.PROVIDER_ERROR)


def _attempt_text(params: Mapping[str, Any]) -> str:
    attempt, limit = params.get("nextAttempt"), params.get("maxAttempts")
    delay = params.get("retryDelayMs")
    parts = []
    if is_count(delay):
        parts.append(f"retrying in {delay / 1000:g}s")
    if isinstance(attempt, int) and isinstance(limit, int) and not isinstance(attempt, bool):
        parts.append(f"attempt {attempt}/{limit}")
    return " · ".join(parts)


def retry_progress(method: str, params: Mapping[str, Any]) -> RetryProgress:
    """`turn/retryScheduled` (titled by the host's own `reason`) or `turn/modelRetryScheduled`.

    The model-layer notice carries no user text (its recorded message is not for people), so its
    title is built from its counters, the way Muse's own clients word the row.
    """
    kind = _retry_kind(params)
    reason = json_words(params.get("reason")) if method == "turn/retryScheduled" else None
    progress = _attempt_text(params)
    if reason is not None:
        title = f"{reason} ({progress})" if progress and progress not in reason else reason
    else:
        system = json_words(params.get("system")) or "The model"
        status = json_int(params.get("httpStatus"))
        cause = f" (HTTP {status})" if status is not None else ""
        title = f"{system} is unavailable{cause}; " + (progress or "retrying") + "."
    return RetryProgress(title, kind)


# --- request errors and the adapter's own observations ---------------------------------------------------


def error_kind(code: int, data: Any) -> str:
    """`error.data.kind` when the host sent one, else the kind MSP assigns the code."""
    return json_text(json_object(data).get("kind")) or _CODE_KINDS.get(code, "hostError")


def is_retryable_error(code: int, data: Any) -> bool:
    """Only `-32001 overloaded` and `-32031 backpressured` admitted nothing and may be re-sent."""
    expected = RETRYABLE_CODES.get(code)
    if expected is None:
        return False
    kind = json_object(data).get("kind")
    return kind is None or kind == expected


def request_error_observation(code: int, message: str, data: Any, phase: str, *,
                              mutation: bool = False) -> FailureObservation:
    """The host answered a request with an error: nothing was admitted, so nothing was submitted."""
    native = error_kind(code, data)
    kind = _REQUEST_ERROR_KINDS.get(native, FailureKind.PROVIDER_ERROR)
    retryable = json_object(data).get("retryable")
    return FailureObservation(
        kind=kind,
        native_kind=native,
        title=json_words(message),
        source="host",
        outcome="failed",
        execution="notSubmitted",
        phase=phase,
        retryable=retryable if isinstance(retryable, bool) else kind is FailureKind.OVERLOADED,
        mutation_possibly_applied=mutation,
    )


def host_lost(phase: str, *, submitted: bool, mutation: bool = False) -> FailureObservation:
    """The host died or its stdout closed.

    Mid-turn this is `terminalUnknown`: the turn may have run, so the outcome is unknown. Before
    submission (start-up, reads) nothing ran: the outcome is a plain failure, unless a fork
    (`mutation`) was asked for: a branch may have been made.
    """
    lost = f"The connection to {HOST_TITLE} was lost"
    if submitted:
        native = "terminalUnknown" if phase == "running" else "transportError"
        title, hint = f"{lost}; the turn's outcome is unknown.", "Reload and inspect the session before deciding to submit again."
    elif mutation:
        native, hint = "transportError", "Inspect session/list before retrying the fork."
        title = f"{lost} after the fork was requested; no model turn was submitted, but a branch may have been created."
    else:
        native, hint = "transportError", "Check that `muse serve` can start here, then try again."
        title = f"{lost} before the operation finished."
    return FailureObservation(
        kind=FailureKind.TRANSPORT_LOST,
        native_kind=native,
        title=title,
        source="transport",
        outcome="unknown" if submitted or mutation else "failed",
        execution="possiblySubmitted" if submitted else "notSubmitted",
        phase=phase,
        mutation_possibly_applied=mutation and not submitted,
        recovery_hint=hint,
    )


INSTALL_RECOVERY: Final = ("Install the Muse Code CLI and put `muse` on PATH, or set MUSE_CODE_EXECUTABLE to its "
                           "path, then start a new session.")


def host_unavailable(phase: str, problem: str) -> FailureObservation:
    """The `muse` executable is missing or cannot run: nothing started."""
    return program_unavailable(HOST_TITLE, "Muse Code CLI", problem, recovery=INSTALL_RECOVERY,
                               native_kinds=("hostNotFound", "hostLaunchFailed"), phase=phase)


def settings_not_applied(what: str, requested: str, served: str | None, phase: str) -> FailureObservation:
    """`session/read` did not show the setting the adapter applied."""
    return FailureObservation(
        kind=FailureKind.BAD_REQUEST,
        native_kind="settingsNotApplied",
        title=(f"{HOST_TITLE} did not apply the {what} {requested!r}: the session reports "
               f"{repr(served) if served is not None else 'none'}."),
        source="host",
        outcome="failed",
        execution="notSubmitted",
        phase=phase,
        retryable=False,
        recovery_hint=f"Choose a {what} this Muse Code host accepts, then try again.",
    )


def fingerprint_notice_text(served: str, expected: str, host_version: str | None, required_version: str) -> str:
    """The one-time notice when the host's MSP schema differs from the one this adapter was built for."""
    version = f" {host_version}" if host_version else ""
    return (f"{HOST_TITLE}{version} serves MSP schema {served}, but this adapter was built for {expected} "
            f"(host version {required_version}); continuing, but some events may not be understood.")


def route_unserved_notice(params: Mapping[str, Any]) -> Notice | None:
    """`session/modelRouteUnserved`: a credential update installed a provider that cannot serve the
    session's model; the model stays chosen until the user picks one the provider serves."""
    model = json_text(params.get("modelId"))
    if not model:
        return None
    installed = json_text(params.get("installedProviderId"))
    by = f" with the provider {installed} now installed" if installed else ""
    return Notice(f"{HOST_TITLE} cannot serve the model {model}{by}.",
                  "Choose a model this provider serves to go on.", severity="warning")
