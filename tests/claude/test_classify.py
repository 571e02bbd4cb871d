"""Claude classification as pure functions, from tables of real CLI 2.1.332 output (fixtures/)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from acp_agent.backends.events import Notice, RetryProgress, TerminalStarted, TurnEnd, is_model_answer
from acp_agent.failures.protocol import Category, FailureKind, FailureObservation
from acp_agent.testing import ClassificationContract, ProviderWireContract, RedactionContract, TitleContract
from acp_agent.wire.acp import AgentMessageChunk, Plan, ToolCall
from acp_agent_claude import classify
from acp_agent_claude.fold import TurnFold
from tests.claude.replay import fold_steps, fold_turns, messages, new_fold, raw_lines

K = FailureKind


class TestErrorKinds(ClassificationContract):
    """The assistant `error` field (and the result's api_error_status), per the issue's table."""

    cases: ClassVar[list[tuple[Any, Any]]] = [
        (("authentication_failed", None), K.AUTH_REQUIRED),
        (("oauth_org_not_allowed", None), K.AUTH_REQUIRED),
        (("billing_error", None), K.QUOTA_EXHAUSTED),
        (("account_on_hold", None), K.QUOTA_EXHAUSTED),
        (("rate_limit", 429), K.RATE_LIMITED),
        (("overloaded", None), K.OVERLOADED),
        (("invalid_request", 400), K.BAD_REQUEST),
        (("model_not_found", None), K.BAD_REQUEST),
        (("max_output_tokens", None), K.CONTEXT_EXHAUSTED),
        (("verification_required", None), K.ACCESS_DENIED),
        (("cloud_credential_error", None), K.ACCESS_DENIED),
        (("server_error", 500), K.PROVIDER_ERROR),
        (("server_error", 529), K.OVERLOADED),
        (("unknown", 400), K.BAD_REQUEST),  # what the real CLI reports for an HTTP 400
        (("unknown", 404), K.BAD_REQUEST),
        (("unknown", 413), K.BAD_REQUEST),
        (("unknown", 422), K.BAD_REQUEST),
        (("unknown", 401), K.AUTH_REQUIRED),
        (("unknown", 403), K.AUTH_REQUIRED),
        (("unknown", 429), K.RATE_LIMITED),
        (("unknown", None), K.PROVIDER_ERROR),
    ]
    unknown_natives: ClassVar[list[Any]] = [("some_future_error", None), ("unknown", 500), (None, None)]

    def classify(self, native: Any) -> Any:
        kind = classify.error_kind(*native)
        return kind if native not in self.unknown_natives else FailureObservation(kind, "x")


# (fixture, kind, native kind, category, actions, title) for every real failing turn
FAILING_TURNS = [
    ("rate_limit_429_x3", K.RATE_LIMITED, "rate_limit", Category.LIMIT, "API Error: Request rejected (429) · "),
    ("overloaded_529_repeated", K.OVERLOADED, "server_error", Category.SERVICE, "API Error: Repeated 529 Overloaded"),
    ("server_error_500_repeated", K.PROVIDER_ERROR, "server_error", Category.SERVICE, "API Error: 500 Internal server"),
    ("auth_401_repeated", K.AUTH_REQUIRED, "authentication_failed", Category.ACCESS, "Invalid API key · Fix external"),
    ("forbidden_403", K.AUTH_REQUIRED, "authentication_failed", Category.ACCESS, "Failed to authenticate. API Error: 403"),
    ("bad_request_400", K.BAD_REQUEST, "unknown", Category.REQUEST, "API Error: 400 messages: fake invalid request"),
    ("prompt_too_long_400", K.BAD_REQUEST, "invalid_request", Category.REQUEST, "Prompt is too long"),
    ("request_too_large_413", K.BAD_REQUEST, "invalid_request", Category.REQUEST, "Request too large"),
    ("max_tokens_exhausted", K.CONTEXT_EXHAUSTED, "max_output_tokens", Category.LIMIT, "API Error: Claude's response exceeded"),
    ("usage_limit", K.QUOTA_EXHAUSTED, "usage_limit", Category.LIMIT, "You've hit your limit · resets"),
    ("usage_limit_spend_cap", K.QUOTA_EXHAUSTED, "usage_limit", Category.LIMIT, "You've hit your individual spend limit"),
    ("usage_limit_api_key", K.RATE_LIMITED, "rate_limit", Category.LIMIT, "API Error: Request rejected (429)"),
    ("stream_cut_repeated", K.PROVIDER_ERROR, "server_error", Category.SERVICE, "API Error: Connection to the API was lost"),
    ("connection_refused", K.PROVIDER_ERROR, "server_error", Category.SERVICE, "API Error: Connection refused"),
]


@pytest.mark.parametrize(("fixture", "kind", "native", "category", "title"), FAILING_TURNS)
def test_failing_turns_from_real_output(fixture: str, kind: FailureKind, native: str, category: Category,
                                        title: str) -> None:
    [(_, outcome)] = fold_turns(fixture)
    assert isinstance(outcome, FailureObservation)
    assert (outcome.kind, outcome.native_kind, outcome.policy.category) == (kind, native, category)
    assert outcome.title is not None and outcome.title.startswith(title)
    assert outcome.native_data == {"errorKind": native}
    assert (outcome.execution, outcome.source) == ("possiblySubmitted", "provider")


@pytest.mark.parametrize(("fixture", "kind", "category", "actions", "title"), [
    ("max_turns_exceeded", K.CONTEXT_EXHAUSTED, Category.LIMIT, ["new_session"], "Reached maximum number of turns (1)"),
    ("max_budget_exceeded", K.BUDGET_EXHAUSTED, Category.LIMIT, ["new_session"], "Reached maximum budget ($0.0001)"),
])
def test_configured_limits_from_real_output(fixture: str, kind: FailureKind, category: Category, actions: list[str],
                                            title: str) -> None:
    [(_, outcome)] = fold_turns(fixture)
    assert isinstance(outcome, FailureObservation)
    assert (outcome.kind, outcome.policy.category, [str(a) for a in outcome.policy.actions]) == (kind, category, actions)
    assert outcome.title == title  # the CLI's own words, from the result's `errors`
    assert outcome.source == "host"


@pytest.mark.parametrize(("fixture", "stop"), [
    ("ok_text", "end_turn"), ("ok_text_partial", "end_turn"), ("thinking_text", "end_turn"),
    ("bash_permission_allowed", "end_turn"), ("bash_permission_denied", "end_turn"), ("write_and_edit", "end_turn"),
    ("todowrite", "end_turn"), ("max_tokens_recovered", "end_turn"), ("refusal", "refusal"),
    ("rate_limit_429_then_ok", "end_turn"), ("auth_401_then_ok", "end_turn"), ("stream_cut_then_success", "end_turn"),
])
def test_successful_turns_from_real_output(fixture: str, stop: str) -> None:
    outcomes = [outcome for _, outcome in fold_turns(fixture)]
    assert outcomes == [TurnEnd(stop)]  # type: ignore[arg-type]


def test_titles_are_the_clis_own_text() -> None:
    for fixture, *_ in FAILING_TURNS:
        [(_, outcome)] = fold_turns(fixture)
        synthetic = [line for line in raw_lines(fixture)[1]
                     if line.get("type") == "assistant" and line["message"].get("model") == "<synthetic>"]
        assert outcome.title == synthetic[-1]["message"]["content"][0]["text"]  # type: ignore[union-attr]


class TestTitles(TitleContract):
    title_cases: ClassVar[list[tuple[Any, str | None]]] = [
        ("usage_limit", "You've hit your limit · resets 9:26pm (UTC)"),
        ("auth_401_repeated", "Invalid API key · Fix external API key"),
    ]

    def extract_title(self, native: Any) -> str | None:
        [(_, outcome)] = fold_turns(native)
        return outcome.title  # type: ignore[union-attr]


def test_retries_then_recovery_in_real_output() -> None:
    [(events, outcome)] = fold_turns("rate_limit_429_then_ok")
    retries = [event for event in events if isinstance(event, RetryProgress)]
    assert retries == [RetryProgress("Retrying Claude, attempt 1 of 2.", K.RATE_LIMITED)]
    # the next attempt's model content follows the warning: the core ends the incident on it
    after = events[events.index(retries[0]) + 1:]
    assert any(is_model_answer(event) for event in after)
    assert not any(is_model_answer(event) for event in events[:events.index(retries[0])])
    assert outcome == TurnEnd("end_turn")


def test_a_successful_turn_confirms_authentication() -> None:
    from acp_agent.backends.events import AuthConfirmed

    [(events, _)] = fold_turns("auth_401_then_ok")
    assert events[-1] == AuthConfirmed()
    [(failed, _)] = fold_turns("auth_401_repeated")
    assert AuthConfirmed() not in failed


def test_stream_cut_retry_is_a_reconnect_in_category_connection() -> None:
    [(events, _)] = fold_turns("stream_cut_then_success")
    [retry] = [event for event in events if isinstance(event, RetryProgress)]
    assert retry == RetryProgress("Reconnecting to Claude, attempt 1 of 2.", K.TRANSPORT_LOST, Category.CONNECTION)


@pytest.mark.parametrize(("text", "kind"), [
    ("You've hit your limit · resets 5pm", K.QUOTA_EXHAUSTED),
    ("You've reached your weekly limit", K.QUOTA_EXHAUSTED),
    ("You're out of usage credits · buy more", K.QUOTA_EXHAUSTED),
    ("Your org is out of usage · add funds to continue", K.QUOTA_EXHAUSTED),
    ("Your org is out of usage · contact your admin", K.QUOTA_EXHAUSTED),
    ("Your seat type doesn't include usage credits", K.QUOTA_EXHAUSTED),
    ("Your seat type doesn't include usage", K.QUOTA_EXHAUSTED),
    ("Your usage allocation has been disabled by your admin", K.QUOTA_EXHAUSTED),
    ("Your group's usage limit is set to $0", K.QUOTA_EXHAUSTED),
    ("You're out of extra usage", K.QUOTA_EXHAUSTED),
    ("Your seat type doesn't include extra usage", K.QUOTA_EXHAUSTED),
    ("Not logged in · Please run /login", K.AUTH_REQUIRED),
    ("Session expired. RUN /LOGIN to continue", K.AUTH_REQUIRED),
    ("No response requested.", None),
    ("Please run /loginx", None),
])
def test_synthetic_texts(text: str, kind: FailureKind | None) -> None:
    assert classify.synthetic_failure_kind(text, None, None) == kind


def result_line(**fields: Any) -> dict[str, Any]:
    """A result line shaped like the CLI's (fields as in fixtures/ok_text.jsonl), varied per case."""
    base = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1, "duration_api_ms": 1,
            "num_turns": 1, "session_id": "s", "stop_reason": "end_turn", "terminal_reason": "completed",
            "result": "", "usage": {}, "modelUsage": {}, "permission_denials": [], "uuid": "u"}
    return {**base, **fields}


