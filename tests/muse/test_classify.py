"""Muse terminal and error classification as pure functions, from tables of MSP frames."""

from __future__ import annotations

from typing import Any, ClassVar

import muse_code_msp
import pytest

from acp_agent.backends.events import RetryProgress, TurnEnd
from acp_agent.failures.protocol import (
    FailureKind,
    FailureObservation,
    baseline_error_code,
    baseline_error_data,
    baseline_error_message,
)
from acp_agent.failures.redaction import Redactor
from acp_agent.testing import ClassificationContract, HistoryContract, ProviderWireContract, RedactionContract, TitleContract
from acp_agent_muse import classify, items
from acp_agent_muse.translate import fold_turn
from tests.muse import frames as f

K = FailureKind


def failed(kind: str, message: str, retryable: bool = False) -> dict[str, Any]:
    return f.turn_completed("failed", f.turn_error(kind, message, retryable))[1]


def observed(kind: FailureKind, native: str, title: str | None, source: str, retryable: bool | None
             ) -> FailureObservation:
    return FailureObservation(kind=kind, native_kind=native, title=title, source=source,  # type: ignore[arg-type]
                              outcome="failed", execution="possiblySubmitted", phase="running", retryable=retryable)


# The table: TurnError.kind → (neutral kind, source).
TERMINALS: list[tuple[dict[str, Any], Any]] = [
    (f.turn_completed("completed")[1], TurnEnd("end_turn")),
    (f.turn_completed("cancelled")[1], TurnEnd("cancelled")),
    (failed("stepLimit", "Reached the step limit of 50."), TurnEnd("max_turn_requests")),
    (failed("authRequired", "Sign in to Muse Code: your token expired."),
     observed(K.AUTH_REQUIRED, "authRequired", "Sign in to Muse Code: your token expired.", "provider", False)),
    (failed("modelError", "The model returned an error.", True),
     observed(K.PROVIDER_ERROR, "modelError", "The model returned an error.", "provider", True)),
    (failed("modelError", "You have exhausted your weekly quota. It resets Monday.", False),
     observed(K.PROVIDER_ERROR, "modelError", "You have exhausted your weekly quota. It resets Monday.", "provider",
              False)),
    (failed("modelError", "Rate limit reached for requests; slow down.", True),
     observed(K.PROVIDER_ERROR, "modelError", "Rate limit reached for requests; slow down.", "provider", True)),
    (failed("configError", "config.toml: unknown key `modle`."),
     observed(K.BAD_REQUEST, "configError", "config.toml: unknown key `modle`.", "host", False)),
    (failed("environmentError", "The workspace is not a directory."),
     observed(K.BAD_REQUEST, "environmentError", "The workspace is not a directory.", "host", False)),
    (failed("projectionError", "The session view could not be projected."),
     observed(K.BAD_REQUEST, "projectionError", "The session view could not be projected.", "host", False)),
    (failed("launchError", "The turn could not be launched.", True),
     observed(K.PROVIDER_ERROR, "launchError", "The turn could not be launched.", "host", True)),
    (failed("mcpLinkError", "The MCP server `db` did not start.", True),
     observed(K.PROVIDER_ERROR, "mcpLinkError", "The MCP server `db` did not start.", "host", True)),
    (failed("workflowLaunchError", "The workflow could not start."),
     observed(K.PROVIDER_ERROR, "workflowLaunchError", "The workflow could not start.", "host", False)),
    (failed("logError", "The session log could not be written."),
     observed(K.PROVIDER_ERROR, "logError", "The session log could not be written.", "host", False)),
    ({**f.turn_completed("failed")[1]}, observed(K.PROVIDER_ERROR, "unknown", None, "host", None)),
]
for kind in muse_code_msp.TURN_ERROR_KIND_KNOWN_VALUES:
    assert kind == "stepLimit" or kind in classify.TURN_ERROR_KINDS, f"unclassified MSP turn error kind {kind}"


class TestTerminals(ClassificationContract):
    cases = TERMINALS
    unknown_natives: ClassVar = [
        failed("sandboxDenied", "A future error kind."),
        f.turn_completed("timedOut")[1],
        {**f.turn_completed("failed")[1], "error": {"message": "no kind at all", "retryable": False}},
    ]

    def classify(self, native: Any) -> Any:
        return classify.classify_terminal(native)


def test_unknown_kinds_keep_their_native_name() -> None:
    observation = classify.classify_terminal(failed("sandboxDenied", "A future error kind."))
    assert isinstance(observation, FailureObservation)
    assert (observation.native_kind, observation.source) == ("sandboxDenied", "host")
    timed_out = classify.classify_terminal(f.turn_completed("timedOut")[1])
    assert isinstance(timed_out, FailureObservation)
    assert timed_out.native_kind == "timedOut"


