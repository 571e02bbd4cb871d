"""The agent driven in-process through memory streams with the scripted test provider."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import anyio
import pytest

from acp_agent.backends.phases import Deadlines
from acp_agent.testing import run_in_process
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import make_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()
RATE = {"kind": "rate_limited", "native_kind": "rate_limit", "title": "API Error: Rate limited. Retry later.",
        "retryable": True, "native_data": {"errorKind": "rate_limit"}}


async def one_turn(steps: list[dict[str, Any]], *, capable: bool, **script: Any) -> tuple[Any, Any, str]:
    async with run_in_process(make_spec({"turns": [steps], **script})) as client:
        await client.initialize(capable=capable)
        session_id = await client.new_session(CWD)
        try:
            result: Any = await client.prompt(session_id, "hi")
        except RpcError as exc:
            result = exc
        return result, client, session_id


async def test_initialize_advertises_extension_only_to_capable_clients() -> None:
    async with run_in_process(make_spec({})) as client:
        capable = await client.initialize(capable=True)
    assert capable["_meta"]["jetbrains"]["air"] == {"version": 1, "capabilities": ["sessionFailure"]}
    assert capable["agentCapabilities"]["loadSession"] is True
    assert capable["agentCapabilities"]["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}, "fork": {}}
    async with run_in_process(make_spec({})) as client:
        legacy = await client.initialize(meta={"jetbrains": {"air": {"version": "1", "capabilities": ["sessionFailure"]}}})
    assert "sessionFailure" not in json.dumps(legacy)


async def test_text_streams_and_turn_ends() -> None:
    result, client, session_id = await one_turn([{"thought": "hmm"}, {"text": "hello"}], capable=True)
    assert result == {"stopReason": "end_turn"}
    kinds = [update["sessionUpdate"] for update in client.session_updates(session_id)]
    assert kinds == ["agent_thought_chunk", "agent_message_chunk"]


async def test_capable_failure_rides_on_the_prompt_result_and_is_not_duplicated() -> None:
    result, client, _ = await one_turn([{"text": "partial"}, {"fail": RATE}], capable=True)
    record = result["_meta"]["jetbrains"]["air"]["sessionFailure"]
    assert result["stopReason"] == "end_turn"
    assert result["_meta"]["jetbrains"]["air"]["version"] == 1
    assert record["id"].endswith(":error")
    assert record == {"id": record["id"], "revision": 1, "category": "limit", "severity": "error",
                      "title": "API Error: Rate limited. Retry later.", "actions": ["retry"]}
    assert client.failure_records() == [record]


async def test_retry_warnings_then_error_share_one_id() -> None:
    steps = [{"retry": "Retrying Claude, attempt 1 of 2.", "kind": "rate_limited"},
             {"retry": "Retrying Claude, attempt 2 of 2.", "kind": "rate_limited"}, {"fail": RATE}]
    _, client, session_id = await one_turn(steps, capable=True)
    records = client.failure_records()
    assert [(r["revision"], r["severity"], r["actions"]) for r in records] == [
        (1, "warning", []), (2, "warning", []), (3, "error", ["retry"])]
    assert len({r["id"] for r in records}) == 1
    assert records[0]["title"] == "Retrying Claude, attempt 1 of 2."
    warnings = [u for u in client.session_updates(session_id) if u["sessionUpdate"] == "session_info_update"]
    assert len(warnings) == 2


async def test_legacy_client_gets_baseline_error_and_never_the_extension() -> None:
    steps = [{"retry": "Retrying", "kind": "rate_limited"}, {"notice": "heads up", "legacy": "Warning: heads up\n\n"},
             {"fail": RATE}]
    result, client, session_id = await one_turn(steps, capable=False)
    assert isinstance(result, RpcError)
    assert result.code == -32603
    # spec/004: the vendor's message, then the recovery sentence a baseline client can act on
    assert result.message == "API Error: Rate limited. Retry later. Wait a moment before trying again."
    assert result.data == {"errorKind": "rate_limit", "failure": {
        "kind": "rate_limit", "source": "provider", "retryable": True, "outcome": "failed",
        "recovery": "Wait a moment before trying again."}}
    wire = json.dumps(client.frames)
    assert "sessionFailure" not in wire
    texts = [u["content"]["text"] for u in client.session_updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["Warning: heads up\n\n"]


async def test_auth_failure_is_minus_32000_for_legacy_and_login_for_capable() -> None:
    auth = {"kind": "auth_required", "native_kind": "authentication_failed", "title": "Not logged in · Please run /login"}
    legacy, _, _ = await one_turn([{"fail": auth}], capable=False)
    assert isinstance(legacy, RpcError)
    assert legacy.code == -32000
    capable, _, _ = await one_turn([{"fail": auth}], capable=True)
    record = capable["_meta"]["jetbrains"]["air"]["sessionFailure"]
    assert (record["category"], record["actions"]) == ("access", ["login"])


async def test_notices_reuse_ids_only_when_consecutive() -> None:
    steps = [{"notice": "Config warning"}, {"notice": "Config warning"}, {"text": "x"}, {"notice": "Config warning"}]
    _, client, session_id = await one_turn(steps, capable=True)
    records = client.failure_records()
    assert [r["revision"] for r in records] == [1, 2, 1]
    assert records[0]["id"] == records[1]["id"] != records[2]["id"]
    assert all(f"{session_id}:notice:" in r["id"] for r in records)
    assert all(r["severity"] == "warning" and r["category"] == "unknown" and r["actions"] == [] for r in records)


async def test_notice_without_legacy_text_is_invisible_to_legacy_clients() -> None:
    _, client, session_id = await one_turn([{"notice": "deprecated"}, {"text": "ok"}], capable=False)
    assert [u["sessionUpdate"] for u in client.session_updates(session_id)] == ["agent_message_chunk"]


async def test_long_vendor_text_splits_into_title_and_details() -> None:
    long_text = "The request was too large. " + "Reduce the attached files and try again. " * 10
    result, _, _ = await one_turn([{"fail": {"kind": "bad_request", "title": long_text}}], capable=True)
    record = result["_meta"]["jetbrains"]["air"]["sessionFailure"]
    assert record["title"] == "The request was too large."
    assert record["details"].startswith("Reduce the attached files")
    assert (record["category"], record["actions"]) == ("request", [])


async def test_session_failure_goes_out_as_session_info_update() -> None:
    steps = [{"session_failure": {"kind": "transport_lost", "title": "The connection to X was lost."}}, {"text": "ok"}]
    result, client, session_id = await one_turn(steps, capable=True)
    assert result == {"stopReason": "end_turn"}
    [record] = client.failure_records(session_id)
    assert record["id"].startswith(f"{session_id}:session-error:")
    assert record["actions"] == ["new_session"]


async def test_crash_becomes_internal_error_without_raw_text_or_secrets() -> None:
    result, client, _ = await one_turn([{"crash": True}], capable=False)
    assert isinstance(result, RpcError)
    assert result.message == ("The agent hit an internal error while running the turn. "
                              "Reload the session and check its state before trying again.")
    assert result.data["failure"]["kind"] == "internalError"
    assert result.data["failure"]["source"] == "adapter"
    assert "secret crash" not in json.dumps(client.frames)


async def test_cancel_returns_cancelled() -> None:
    async with run_in_process(make_spec({"turns": [[{"text": "working"}, {"wait_cancel": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def run() -> None:
                results.append(await client.prompt(session_id, "go"))

            tg.start_soon(run)
            while not client.session_updates(session_id):
                await anyio.wait_all_tasks_blocked()
            await client.notify("session/cancel", {"sessionId": session_id})
    assert results == [{"stopReason": "cancelled"}]


async def test_cancel_after_an_observed_failure_does_not_hide_it() -> None:
    steps = [{"record_fail": RATE}, {"text": "x"}, {"wait_cancel": True}]
    async with run_in_process(make_spec({"turns": [steps]})) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def run() -> None:
                results.append(await client.prompt(session_id, "go"))

            tg.start_soon(run)
            while not client.session_updates(session_id):
                await anyio.wait_all_tasks_blocked()
            await client.notify("session/cancel", {"sessionId": session_id})
    assert results[0]["stopReason"] == "end_turn"
    assert results[0]["_meta"]["jetbrains"]["air"]["sessionFailure"]["category"] == "limit"


async def test_permission_round_trip_allowed_and_rejected() -> None:
    script = {"turns": [[{"permission": "Run ls"}], [{"permission": "Run rm"}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        await client.prompt(session_id, "one")
        client.permission = lambda params: "reject"
        await client.prompt(session_id, "two")
        client.permission = lambda params: None
    texts = [u["content"]["text"] for u in client.session_updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["permission: allow", "permission: reject"]
    assert client.permission_requests[0]["toolCall"]["title"] == "Run ls"
    assert [o["kind"] for o in client.permission_requests[0]["options"]] == ["allow_once", "reject_once"]


async def test_bad_requests_get_clear_errors() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        with pytest.raises(RpcError) as relative:
            await client.request("session/new", {"cwd": "relative/path", "mcpServers": []})
        assert (relative.value.code, relative.value.data) == (-32602, {"field": "cwd"})
        with pytest.raises(RpcError) as missing:
            await client.request("session/new", {"cwd": os.path.join(CWD, "does-not-exist-acp"), "mcpServers": []})
        assert missing.value.code == -32602
        with pytest.raises(RpcError) as unknown:
            await client.prompt("no-such-session", "hi")
        assert unknown.value.code == -32002
        with pytest.raises(RpcError) as invalid:
            await client.request("session/prompt", {"sessionId": "x", "prompt": [{"type": "bogus"}]})
        assert invalid.value.code == -32602
        assert invalid.value.data == {"field": "params.prompt[0]"}
        with pytest.raises(RpcError) as no_field:
            await client.request("session/prompt", {"prompt": []})
        assert no_field.value.data == {"field": "params.sessionId"}


async def test_history_replay_capable_and_legacy() -> None:
    history = {"old-1": [
        {"user": "hello"},
        {"failure": {"kind": "quota_exhausted", "title": "You've hit your limit · resets 5pm"},
         "message_id": "m-2", "user_message_id": "u-1", "active": True},
        {"failure": {"kind": "quota_exhausted", "title": "You've hit your limit · resets 6pm"},
         "message_id": "m-3", "user_message_id": None},
    ]}
    async with run_in_process(make_spec({"history": history})) as client:
        await client.initialize(capable=True)
        await client.request("session/load", {"sessionId": "old-1", "cwd": CWD, "mcpServers": []})
    records = client.failure_records("old-1")
    assert [r["id"] for r in records] == ["u-1:error", "old-1:history-error:m-3"]
    assert records[0]["title"] == "You've hit your limit · resets 5pm"
    kinds = [u["sessionUpdate"] for u in client.session_updates("old-1")]
    assert kinds == ["user_message_chunk", "session_info_update", "session_info_update"]
    async with run_in_process(make_spec({"history": history})) as client:
        await client.initialize()
        await client.request("session/load", {"sessionId": "old-1", "cwd": CWD, "mcpServers": []})
        with pytest.raises(RpcError) as unknown:
            await client.request("session/load", {"sessionId": "nope", "cwd": CWD, "mcpServers": []})
        assert unknown.value.code == -32002
    assert "sessionFailure" not in json.dumps(client.frames)
    texts = [u["content"]["text"] for u in client.session_updates("old-1") if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["You've hit your limit · resets 5pm", "You've hit your limit · resets 6pm"]


async def test_notices_during_session_creation_arrive_after_the_session_exists() -> None:
    script = {"session_notices": [{"title": "Config warning: unknown key", "legacy": "Config warning: unknown key\n\n"}]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        while not client.failure_records():
            await anyio.wait_all_tasks_blocked()
    new_index = next(i for i, f in enumerate(client.frames) if "result" in f and "sessionId" in (f["result"] or {}))
    notice_index = next(i for i, f in enumerate(client.frames) if f.get("method") == "session/update")
    assert notice_index > new_index
    assert client.failure_records()[0]["id"].startswith(f"{session_id}:notice:")


async def test_deadline_in_preparing_is_a_baseline_error_for_session_new() -> None:
    async with run_in_process(make_spec({"hang_new_session": True}), deadlines=Deadlines(startup_ms=50)) as client:
        await client.initialize(capable=True)
        with pytest.raises(RpcError) as caught:
            await client.new_session(CWD)
    failure = caught.value.data["failure"]
    assert failure == {"kind": "deadlineExceeded", "source": "adapter", "outcome": "failed", "phase": "preparing",
                       "execution": "notSubmitted", "recovery": failure["recovery"]}
    assert "No model turn was submitted" in caught.value.message


async def test_deadline_in_submitting_is_possibly_submitted() -> None:
    async with run_in_process(make_spec({"turns": [[{"hang_submit": True}]]}), deadlines=Deadlines(submit_ms=50)) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        with pytest.raises(RpcError) as caught:
            await client.prompt(session_id, "go")
    failure = caught.value.data["failure"]
    assert (failure["phase"], failure["execution"], failure["outcome"]) == ("submitting", "possiblySubmitted", "unknown")


async def test_list_resume_close() -> None:
    async with run_in_process(make_spec({"history": {"old-1": []}})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        listed = await client.request("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
        await client.request("session/resume", {"sessionId": "old-1", "cwd": CWD, "mcpServers": []})
        assert client.session_updates("old-1") == []
        assert await client.request("session/close", {"sessionId": session_id}) == {}
        with pytest.raises(RpcError):
            await client.prompt(session_id, "gone")


async def test_auth_status_observations_per_session() -> None:
    auth = {"kind": "auth_required", "native_kind": "authentication_failed", "title": "Invalid API key"}
    script = {"turns": [[{"fail": auth}], [{"text": "fine"}]]}
    async with run_in_process(make_spec(script), environ={"SCRIPTED_API_KEY": "sk-test-123456"}) as client:
        init = await client.initialize(meta={"scripted/authStatus": 1})
        assert init["_meta"]["scripted/authStatus"] == {"configured": True, "source": "environment",
                                                        "verification": "unknown", "identity": "unknown"}
        first = await client.new_session(CWD)
        second = await client.new_session(CWD)
        with pytest.raises(RpcError):
            await client.prompt(first, "a")
        await client.prompt(second, "b")

    def statuses(session_id: str) -> list[dict[str, Any]]:
        return [u["_meta"]["scripted/authStatus"] for u in client.session_updates(session_id)
                if u["sessionUpdate"] == "session_info_update"]

    [rejected] = statuses(first)
    assert rejected["verification"] == "rejected"
    assert rejected["latestFailure"]["kind"] == "authentication_failed"
    [accepted] = statuses(second)
    assert accepted == {"configured": True, "source": "environment", "verification": "acceptedForTurn",
                        "identity": "unknown", "latestFailure": None}
    assert "sk-test-123456" not in json.dumps(client.frames)


async def test_second_prompt_while_running_is_queued_behind_it() -> None:
    """Issue 12: no longer refused; it runs once the first turn is over (tests/core/test_prompt_queue.py)."""
    async with run_in_process(make_spec({"turns": [[{"wait_cancel": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.prompt, session_id, "first")
            await anyio.wait_all_tasks_blocked()
            second: list[Any] = []

            async def prompt_second() -> None:
                second.append(await client.prompt(session_id, "second"))
            tg.start_soon(prompt_second)
            await anyio.wait_all_tasks_blocked()
            assert second == []
            await client.notify("session/cancel", {"sessionId": session_id})
        assert second == [{"stopReason": "cancelled"}]
        assert await client.prompt(session_id, "third") == {"stopReason": "end_turn"}


async def test_fork_creates_a_new_session() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        forked = await client.request("session/fork", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        assert forked["sessionId"] != session_id
        result = await client.prompt(forked["sessionId"], "hello fork")
        assert result == {"stopReason": "end_turn"}
        with pytest.raises(RpcError) as unknown:
            await client.request("session/fork", {"sessionId": "missing", "cwd": CWD, "mcpServers": []})
        assert unknown.value.code == -32002


async def test_client_provided_credentials_are_per_session_and_validated() -> None:
    secret = "sk-client-handed-0123456789"
    auth = {"kind": "auth_required", "native_kind": "authentication_failed", "title": f"Key {secret} was rejected"}
    async with run_in_process(make_spec({"turns": [[{"text": "ok"}], [{"fail": auth}]]})) as client:
        await client.initialize(meta={"scripted/authStatus": 1})
        given = await client.request("session/new", {"cwd": CWD, "mcpServers": [],
                                                     "_meta": {"scripted/credentials": {"SCRIPTED_API_KEY": secret}}})
        plain = await client.new_session(CWD)
        await client.prompt(given["sessionId"], "a")
        with pytest.raises(RpcError) as rejected:
            await client.prompt(given["sessionId"], "b")
        with pytest.raises(RpcError) as bad:
            await client.request("session/new", {"cwd": CWD, "mcpServers": [],
                                                 "_meta": {"scripted/credentials": {"PATH": "/evil"}}})
        await client.request("logout", {})
    statuses = [u["_meta"]["scripted/authStatus"] for u in client.session_updates(given["sessionId"])
                if "scripted/authStatus" in (u.get("_meta") or {})]
    assert [status["source"] for status in statuses] == ["clientProvider", "clientProvider"]
    assert [status["verification"] for status in statuses] == ["acceptedForTurn", "rejected"]
    assert plain != given["sessionId"]
    assert bad.value.code == -32602
    assert bad.value.data == {"field": "_meta.scripted/credentials"}
    assert secret not in json.dumps(client.frames)
    assert secret not in rejected.value.message


async def test_a_kept_creation_channel_reaches_the_session_after_it_exists() -> None:
    script = {"turns": [[{"late_notice": "Config reloaded"}, {"text": "ok"}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=True)
        first = await client.new_session(CWD)
        second = await client.new_session(CWD)
        await client.prompt(second, "go")
    [record] = client.failure_records(first)
    assert record["title"] == "Config reloaded"
    assert record["id"].startswith(f"{first}:notice:")


async def test_a_provider_may_adopt_its_own_turn_id_before_anything_is_published() -> None:
    script = {"turns": [[{"adopt": "backend-turn-7"}, {"retry": "Retrying"}, {"adopt": "too-late"}, {"fail": RATE}]]}
    result, client, _ = await one_turn([], capable=True, **script)
    ids = {record["id"] for record in client.failure_records()}
    assert ids == {"backend-turn-7:error"}
    assert result["_meta"]["jetbrains"]["air"]["sessionFailure"]["revision"] == 2


async def test_per_session_credentials_are_refused_where_the_provider_cannot_honour_them() -> None:
    import attrs

    spec = make_spec({})
    shared = attrs.evolve(spec, credentials=attrs.evolve(spec.credentials, per_session=False))
    async with run_in_process(shared) as client:
        await client.initialize()
        with pytest.raises(RpcError) as refused:
            await client.request("session/new", {"cwd": CWD, "mcpServers": [],
                                                 "_meta": {"scripted/credentials": {"SCRIPTED_API_KEY": "sk-x-123456"}}})
    assert refused.value.code == -32602
    assert "cannot use credentials for one session" in refused.value.message


async def test_model_content_after_a_retry_ends_the_retry_incident_internally() -> None:
    script = {"turns": [[{"retry": "Retrying, attempt 1 of 2.", "kind": "overloaded"}, {"text": "recovered"}],
                        [{"retry": "Retrying, attempt 1 of 2.", "kind": "overloaded"}, {"fail": RATE}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        assert client.agent is not None
        incidents = client.agent.sessions[session_id].incidents
        await client.prompt(session_id, "one")
        [recovered] = incidents.incidents.values()
        assert (recovered.severity, recovered.active) == ("warning", False)
        await client.prompt(session_id, "two")
    assert [incident.active for incident in incidents.incidents.values()] == [False, True]
    assert len(client.failure_records()) == 3  # no tombstone was sent for the recovered one


def _retry_then(kind: str, between: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"retry": "Retrying, attempt 1 of 3.", "kind": kind}, between, {"fail": RATE}]


@pytest.mark.parametrize("steps", [
    pytest.param(_retry_then("overloaded", {"text": "partial answer"}), id="model-answer"),
    pytest.param(_retry_then("rate_limited", {"signal": "attempt_boundary"}), id="attempt-boundary"),
    pytest.param(_retry_then("transport_lost", {"signal": "runtime_replaced"}), id="runtime-replaced"),
    pytest.param(_retry_then("auth_required", {"signal": "auth_confirmed"}), id="auth-confirmed"),
])
async def test_a_failure_after_the_turns_incident_recovered_is_a_new_incident(steps: list[dict[str, Any]]) -> None:
    """spec/000: a recovered incident is not reused; the later failure gets its own id and entry."""
    result, client, _ = await one_turn(steps, capable=True)
    warning, terminal = client.failure_records()
    assert warning["id"].endswith(":error") and (warning["severity"], warning["revision"]) == ("warning", 1)
    assert terminal == result["_meta"]["jetbrains"]["air"]["sessionFailure"]
    assert (terminal["id"], terminal["revision"]) == (f"{warning['id']}:2", 1)
    assert (terminal["severity"], terminal["actions"]) == ("error", ["retry"])


@pytest.mark.parametrize("steps", [
    pytest.param(_retry_then("auth_required", {"signal": "runtime_replaced"}), id="runtime-replaced-not-auth"),
    pytest.param(_retry_then("transport_lost", {"text": "partial answer"}), id="content-does-not-replace-a-runtime"),
    pytest.param(_retry_then("transport_lost", {"signal": "attempt_boundary"}), id="attempt-not-transport"),
    pytest.param(_retry_then("transport_lost", {"signal": "auth_confirmed"}), id="auth-confirmed-not-transport"),
    pytest.param(_retry_then("rate_limited", {"signal": "auth_confirmed"}), id="auth-confirmed-not-retry"),
    pytest.param(_retry_then("overloaded", {"notice": "Config warning"}), id="another-incident-is-no-evidence"),
    pytest.param(_retry_then("overloaded", {"session_failure": {"kind": "transport_lost"}}),
                 id="a-session-failure-is-no-evidence"),
])
async def test_evidence_of_another_kind_leaves_the_incident_active_and_the_failure_updates_it(
        steps: list[dict[str, Any]]) -> None:
    result, client, _ = await one_turn(steps, capable=True)
    turn_records = [r for r in client.failure_records() if r["id"].endswith(":error")]
    assert [(r["severity"], r["revision"]) for r in turn_records] == [("warning", 1), ("error", 2)]
    assert turn_records[0]["id"] == turn_records[1]["id"] == result["_meta"]["jetbrains"]["air"]["sessionFailure"]["id"]


async def test_retries_after_a_confirmed_attempt_are_a_new_incident_that_the_failure_updates() -> None:
    steps = [{"retry": "Retrying, attempt 1 of 3.", "kind": "overloaded"}, {"signal": "attempt_boundary"},
             {"retry": "Retrying, attempt 1 of 3.", "kind": "overloaded"},
             {"retry": "Retrying, attempt 2 of 3.", "kind": "overloaded"}, {"fail": RATE}]
    _, client, _ = await one_turn(steps, capable=True)
    records = client.failure_records()
    first = records[0]["id"]
    assert [(r["id"], r["revision"]) for r in records] == [
        (first, 1), (f"{first}:2", 1), (f"{first}:2", 2), (f"{first}:2", 3)]


@pytest.mark.parametrize(("kind", "actions"), [
    ("auth_required", ["login"]), ("transport_lost", ["new_session"]), ("overloaded", ["retry"]),
    ("context_exhausted", ["new_session"]),
])
async def test_a_warning_has_no_actions_while_the_backend_recovers(kind: str, actions: list[str]) -> None:
    """DESIGN §4: a warning's actions stay empty while recovery is in progress; the error has them."""
    steps = [{"retry": "Retrying, attempt 1 of 2.", "kind": kind}, {"fail": {"kind": kind, "title": "Gave up."}}]
    _, client, _ = await one_turn(steps, capable=True)
    assert [(r["severity"], r["actions"]) for r in client.failure_records()] == [("warning", []), ("error", actions)]
