"""A loopback fake of the OpenAI Responses API that the real `codex app-server` can talk to.

It owns an HTTP server on 127.0.0.1 (ephemeral port, background thread) that answers
`POST <base_url>/responses` with Server-Sent Events shaped like OpenAI's, answers
`GET <base_url>/models` plausibly, and serves each *turn* request the next step of a fault script.
It must not know anything about the app-server protocol or about acp-agent: it only imitates the
model API. Findings about how codex 0.163 talks to it are in `tests/codex/fixtures/README.md`.

Steps (consumed in order by turn requests; side requests never consume one):

- `{"reply": "text"}`, `{"reasoning": "...", "reply": "..."}`: a normal answer (reasoning summary
  deltas, then output-text deltas, then `response.completed` with usage). In codex's plan mode a
  reply's `<proposed_plan>` block (tags on lines of their own) is what codex turns into a plan item.
- `{"shell": ["bash", "-lc", "echo hi"]}`: a call of codex's shell tool in whichever form the
  request's `tools` offer (`exec_command` for codex 0.163; `shell_command`, `shell` or
  `local_shell` for other versions). Optional `"justification"` asks for
  `sandbox_permissions: "require_escalated"` (that is what makes codex ask for approval in
  `workspace-write` + `on-request`). An optional `"reply"` is streamed before the call.
- `{"apply_patch": "*** Begin Patch ..."}`: a call of codex's apply_patch tool (freeform or JSON).
- `{"plan": [{"step": "...", "status": "in_progress"}], "explanation": "..."}`: `update_plan`.
- `{"function_call": {"name": "...", "arguments": {...}}}`: any other function call; with
  `"namespace": "mcp__<server>"` a call of a tool in a `namespace` tool (how codex 0.163 offers an
  MCP server's tools when the model has no `tool_search`: for a model slug outside its catalog).
  Codex's multi-agent tools are in the namespace `multi_agent_v1` (`spawn_agent {message}`,
  `wait_agent {targets}`, `send_input`, `close_agent`); the string `"<agent_id>"` in the arguments
  stands for the agent id of the last `spawn_agent` output the request carries (a `wait_agent`
  for the child the turn spawned).
- `{"status": 500, "message": "...", "code": "...", "type": "..."}`: an HTTP error with OpenAI's
  error body `{"error": {"message", "type", "param", "code"}}` and `retry-after: 0`, so codex
  retries at once.
- `{"cut_after_events": N}` (optionally with `"reply"`): the first N SSE events of the answer,
  then the connection is closed mid-body, before `response.completed`.
- `{"usage_limit": true}`: HTTP 429 with `{"error": {"type": "usage_limit_reached", ...}}`.
- `{"context_window": true}`: a stream ending in `response.failed` with
  `code: context_length_exceeded`.
- `{"failed": {"code": "...", "message": "..."}}`: a stream ending in `response.failed`.
- `{"slow_stream": {"text": "...", "interval_s": 0.05}}`: one word per delta, paced.
- `{"echo": true}`: the answer is `echo: <prompt>`, the prompt being the last `input_text` of the
  request's last user message that is not one of codex's own `<...>` context blocks: a model that
  answers the prompt it received, so a test sees which turn an answer belongs to. With
  `slow_stream` the echo is streamed slowly, then the slow text follows.

- `{"hold": true}` (with any answer step, e.g. `{"echo": true, "hold": true}`): the answer is
  streamed, then the response stays open (no `response.completed`) until the test calls
  `release()` once for it, the client disconnects, or the fake stops: a turn that is still running
  while a test sends a follow-up prompt or a steer. `held` is set once a held answer is out.

Side requests (sub-agents, memory, compaction) are answered with a fixed text, except the model
requests of the child threads codex's `spawn_agent` starts (`x-openai-subagent: collab_spawn`)
when the fake was made with `subagents=[steps]`: they are served those steps in order (as turn
requests are the script's; then the fixed text again), and codex's
automatic approval reviewer (`x-openai-subagent: guardian`, a `codex_output_schema` JSON answer)
when the fake was made with `review="allow"` or `"deny"`: then it answers that verdict as the JSON
its schema asks for (`outcome`, `risk_level`, `user_authorization`, `rationale`).
`reviews` lists the reviewer requests received.

Every step may also carry `"first_byte_delay_s": X` (a delay before the response headers).
When the script is exhausted, every turn request is answered as `{"reply": "ok"}`.

Run standalone: `python -m tests.fakes.responses_api --port 0 --script '[{"reply": "hi"}]'`;
it prints one JSON line `{"base_url": ..., "port": ...}` and serves until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import itertools
import json
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import FrameType
from typing import Any, Final, Literal

from tests.fakes.loopback import LoopbackFake, LoopbackServer

JsonObject = dict[str, Any]
Step = Mapping[str, Any]
RequestKind = Literal["turn", "side", "other"]

DEFAULT_STEP: Final[Step] = {"reply": "ok"}
SIDE_REPLY: Final[str] = "Fake side reply"
FAKE_MODEL: Final[str] = "gpt-fake"
TURN_METADATA_HEADER: Final[str] = "x-codex-turn-metadata"
SIDE_REQUEST_HEADERS: Final[tuple[str, ...]] = ("x-openai-subagent", "x-openai-memgen-request")
SPAWNED_SUBAGENT: Final[str] = "collab_spawn"
"""`x-openai-subagent` of a child thread's model request (codex's `spawn_agent`)."""
AGENT_ID: Final[str] = "<agent_id>"
SHELL_WRAPPER_FLAGS: Final[tuple[str, ...]] = ("-lc", "-c")
CONTEXT_WINDOW_MESSAGE: Final[str] = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
SHUTDOWN_POLL_INTERVAL_S: Final[float] = 0.02
HOLD_POLL_S: Final[float] = 0.02
"""How often a held answer checks for the client hanging up (a poll of the fake, not a test wait)."""
FAST_RETRY_HEADERS: Final[Mapping[str, str]] = {"retry-after": "0", "retry-after-ms": "0"}

_DEFAULT_ERRORS: Final[Mapping[int, tuple[str, str, str | None]]] = {
    400: ("Invalid request: fake bad request.", "invalid_request_error", "invalid_request"),
    401: (
        "Incorrect API key provided: sk-fake***. You can find your API key at the dashboard.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    403: ("You are not allowed to access this resource.", "invalid_request_error", "forbidden"),
    404: ("The model `gpt-fake` does not exist.", "invalid_request_error", "model_not_found"),
    429: (
        "Rate limit reached for requests. Please try again in 0s.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: ("The server had an error while processing your request.", "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: (
        "The server is overloaded. Please try again later.",
        "server_error",
        "server_is_overloaded",
    ),
}

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):08x}fake"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the fake received, and the step it was served (None: not scripted)."""

    method: str
    path: str
    headers: dict[str, str]
    body: JsonObject | None
    kind: RequestKind
    step: Step | None
    received_at: float = field(default_factory=time.monotonic)
    ended: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set once the answer is over: written to its end, or cut off because the client went away."""
    outcomes: list[str] = field(default_factory=list, compare=False, repr=False)
    """`completed` or `disconnected` (the client closed the connection mid-answer), once ended."""

    def wait_ended(self, timeout: float) -> str:
        """Block until the answer is over; its outcome (raises `TimeoutError` if it goes on)."""
        if not self.ended.wait(timeout):
            raise TimeoutError(f"the answer to {self.path} was still being written after {timeout}s")
        return self.outcomes[0]

    @property
    def tool_names(self) -> list[str]:
        """Names (or types, for built-in tools) of the tools offered in a responses request."""
        tools = (self.body or {}).get("tools") or []
        return [_tool_name(tool) for tool in tools if isinstance(tool, dict)]

    @property
    def request_kind(self) -> str | None:
        """Codex's own `request_kind` (`turn`, `compaction`, ...) from its metadata header."""
        return _request_kind(self.headers)


