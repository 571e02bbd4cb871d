"""Pure classification of app-server failures and notices into neutral events (spec/002, DESIGN §4–§5).

Codex already words its failures for people (`error.message`, e.g. "Reconnecting... 1/5"), so the
title is always that text, verbatim; `additionalDetails` (which can hold URLs and request ids) is
never forwarded. The neutral kind comes from `codexErrorInfo`, a string or a one-key object that
may carry an `httpStatusCode`; anything unknown, future variants included, is a provider error.
No I/O here: everything is table-tested from real app-server lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from acp_agent.provider import (
    POLICY,
    TITLE_LIMIT,
    FailureKind,
    FailureObservation,
    Notice,
    RetryProgress,
    Source,
    json_int,
    json_object,
    json_words,
    program_unavailable,
    split_title,
    titled_classifier,
)

TRANSPORT_LOST_TITLE: Final = "The connection to Codex was lost."

_BY_VARIANT: Final[Mapping[str, FailureKind]] = {
    "unauthorized": FailureKind.AUTH_REQUIRED,
    "rateLimitExceeded": FailureKind.RATE_LIMITED,
    "usageLimitExceeded": FailureKind.QUOTA_EXHAUSTED,
    "contextWindowExceeded": FailureKind.CONTEXT_EXHAUSTED,
    "sessionBudgetExceeded": FailureKind.BUDGET_EXHAUSTED,
    "serverOverloaded": FailureKind.OVERLOADED,
    "cyberPolicy": FailureKind.POLICY_DENIED,
    "bioPolicy": FailureKind.POLICY_DENIED,
    "misalignmentPolicyViolation": FailureKind.POLICY_DENIED,
    "inferenceHookDenied": FailureKind.POLICY_DENIED,
    "badRequest": FailureKind.BAD_REQUEST,
    "modelNotFound": FailureKind.BAD_REQUEST,
    "httpConnectionFailed": FailureKind.TRANSPORT_LOST,
    "responseStreamConnectionFailed": FailureKind.TRANSPORT_LOST,
    "responseStreamDisconnected": FailureKind.TRANSPORT_LOST,
    "responseTooManyFailedAttempts": FailureKind.TRANSPORT_LOST,
}
# Failures of codex itself rather than of the model API.
_HOST_VARIANTS: Final = frozenset({"sandboxError", "threadRollbackFailed", "activeTurnNotSteerable", "tooManyDenials"})
_RETRYABLE: Final = frozenset({
    FailureKind.RATE_LIMITED, FailureKind.OVERLOADED, FailureKind.PROVIDER_ERROR, FailureKind.TRANSPORT_LOST,
    FailureKind.INTERNAL_ERROR,
})


# --- codexErrorInfo ------------------------------------------------------------------------------


def error_info_variant(info: Any) -> str:
    """The variant name: the string itself, or the single key of the object ("other" when absent)."""
    if isinstance(info, str) and info:
        return info
    if isinstance(info, Mapping) and info:
        return str(next(iter(info)))
    return "other"


def http_status(info: Any) -> int | None:
    """The upstream HTTP status an object variant carries, if any."""
    codes = (json_int(json_object(value).get("httpStatusCode")) for value in json_object(info).values())
    return next((code for code in codes if code is not None), None)


def classify_error_info(info: Any) -> FailureKind:
    """`codexErrorInfo` → neutral kind, per the issue's table; unknown variants are provider errors."""
    variant = error_info_variant(info)
    status = http_status(info)
    if variant == "unauthorized" or status == 401:
        return FailureKind.AUTH_REQUIRED
    if status == 429 or variant == "rateLimitExceeded":
        return FailureKind.RATE_LIMITED
    return _BY_VARIANT.get(variant, FailureKind.PROVIDER_ERROR)


# --- error notifications ---------------------------------------------------------------------------


def error_title(params: Mapping[str, Any]) -> str | None:
    """The vendor's own text of an `error` notification (`error.message`), verbatim, or None."""
    return json_words(json_object(params.get("error")).get("message"))


def turn_error_observation(error: Mapping[str, Any]) -> FailureObservation:
    """A turn-ending `TurnError` (`{message, codexErrorInfo, additionalDetails}`) as an observation.

    The turn was acknowledged and then failed at the backend, so the execution is possibly
    submitted and the outcome `failed`; `codexErrorInfo` goes beside `failure` in baseline data.
    """
    info = error.get("codexErrorInfo")
    kind = classify_error_info(info)
    variant = error_info_variant(info)
    source: Source = "host" if variant in _HOST_VARIANTS else "provider"
    return FailureObservation(
        kind=kind,
        native_kind=variant,
        title=json_words(error.get("message")),
        source=source,
        outcome="failed",
        execution="possiblySubmitted",
        phase="running",
        retryable=kind in _RETRYABLE,
        native_data={"codexErrorInfo": info},
    )


def classify_error(params: Mapping[str, Any]) -> RetryProgress | FailureObservation:
    """An `error` notification: retry progress while `willRetry`, else the turn's failure."""
    error = json_object(params.get("error"))
    if params.get("willRetry") is True:
        kind = classify_error_info(error.get("codexErrorInfo"))
        return RetryProgress(error_title(params) or POLICY[kind].fallback_title, kind)
    return turn_error_observation(error)


# --- the failure hooks: this provider's answers ------------------------------------------------------


