"""Codex failure and notice classification as pure functions, from real app-server 0.163.0 lines."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from acp_agent.backends.events import Notice, RetryProgress
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.testing import ClassificationContract, ProviderWireContract, RedactionContract, TitleContract
from acp_agent_codex import classify
from acp_agent_codex.translate import fold_turn
from tests.codex.fixture_lines import params_of, turn

K = FailureKind


def observed(kind: FailureKind, native: str, title: str, info: Any, *, retryable: bool,
             source: str = "provider") -> FailureObservation:
    """What a turn-ending app-server error looks like, neutrally."""
    return FailureObservation(kind=kind, native_kind=native, title=title, source=source,  # type: ignore[arg-type]
                              outcome="failed", execution="possiblySubmitted", phase="running", retryable=retryable,
                              native_data={"codexErrorInfo": info})


# fixture → (kind of its retry warnings or None, terminal kind, terminal native kind, retryable)
REAL_ERRORS: dict[str, tuple[FailureKind | None, FailureKind, str, bool]] = {
    "error_500_retries_exhausted": (K.TRANSPORT_LOST, K.PROVIDER_ERROR, "internalServerError", True),
    "error_429_rate_limit": (K.RATE_LIMITED, K.RATE_LIMITED, "responseTooManyFailedAttempts", True),
    "error_401_unauthorized": (K.AUTH_REQUIRED, K.AUTH_REQUIRED, "httpConnectionFailed", False),
    "error_403_forbidden": (K.TRANSPORT_LOST, K.TRANSPORT_LOST, "httpConnectionFailed", True),
    "error_503_overloaded": (K.TRANSPORT_LOST, K.OVERLOADED, "serverOverloaded", True),
    "error_400_bad_request": (None, K.PROVIDER_ERROR, "other", True),
    "usage_limit_exceeded": (None, K.QUOTA_EXHAUSTED, "usageLimitExceeded", False),
    "context_window_exceeded": (None, K.CONTEXT_EXHAUSTED, "contextWindowExceeded", False),
    "stream_cut_retries_exhausted": (K.TRANSPORT_LOST, K.PROVIDER_ERROR, "other", True),
    "stream_idle_timeout": (K.TRANSPORT_LOST, K.PROVIDER_ERROR, "other", True),
    "missing_api_key_env": (None, K.PROVIDER_ERROR, "other", True),
}


def real_error_cases() -> list[tuple[Any, Any]]:
    cases: list[tuple[Any, Any]] = []
    for name, (retry_kind, kind, native, retryable) in REAL_ERRORS.items():
        errors = params_of(name, "error")
        *retries, terminal = errors
        assert terminal["willRetry"] is False
        assert (retry_kind is None) == (not retries), name
        for retry in retries:
            assert retry["willRetry"] is True
            cases.append((retry, RetryProgress(retry["error"]["message"], retry_kind)))  # type: ignore[arg-type]
        error = terminal["error"]
        cases.append((terminal, observed(kind, native, error["message"], error["codexErrorInfo"], retryable=retryable)))
    return cases


class TestErrorNotifications(ClassificationContract):
    """Every `error` notification the real app-server sent, retries and terminal ones."""

    cases: ClassVar[list[tuple[Any, Any]]] = real_error_cases()
    unknown_natives: ClassVar[list[Any]] = [
        {"error": {"message": "x", "codexErrorInfo": "someFutureVariant"}, "willRetry": False},
        {"error": {"message": "x", "codexErrorInfo": {"futureObject": {"httpStatusCode": 500}}}, "willRetry": False},
        {"error": {"message": "x", "codexErrorInfo": None}, "willRetry": False},
        {"error": {"message": "x", "codexErrorInfo": "internalServerError"}, "willRetry": False},
        {"error": {"message": "x", "codexErrorInfo": "other"}, "willRetry": False},
    ]

    def classify(self, native: Any) -> Any:
        return classify.classify_error(native)


@pytest.mark.parametrize(("info", "kind"), [
    ("unauthorized", K.AUTH_REQUIRED),
    ({"httpConnectionFailed": {"httpStatusCode": 401}}, K.AUTH_REQUIRED),
    ({"responseStreamDisconnected": {"httpStatusCode": 401}}, K.AUTH_REQUIRED),
    ({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, K.RATE_LIMITED),
    ({"responseStreamConnectionFailed": {"httpStatusCode": 429}}, K.RATE_LIMITED),
    ("rateLimitExceeded", K.RATE_LIMITED),
    ("usageLimitExceeded", K.QUOTA_EXHAUSTED),
    ("contextWindowExceeded", K.CONTEXT_EXHAUSTED),
    ("sessionBudgetExceeded", K.BUDGET_EXHAUSTED),
    ("serverOverloaded", K.OVERLOADED),
    ("cyberPolicy", K.POLICY_DENIED),
    ("bioPolicy", K.POLICY_DENIED),
    ("misalignmentPolicyViolation", K.POLICY_DENIED),
    ("inferenceHookDenied", K.POLICY_DENIED),
    ("badRequest", K.BAD_REQUEST),
    ("modelNotFound", K.BAD_REQUEST),
    ({"httpConnectionFailed": {"httpStatusCode": None}}, K.TRANSPORT_LOST),
    ({"httpConnectionFailed": {"httpStatusCode": 502}}, K.TRANSPORT_LOST),
    ({"responseStreamConnectionFailed": {"httpStatusCode": None}}, K.TRANSPORT_LOST),
    ({"responseStreamDisconnected": {"httpStatusCode": None}}, K.TRANSPORT_LOST),
    ({"responseTooManyFailedAttempts": {"httpStatusCode": 500}}, K.TRANSPORT_LOST),
    ("internalServerError", K.PROVIDER_ERROR),
    ("other", K.PROVIDER_ERROR),
    ("flexUnavailable", K.PROVIDER_ERROR),
    ({"activeTurnNotSteerable": {"turnKind": "review"}}, K.PROVIDER_ERROR),
    ("aVariantFromTheFuture", K.PROVIDER_ERROR),
    (None, K.PROVIDER_ERROR),
])
def test_codex_error_info_table(info: Any, kind: FailureKind) -> None:
    assert classify.classify_error_info(info) is kind


def test_variant_names_and_status() -> None:
    assert classify.error_info_variant("usageLimitExceeded") == "usageLimitExceeded"
    assert classify.error_info_variant({"httpConnectionFailed": {"httpStatusCode": 401}}) == "httpConnectionFailed"
    assert classify.error_info_variant(None) == "other"
    assert classify.http_status({"responseStreamDisconnected": {"httpStatusCode": 429}}) == 429
    assert classify.http_status({"responseStreamDisconnected": {"httpStatusCode": None}}) is None
    assert classify.http_status("internalServerError") is None


class TestTitles(TitleContract):
    """The title is `error.message`, verbatim, retry progress included."""

    title_cases: ClassVar[list[tuple[Any, str | None]]] = [
        *[(params, params["error"]["message"]) for name in REAL_ERRORS for params in params_of(name, "error")],
        ({"error": {"message": "", "codexErrorInfo": "other"}, "willRetry": False}, None),
        ({"error": None, "willRetry": False}, None),
    ]

    def extract_title(self, native: Any) -> str | None:
        return classify.error_title(native)


def test_retry_titles_are_the_reconnecting_text_and_details_stay_private() -> None:
    retries = params_of("error_401_unauthorized", "error")[:-1]
    assert [classify.error_title(p) for p in retries] == [f"Reconnecting... {n}/5" for n in range(1, 6)]
    for name in REAL_ERRORS:
        for params in params_of(name, "error"):
            details = params["error"]["additionalDetails"]
            if details and details != params["error"]["message"]:
                assert details not in repr(classify.classify_error(params)), name


def test_terminal_failure_keeps_codex_error_info_beside_failure() -> None:
    terminal = params_of("error_429_rate_limit", "error")[-1]
    observation = classify.classify_error(terminal)
    assert isinstance(observation, FailureObservation)
    assert observation.native_data == {"codexErrorInfo": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}}
    assert observation.native_kind == "responseTooManyFailedAttempts"


def test_adapter_observations() -> None:
    lost = classify.transport_lost("running", submitted=True)
    assert (lost.kind, lost.native_kind, lost.title, lost.source, lost.outcome, lost.execution) == (
        K.TRANSPORT_LOST, "transportLost", "The connection to Codex was lost.", "transport", "unknown",
        "possiblySubmitted")
    early = classify.transport_lost("preparing", submitted=False)
    assert (early.outcome, early.execution, early.phase) == ("failed", "notSubmitted", "preparing")
    rejected = classify.rpc_error_observation(-32600, "failed to load configuration: boom", "preparing")
    assert (rejected.kind, rejected.native_kind, rejected.title, rejected.source, rejected.execution) == (
        K.BAD_REQUEST, "invalidRequest", "failed to load configuration: boom", "host", "notSubmitted")


# --- notices ---------------------------------------------------------------------------------------

BUBBLEWRAP = params_of("ok_reply_reasoning_usage", "configWarning")[0]
UNKNOWN_KEY, _ = params_of("startup_config_warning_deprecation_notice", "configWarning")
DEPRECATION = params_of("startup_config_warning_deprecation_notice", "deprecationNotice")[0]
INVALID_CONFIG = params_of("config_invalid_thread_start_error", "configWarning")[0]
MODEL_WARNING = params_of("warning_unknown_model_metadata", "warning")[0]
COMPACTION_WARNING = params_of("thread_compacted", "warning")[0]
REROUTED = {"threadId": "019a0000-0000-7000-8000-000000000001", "turnId": "019a0000-0000-7000-8000-000000000002",
            "fromModel": "gpt-5.5", "toModel": "gpt-5.4-mini", "reason": "highRiskCyberActivity"}


class TestNotices(ClassificationContract):
    """`warning`, `configWarning`, `deprecationNotice` and `model/rerouted` lines: titles, details,
    severities and legacy text."""

    cases: ClassVar[list[tuple[Any, Any]]] = [
        (("configWarning", BUBBLEWRAP), Notice(BUBBLEWRAP["summary"], None, f"Config warning: {BUBBLEWRAP['summary']}\n\n")),
        (("configWarning", UNKNOWN_KEY),
         Notice(UNKNOWN_KEY["summary"], None, f"Config warning: {UNKNOWN_KEY['summary']}\n\n")),
        # 101 + 3 + 163 characters do not fit a title: the summary is the title, the details stay details
        (("deprecationNotice", DEPRECATION), Notice(DEPRECATION["summary"], DEPRECATION["details"], None,
                                                     severity="info")),
        (("configWarning", INVALID_CONFIG),
         Notice(f"{INVALID_CONFIG['summary']} — {INVALID_CONFIG['details']}", None,
                f"Config warning: {INVALID_CONFIG['summary']}\n\n{INVALID_CONFIG['details']}\n\n")),
        (("warning", MODEL_WARNING), Notice(MODEL_WARNING["message"], None, f"Warning: {MODEL_WARNING['message']}\n\n")),
        (("warning", COMPACTION_WARNING),
         Notice(COMPACTION_WARNING["message"], None, f"Warning: {COMPACTION_WARNING['message']}\n\n")),
        (("deprecationNotice", {"summary": "Short.", "details": "Also short."}),
         Notice("Short. — Also short.", None, None, severity="info")),
        # model/rerouted as the real 0.163 app-server sends it (ModelReroutedNotification)
        (("model/rerouted", REROUTED), Notice("Model rerouted from gpt-5.5 to gpt-5.4-mini",
                                              "Codex answered with gpt-5.4-mini: the request was flagged for "
                                              "potentially high-risk cyber activity.", None, severity="info")),
        (("model/rerouted", {**REROUTED, "reason": "somethingNew"}),
         Notice("Model rerouted from gpt-5.5 to gpt-5.4-mini", "Codex answered with gpt-5.4-mini: somethingNew.", None,
                severity="info")),
        (("model/rerouted", {**REROUTED, "toModel": None}), None),
        (("configWarning", {"summary": "  ", "details": None}), None),
        (("remoteControl/status/changed", {"status": "disabled"}), None),
    ]

    def classify(self, native: Any) -> Any:
        return classify.notice_for(*native)


def test_a_long_warning_is_split_into_title_and_details() -> None:
    message = "First sentence of a long warning. " + "More words follow here. " * 20
    notice = classify.notice_for("warning", {"message": message})
    assert notice is not None
    assert notice.title == "First sentence of a long warning."
    assert notice.details is not None and notice.details.startswith("More words follow here.")
    assert notice.legacy_text == f"Warning: {message}\n\n"


# --- the wire, through the core ---------------------------------------------------------------------


class TestRetryThenFailOnTheWire(ProviderWireContract):
    """The real 6 × HTTP 500 turn, folded and played through a real agent for both kinds of client."""

    provider_name: ClassVar[str] = "codex"
    retry_then_fail_natives: ClassVar[list[Any]] = turn("error_500_retries_exhausted")

    def fold(self, natives: Any) -> Any:
        return fold_turn(natives)


class TestRedaction(RedactionContract):
    provider_name: ClassVar[str] = "codex"
    secret_env_var: ClassVar[str] = "OPENAI_API_KEY"

    def failure_with_text(self, text: str) -> FailureObservation:
        return classify.turn_error_observation({"message": text, "codexErrorInfo": "internalServerError"})
