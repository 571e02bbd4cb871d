"""The sessionFailure extension as pure functions: negotiation, policy, record, ids, recovery."""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.failures.protocol import (
    POLICY,
    Action,
    Category,
    FailureKind,
    FailureObservation,
    IncidentRegistry,
    RecoverySignal,
    advertised_meta,
    baseline_error_code,
    baseline_error_data,
    baseline_error_message,
    negotiated,
    split_title,
)
from acp_agent.failures.redaction import Redactor

LEGACY_AIR_SHAPES: list[Any] = [
    {},
    {"version": 1, "capabilities": []},
    {"version": "1", "capabilities": ["sessionFailure"]},
    {"version": 1.5, "capabilities": ["sessionFailure"]},
    {"version": 0, "capabilities": ["sessionFailure"]},
    {"version": -1, "capabilities": ["sessionFailure"]},
    {"version": 1, "capabilities": [1]},
    {"version": 1, "capabilities": "sessionFailure"},
    {"sessionFailure": {"version": 1}},
]


@pytest.mark.parametrize("air", LEGACY_AIR_SHAPES)
def test_malformed_capabilities_stay_legacy(air: Any) -> None:
    assert negotiated({"jetbrains": {"air": air}}) is False


@pytest.mark.parametrize("air", [
    {"version": 1, "capabilities": ["sessionFailure"]},
    {"version": 2, "capabilities": ["sessionFailure", "other"]},
    {"version": 1.0, "capabilities": ["x", "sessionFailure"]},
])
def test_capable_shapes(air: Any) -> None:
    assert negotiated({"jetbrains": {"air": air}}) is True


@pytest.mark.parametrize("meta", [None, [], "x", {"jetbrains": None}, {"jetbrains": {"air": None}},
                                  {"jetbrains": {"air": {"version": True, "capabilities": ["sessionFailure"]}}},
                                  {"jetbrains": {"air": {"version": float("inf"), "capabilities": ["sessionFailure"]}}},
                                  {"jetbrains": {"air": {"version": float("nan"), "capabilities": ["sessionFailure"]}}}])
def test_non_objects_and_non_finite_versions_stay_legacy(meta: Any) -> None:
    assert negotiated(meta) is False


def test_advertised_meta() -> None:
    assert advertised_meta() == {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}


POLICY_TABLE = [
    ("auth_required", "access", ["login"]),
    ("access_denied", "access", ["retry"]),
    ("quota_exhausted", "limit", []),
    ("rate_limited", "limit", ["retry"]),
    ("budget_exhausted", "limit", ["new_session"]),
    ("context_exhausted", "limit", ["new_session"]),
    ("bad_request", "request", []),
    ("policy_denied", "request", []),
    ("overloaded", "service", ["retry"]),
    ("provider_error", "service", ["retry"]),
    ("internal_error", "service", ["retry"]),
    ("transport_lost", "connection", ["new_session"]),
    ("worker_shutdown", "connection", ["new_session"]),
    ("deadline_exceeded", "connection", ["new_session"]),
    ("advisory", "unknown", []),
]


@pytest.mark.parametrize(("kind", "category", "actions"), POLICY_TABLE)
def test_policy_table(kind: str, category: str, actions: list[str]) -> None:
    registry = IncidentRegistry("s", "e")
    record = registry.prepare("i", FailureKind(kind), "error", "t", None)
    assert record.category == Category(category)
    assert [str(action) for action in record.actions] == actions
    assert record.severity == ("warning" if kind == "advisory" else "error")


def test_policy_covers_every_kind() -> None:
    assert set(POLICY) == set(FailureKind)