def _failed_error(native: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `TurnError` of a failed `turn/completed`, or of an `error` notification that ends the turn."""
    turn = native.get("turn")
    if isinstance(turn, Mapping):
        error = turn.get("error") if turn.get("status") == "failed" else None
        return error if isinstance(error, Mapping) else ({} if turn.get("status") == "failed" else None)
    if "error" not in native or native.get("willRetry") is True:
        return None
    return json_object(native.get("error"))


def classify_failure(native: Mapping[str, Any]) -> FailureObservation | None:
    """An `error` notification's params (not retrying) or a failed `turn/completed`'s params → the
    failure; the title is left to `failure_title` (the failure-title hook)."""
    error = _failed_error(native)
    return None if error is None else attrs.evolve(turn_error_observation(error), title=None)


def failure_title(native: Mapping[str, Any], kind: FailureKind | None = None) -> str | None:
    """Codex's own words for the failure (`error.message`), verbatim."""
    return json_words(json_object(_failed_error(native)).get("message"))


observe_failure: Final = titled_classifier(classify_failure, failure_title)
"""The built-in answer alone (classified, then titled), for a translator run without plugins."""


# --- observations the adapter makes itself ----------------------------------------------------------


def transport_lost(phase: str, *, submitted: bool) -> FailureObservation:
    """app-server exited or its stdout closed; after submission the turn may have run."""
    return FailureObservation(
        kind=FailureKind.TRANSPORT_LOST,
        native_kind="transportLost",
        title=TRANSPORT_LOST_TITLE,
        source="transport",
        outcome="unknown" if submitted else "failed",
        execution="possiblySubmitted" if submitted else "notSubmitted",
        phase=phase,
        recovery_hint=("Reload and inspect the session before deciding to submit again." if submitted
                       else "Start a new session; Codex will be started again."),
    )


INSTALL_RECOVERY: Final = ("Install the openai-codex-cli-bin wheel or set ACP_AGENT_CODEX_BIN to a codex binary, "
                           "then start a new session.")


def spawn_failed(phase: str, problem: str) -> FailureObservation:
    """The codex binary is missing or cannot run: nothing started."""
    return program_unavailable("Codex", "codex binary", problem, recovery=INSTALL_RECOVERY,
                               native_kinds=("spawnFailed", "spawnFailed"), phase=phase)


_RPC_KINDS: Final[Mapping[int, str]] = {-32600: "invalidRequest", -32601: "methodNotFound", -32602: "invalidParams"}


def rpc_error_observation(code: int, message: str, phase: str) -> FailureObservation:
    """app-server rejected a request (thread/start, turn/start, ...): nothing was submitted."""
    native = _RPC_KINDS.get(code, "appServerError")
    kind = FailureKind.BAD_REQUEST if code in (-32600, -32602) else FailureKind.PROVIDER_ERROR
    return FailureObservation(
        kind=kind,
        native_kind=native,
        title=message if message.strip() else None,
        source="host",
        outcome="failed",
        execution="notSubmitted",
        phase=phase,
        retryable=kind is FailureKind.PROVIDER_ERROR,
    )


# --- notices -------------------------------------------------------------------------------------


def _summary_title(summary: str, details: str | None) -> tuple[str, str | None]:
    """"summary — details" when it fits a title; else the summary as title and details apart."""
    if details is not None:
        joined = f"{summary} — {details}"
        if len(joined) <= TITLE_LIMIT:
            return joined, None
    title, rest = split_title(summary)
    extra = "\n\n".join(part for part in (rest, details) if part)
    return title, extra or None


NOTICE_METHODS: Final = frozenset({"warning", "configWarning", "deprecationNotice", "model/rerouted"})
_REROUTE_REASONS: Final[Mapping[str, str]] = {
    "highRiskCyberActivity": "the request was flagged for potentially high-risk cyber activity",
}


def notice_for(method: str, params: Mapping[str, Any]) -> Notice | None:
    """`warning`, `configWarning`, `deprecationNotice` and `model/rerouted` as notices, with the
    legacy text.

    Severities as codex-acp's SessionNotice gives them: warnings `warning`, a deprecation and a
    reroute `info`. Legacy clients keep codex-acp's established text: "Warning: <message>" and
    "Config warning: <summary>" (then the details) as agent text, each followed by a blank line;
    they never saw deprecation notices or reroutes and still do not.
    """
    if method == "warning":
        message = json_words(params.get("message"))
        if message is None:
            return None
        title, details = split_title(message)
        return Notice(title, details, legacy_text=f"Warning: {message}\n\n", severity="warning")
    if method in ("configWarning", "deprecationNotice"):
        summary = json_words(params.get("summary"))
        if summary is None:
            return None
        details = json_words(params.get("details"))
        title, extra = _summary_title(summary, details)
        if method == "configWarning":
            legacy = f"Config warning: {summary}\n\n" + (f"{details}\n\n" if details else "")
            return Notice(title, extra, legacy_text=legacy, severity="warning")
        return Notice(title, extra, severity="info")
    if method == "model/rerouted":
        to_model = json_words(params.get("toModel"))
        if to_model is None:
            return None
        from_model = json_words(params.get("fromModel"))
        title = f"Model rerouted from {from_model} to {to_model}" if from_model else f"Model rerouted to {to_model}"
        reason = params.get("reason")
        why = _REROUTE_REASONS.get(reason, json_words(reason) or "") if isinstance(reason, str) else ""
        return Notice(title, f"Codex answered with {to_model}: {why}." if why else None, severity="info")
    return None