def _tool_name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("name") or tool.get("type"))


def _request_kind(headers: Mapping[str, str]) -> str | None:
    raw = headers.get(TURN_METADATA_HEADER)
    if not raw:
        return None
    try:
        metadata = json.loads(raw)
    except json.JSONDecodeError:
        return None
    kind = metadata.get("request_kind") if isinstance(metadata, dict) else None
    return str(kind) if kind is not None else None


def classify_request(method: str, path: str, headers: Mapping[str, str], body: JsonObject | None) -> RequestKind:
    """Say whether a request is the turn's own model call (`turn`), a side call, or other.

    Codex 0.163 sends a JSON `x-codex-turn-metadata` header on every model call; its
    `request_kind` is `"turn"` for the turn's own sampling requests and something else (e.g.
    `"compaction"`) for auxiliary ones. Sub-agent and memory calls also carry
    `x-openai-subagent` / `x-openai-memgen-request`.
    """
    if method != "POST" or not path.rstrip("/").endswith("/responses"):
        return "other"
    lowered = {key.lower(): value for key, value in headers.items()}
    if any(name in lowered for name in SIDE_REQUEST_HEADERS):
        return "side"
    if _request_kind(lowered) not in (None, "turn"):
        return "side"
    if body is not None and body.get("stream") is False:
        return "side"
    return "turn"