def test_warning_has_no_actions_and_record_has_exactly_the_spec_fields() -> None:
    registry = IncidentRegistry("s", "e")
    warning = registry.prepare("t:error", FailureKind.RATE_LIMITED, "warning", "Retrying", None)
    assert warning.actions == ()
    wire = warning.to_wire()
    assert list(wire) == ["id", "revision", "category", "severity", "title", "actions"]
    long_record = registry.prepare("x", FailureKind.OVERLOADED, "error", "a", "b")
    assert set(long_record.to_wire()) == {"id", "revision", "category", "severity", "title", "details", "actions"}
    assert long_record.to_meta()["jetbrains"]["air"]["version"] == 1


def test_revisions_count_only_committed_records() -> None:
    registry = IncidentRegistry("s", "e")
    first = registry.prepare("t:error", FailureKind.OVERLOADED, "warning", "Retrying 1", None)
    assert first.revision == 1
    again = registry.prepare("t:error", FailureKind.OVERLOADED, "warning", "Retrying 1", None)
    assert again.revision == 1  # nothing was written yet: revision 1 is still unused
    registry.commit(first, FailureKind.OVERLOADED)
    second = registry.prepare("t:error", FailureKind.OVERLOADED, "error", "Failed", None)
    assert second.revision == 2
    assert second.actions == (Action.RETRY,)


def test_ids() -> None:
    registry = IncidentRegistry("sess", "ep")
    assert registry.turn_incident_id("turn-1") == "turn-1:error"
    assert registry.new_session_incident_id() == "sess:session-error:ep:1"
    assert registry.new_session_incident_id() == "sess:session-error:ep:2"
    assert registry.history_incident_id("user-7", "msg-9") == "user-7:error"
    assert registry.history_incident_id(None, "msg-9") == "sess:history-error:msg-9"


def test_consecutive_duplicate_notice_reuses_id_but_later_occurrence_is_new() -> None:
    registry = IncidentRegistry("sess", "ep")
    first = registry.notice_id("Disk almost full")
    assert registry.notice_id("Disk almost full") == first
    other = registry.notice_id("Something else")
    assert other != first
    again = registry.notice_id("Disk almost full")
    assert again not in (first, other)
    registry.interrupt_notice_run()
    assert registry.notice_id("Disk almost full") != again
    assert again.startswith("sess:notice:ep:")


def test_recovery_is_internal_and_kind_specific() -> None:
    registry = IncidentRegistry("s", "e")
    for incident_id, kind in [("q", FailureKind.QUOTA_EXHAUSTED), ("a", FailureKind.AUTH_REQUIRED),
                              ("t", FailureKind.TRANSPORT_LOST), ("o", FailureKind.OVERLOADED),
                              ("n", FailureKind.ADVISORY)]:
        registry.commit(registry.prepare(incident_id, kind, "error", "x", None), kind)
    assert registry.signal(RecoverySignal.ATTEMPT_BOUNDARY) == ["o"]
    assert registry.signal(RecoverySignal.RUNTIME_REPLACED) == ["t"]
    assert registry.signal(RecoverySignal.MODEL_ANSWER) == ["q", "a"]
    assert registry.active_ids() == ["n"]  # notices are not cleared by generic success
    assert set(registry.incidents) == {"q", "a", "t", "o", "n"}  # nothing removed, no tombstone


@pytest.mark.parametrize(("text", "title", "details"), [
    ("Short message.", "Short message.", None),
    ("x" * 256, "x" * 256, None),
    ("First sentence here. " + "y" * 300, "First sentence here.", "y" * 300),
])
def test_split_title(text: str, title: str, details: str | None) -> None:
    assert split_title(text) == (title, details)


def test_split_title_without_a_sentence_break_keeps_every_character() -> None:
    text = "word " * 100
    title, details = split_title(text)
    assert len(title) <= 256
    assert details is not None
    assert (title.rstrip("…") + " " + details).split() == text.split()


