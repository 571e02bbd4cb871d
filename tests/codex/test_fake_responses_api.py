"""Tests of the fake OpenAI Responses API itself (tests/fakes/responses_api.py), over urllib."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.responses_api import FakeResponsesAPI, classify_request

REPO_ROOT = Path(__file__).resolve().parents[2]
TURN_HEADERS = {"x-codex-turn-metadata": json.dumps({"request_kind": "turn", "turn_id": "t1"})}
EXEC_COMMAND_TOOL = {"type": "function", "name": "exec_command", "parameters": {}}


@pytest.fixture
def api() -> Iterator[FakeResponsesAPI]:
    with FakeResponsesAPI() as fake:
        yield fake


def post(
    api: FakeResponsesAPI,
    body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    path: str = "/responses",
) -> tuple[int, dict[str, str], bytes]:
    payload = {"model": "gpt-5.5", "stream": True, "input": [], **(body or {})}
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", **TURN_HEADERS, **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), _read_all(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


def _read_all(response: http.client.HTTPResponse) -> bytes:
    try:
        return response.read()
    except http.client.IncompleteRead as incomplete:
        return bytes(incomplete.partial)


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for block in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            event = json.loads(lines["data"])
            assert event["type"] == lines["event"]
            events.append(event)
    return events


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


@pytest.mark.timeout(30)
def test_reply_streams_openai_shaped_events(api: FakeResponsesAPI) -> None:
    api.set_script([{"reasoning": "Think first", "reply": "Hello there friend"}])
    status, headers, raw = post(api)
    events = sse_events(raw)
    kinds = [event["type"] for event in events]
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert "response.reasoning_summary_text.delta" in kinds
    assert text_of(events) == "Hello there friend"
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    assert completed["usage"]["output_tokens_details"]["reasoning_tokens"] > 0
    assert completed["usage"]["total_tokens"] == (completed["usage"]["input_tokens"] + completed["usage"]["output_tokens"])
    assert [item["type"] for item in completed["output"]] == ["reasoning", "message"]


@pytest.mark.timeout(30)
def test_script_is_consumed_in_order_then_replies_ok(api: FakeResponsesAPI) -> None:
    api.set_script([{"reply": "first"}, {"status": 500}, {"reply": "third"}])
    replies = []
    for _ in range(4):
        status, _headers, raw = post(api)
        replies.append((status, text_of(sse_events(raw)) if status == 200 else None))
    assert replies == [(200, "first"), (500, None), (200, "third"), (200, "ok")]
    assert api.remaining_steps == 0
    assert [request.step for request in api.turn_requests] == [
        {"reply": "first"},
        {"status": 500},
        {"reply": "third"},
        {"reply": "ok"},
    ]


@pytest.mark.timeout(30)
def test_side_requests_do_not_consume_steps(api: FakeResponsesAPI) -> None:
    api.set_script([{"reply": "for the turn"}])
    side = {"x-codex-turn-metadata": json.dumps({"request_kind": "compaction"})}
    _status, _headers, raw = post(api, headers=side)
    assert text_of(sse_events(raw)) == "Fake side reply"
    _status, _headers, raw = post(api)
    assert text_of(sse_events(raw)) == "for the turn"
    assert [request.kind for request in api.requests] == ["side", "turn"]
    assert api.side_requests[0].request_kind == "compaction"


def test_classify_request() -> None:
    assert classify_request("POST", "/v1/responses", TURN_HEADERS, {}) == "turn"
    assert classify_request("POST", "/v1/responses", {}, {"stream": True}) == "turn"
    assert classify_request("POST", "/v1/responses", {"X-OpenAI-Subagent": "review"}, {}) == "side"
    assert classify_request("POST", "/v1/responses", {}, {"stream": False}) == "side"
    assert classify_request("GET", "/v1/models", {}, None) == "other"
    assert classify_request("POST", "/v1/chat/completions", {}, {}) == "other"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("status", "code"),
    [(500, None), (429, "rate_limit_exceeded"), (401, "invalid_api_key"), (400, "invalid_request")],
)
def test_error_steps_return_openai_error_bodies(api: FakeResponsesAPI, status: int, code: str | None) -> None:
    api.set_script([{"status": status}])
    got, headers, raw = post(api)
    error = json.loads(raw)["error"]
    assert got == status
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code
    assert error["message"]
    assert headers["retry-after"] == "0"


@pytest.mark.timeout(30)
def test_error_step_fields_override_defaults(api: FakeResponsesAPI) -> None:
    api.set_script([{"status": 403, "message": "No access.", "code": "nope", "type": "auth"}])
    status, _headers, raw = post(api)
    assert status == 403
    assert json.loads(raw) == {"error": {"message": "No access.", "type": "auth", "param": None, "code": "nope"}}


@pytest.mark.timeout(30)
def test_usage_limit_is_a_429_usage_limit_reached(api: FakeResponsesAPI) -> None:
    api.set_script([{"usage_limit": True}])
    status, _headers, raw = post(api)
    error = json.loads(raw)["error"]
    assert status == 429
    assert error["type"] == "usage_limit_reached"
    assert isinstance(error["resets_at"], int)
    assert error["plan_type"] == "plus"


@pytest.mark.timeout(30)
def test_cut_stream_stops_before_completed_and_drops_the_connection(
    api: FakeResponsesAPI,
) -> None:
    api.set_script([{"cut_after_events": 5, "reply": "partial answer that is cut"}])
    request = urllib.request.Request(
        api.base_url + "/responses",
        data=json.dumps({"model": "m", "stream": True, "input": []}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with (
        urllib.request.urlopen(request, timeout=10) as response,
        pytest.raises(http.client.IncompleteRead) as incomplete,
    ):
        response.read()
    events = sse_events(bytes(incomplete.value.partial))
    assert len(events) == 5
    assert events[-1]["type"] == "response.output_text.delta"
    assert "response.completed" not in {event["type"] for event in events}


@pytest.mark.timeout(30)
def test_context_window_ends_in_response_failed(api: FakeResponsesAPI) -> None:
    api.set_script([{"context_window": True}])
    _status, _headers, raw = post(api)
    events = sse_events(raw)
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "context_length_exceeded"


@pytest.mark.timeout(30)
def test_shell_step_uses_the_offered_tool_form(api: FakeResponsesAPI) -> None:
    api.set_script(
        [
            {"shell": ["bash", "-lc", "echo hi"], "justification": "Allow it?"},
            {"shell": ["ls", "-la"]},
            {"shell": ["echo", "x"]},
        ]
    )
    shell_tool = {"type": "function", "name": "shell", "parameters": {}}
    bodies: list[dict[str, Any]] = [{"tools": [EXEC_COMMAND_TOOL]}, {"tools": [shell_tool]}, {"tools": []}]
    items = [sse_events(post(api, body)[2])[-1]["response"]["output"][0] for body in bodies]
    exec_call, shell_call, local_call = items
    assert exec_call["type"] == "function_call"
    assert exec_call["name"] == "exec_command"
    assert json.loads(exec_call["arguments"]) == {
        "cmd": "echo hi",
        "sandbox_permissions": "require_escalated",
        "justification": "Allow it?",
    }
    assert shell_call["name"] == "shell"
    assert json.loads(shell_call["arguments"]) == {"command": ["ls", "-la"]}
    assert local_call["type"] == "local_shell_call"
    assert local_call["action"]["command"] == ["echo", "x"]


@pytest.mark.timeout(30)
def test_apply_patch_and_plan_steps(api: FakeResponsesAPI) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    plan = [{"step": "Do it", "status": "in_progress"}]
    api.set_script([{"apply_patch": patch}, {"plan": plan, "explanation": "why"}])
    custom_tool = {"type": "custom", "name": "apply_patch"}
    patch_item = sse_events(post(api, {"tools": [custom_tool]})[2])[-1]["response"]["output"][0]
    plan_item = sse_events(post(api)[2])[-1]["response"]["output"][0]
    assert patch_item["type"] == "custom_tool_call"
    assert patch_item["input"] == patch
    assert plan_item["name"] == "update_plan"
    assert json.loads(plan_item["arguments"]) == {"plan": plan, "explanation": "why"}


@pytest.mark.timeout(30)
def test_slow_stream_sends_one_word_per_delta(api: FakeResponsesAPI) -> None:
    api.set_script([{"slow_stream": {"text": "a b c d", "interval_s": 0.01}}])
    events = sse_events(post(api)[2])
    deltas = [event["delta"] for event in events if event["type"] == "response.output_text.delta"]
    assert deltas == ["a", " b", " c", " d"]


@pytest.mark.timeout(30)
def test_stop_ends_a_slow_stream(api: FakeResponsesAPI) -> None:
    api.set_script([{"slow_stream": {"text": " ".join(["w"] * 1000), "interval_s": 0.05}}])
    results: list[bytes] = []
    reader = threading.Thread(target=lambda: results.append(post(api)[2]))
    reader.start()
    api.wait_for_requests(1)
    api.stop()
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert "response.completed" not in {event["type"] for event in sse_events(results[0])}


@pytest.mark.timeout(30)
def test_requests_are_recorded_with_headers_and_body(api: FakeResponsesAPI) -> None:
    post(api, {"tools": [EXEC_COMMAND_TOOL]}, headers={"Authorization": "Bearer sk-fake"})
    (recorded,) = api.wait_for_requests(1)
    assert recorded.method == "POST"
    assert recorded.path == "/v1/responses"
    assert recorded.headers["authorization"] == "Bearer sk-fake"
    assert recorded.tool_names == ["exec_command"]
    assert recorded.request_kind == "turn"
    with pytest.raises(TimeoutError):
        api.wait_for_requests(2, timeout=0.1)


@pytest.mark.timeout(30)
def test_models_endpoint_and_unknown_paths(api: FakeResponsesAPI) -> None:
    with urllib.request.urlopen(api.base_url + "/models", timeout=10) as response:
        assert response.status == 200
        assert json.loads(response.read())["data"][0]["id"]
    status, _headers, raw = post(api, path="/chat/completions")
    assert status == 404
    assert json.loads(raw)["error"]["code"] == "not_found"
    assert [request.kind for request in api.requests] == ["other", "other"]


@pytest.mark.timeout(30)
def test_runs_as_a_module() -> None:
    script = json.dumps([{"reply": "from the cli"}])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.responses_api", "--port", "0", "--script", script],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        request = urllib.request.Request(
            announced["base_url"] + "/responses",
            data=b'{"model": "m", "stream": true, "input": []}',
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert text_of(sse_events(response.read())) == "from the cli"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_a_held_answer_completes_only_once_released(api: FakeResponsesAPI) -> None:
    api.set_script([{"reply": "held answer", "hold": True}])
    answers: list[bytes] = []
    thread = threading.Thread(target=lambda: answers.append(post(api)[2]))
    thread.start()
    assert api.held.wait(10)
    [request] = api.wait_for_requests(1)
    assert not request.ended.is_set() and answers == []
    api.release()
    thread.join(10)
    [raw] = answers
    events = sse_events(raw)
    assert events[-1]["type"] == "response.completed"
    assert request.wait_ended(10) == "completed"


def test_a_held_answer_ends_when_the_client_hangs_up(api: FakeResponsesAPI) -> None:
    api.set_script([{"reply": "held answer", "hold": True}])
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    body = json.dumps({"model": "gpt-5.5", "stream": True, "input": []})
    connection.request("POST", "/v1/responses", body=body,
                       headers={"content-type": "application/json", **TURN_HEADERS})
    response = connection.getresponse()
    assert api.held.wait(10)
    response.close()
    connection.close()
    [request] = api.wait_for_requests(1)
    assert request.wait_ended(10) == "disconnected"