def error_body(message: str, error_type: str, code: str | None, **extra: object) -> bytes:
    """OpenAI's error envelope: `{"error": {"message", "type", "param", "code", ...}}`."""
    error: JsonObject = {"message": message, "type": error_type, "param": None, "code": code}
    error.update(extra)
    return json.dumps({"error": error}).encode()


def _pieces(text: str) -> Iterator[str]:
    """Split text into word-sized deltas that concatenate back to the text."""
    start = 0
    for index, char in enumerate(text):
        if char == " " and index > start:
            yield text[start:index]
            start = index
    if start < len(text) or not text:
        yield text[start:]


def _response_object(response_id: str, model: str, status: str, output: list[JsonObject]) -> JsonObject:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }


class _SseWriter:
    """Writes SSE events as HTTP/1.1 chunks; stops silently after `limit` events (a cut)."""

    def __init__(self, handler: BaseHTTPRequestHandler, limit: int | None) -> None:
        self._handler = handler
        self._limit = limit
        self.sequence = 0
        self.cut = False

    def event(self, payload: JsonObject) -> None:
        if self.cut:
            return
        if self._limit is not None and self.sequence >= self._limit:
            self.cut = True
            return
        payload = {"type": payload["type"], "sequence_number": self.sequence, **payload}
        self.sequence += 1
        data = f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()
        self._handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self._handler.wfile.flush()

    def finish(self) -> None:
        """End the chunked body properly, or, after a cut, drop the connection mid-body."""
        if self.cut:
            self._handler.close_connection = True
            self._handler.connection.shutdown(socket.SHUT_RDWR)
            return
        self._handler.wfile.write(b"0\r\n\r\n")
        self._handler.wfile.flush()


