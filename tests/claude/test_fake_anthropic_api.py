"""Tests of the loopback fake Anthropic Messages API itself (no Claude Code CLI involved)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import (
    FakeAnthropicAPI,
    classify_request,
    expand_script,
    gateway_token,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}]


def turn_body(text: str = "hello", *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    """A request shaped like the CLI's main-loop call (tools offered, system message last)."""
    body: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "max_tokens": 1024,
        "stream": stream,
        "tools": TOOLS,
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": text}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment"}]},
        ],
    }
    body.update(extra)
    return body


def title_body() -> dict[str, Any]:
    """The CLI's session-title side request: no tools, JSON-schema structured output."""
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 1024,
        "stream": True,
        "tools": [],
        "output_config": {"effort": "medium", "format": {"type": "json_schema", "schema": schema}},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "<session>\nhello\n</session>"}]}],
    }


def suggestion_body() -> dict[str, Any]:
    """The CLI's prompt-suggestion side request: a fork of the conversation that keeps the tools."""
    body = turn_body()
    body["messages"].append(
        {"role": "user", "content": [{"type": "text", "text": "[SUGGESTION MODE: Suggest what the user might type.]"}]}
    )
    return body


def post(api: FakeAnthropicAPI, body: dict[str, Any], path: str = "/v1/messages?beta=true") -> tuple[int, Any, bytes]:
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "sk-ant-test-unit"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def text_of(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        data["delta"]["text"] for name, data in events if name == "content_block_delta" and data["delta"]["type"] == "text_delta"
    )


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI() as fake:
        yield fake


def open_stream(api: FakeAnthropicAPI, body: dict[str, Any]) -> tuple[http.client.HTTPConnection, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=20)
    connection.request("POST", "/v1/messages", body=json.dumps(body), headers={"content-type": "application/json"})
    return connection, connection.getresponse()


def read_events(response: Any, count: int) -> list[str]:
    """Read `count` SSE events line by line from a live chunked response; return their names."""
    names: list[str] = []
    while len(names) < count:
        line = response.readline().decode()
        if line.startswith("event: "):
            names.append(line[len("event: ") :].strip())
    # consume the rest of the last event (its data line and the blank line ending it)
    while response.readline() not in (b"\n", b""):
        pass
    return names


@pytest.mark.timeout(30)
def test_streams_a_reply_like_anthropic(api: FakeAnthropicAPI) -> None:
    api.set_script([{"reply": "Hello there, world."}])
    status, headers, raw = post(api, turn_body())
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    events = parse_sse(raw)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert names.count("content_block_delta") > 1  # several deltas
    assert text_of(events) == "Hello there, world."
    start = events[0][1]["message"]
    assert (start["role"], start["model"], start["content"]) == ("assistant", "claude-opus-5-5", [])
    delta = dict(events)["message_delta"]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] > 0
    [record] = api.wait_for(1, finished=True)
    assert (record.kind, record.reason, record.step, record.outcome) == (
        "turn",
        "tools offered",
        {"reply": "Hello there, world."},
        "completed",
    )


@pytest.mark.timeout(30)
def test_script_is_consumed_in_order_then_ok(api: FakeAnthropicAPI) -> None:
    api.set_script([{"reply": "one"}, {"reply": "two"}])
    texts = [text_of(parse_sse(post(api, turn_body())[2])) for _ in range(3)]
    assert texts == ["one", "two", "ok"]
    assert api.remaining_steps == 0


@pytest.mark.timeout(30)
def test_set_script_between_prompts_replaces_remaining_steps(api: FakeAnthropicAPI) -> None:
    api.set_script([{"reply": "first"}, {"reply": "never served"}])
    assert text_of(parse_sse(post(api, turn_body())[2])) == "first"
    api.set_script([{"reply": "second prompt"}])
    assert text_of(parse_sse(post(api, turn_body())[2])) == "second prompt"
    api.extend_script([{"reply": "third"}])
    assert text_of(parse_sse(post(api, turn_body())[2])) == "third"