@pytest.mark.parametrize(("fields", "expected"), [
    ({"subtype": "error_max_budget_usd", "is_error": True, "result": "Budget exceeded"}, K.BUDGET_EXHAUSTED),
    ({"subtype": "error_max_turns", "is_error": True}, K.CONTEXT_EXHAUSTED),
    ({"subtype": "error_max_structured_output_retries", "is_error": True}, K.PROVIDER_ERROR),
    ({"subtype": "error_max_budget_usd", "is_error": False}, TurnEnd("max_turn_requests")),
    ({"subtype": "error_max_turns", "is_error": False}, TurnEnd("max_turn_requests")),
    ({"subtype": "error_max_structured_output_retries", "is_error": False}, TurnEnd("max_turn_requests")),
    ({"stop_reason": "max_tokens"}, TurnEnd("max_tokens")),
    ({"subtype": "error_during_execution", "is_error": True, "errors": ["boom"]}, K.PROVIDER_ERROR),
    ({"subtype": "success", "is_error": True, "api_error_status": 529, "result": "Overloaded"}, K.OVERLOADED),
    ({"subtype": "some_future_subtype", "is_error": True}, K.PROVIDER_ERROR),
])
def test_result_variants(fields: dict[str, Any], expected: Any) -> None:
    fold = new_fold()
    fold.feed(result_line(**fields))
    if isinstance(expected, TurnEnd):
        assert fold.outcome == expected
    else:
        assert isinstance(fold.outcome, FailureObservation)
        assert fold.outcome.kind is expected