class TestTitles(TitleContract):
    title_cases: ClassVar = [
        (failed("modelError", "You have exhausted your weekly quota."), "You have exhausted your weekly quota."),
        (failed("authRequired", "Run `muse login` to sign in."), "Run `muse login` to sign in."),
        (failed("logError", "   "), None),
    ]

    def extract_title(self, native: Any) -> str | None:
        result = classify.classify_terminal(native)
        assert isinstance(result, FailureObservation)
        return result.title


RETRY_THEN_FAIL = [
    f.started(f.item("msg", "agentMessage")),
    f.retry_scheduled("The model provider rate limited the request", errorKind="rateLimited", httpStatus=429),
    f.model_retry_scheduled(system="Meta model API", httpStatus=529),
    failed_frame := f.turn_completed("failed", f.turn_error("modelError", "The model is overloaded.", True)),
]


class TestWire(ProviderWireContract):
    provider_name = "muse"
    retry_then_fail_natives = RETRY_THEN_FAIL

    def fold(self, natives: Any) -> list[Any]:
        return fold_turn(f.TURN, natives)


class TestRedaction(RedactionContract):
    provider_name = "muse"
    secret_env_var = "META_API_KEY"

    def failure_with_text(self, text: str) -> FailureObservation:
        result = classify.classify_terminal(failed("modelError", text))
        assert isinstance(result, FailureObservation)
        return result


class TestHistory(HistoryContract):
    history_cases: ClassVar = [
        ({"history": {"mode": "inline", "snapshot": None, "items": [
            f.item("u1", "userMessage", "completed", text="do it"),
            f.item("m1", "agentMessage", "completed", text="on it")]},
          "lastTurn": {"turnId": f.TURN, "terminal": "failed", "error": f.turn_error("modelError", "boom")}},
         [(f.TURN, "u1")]),
        ({"history": {"mode": "inline", "snapshot": None, "items": []},
          "lastTurn": {"turnId": f.TURN, "terminal": "completed"}}, []),
        ({"history": {"mode": "none", "snapshot": None, "items": None},
          "lastTurn": {"turnId": "t9", "terminal": "failed", "error": f.turn_error("authRequired", "sign in")}},
         [("t9", None)]),
    ]

    def recognise(self, transcript: Any) -> list[tuple[str, str | None]]:
        from acp_agent.backends.events import HistoryFailure

        return [(event.message_id, event.user_message_id) for event in items.history_events(transcript, str)
                if isinstance(event, HistoryFailure)]


@pytest.mark.parametrize(("params", "expected"), [
    (f.retry_scheduled("The model provider rate limited the request", errorKind="rateLimited", httpStatus=429)[1],
     RetryProgress("The model provider rate limited the request (retrying in 1s · attempt 2/3)", K.RATE_LIMITED)),
    (f.retry_scheduled("Retrying: upstream 500")[1],
     RetryProgress("Retrying: upstream 500 (retrying in 1s · attempt 2/3)", K.PROVIDER_ERROR)),
])
def test_retry_scheduled_keeps_the_hosts_reason(params: dict[str, Any], expected: RetryProgress) -> None:
    assert classify.retry_progress("turn/retryScheduled", params) == expected


@pytest.mark.parametrize(("extra", "title", "kind"), [
    ({"system": "Meta model API", "httpStatus": 529}, "Meta model API is unavailable (HTTP 529); retrying in 2s · "
     "attempt 3/3.", K.OVERLOADED),
    ({"errorKind": "overloaded"}, "The model is unavailable; retrying in 2s · attempt 3/3.", K.OVERLOADED),
    ({}, "The model is unavailable; retrying in 2s · attempt 3/3.", K.PROVIDER_ERROR),
])
def test_model_retry_is_worded_from_its_counters(extra: dict[str, Any], title: str, kind: FailureKind) -> None:
    assert classify.retry_progress("turn/modelRetryScheduled", f.model_retry_scheduled(**extra)[1]) == RetryProgress(
        title, kind)


@pytest.mark.parametrize(("code", "data", "retryable"), [
    (-32001, {"kind": "overloaded", "retryable": True}, True),
    (-32031, {"kind": "backpressured", "retryable": True}, True),
    (-32001, None, True),
    (-32001, {"kind": "commandRejected"}, False),
    (-32030, {"kind": "commandRejected"}, False),
    (-32020, {"kind": "sessionNotFound"}, False),
    (-32603, {"kind": "internal"}, False),
])
def test_only_overloaded_and_backpressured_may_be_resent(code: int, data: Any, retryable: bool) -> None:
    assert classify.is_retryable_error(code, data) is retryable