@pytest.mark.timeout(30)
def test_side_requests_do_not_consume_steps(api: FakeAnthropicAPI) -> None:
    api.set_script([{"status": 529}])
    status, _, raw = post(api, title_body())
    assert status == 200
    assert json.loads(text_of(parse_sse(raw))) == {"title": "Fake session title"}
    status, _, raw = post(api, suggestion_body())
    assert status == 200
    assert text_of(parse_sse(raw)) == "ok"
    no_tools = turn_body()
    del no_tools["tools"]
    assert post(api, no_tools)[0] == 200
    assert api.remaining_steps == 1
    assert post(api, turn_body())[0] == 529
    kinds = [(request.kind, request.step) for request in api.requests]
    assert kinds == [("side", None), ("side", None), ("side", None), ("turn", {"status": 529})]
    assert [request.kind for request in api.side_requests] == ["side"] * 3
    assert len(api.turn_requests) == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("method", "path", "body", "expected"),
    [
        ("POST", "/v1/messages", turn_body(), "turn"),
        ("POST", "/v1/messages?beta=true", turn_body(stream=False), "turn"),
        ("POST", "/v1/messages", title_body(), "side"),
        ("POST", "/v1/messages", suggestion_body(), "side"),
        ("POST", "/v1/messages", turn_body(tools=[]), "side"),
        ("POST", "/v1/messages", turn_body(tools=[], context_management={"edits": []}), "turn"),
        ("POST", "/v1/messages", turn_body(output_config={"format": {"type": "json_schema"}}), "side"),
        (
            "POST",
            "/v1/messages",
            turn_body("Your task is to create a detailed summary of the conversation so far."),
            "side",
        ),
        ("POST", "/v1/messages", turn_body("please explain [SUGGESTION MODE in docs"), "turn"),
        ("POST", "/v1/messages", None, "side"),
        ("POST", "/v1/messages/count_tokens", turn_body(), "other"),
        ("GET", "/v1/models", None, "other"),
    ],
)
def test_classify_request(method: str, path: str, body: dict[str, Any] | None, expected: str) -> None:
    assert classify_request(method, path, body)[0] == expected


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("status", "error_type", "retry_after"),
    [
        (429, "rate_limit_error", "0"),
        (529, "overloaded_error", "0"),
        (500, "api_error", None),
        (401, "authentication_error", None),
        (400, "invalid_request_error", None),
        (403, "permission_error", None),
        (413, "request_too_large", None),
    ],
)
def test_error_steps_answer_with_anthropic_error_bodies(
    api: FakeAnthropicAPI, status: int, error_type: str, retry_after: str | None
) -> None:
    api.set_script([{"status": status}])
    code, headers, raw = post(api, turn_body())
    assert code == status
    body = json.loads(raw)
    assert body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert body["error"]["message"]
    assert body["request_id"] == headers["request-id"]
    assert headers.get("retry-after") == retry_after
    assert api.wait_for(1, finished=True)[0].outcome == "error"