class _Stream:
    """Builds one streamed response out of output items, event by event."""

    def __init__(self, writer: _SseWriter, model: str, stopping: threading.Event) -> None:
        self.writer = writer
        self.model = model
        self.response_id = _new_id("resp")
        self.output: list[JsonObject] = []
        self._stopping = stopping

    @property
    def has_answer(self) -> bool:
        return any(item["type"] != "reasoning" for item in self.output)

    def _item(self, added: JsonObject, done: JsonObject, between: Sequence[JsonObject]) -> None:
        index = len(self.output)
        self.writer.event({"type": "response.output_item.added", "output_index": index, "item": added})
        for event in between:
            self.writer.event({**event, "output_index": index})
        self.writer.event({"type": "response.output_item.done", "output_index": index, "item": done})
        self.output.append(done)

    def created(self) -> None:
        response = _response_object(self.response_id, self.model, "in_progress", [])
        self.writer.event({"type": "response.created", "response": response})
        self.writer.event({"type": "response.in_progress", "response": response})

    def reasoning(self, summary: str) -> None:
        item_id = _new_id("rs")
        where = {"item_id": item_id, "summary_index": 0}
        empty = {"type": "summary_text", "text": ""}
        events = [
            {"type": "response.reasoning_summary_part.added", **where, "part": empty},
            *({"type": "response.reasoning_summary_text.delta", **where, "delta": piece} for piece in _pieces(summary)),
            {"type": "response.reasoning_summary_text.done", **where, "text": summary},
            {
                "type": "response.reasoning_summary_part.done",
                **where,
                "part": {**empty, "text": summary},
            },
        ]
        added = {"id": item_id, "type": "reasoning", "summary": []}
        done = {**added, "summary": [{"type": "summary_text", "text": summary}]}
        self._item(added, done, events)

    def message(self, text: str, interval_s: float = 0.0) -> None:
        index = len(self.output)
        item_id = _new_id("msg")
        added = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        self.writer.event({"type": "response.output_item.added", "output_index": index, "item": added})
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        self.writer.event({"type": "response.content_part.added", **where, "part": empty})
        for piece in _pieces(text):
            if interval_s > 0 and self._stopping.wait(interval_s):
                raise ConnectionAbortedError("fake server is shutting down")
            delta = {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            self.writer.event(delta)
        self.writer.event({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
        part = {**empty, "text": text}
        self.writer.event({"type": "response.content_part.done", **where, "part": part})
        done = {**added, "status": "completed", "content": [part]}
        self.writer.event({"type": "response.output_item.done", "output_index": index, "item": done})
        self.output.append(done)

    def function_call(self, name: str, arguments: str, namespace: str | None = None) -> None:
        item_id = _new_id("fc")
        added = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": _new_id("call"),
            "name": name,
            **({"namespace": namespace} if namespace else {}),
        }
        events = [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item_id,
                "delta": arguments,
            },
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "arguments": arguments,
            },
        ]
        self._item(added, {**added, "status": "completed", "arguments": arguments}, events)

    def custom_tool_call(self, name: str, tool_input: str) -> None:
        item_id = _new_id("ctc")
        added = {
            "id": item_id,
            "type": "custom_tool_call",
            "status": "in_progress",
            "call_id": _new_id("call"),
            "name": name,
            "input": "",
        }
        events = [
            {
                "type": "response.custom_tool_call_input.delta",
                "item_id": item_id,
                "delta": tool_input,
            },
            {
                "type": "response.custom_tool_call_input.done",
                "item_id": item_id,
                "input": tool_input,
            },
        ]
        self._item(added, {**added, "status": "completed", "input": tool_input}, events)

    def local_shell_call(self, command: Sequence[str]) -> None:
        done = {
            "id": _new_id("lsh"),
            "type": "local_shell_call",
            "status": "completed",
            "call_id": _new_id("call"),
            "action": {"type": "exec", "command": list(command), "env": {}},
        }
        self._item({**done, "status": "in_progress"}, done, ())

    def completed(self, input_tokens: int, reasoning_tokens: int) -> None:
        output_tokens = 7 + reasoning_tokens
        response = _response_object(self.response_id, self.model, "completed", self.output)
        response["usage"] = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        }
        self.writer.event({"type": "response.completed", "response": response})

    def failed(self, code: str, message: str) -> None:
        response = _response_object(self.response_id, self.model, "failed", self.output)
        response["error"] = {"code": code, "message": message}
        self.writer.event({"type": "response.failed", "response": response})


def _script_of(command: Sequence[str]) -> str:
    """`bash -lc SCRIPT` → SCRIPT; anything else is joined into one command line."""
    wrapped = len(command) == len(("bash", "-lc", "script")) and command[1] in SHELL_WRAPPER_FLAGS
    return command[-1] if wrapped else " ".join(command)


def _shell_call(stream: _Stream, tools: Sequence[str], step: Step) -> None:
    command = [str(part) for part in step["shell"]]
    escalation: JsonObject = {}
    if step.get("justification"):
        escalation = {
            "sandbox_permissions": "require_escalated",
            "justification": str(step["justification"]),
        }
    if "exec_command" in tools:
        stream.function_call("exec_command", json.dumps({"cmd": _script_of(command), **escalation}))
    elif "shell_command" in tools:
        arguments = {"command": _script_of(command), **escalation}
        stream.function_call("shell_command", json.dumps(arguments))
    elif "shell" in tools:
        stream.function_call("shell", json.dumps({"command": command, **escalation}))
    else:
        stream.local_shell_call(command)