def test_error_during_execution_titles_come_from_errors() -> None:
    fold = new_fold()
    fold.feed(result_line(subtype="error_during_execution", is_error=True, errors=["Tool crashed"]))
    assert fold.outcome.title == "Tool crashed"  # type: ignore[union-attr]


def test_interrupt_after_cancel_is_cancelled() -> None:
    outcomes = [outcome for _, outcome in fold_turns("interrupt_slow_stream", cancel=True)]
    assert outcomes[0] == TurnEnd("cancelled")


def test_refusal_shows_the_explanation_as_agent_text() -> None:
    [(events, outcome)] = fold_turns("refusal")
    assert outcome == TurnEnd("refusal")
    texts = [event.content.text for event in events if isinstance(event, AgentMessageChunk)]
    assert texts and texts[-1].startswith("API Error: Opus 5.5's safeguards flagged this message")


def test_model_refusal_fallback_is_an_advisory_with_the_legacy_line() -> None:
    fold = new_fold()
    line = {"type": "system", "subtype": "model_refusal_fallback", "content": "Switched to Sonnet after a refusal.",
            "level": "warning", "uuid": "u", "session_id": "s"}
    assert fold.feed(line) == [
        Notice("Switched to Sonnet after a refusal.", legacy_text="**Model fallback:** Switched to Sonnet after a refusal.\n\n")]


def test_eof_without_result_is_transport_loss_or_worker_shutdown() -> None:
    lost = new_fold().finish_without_result()
    assert isinstance(lost, FailureObservation)
    assert (lost.kind, lost.title, lost.outcome) == (K.TRANSPORT_LOST, "The connection to Claude was lost.", "unknown")
    fold = new_fold()
    fold.feed({"type": "system", "subtype": "worker_shutting_down", "reason": "host_exit",
                             "uuid": "u", "session_id": "s"})
    assert fold.finish_without_result().kind is K.WORKER_SHUTDOWN  # type: ignore[union-attr]