@pytest.mark.parametrize(("code", "data", "native", "kind"), [
    (-32602, {"kind": "invalidParams"}, "invalidParams", K.BAD_REQUEST),
    (-32030, {"kind": "commandRejected", "reason": "policy"}, "commandRejected", K.BAD_REQUEST),
    (-32001, {"kind": "overloaded", "retryable": True}, "overloaded", K.OVERLOADED),
    (-32002, None, "inputTooLarge", K.BAD_REQUEST),
    (-32603, {"kind": "internal"}, "internal", K.PROVIDER_ERROR),
    (-32099, None, "hostError", K.PROVIDER_ERROR),
])
def test_request_errors_were_not_submitted(code: int, data: Any, native: str, kind: FailureKind) -> None:
    observation = classify.request_error_observation(code, "the host said no", data, "submitting")
    assert (observation.kind, observation.native_kind, observation.source) == (kind, native, "host")
    assert (observation.execution, observation.outcome, observation.title) == ("notSubmitted", "failed",
                                                                                "the host said no")


REDACT = Redactor()


def baseline(observation: FailureObservation) -> tuple[int, str, dict[str, Any]]:
    return (baseline_error_code(observation), baseline_error_message(observation, REDACT),
            baseline_error_data(observation, REDACT))


def test_baseline_failure_data_is_exactly_spec_004s() -> None:
    mid_turn = classify.host_lost("running", submitted=True)
    assert baseline(mid_turn) == (-32603, f"{mid_turn.title} Reload and inspect the session before deciding to "
                                  "submit again.", {"failure": {
        "kind": "terminalUnknown", "source": "transport", "outcome": "unknown",
        "recovery": "Reload and inspect the session before deciding to submit again.", "phase": "running",
        "execution": "possiblySubmitted"}})
    auth = classify.classify_terminal(failed("authRequired", "Sign in again."))
    assert isinstance(auth, FailureObservation)
    assert baseline(auth) == (-32000, "Sign in again. Sign in or configure credentials, then try again.", {"failure": {
        "kind": "authRequired", "source": "provider", "retryable": False, "outcome": "failed",
        "recovery": "Sign in or configure credentials, then try again.", "phase": "running",
        "execution": "possiblySubmitted"}})
    missing = classify.host_unavailable("initializing", "was not found at /opt/muse")
    code, message, data = baseline(missing)
    assert (code, data) == (-32603, {"failure": {
        "kind": "hostNotFound", "source": "adapter", "retryable": False, "outcome": "failed",
        "recovery": classify.INSTALL_RECOVERY, "phase": "initializing", "execution": "notSubmitted"}})
    assert message == ("Muse Code could not be started: the Muse Code CLI was not found at /opt/muse. "
                       f"No model turn was submitted. {classify.INSTALL_RECOVERY}")
    fork = classify.host_lost("forking", submitted=False, mutation=True)
    assert baseline(fork)[2]["failure"] == {
        "kind": "transportError", "source": "transport", "outcome": "unknown",
        "recovery": "Inspect session/list before retrying the fork.", "phase": "forking",
        "execution": "notSubmitted", "mutation": "possiblyApplied"}
    assert "no model turn was submitted" in baseline(fork)[1].lower()


@pytest.mark.parametrize(("native", "source"), [
    ("modelError", "provider"), ("authRequired", "provider"), ("terminalUnknown", "transport"),
    ("transportError", "transport"), ("configError", "host"), ("launchError", "host"), ("somethingNew", "host"),
])
def test_source_follows_the_kind(native: str, source: str) -> None:
    assert classify.source_of(native) == source


def test_fixture_frames_match_the_generated_types() -> None:
    """The tables' frames carry every member `muse-code-msp` requires."""
    typed = {"item/started": muse_code_msp.ItemStartedParams, "item/completed": muse_code_msp.ItemCompletedParams,
             "item/updated": muse_code_msp.ItemUpdatedParams, "item/delta": muse_code_msp.ItemDeltaParams,
             "turn/completed": muse_code_msp.TurnCompletedParams,
             "turn/retryScheduled": muse_code_msp.TurnRetryScheduledParams,
             "turn/modelRetryScheduled": muse_code_msp.TurnModelRetryScheduledParams}
    samples = [*RETRY_THEN_FAIL, f.delta("msg", "x"), f.updated(f.item("t", "toolCall")), failed_frame]
    for method, params in samples:
        missing = typed[method].__required_keys__ - set(params)
        assert not missing, (method, missing)
    assert muse_code_msp.ApprovalRequestParams.__required_keys__ <= set(f.approval())
    assert muse_code_msp.TurnError.__required_keys__ <= set(f.turn_error("modelError", "x"))
    for key in muse_code_msp.Item.__required_keys__:
        assert key in f.item("x", "agentMessage")