def test_baseline_data_has_only_the_failure_fields_plus_native() -> None:
    observation = FailureObservation(FailureKind.RATE_LIMITED, "rate_limit", "Slow down", source="provider",
                                     retryable=True, execution="possiblySubmitted", phase="running",
                                     native_data={"errorKind": "rate_limit"})
    data = baseline_error_data(observation, Redactor())
    assert data == {"errorKind": "rate_limit", "failure": {
        "kind": "rate_limit", "source": "provider", "retryable": True, "outcome": "failed",
        "recovery": "Wait a moment before trying again.", "phase": "running", "execution": "possiblySubmitted"}}
    assert baseline_error_code(observation) == -32603
    assert baseline_error_code(FailureObservation(FailureKind.AUTH_REQUIRED, "authRequired")) == -32000


def test_mutation_and_fallback_title() -> None:
    observation = FailureObservation(FailureKind.TRANSPORT_LOST, "transportLost", None, source="transport",
                                     outcome="unknown", mutation_possibly_applied=True)
    assert baseline_error_data(observation, Redactor())["failure"]["mutation"] == "possiblyApplied"
    assert observation.presented_title(Redactor()) == ("The connection to the backend was lost.", None)


@pytest.mark.parametrize(("observation", "message"), [
    (FailureObservation(FailureKind.RATE_LIMITED, "rate_limit", "API Error: 429 rate limited"),
     "API Error: 429 rate limited. Wait a moment before trying again."),
    (FailureObservation(FailureKind.AUTH_REQUIRED, "authRequired", "Not logged in. Please run /login."),
     "Not logged in. Please run /login. Sign in or configure credentials, then try again."),
    (FailureObservation(FailureKind.DEADLINE_EXCEEDED, "deadlineExceeded", "X did not finish preparing in 5 ms",
                        source="adapter", execution="notSubmitted", recovery_hint="Check the named deadline."),
     "X did not finish preparing in 5 ms. No model turn was submitted. Check the named deadline."),
    (FailureObservation(FailureKind.PROVIDER_ERROR, "x", "Boom! Check the session before trying again."),
     "Boom! Check the session before trying again."),
])
def test_baseline_message_names_the_failure_then_the_recovery(observation: FailureObservation, message: str) -> None:
    assert baseline_error_message(observation, Redactor()) == message
    recovery = baseline_error_data(observation, Redactor())["failure"]["recovery"]
    assert baseline_error_message(observation, Redactor()).endswith(recovery)


def test_the_recovery_survives_the_bound_on_a_long_vendor_text() -> None:
    observation = FailureObservation(FailureKind.OVERLOADED, "overloaded", "Overloaded. " + "detail " * 2000)
    message = baseline_error_message(observation, Redactor({"detail"}))
    assert len(message) <= 4096
    assert message.endswith("… Wait a moment before trying again.")


def test_a_recovered_turn_incident_is_never_reused() -> None:
    registry = IncidentRegistry("s", "e")
    retry = registry.prepare(registry.turn_incident_id("t"), FailureKind.OVERLOADED, "warning", "Retrying", None)
    registry.commit(retry, FailureKind.OVERLOADED)
    assert registry.turn_incident_id("t") == "t:error"  # still active: the terminal failure updates it
    assert registry.signal(RecoverySignal.ATTEMPT_BOUNDARY) == ["t:error"]
    assert registry.turn_incident_id("t") == "t:error:2"
    lost = registry.prepare("t:error:2", FailureKind.TRANSPORT_LOST, "warning", "Reconnecting", None)
    registry.commit(lost, FailureKind.TRANSPORT_LOST)
    # A transport loss follows its kind's policy: only a runtime replacement ends it.
    assert registry.signal(RecoverySignal.ATTEMPT_BOUNDARY) == []
    assert registry.signal(RecoverySignal.MODEL_ANSWER) == []
    assert registry.turn_incident_id("t") == "t:error:2"
    assert registry.signal(RecoverySignal.RUNTIME_REPLACED) == ["t:error:2"]
    assert registry.turn_incident_id("t") == "t:error:3"
    assert registry.turn_incident_id("other") == "other:error"