def test_unanswered_tool_call_is_an_internal_error() -> None:
    natives = messages("bash_permission_allowed")
    without_results = [m for m in natives if m.get("type") != "user"]
    steps = fold_steps(without_results)
    assert isinstance(steps[-1], FailureObservation)
    assert steps[-1].kind is K.INTERNAL_ERROR


def test_tools_and_plans_from_real_output() -> None:
    [(events, _)] = fold_turns("bash_permission_allowed")
    # (a Bash call is a terminal for clients that opt in: the call inside is what others see)
    [call] = [event.call for event in events if isinstance(event, TerminalStarted)]
    assert (call.title, call.kind, call.status) == ("`touch created-by-bash.txt`", "execute", "pending")
    turns = fold_turns("todowrite")
    plans = [event for events, _ in turns for event in events if isinstance(event, Plan)]
    assert plans and plans[0].entries
    edits = [event for events, _ in fold_turns("write_and_edit") for event in events if isinstance(event, ToolCall)]
    assert [call.kind for call in edits] == ["edit", "edit"]


class TestWire(ProviderWireContract):
    provider_name = "claude"
    retry_then_fail_natives: ClassVar[list[Any]] = messages("rate_limit_429_x3")

    def fold(self, natives: Any) -> list[Any]:
        return fold_steps(list(natives))


class TestRedaction(RedactionContract):
    provider_name = "claude"
    secret_env_var = "ANTHROPIC_API_KEY"

    def failure_with_text(self, text: str) -> FailureObservation:
        return classify.failure(K.PROVIDER_ERROR, "server_error", text)


def test_mcp_servers_from_acp() -> None:
    from acp_agent.wire.acp import parse_mcp_servers
    from acp_agent_claude.content import mcp_servers

    # (a malformed entry never gets here: the core answers -32602 for it, tests/e2e/test_params_e2e.py)
    assert mcp_servers(parse_mcp_servers([
        {"name": "files", "command": "mcp-files", "args": ["--root", "/w"], "env": [{"name": "A", "value": "1"}]},
        {"type": "http", "name": "web", "url": "https://mcp.example/x", "headers": [{"name": "Authorization",
                                                                                    "value": "Bearer t"}]},
        {"type": "sse", "name": "events", "url": "https://mcp.example/sse", "headers": []},
    ])) == {
        "files": {"type": "stdio", "command": "mcp-files", "args": ["--root", "/w"], "env": {"A": "1"}},
        "web": {"type": "http", "url": "https://mcp.example/x", "headers": {"Authorization": "Bearer t"}},
        "events": {"type": "sse", "url": "https://mcp.example/sse"},
    }


def _fixture_names() -> list[str]:
    from tests.claude.replay import FIXTURES

    return sorted(path.stem for path in FIXTURES.glob("*.jsonl") if not path.stem.startswith("transcript_"))


def test_the_native_lines_handed_to_the_hooks_are_the_clis_own() -> None:
    """The assistant and result lines a failure hook sees are the lines the CLI wrote, unchanged
    (the runtime reads stream-json itself; no SDK message is turned back into JSON)."""
    checked = 0
    for fixture in _fixture_names():
        seen: list[Mapping[str, Any]] = []

        def observe(native: Mapping[str, Any], seen: list[Mapping[str, Any]] = seen) -> None:
            seen.append(native)

        lines = messages(fixture)
        fold = TurnFold(observe=observe)
        for line in lines:
            fold.feed(line)
            if fold.outcome is not None:
                fold = TurnFold(observe=observe)
        for native in seen:
            checked += 1
            assert native["result"] in lines
            if "assistant" in native:
                assert native["assistant"] in lines
    assert checked


def test_notices_carry_claude_agent_acps_severities() -> None:
    from acp_agent_claude import classify as c

    assert c.fallback_notice({"content": "Switched to Sonnet."}).severity == "warning"  # type: ignore[union-attr]
    warned = c.informational_notice({"content": "## Careful\nThe `disk` is **full**.", "level": "warning"})
    assert warned is not None and (warned.severity, warned.title, warned.details) == (
        "warning", "Careful", "The disk is full.")
    assert c.informational_notice({"content": "x", "level": "info"}) is None
    long = c.informational_notice({"content": "y" * 300, "level": "notice"})
    assert long is not None and (long.severity, long.title) == ("info", "Claude reported a notice")
    auth = c.mcp_notice({"name": "gh", "status": "needs-auth"})
    assert auth is not None and auth.severity == "info"
    assert c.mcp_notice({"name": "gh", "status": "connected"}) is None