@pytest.mark.timeout(30)
def test_error_type_and_message_can_be_chosen(api: FakeAnthropicAPI) -> None:
    api.set_script([{"status": 400, "error_type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}])
    code, _, raw = post(api, turn_body())
    assert code == 400
    assert json.loads(raw)["error"] == {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}


@pytest.mark.timeout(30)
def test_usage_limit_step_sends_unified_rate_limit_headers(api: FakeAnthropicAPI) -> None:
    api.set_script([{"usage_limit": True, "claim": "seven_day", "overage_disabled_reason": "org_spend_cap_reached"}])
    code, headers, raw = post(api, turn_body())
    assert code == 429
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    assert headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert headers["anthropic-ratelimit-unified-representative-claim"] == "seven_day"
    assert int(headers["anthropic-ratelimit-unified-reset"]) > 0
    assert headers["anthropic-ratelimit-unified-overage-disabled-reason"] == "org_spend_cap_reached"
    assert headers["x-should-retry"] == "false"


@pytest.mark.timeout(30)
def test_gateway_token_is_an_unsigned_jwt_for_the_gateway_audience() -> None:
    import base64

    header, payload, signature = gateway_token().split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["aud"] == "claude-gateway"
    assert signature == "fake-signature"
    assert header


@pytest.mark.timeout(30)
def test_cut_stream_closes_after_n_events(api: FakeAnthropicAPI) -> None:
    api.set_script([{"cut_after_events": 4, "reply": "this is never finished"}])
    connection, response = open_stream(api, turn_body())
    assert response.status == 200
    with pytest.raises(http.client.IncompleteRead) as caught:
        response.read()
    connection.close()
    events = parse_sse(caught.value.partial)
    assert [name for name, _ in events] == ["message_start", "content_block_start", "ping", "content_block_delta"]
    [record] = api.wait_for(1, finished=True)
    assert record.outcome == "cut"


@pytest.mark.timeout(30)
def test_cut_applies_to_the_non_streaming_fallback_too(api: FakeAnthropicAPI) -> None:
    api.set_script([{"cut_after_events": 2}])
    connection, response = open_stream(api, turn_body(stream=False))
    assert response.status == 200
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    connection.close()
    assert api.wait_for(1, finished=True)[0].outcome == "cut"


@pytest.mark.timeout(30)
def test_non_streaming_request_gets_one_json_message(api: FakeAnthropicAPI) -> None:
    api.set_script([{"thinking": "hmm", "reply": "Done.", "stop_reason": "max_tokens"}])
    code, headers, raw = post(api, turn_body(stream=False))
    assert code == 200
    assert headers["content-type"] == "application/json"
    message = json.loads(raw)
    assert (message["type"], message["role"]) == ("message", "assistant")
    assert [block["type"] for block in message["content"]] == ["thinking", "text"]
    assert message["content"][1]["text"] == "Done."
    assert message["stop_reason"] == "max_tokens"


@pytest.mark.timeout(30)
def test_thinking_and_tool_use_blocks(api: FakeAnthropicAPI) -> None:
    tool_input = {"command": "ls -la", "description": "List files"}
    api.set_script(
        [
            {
                "thinking": "I should list the files.",
                "reply": "Listing.",
                "tool_use": {"name": "Bash", "input": tool_input},
            },
        ]
    )
    events = parse_sse(post(api, turn_body())[2])
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [block["type"] for block in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["name"] == "Bash"
    assert starts[2]["id"].startswith("toolu_")
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta") == "I should list the files."
    assert any(d["type"] == "signature_delta" for d in deltas)
    assert json.loads("".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")) == tool_input
    assert dict(events)["message_delta"]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.timeout(30)
def test_refusal_and_custom_stop_reason(api: FakeAnthropicAPI) -> None:
    api.set_script([{"reply": "", "stop_reason": "refusal"}])
    events = parse_sse(post(api, turn_body())[2])
    assert dict(events)["message_delta"]["delta"]["stop_reason"] == "refusal"


@pytest.mark.timeout(30)
def test_stream_error_event(api: FakeAnthropicAPI) -> None:
    api.set_script([{"stream_error": "overloaded_error", "message": "Overloaded"}])
    events = parse_sse(post(api, turn_body())[2])
    assert [name for name, _ in events] == ["message_start", "error"]
    assert events[1][1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert api.wait_for(1, finished=True)[0].outcome == "stream_error"


@pytest.mark.timeout(30)
def test_times_repeats_a_step_and_bad_steps_are_rejected(api: FakeAnthropicAPI) -> None:
    assert expand_script([{"status": 529, "times": 3}, {"reply": "x"}]) == [{"status": 529}] * 3 + [{"reply": "x"}]
    with pytest.raises(ValueError, match="unknown step keys"):
        api.set_script([{"replly": "typo"}])
    with pytest.raises(ValueError, match="tool_use needs a name"):
        api.set_script([{"tool_use": {"input": {}}}])


@pytest.mark.timeout(30)
def test_delayed_first_byte_still_answers(api: FakeAnthropicAPI) -> None:
    api.set_script([{"delay_first_byte_s": 0.05, "reply": "late"}])
    assert text_of(parse_sse(post(api, turn_body())[2])) == "late"


@pytest.mark.timeout(30)
def test_slow_stream_sends_one_word_per_delta(api: FakeAnthropicAPI) -> None:
    api.set_script([{"slow_stream": {"text": "one two three", "interval_s": 0.01}}])
    events = parse_sse(post(api, turn_body())[2])
    deltas = [data["delta"]["text"] for name, data in events if name == "content_block_delta"]
    assert deltas == ["one", " two", " three"]


@pytest.mark.timeout(30)
def test_hang_holds_the_stream_until_released(api: FakeAnthropicAPI) -> None:
    api.set_script([{"hang_after_events": 2, "reply": "held answer"}])
    connection, response = open_stream(api, turn_body())
    assert read_events(response, 2) == ["message_start", "content_block_start"]
    assert api.requests[0].outcome == "pending"
    api.release()
    rest = parse_sse(response.read())
    connection.close()
    assert text_of(rest) == "held answer"
    assert api.wait_for(1, finished=True)[0].outcome == "released"


@pytest.mark.timeout(30)
def test_hang_notices_a_client_disconnect(api: FakeAnthropicAPI) -> None:
    api.set_script([{"hang_after_events": 1}])
    connection, response = open_stream(api, turn_body())
    assert read_events(response, 1) == ["message_start"]
    response.close()
    connection.close()
    assert api.wait_for(1, finished=True)[0].outcome == "disconnected"


@pytest.mark.timeout(30)
def test_other_endpoints(api: FakeAnthropicAPI) -> None:
    code, _, raw = post(api, turn_body(), path="/v1/messages/count_tokens?beta=true")
    assert code == 200
    assert json.loads(raw)["input_tokens"] > 0
    with urllib.request.urlopen(api.base_url + "/v1/models", timeout=20) as response:
        models = json.loads(response.read())
    assert models["data"]
    assert models["has_more"] is False
    code, _, raw = post(api, {}, path="/v1/unknown")
    assert code == 404
    assert json.loads(raw)["error"]["type"] == "not_found_error"
    assert [request.kind for request in api.requests] == ["other", "other", "other"]
    assert api.remaining_steps == 0


@pytest.mark.timeout(30)
def test_standalone_server_prints_its_url_and_logs_requests() -> None:
    script = json.dumps([{"reply": "from the standalone fake"}])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.anthropic_api", "--port", "0", "--script", script],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stderr is not None
        started = json.loads(process.stdout.readline())
        request = urllib.request.Request(
            started["base_url"] + "/v1/messages",
            data=json.dumps(turn_body()).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            assert text_of(parse_sse(response.read())) == "from the standalone fake"
        logged = json.loads(process.stderr.readline())
        assert (logged["kind"], logged["step"]) == ("turn", {"reply": "from the standalone fake"})
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_for_prompt_step_answers_only_its_prompt() -> None:
    from tests.fakes.anthropic_api import DEFAULT_STEP, FakeAnthropicAPI

    def body(prompt: str) -> dict[str, object]:
        return {"messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]}

    api = FakeAnthropicAPI([{"reply": "main"}, {"for_prompt": "find files", "reply": "sub"}, {"reply": "later"}])
    assert api.take_step(body("go"))["reply"] == "main"
    assert api.take_step(body("find files"))["reply"] == "sub"
    assert api.take_step(body("find files"))["reply"] == "later"  # no step of its own left: the next
    assert api.take_step(body("go")) == DEFAULT_STEP