def _apply_patch_call(stream: _Stream, tools: Mapping[str, str], patch: str) -> None:
    if tools.get("apply_patch") == "custom":
        stream.custom_tool_call("apply_patch", patch)
    elif "apply_patch" in tools:
        stream.function_call("apply_patch", json.dumps({"input": patch}))
    else:
        stream.function_call("shell", json.dumps({"command": ["apply_patch", patch]}))


def _models_body() -> JsonObject:
    return {
        "object": "list",
        "data": [{"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "fake"}],
        "models": [],
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoopbackServer

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: tests read `FakeResponsesAPI.requests` instead."""

    def _read_body(self) -> JsonObject | None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        return parsed if isinstance(parsed, dict) else None

    def _send_json(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("x-request-id", _new_id("req"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _not_found(self) -> None:
        message = f"Unknown path {self.path.split('?', 1)[0]}"
        self._send_json(404, error_body(message, "invalid_request_error", "not_found"))

    def do_GET(self) -> None:
        self.server.api.record(self, None, "other", None)
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self._send_json(200, json.dumps(_models_body()).encode())
        else:
            self._not_found()

    def do_POST(self) -> None:
        body = self._read_body()
        api = self.server.api
        headers = {key.lower(): value for key, value in self.headers.items()}
        kind = classify_request("POST", self.path.split("?", 1)[0], headers, body)
        if kind == "other":
            api.record(self, body, kind, None)
            self._not_found()
            return
        if api.keys is not None and headers.get("authorization") not in {f"Bearer {key}" for key in api.keys}:
            recorded = api.record(self, body, kind, None)
            self._send_json(401, error_body(*_DEFAULT_ERRORS[401]), FAST_RETRY_HEADERS)
            recorded.outcomes.append("completed")
            recorded.ended.set()
            return
        step: Step = api.next_step() if kind == "turn" else api.side_step(headers)
        step = with_agent_id(step, body or {})
        if step.get("echo"):
            step = {**step, "reply": echo_text(body or {})}
        recorded = api.record(self, body, kind, step)
        outcome = "completed"
        try:
            delay = float(step.get("first_byte_delay_s", 0))
            if delay > 0 and api.stopping.wait(delay):
                return
            if not self._serve_error(step):
                self._serve_stream(step, body or {})
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            outcome = "disconnected"
            self.close_connection = True
        finally:
            recorded.outcomes.append(outcome)
            recorded.ended.set()

    def _serve_error(self, step: Step) -> bool:
        """Answer an HTTP-level error step; say whether the step was one."""
        if "status" in step:
            status = int(step["status"])
            message, error_type, code = _DEFAULT_ERRORS.get(status, ("Fake error.", "server_error", None))
            payload = error_body(
                str(step.get("message", message)),
                str(step.get("type", error_type)),
                step.get("code", code),
            )
            self._send_json(status, payload, FAST_RETRY_HEADERS)
            return True
        if step.get("usage_limit"):
            payload = error_body(
                str(step.get("message", "The usage limit has been reached")),
                "usage_limit_reached",
                None,
                plan_type=step.get("plan_type", "plus"),
                resets_at=int(time.time()) + int(step.get("resets_in_seconds", 3600)),
            )
            self._send_json(429, payload, FAST_RETRY_HEADERS)
            return True
        return False

    def _serve_stream(self, step: Step, body: JsonObject) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", _new_id("req"))
        served = step.get("served_model")
        if served:
            self.send_header("openai-model", str(served))
        self.end_headers()
        self.wfile.flush()

        cut = step.get("cut_after_events")
        writer = _SseWriter(self, int(cut) if cut is not None else None)
        stream = _Stream(writer, str(served or body.get("model") or FAKE_MODEL), self.server.api.stopping)
        tools = {_tool_name(tool): str(tool.get("type")) for tool in body.get("tools") or [] if isinstance(tool, dict)}
        stream.created()
        if step.get("reasoning"):
            stream.reasoning(str(step["reasoning"]))
        failure = _failure_of(step)
        if failure is not None:
            stream.failed(*failure)
        else:
            _stream_answer(stream, step, tools)
            if step.get("hold"):
                self._hold()
            input_tokens = max(1, len(json.dumps(body.get("input") or [])) // 4)
            stream.completed(input_tokens, 5 if step.get("reasoning") else 0)
        writer.finish()


    def _hold(self) -> None:
        """Keep the response open until `release()`, the client hanging up, or the fake stopping."""
        api = self.server.api
        api.held.set()
        while not api.releases.acquire(timeout=HOLD_POLL_S):
            if api.stopping.is_set():
                raise ConnectionAbortedError("fake server is shutting down")
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                raise ConnectionAbortedError("the client hung up on a held answer")


def _failure_of(step: Step) -> tuple[str, str] | None:
    if step.get("context_window"):
        return "context_length_exceeded", str(step.get("message", CONTEXT_WINDOW_MESSAGE))
    failed = step.get("failed")
    if isinstance(failed, Mapping):
        return str(failed.get("code", "server_error")), str(failed.get("message", "Fake failure."))
    return None


def echo_text(body: JsonObject) -> str:
    """The `echo` step's answer: the prompt text the request carries (see the module docstring)."""
    texts: list[str] = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            parts = item.get("content")
            found = [str(part.get("text", "")) for part in parts if isinstance(part, dict)
                     and part.get("type") == "input_text"] if isinstance(parts, list) else []
            found = [text for text in found if not text.lstrip().startswith("<")]
            if found:
                texts = found
    return f"echo: {texts[-1] if texts else ''}"


def with_agent_id(step: Step, body: JsonObject) -> Step:
    """The step with `AGENT_ID` in its function call's arguments replaced by the agent id of
    the last `spawn_agent` output in the request's input (unchanged when there is none)."""
    call = step.get("function_call")
    if not isinstance(call, Mapping) or AGENT_ID not in json.dumps(call.get("arguments", {})):
        return step
    agent_id = None
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            try:
                output = json.loads(str(item.get("output")))
            except json.JSONDecodeError:
                continue
            if isinstance(output, dict) and isinstance(output.get("agent_id"), str):
                agent_id = output["agent_id"]
    if agent_id is None:
        return step
    arguments = json.loads(json.dumps(call.get("arguments", {})).replace(AGENT_ID, agent_id))
    return {**step, "function_call": {**call, "arguments": arguments}}


def _stream_answer(stream: _Stream, step: Step, tools: Mapping[str, str]) -> None:
    slow = step.get("slow_stream")
    if isinstance(slow, Mapping):
        text = str(slow.get("text", "slow"))
        if step.get("echo"):
            text = f"{step['reply']} {text}"
        stream.message(text, float(slow.get("interval_s", 0.05)))
    elif "reply" in step:
        stream.message(str(step["reply"]))
    if "shell" in step:
        _shell_call(stream, list(tools), step)
    if "apply_patch" in step:
        _apply_patch_call(stream, tools, str(step["apply_patch"]))
    if "plan" in step:
        plan: JsonObject = {"plan": list(step["plan"])}
        if step.get("explanation"):
            plan["explanation"] = step["explanation"]
        stream.function_call("update_plan", json.dumps(plan))
    call = step.get("function_call")
    if isinstance(call, Mapping):
        namespace = call.get("namespace")
        stream.function_call(str(call["name"]), json.dumps(call.get("arguments", {})),
                             str(namespace) if namespace else None)
    if not stream.has_answer:
        stream.message(str(DEFAULT_STEP["reply"]))


class FakeResponsesAPI(LoopbackFake):
    """A fake OpenAI Responses API on 127.0.0.1 with a per-request fault script.

    >>> with FakeResponsesAPI([{"status": 500}, {"reply": "hi"}]) as api:  # doctest: +SKIP
    ...     api.base_url
    'http://127.0.0.1:54321/v1'
    """

    handler = _Handler
    thread_name = "fake-responses-api"
    poll_interval_s = SHUTDOWN_POLL_INTERVAL_S

    def __init__(self, script: Sequence[Step] = (), *, port: int = 0, review: str | None = None,
                 keys: Sequence[str] | None = None, subagents: Sequence[Step] = ()) -> None:
        self.review = review
        self._subagent_script: list[Step] = [dict(step) for step in subagents]
        """The steps the child threads' model requests are served, in order (then the side reply)."""
        self.keys = frozenset(keys) if keys is not None else None
        """The API keys accepted (None: any); another `authorization` is answered 401
        `invalid_api_key` without consuming a step."""
        """The automatic reviewer's verdict (`allow`, `deny`), or None: it gets the side reply."""
        self.held = threading.Event()
        """Set once a `hold` step's answer is streamed (its response is still open)."""
        self.releases = threading.Semaphore(0)
        self._changed = threading.Condition()
        self._script: list[Step] = [dict(step) for step in script]
        self._requests: list[RecordedRequest] = []
        self._init_loopback(port)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeResponsesAPI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The provider `base_url` for codex; it posts to `<base_url>/responses`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._changed:
            return list(self._requests)

    @property
    def turn_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.kind == "turn"]

    @property
    def side_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.kind == "side"]

    @property
    def reviews(self) -> list[RecordedRequest]:
        """The requests of codex's automatic approval reviewer (the `guardian` sub-agent)."""
        return [request for request in self.requests if request.headers.get("x-openai-subagent") == "guardian"]

    def side_reply(self, headers: Mapping[str, str]) -> str:
        """A side request's answer: the reviewer's verdict as its schema's JSON, else SIDE_REPLY."""
        if self.review is None or headers.get("x-openai-subagent") != "guardian":
            return SIDE_REPLY
        return json.dumps({"outcome": self.review, "risk_level": "low" if self.review == "allow" else "high",
                           "user_authorization": "unknown", "rationale": f"fake reviewer: {self.review}"})

    def side_step(self, headers: Mapping[str, str]) -> Step:
        """A side request's step: a child thread's next scripted one, else the side reply."""
        if headers.get("x-openai-subagent") == SPAWNED_SUBAGENT:
            with self._changed:
                if self._subagent_script:
                    return self._subagent_script.pop(0)
        return {"reply": self.side_reply(headers)}

    @property
    def subagent_requests(self) -> list[RecordedRequest]:
        """The model requests of the child threads codex's `spawn_agent` started."""
        return [request for request in self.requests
                if request.headers.get("x-openai-subagent") == SPAWNED_SUBAGENT]

    @property
    def remaining_steps(self) -> int:
        with self._changed:
            return len(self._script)

    def release(self) -> None:
        """Let one held answer (the next, if none is held yet) complete."""
        self.releases.release()

    def set_script(self, script: Sequence[Step]) -> None:
        """Replace the steps not yet consumed."""
        with self._changed:
            self._script = [dict(step) for step in script]

    def next_step(self) -> Step:
        with self._changed:
            return self._script.pop(0) if self._script else DEFAULT_STEP

    def record(
        self,
        handler: BaseHTTPRequestHandler,
        body: JsonObject | None,
        kind: RequestKind,
        step: Step | None,
    ) -> RecordedRequest:
        headers = {key.lower(): value for key, value in handler.headers.items()}
        recorded = RecordedRequest(handler.command, handler.path, headers, body, kind, step)
        with self._changed:
            self._requests.append(recorded)
            self._changed.notify_all()
        return recorded

    def wait_for_requests(self, count: int, *, kind: RequestKind | None = "turn", timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least `count` requests (of `kind`; None: any) arrived, or time out."""

        def matching() -> list[RecordedRequest]:
            return [r for r in self._requests if kind is None or r.kind == kind]

        with self._changed:
            if not self._changed.wait_for(lambda: len(matching()) >= count, timeout):
                raise TimeoutError(f"fewer than {count} {kind or 'any'} requests in {timeout}s")
            return matching()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI Responses API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: an ephemeral one)")
    parser.add_argument("--script", default="[]", help="JSON list of fault-script steps")
    args = parser.parse_args(argv)
    script = json.loads(args.script)
    if not isinstance(script, list):
        parser.error("--script must be a JSON list")
    api = FakeResponsesAPI(script, port=args.port).start()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        api.stopping.set()

    signal.signal(signal.SIGTERM, on_term)
    print(json.dumps({"base_url": api.base_url, "port": api.port}), flush=True)
    try:
        api.stopping.wait()
    except KeyboardInterrupt:
        pass
    finally:
        api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
