"""A loopback fake of the Anthropic Messages API that the real Claude Code CLI can talk to.

It owns: an HTTP server on 127.0.0.1 (ephemeral port, background thread) that answers
`POST /v1/messages` the way Anthropic does (Server-Sent Events when `stream` is true, one JSON
message otherwise), `POST /v1/messages/count_tokens`, `GET /v1/models[/<id>]`, and serves each
*turn* request the next step of a fault script. It knows nothing about the CLI's stdio protocol
or about acp-agent: it only imitates the model API. Point the CLI at it with
`ANTHROPIC_BASE_URL=<api.base_url>` (see `tests/claude/fixtures/README.md` for the full set-up).

Steps (consumed in order by turn requests only; side requests never consume one):

- `{"reply": "text"}`: a text answer, streamed in word-sized deltas.
- `{"reply_pieces": ["te", "xt"]}`: a text answer streamed in exactly these deltas (a secret split
  across them, say).
- `{"thinking": "...", "reply": "..."}`: a thinking block (with a signature) before the text.
- `{"compaction": "...", "reply": "..."}`: a `compaction` block (the API's server-side compaction,
  its retained summary streamed as `compaction_delta`s) before the text.
- `{"tool_use": {"name": "Bash", "input": {...}, "id": "toolu_..."}}`: a tool call (`id` is
  optional); the answer ends with `stop_reason: "tool_use"`. An optional `"reply"` is streamed as
  text before the call. The CLI's next turn request carries the tool_result and takes the next step.
  An input value `"<plan file>"` (`PLAN_FILE`) is the plan file the request's plan-mode
  instructions name (Claude Code's `plans/<slug>.md`), as a model writing its plan there sends it.
- `{"status": 429|529|500|401|400|403|404|413, "error_type": "...", "message": "..."}`: an HTTP
  error with Anthropic's body `{"type": "error", "error": {"type", "message"}, "request_id"}`;
  429 and 529 also carry `retry-after: 0`. `error_type` and `message` default per status.
- `{"usage_limit": true}`: HTTP 429 from the unified rate limiter (`anthropic-ratelimit-unified-status:
  rejected` plus a reset in the future, and `x-should-retry: false` unless `"retryable": true`).
  The CLI turns it into its synthetic `You've hit your limit · resets <time>` message only when it
  believes it talks to a subscription or gateway: run it with `ANTHROPIC_AUTH_TOKEN=gateway_token()`
  instead of `ANTHROPIC_API_KEY` (with an API key it is a plain `API Error: Request rejected (429)`).
  Optional: `"claim"` (`five_hour`, default, or `seven_day`), `"resets_in_s"` (default 3600),
  `"overage_disabled_reason"` (e.g. `"org_spend_cap_reached"`: `You've hit your individual spend
  limit · ...`).
- `{"cut_after_events": N, ...}`: send the first N SSE events of the normal answer, then close the
  connection without the terminating chunk (no `message_stop`).
- `{"stream_error": "overloaded_error", "message": "...", "after_events": N}`: an in-stream
  `event: error` after N events (default 1: after `message_start`), then the stream ends.
- `{"hang_after_events": N, ...}`: send N events, then hold the stream open until
  `FakeAnthropicAPI.release()`, the client disconnects, or the fake stops (for cancel tests).
- `{"slow_stream": {"text": "...", "interval_s": 0.05}}`: one word per delta, paced.
- `{"echo": true}`: the answer is `echo: <prompt>`, the prompt being the last text block of the
  request's last user message that is not a `<system-reminder>` or an interruption note: a model
  that answers the prompt it received, so a test sees which turn an answer belongs to. It combines
  with `hang_after_events` (the held answer is the echo).
- `"for_prompt": "text"` on any step: it answers only the turn request whose prompt (as `echo`
  reads it) is that text, whenever it comes; other requests skip it. A subagent's requests run
  beside the main loop's in either order: this gives each its own answer.
- Modifiers any step may carry: `"delay_first_byte_s": X` (wait before the status line),
  `"stop_reason": "max_tokens"|"refusal"|...` (default `end_turn`, or `tool_use` with a tool call),
  `"headers": {...}` (extra response headers), `"usage": {...}` (merged into the final usage),
  `"times": N` (the step is repeated N times in the script).

When the script is exhausted every turn request is answered `{"reply": "ok"}`.

Turn or side request (`classify_request`): the CLI sends the turn's own model calls with the
agent's tool list; its side calls (session title, quota probes, small classifiers) send no tools
or ask for structured output (`output_config.format`), and the side calls that fork the main
conversation (prompt suggestions, compaction) keep the tools but end with a user message that
starts the side task (`[SUGGESTION MODE: ...`, `Your task is to create a detailed summary of ...`,
`CRITICAL: Respond with TEXT ONLY. ...` for automatic compaction).
Side requests get a short harmless answer (schema-shaped JSON when a JSON schema is asked for, a
`<summary>` for compaction). A prompt hook's evaluation (Claude Code's `/goal` is a session Stop
hook whose condition a side call judges, its system prompt `You are evaluating a stop-condition
hook ...`) is answered with the next of `FakeAnthropicAPI.verdicts` (`{"ok": false, "reason":
...}` keeps the goal going), `{"ok": true, "reason": ...}` (the condition holds) once they run
out. Every HTTP attempt of a turn takes a step: the CLI's retries, its non-streaming fallback
after repeated stream failures, its silent re-sends after a generic 400 and its automatic
continuation after `max_tokens` or `refusal` each consume one. The README beside the Claude
fixtures (`tests/claude/fixtures/README.md`) has the evidence.

Run standalone: `python -m tests.fakes.anthropic_api --port 0 --script '[{"reply": "hi"}]'`;
it prints `{"base_url": ..., "port": ...}` and then one JSON line per request on stderr.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Final, Literal

from tests.fakes.loopback import LoopbackFake, LoopbackServer

JsonObject = dict[str, Any]
Step = Mapping[str, Any]
RequestKind = Literal["turn", "side", "other"]

DEFAULT_STEP: Final[Step] = {"reply": "ok"}
PLAN_FILE: Final[str] = "<plan file>"
"""A tool input value the fake replaces with the plan file the request names (plan mode)."""
_PLAN_FILE_PATH = re.compile(r"/[^\s\"'`)]*/plans/[^\s\"'`)]+\.md")
SIDE_REPLY: Final[str] = "ok"
SIDE_TITLE: Final[str] = "Fake session title"
FAKE_MODEL: Final[str] = "claude-sonnet-4-5"
FAKE_SIGNATURE: Final[str] = "ZmFrZS1zaWduYXR1cmU="
# A user-message text block starting with one of these makes a request a side task that forks
# the main conversation (and so keeps its tools): prompt suggestions and compaction summaries.
SIDE_PROMPT_MARKERS: Final[tuple[str, ...]] = (
    "[SUGGESTION MODE",
    "Your task is to create a detailed summary of",
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",  # automatic compaction's summary
)
HOOK_EVALUATOR: Final[str] = "You are evaluating a stop-condition hook"
"""How the system prompt of a prompt hook's evaluation starts (Claude Code 2.1.332's `/goal`)."""
MET: Final[JsonObject] = {"ok": True, "reason": "The transcript shows the condition holds (fake)."}
"""The verdict of a hook evaluation once `FakeAnthropicAPI.verdicts` run out."""
SIDE_SUMMARY: Final[str] = "<analysis>Fake analysis.</analysis>\n<summary>Fake summary of the conversation.</summary>"
STEP_KEYS: Final[frozenset[str]] = frozenset(
    {
        "reply",
        "compaction",
        "reply_pieces",
        "thinking",
        "tool_use",
        "status",
        "error_type",
        "message",
        "usage_limit",
        "claim",
        "resets_in_s",
        "overage_disabled_reason",
        "retryable",
        "cut_after_events",
        "stream_error",
        "after_events",
        "hang_after_events",
        "slow_stream",
        "echo",
        "delay_first_byte_s",
        "stop_reason",
        "headers",
        "usage",
        "times",
        "for_prompt",
    }
)

_DEFAULT_ERRORS: Final[dict[int, tuple[str, str]]] = {
    400: ("invalid_request_error", "messages: fake invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "model: claude-fake-missing"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: (
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit (fake).",
    ),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


@dataclass
class RecordedRequest:
    """One HTTP request the fake received and what it did about it.

    `outcome` is filled in when the answer is over: `completed`, `error` (an HTTP error status),
    `stream_error`, `cut`, `disconnected` (the client went away mid-answer), `released` (after a
    `hang_after_events` hold) or `stopped` (the fake shut down); it is `pending` until then.
    Use `FakeAnthropicAPI.wait_for(..., finished=True)` before reading it.
    """

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: JsonObject | None
    kind: RequestKind
    reason: str
    step: Step | None
    received_at: float = field(default_factory=time.monotonic)
    outcome: str = "pending"

    @property
    def model(self) -> str | None:
        model = (self.body or {}).get("model")
        return model if isinstance(model, str) else None

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))

    @property
    def tool_names(self) -> list[str]:
        tools = (self.body or {}).get("tools") or []
        return [str(tool.get("name") or tool.get("type")) for tool in tools if isinstance(tool, dict)]

    @property
    def last_user_text(self) -> str:
        """Concatenated text of the last user-role message (tool results included as JSON)."""
        for message in reversed((self.body or {}).get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    def summary(self) -> JsonObject:
        """A short JSON-able description (used by the standalone server's log)."""
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "kind": self.kind,
            "reason": self.reason,
            "model": self.model,
            "stream": self.stream,
            "tools": len(self.tool_names),
            "step": dict(self.step) if self.step is not None else None,
            "outcome": self.outcome,
        }


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                parts.append(json.dumps(block.get("content")))
    return "\n".join(parts)


def _is_messages_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/") == "/v1/messages"


def _last_user_texts(body: JsonObject) -> list[str]:
    """The text blocks of the last user-role message."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return [content]
            if isinstance(content, list):
                return [
                    str(block.get("text", "")) for block in content if isinstance(block, dict) and block.get("type") == "text"
                ]
            return []
    return []


ECHO_SKIPPED_PREFIXES: Final[tuple[str, ...]] = ("<system-reminder>", "[Request interrupted")


def echo_text(body: JsonObject) -> str:
    """The `echo` step's answer: the prompt text the request carries (see the module docstring)."""
    texts = [text for text in _last_user_texts(body) if not text.lstrip().startswith(ECHO_SKIPPED_PREFIXES)]
    return f"echo: {texts[-1] if texts else ''}"


def _side_marker(body: JsonObject) -> str | None:
    for text in _last_user_texts(body):
        stripped = text.lstrip()
        for marker in SIDE_PROMPT_MARKERS:
            if stripped.startswith(marker):
                return marker
    return None


def classify_request(method: str, path: str, body: JsonObject | None) -> tuple[RequestKind, str]:
    """Say whether a request is the turn's own model call (`turn`), a side call, or other.

    Returns the kind and a short reason. The rule, from what Claude Code 2.1.332 sends:

    1. Only `POST /v1/messages` is a model call; everything else (count_tokens, models, ...) is
       `other`.
    2. A call without tools (and without `context_management`) is a side call: the session-title
       request, quota probes and the small classifier/summary calls send `tools: []` or none, while
       every main-loop request carries the agent's tool list. A main loop started with `--tools ""`
       sends no tools either, but it still sends `context_management` (with thinking on), which
       keeps it a turn call.
    3. A call that asks for structured output (`output_config.format`) is a side call: titles and
       other generated metadata use a JSON schema; the agent loop never does.
    4. A call whose last user message has a text block that starts a side task
       (`[SUGGESTION MODE: ...` for prompt suggestions, `Your task is to create a detailed summary
       of ...` for `/compact`, `CRITICAL: Respond with TEXT ONLY. ...` for automatic compaction) is
       a side call: those fork the main conversation and keep its tools.
    5. Everything else is a turn call. The message list may end with a `system`-role message
       (the CLI appends its environment block that way); that does not matter here.
    """
    if method != "POST" or not _is_messages_path(path):
        return "other", "not POST /v1/messages"
    if body is None:
        return "side", "unparseable body"
    tools = body.get("tools")
    if (not isinstance(tools, list) or not tools) and not body.get("context_management"):
        return "side", "no tools"
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and output_config.get("format"):
        return "side", "structured output requested"
    marker = _side_marker(body)
    if marker is not None:
        return "side", f"side-task prompt ({marker})"
    return "turn", "tools offered"


def validate_step(step: Step) -> None:
    """Raise `ValueError` for a step the fake would not understand."""
    if not isinstance(step, Mapping):
        raise TypeError(f"a step must be a JSON object, got {step!r}")
    unknown = set(step) - STEP_KEYS
    if unknown:
        raise ValueError(f"unknown step keys {sorted(unknown)} in {dict(step)!r}")
    tool_use = step.get("tool_use")
    if tool_use is not None and (not isinstance(tool_use, Mapping) or "name" not in tool_use):
        raise ValueError(f"tool_use needs a name: {dict(step)!r}")
    pieces = step.get("reply_pieces")
    if pieces is not None and (not isinstance(pieces, list) or not all(isinstance(piece, str) for piece in pieces)):
        raise ValueError(f"reply_pieces must be a list of strings: {dict(step)!r}")
    slow = step.get("slow_stream")
    if slow is not None and not isinstance(slow, Mapping):
        raise ValueError(f"slow_stream must be an object: {dict(step)!r}")


def expand_script(script: Sequence[Step]) -> list[Step]:
    """Validate a script and expand `times` into repeated steps."""
    expanded: list[Step] = []
    for step in script:
        validate_step(step)
        times = int(step.get("times", 1))
        plain = {key: value for key, value in step.items() if key != "times"}
        expanded.extend(dict(plain) for _ in range(max(0, times)))
    return expanded


def error_body(error_type: str, message: str, request_id: str) -> bytes:
    """Anthropic's error JSON."""
    return json.dumps(
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id,
        }
    ).encode()


def _schema_value(schema: Any) -> Any:
    """A small value that satisfies a (simple) JSON schema, for structured-output side calls."""
    if not isinstance(schema, dict):
        return SIDE_REPLY
    kind = schema.get("type")
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _schema_value(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return SIDE_TITLE


def is_hook_evaluation(body: JsonObject | None) -> bool:
    """Whether a side request judges a prompt hook's condition (a `/goal` Stop hook)."""
    system = (body or {}).get("system")
    blocks = system if isinstance(system, list) else [{"text": system}]
    return any(isinstance(block, dict) and str(block.get("text", "")).startswith(HOOK_EVALUATOR)
               for block in blocks)


def side_reply_text(body: JsonObject | None) -> str:
    """The harmless answer to a side request."""
    if body is not None and _side_marker(body) in SIDE_PROMPT_MARKERS[1:]:
        return SIDE_SUMMARY
    output_config = (body or {}).get("output_config")
    if isinstance(output_config, dict):
        fmt = output_config.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return json.dumps(_schema_value(fmt.get("schema")))
    return SIDE_REPLY


def _pieces(text: str) -> Iterator[str]:
    """Split text into word-sized deltas that concatenate back to the text."""
    start = 0
    for index, char in enumerate(text):
        if char == " " and index > start:
            yield text[start:index]
            start = index
    if start < len(text) or not text:
        yield text[start:]


def _json_pieces(text: str, size: int = 24) -> Iterator[str]:
    if not text:
        yield ""
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


class _Stop(Exception):
    """The stream ends early (cut, disconnect, shutdown); `outcome` says why."""

    def __init__(self, outcome: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome


@dataclass
class _Block:
    """One content block of an answer and the deltas that build it."""

    start: JsonObject
    deltas: list[JsonObject]
    final: JsonObject
    interval_s: float = 0.0


class _Answer:
    """The content of one model answer, built from a step, as SSE events or as one JSON message."""

    def __init__(
        self,
        step: Step,
        model: str,
        input_tokens: int,
        side_text: str | None,
        new_id: Callable[[str], str],
    ) -> None:
        self._new_id = new_id
        self.message_id = new_id("msg")
        self.model = model
        self.input_tokens = input_tokens
        self.blocks: list[_Block] = []
        if side_text is not None:
            self._text(side_text)
            self.stop_reason = "end_turn"
        else:
            self._from_step(step)
        self.usage_override = dict(step.get("usage") or {}) if side_text is None else {}

    def _from_step(self, step: Step) -> None:
        if step.get("compaction") is not None:  # the API's server-side compaction: the retained summary
            summary = str(step["compaction"])
            self.blocks.append(_Block({"type": "compaction", "content": None},
                                      [{"type": "compaction_delta", "content": piece} for piece in _pieces(summary)],
                                      {"type": "compaction", "content": summary}))
        if step.get("thinking") is not None:
            thinking = str(step["thinking"])
            self.blocks.append(
                _Block(
                    {"type": "thinking", "thinking": "", "signature": ""},
                    [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(thinking)]
                    + [{"type": "signature_delta", "signature": FAKE_SIGNATURE}],
                    {"type": "thinking", "thinking": thinking, "signature": FAKE_SIGNATURE},
                )
            )
        slow = step.get("slow_stream")
        if isinstance(slow, Mapping):
            self._text(str(slow.get("text", "slow")), float(slow.get("interval_s", 0.05)))
        elif step.get("reply_pieces") is not None:
            self._text("".join(step["reply_pieces"]), pieces=[str(piece) for piece in step["reply_pieces"]])
        elif step.get("reply") is not None:
            self._text(str(step["reply"]))
        tool_use = step.get("tool_use")
        if isinstance(tool_use, Mapping):
            tool_id = str(tool_use.get("id") or self._new_id("toolu"))
            tool_input = dict(tool_use.get("input") or {})
            encoded = json.dumps(tool_input)
            self.blocks.append(
                _Block(
                    {"type": "tool_use", "id": tool_id, "name": str(tool_use["name"]), "input": {}},
                    [{"type": "input_json_delta", "partial_json": piece} for piece in _json_pieces(encoded)],
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": str(tool_use["name"]),
                        "input": tool_input,
                    },
                )
            )
        if not self.blocks:
            self._text(str(DEFAULT_STEP["reply"]))
        default_stop = "tool_use" if isinstance(tool_use, Mapping) else "end_turn"
        self.stop_reason = str(step.get("stop_reason") or default_stop)

    def _text(self, text: str, interval_s: float = 0.0, pieces: list[str] | None = None) -> None:
        self.blocks.append(
            _Block(
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": piece} for piece in (pieces or _pieces(text))],
                {"type": "text", "text": text},
                interval_s,
            )
        )

    @property
    def output_tokens(self) -> int:
        return max(1, sum(len(json.dumps(block.final)) for block in self.blocks) // 4)

    def usage(self, output_tokens: int) -> JsonObject:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens,
        }

    def message(self, content: list[JsonObject], stop_reason: str | None, output_tokens: int) -> JsonObject:
        usage = self.usage(output_tokens)
        if stop_reason is not None:
            usage.update(self.usage_override)
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def events(self) -> Iterator[tuple[JsonObject, float]]:
        """The SSE payloads in order, each with the pause to take before sending it."""
        yield {"type": "message_start", "message": self.message([], None, 1)}, 0.0
        for index, block in enumerate(self.blocks):
            yield {"type": "content_block_start", "index": index, "content_block": block.start}, 0.0
            if index == 0:
                yield {"type": "ping"}, 0.0
            for delta in block.deltas:
                yield (
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    block.interval_s,
                )
            yield {"type": "content_block_stop", "index": index}, 0.0
        usage = {"output_tokens": self.output_tokens, **self.usage_override}
        yield (
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": usage,
            },
            0.0,
        )
        yield {"type": "message_stop"}, 0.0

    def json_message(self) -> JsonObject:
        return self.message([block.final for block in self.blocks], self.stop_reason, self.output_tokens)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read `FakeAnthropicAPI.requests` instead."""

    # -- plumbing -------------------------------------------------------------------------------

    def _read_body(self) -> JsonObject | None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            parsed = None
        return parsed if isinstance(parsed, dict) else None

    def _send_json(self, status: int, payload: bytes, extra_headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", self.server.api.new_id("req"))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_error(self, status: int, error_type: str, message: str, extra: Mapping[str, str] | None = None) -> None:
        request_id = self.server.api.new_id("req")
        headers = {"request-id": request_id, **(extra or {})}
        payload = error_body(error_type, message, request_id)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, payload: JsonObject) -> None:
        self._chunk(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode())

    def _client_gone(self) -> bool:
        """True when the client closed its end (readable with no data)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except OSError:
            return True

    def _pause(self, seconds: float) -> None:
        """Wait `seconds`, ending early (with `_Stop`) if the client leaves or the fake stops."""
        deadline = time.monotonic() + seconds
        api = self.server.api
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if api.stopping.wait(min(remaining, 0.02)):
                raise _Stop("stopped")
            if self._client_gone():
                raise _Stop("disconnected")

    def _hold(self) -> None:
        """Block until `release()`, a client disconnect, or shutdown."""
        api = self.server.api
        while True:
            if api.released.wait(0.02):
                return
            if api.stopping.is_set():
                raise _Stop("stopped")
            if self._client_gone():
                raise _Stop("disconnected")

    def _abort(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- routes ---------------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        record = self.server.api.record(self, None, "other", "HEAD", None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
        self.server.api.finish(record, "completed")

    def do_GET(self) -> None:
        api = self.server.api
        path = self.path.split("?", 1)[0].rstrip("/")
        record = api.record(self, None, "other", "GET", None)
        if path == "/v1/models":
            self._send_json(200, json.dumps(_models_page()).encode())
        elif path.startswith("/v1/models/"):
            self._send_json(200, json.dumps(_model(path.rsplit("/", 1)[1])).encode())
        else:
            self._send_error(404, "not_found_error", f"Not found: {path}")
        api.finish(record, "completed")

    def do_POST(self) -> None:
        api = self.server.api
        body = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/messages/count_tokens":
            record = api.record(self, body, "other", "count_tokens", None)
            tokens = max(1, len(json.dumps((body or {}).get("messages") or [])) // 4)
            self._send_json(200, json.dumps({"input_tokens": tokens}).encode())
            api.finish(record, "completed")
            return
        kind, reason = classify_request("POST", path, body)
        if kind == "other":
            record = api.record(self, body, kind, reason, None)
            self._send_error(404, "not_found_error", f"Not found: {path}")
            api.finish(record, "completed")
            return
        if api.keys is not None and self.headers.get("x-api-key") not in api.keys:
            record = api.record(self, body, kind, reason, None)
            self._send_error(401, "authentication_error", "invalid x-api-key")
            api.finish(record, "completed")
            return
        step: Step = api.take_step(body) if kind == "turn" else {}
        record = api.record(self, body, kind, reason, step if kind == "turn" else None)
        outcome = "completed"
        try:
            delay = float(step.get("delay_first_byte_s", 0) or 0)
            if delay > 0:
                self._pause(delay)
            outcome = self._serve(step, body or {}, side=kind == "side")
        except _Stop as stop:
            outcome = stop.outcome
            self._abort()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            outcome = "disconnected"
            self.close_connection = True
        finally:
            api.finish(record, outcome)

    def _serve(self, step: Step, body: JsonObject, *, side: bool) -> str:
        extra_headers = {str(k): str(v) for k, v in (step.get("headers") or {}).items()}
        if "status" in step:
            status = int(step["status"])
            default_type, default_message = _DEFAULT_ERRORS.get(status, ("api_error", "Fake error"))
            headers = dict(extra_headers)
            if status in (429, 529):
                headers.setdefault("retry-after", "0")
            self._send_error(
                status,
                str(step.get("error_type") or default_type),
                str(step.get("message") or default_message),
                headers,
            )
            return "error"
        if step.get("usage_limit"):
            self._send_error(
                429,
                "rate_limit_error",
                str(step.get("message") or "This request would exceed your account's rate limit. Please try again later."),
                {**_usage_limit_headers(step), **extra_headers},
            )
            return "error"

        if step.get("echo") and not side:
            step = {**step, "reply": echo_text(body)}
        if not side and isinstance(step.get("tool_use"), Mapping):
            step = {**step, "tool_use": _with_plan_file(step["tool_use"], body)}
        model = str(body.get("model") or FAKE_MODEL)
        input_tokens = max(1, len(json.dumps(body.get("messages") or [])) // 4)
        answer = _Answer(
            step,
            model,
            input_tokens,
            self._side_text(body) if side else None,
            self.server.api.new_id,
        )
        if not body.get("stream"):
            return self._serve_json(step, answer, extra_headers)

        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self.server.api.new_id("req"))
        for name, value in extra_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

        cut = step.get("cut_after_events")
        hang = step.get("hang_after_events")
        stream_error = step.get("stream_error")
        error_after = int(step.get("after_events", 1))
        outcome = "completed"
        for sent, (payload, pause) in enumerate(answer.events()):
            if cut is not None and sent >= int(cut):
                raise _Stop("cut")
            if stream_error is not None and sent >= error_after:
                message = str(step.get("message") or _DEFAULT_ERRORS[529][1])
                self._event({"type": "error", "error": {"type": str(stream_error), "message": message}})
                outcome = "stream_error"
                break
            if hang is not None and sent == int(hang):
                self._hold()
                outcome = "released"
            if pause > 0:
                self._pause(pause)
            self._event(payload)
        self._chunk(b"")
        return outcome

    def _side_text(self, body: JsonObject) -> str:
        if is_hook_evaluation(body):
            return json.dumps(self.server.api.take_verdict())
        return side_reply_text(body)

    def _serve_json(self, step: Step, answer: _Answer, extra_headers: Mapping[str, str]) -> str:
        """A non-streaming answer (the CLI falls back to one after repeated stream failures).

        `cut_after_events` sends the headers and half the body, then drops the connection;
        `hang_after_events` holds before the headers; `stream_error` answers 529.
        """
        if step.get("stream_error") is not None:
            self._send_error(
                529,
                str(step["stream_error"]),
                str(step.get("message") or _DEFAULT_ERRORS[529][1]),
                extra_headers,
            )
            return "error"
        if step.get("hang_after_events") is not None:
            self._hold()
        payload = json.dumps(answer.json_message()).encode()
        if step.get("cut_after_events") is None:
            self._send_json(200, payload, extra_headers)
            return "completed"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", self.server.api.new_id("req"))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        raise _Stop("cut")


def _with_plan_file(tool_use: Mapping[str, Any], body: JsonObject) -> dict[str, Any]:
    """The tool call with each `PLAN_FILE` input value replaced by the plan file that the
    request's plan-mode instructions name (unchanged when they name none)."""
    tool_input = tool_use.get("input")
    if not isinstance(tool_input, Mapping) or PLAN_FILE not in tool_input.values():
        return dict(tool_use)
    found = _PLAN_FILE_PATH.search(json.dumps(body).replace("\\/", "/"))
    if found is None:
        return dict(tool_use)
    return {**tool_use, "input": {key: found.group(0) if value == PLAN_FILE else value
                                  for key, value in tool_input.items()}}


def _usage_limit_headers(step: Step) -> dict[str, str]:
    reset = int(time.time()) + int(step.get("resets_in_s", 3600))
    claim = str(step.get("claim") or "five_hour")
    headers = {
        "retry-after": "0",
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": claim,
        "anthropic-ratelimit-unified-5h-reset" if claim == "five_hour" else "anthropic-ratelimit-unified-7d-reset": str(reset),
        "anthropic-ratelimit-unified-fallback": "unavailable",
        "anthropic-ratelimit-unified-overage-status": "rejected",
    }
    if not step.get("retryable"):
        headers["x-should-retry"] = "false"
    reason = step.get("overage_disabled_reason")
    if reason:
        headers["anthropic-ratelimit-unified-overage-disabled-reason"] = str(reason)
    return headers


def gateway_token(subject: str = "fake-test-user") -> str:
    """An unsigned JWT with `aud: claude-gateway`, for `ANTHROPIC_AUTH_TOKEN`.

    With it (and `ANTHROPIC_BASE_URL` pointing here) Claude Code treats the endpoint as an
    enterprise gateway, reads the `anthropic-ratelimit-unified-*` headers of a 429 and emits its
    usage-limit texts. It is not a credential: nothing verifies it.
    """

    def encode(payload: JsonObject) -> str:
        raw = json.dumps(payload, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    claims = {"aud": "claude-gateway", "sub": subject, "exp": 4102444800}
    return f"{encode({'alg': 'none', 'typ': 'JWT'})}.{encode(claims)}.fake-signature"


_MODEL_IDS: Final[tuple[str, ...]] = ("claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5")


def _model(model_id: str) -> JsonObject:
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": "2025-01-01T00:00:00Z",
    }


def _models_page() -> JsonObject:
    return {
        "data": [_model(model_id) for model_id in _MODEL_IDS],
        "has_more": False,
        "first_id": _MODEL_IDS[0],
        "last_id": _MODEL_IDS[-1],
    }


class FakeAnthropicAPI(LoopbackFake):
    """A fake Anthropic Messages API on 127.0.0.1 with a per-turn-request fault script.

    >>> with FakeAnthropicAPI([{"status": 529}, {"reply": "hi"}]) as api:
    ...     api.base_url  # doctest: +SKIP
    'http://127.0.0.1:54321'
    """

    handler = _Handler
    thread_name = "fake-anthropic-api"

    def __init__(self, script: Sequence[Step] = (), *, port: int = 0, keys: Sequence[str] | None = None) -> None:
        self.keys = frozenset(keys) if keys is not None else None
        """The API keys accepted (None: any); a request with another `x-api-key` is answered 401
        `authentication_error` without consuming a step."""
        self._lock = threading.Condition()
        self._script: list[Step] = expand_script(script)
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._init_loopback(port)
        self.released = threading.Event()
        self.on_request: Callable[[RecordedRequest], None] | None = None  # called as each request ends
        self.verdicts: list[JsonObject] = []
        """The answers of the next prompt-hook evaluations, in order (`{"ok", "reason",
        "impossible"?}`); `MET` once they run out."""

    # -- configuration --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeAnthropicAPI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The value for `ANTHROPIC_BASE_URL` (the CLI appends `/v1/messages`)."""
        return f"http://127.0.0.1:{self.port}"

    def set_script(self, script: Sequence[Step]) -> None:
        """Replace the steps not yet consumed (e.g. between two prompts)."""
        steps = expand_script(script)
        with self._lock:
            self._script = steps
            self.released.clear()

    def extend_script(self, script: Sequence[Step]) -> None:
        """Append steps after those not yet consumed."""
        steps = expand_script(script)
        with self._lock:
            self._script.extend(steps)

    def release(self) -> None:
        """Let every stream held by `hang_after_events` go on (until the next `set_script`)."""
        self.released.set()

    @property
    def remaining_steps(self) -> int:
        with self._lock:
            return len(self._script)

    # -- observation ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def turn_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.kind == "turn"]

    @property
    def side_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.kind == "side"]

    def wait_for(
        self,
        count: int,
        *,
        kind: RequestKind | None = "turn",
        finished: bool = False,
        timeout: float = 30.0,
    ) -> list[RecordedRequest]:
        """Block until at least `count` requests of `kind` (None: any) arrived (or finished).

        Returns the matching requests; raises `TimeoutError` if they do not come in time.
        """

        def matching() -> list[RecordedRequest]:
            return [
                request
                for request in self._requests
                if (kind is None or request.kind == kind) and (not finished or request.outcome != "pending")
            ]

        with self._lock:
            if not self._lock.wait_for(lambda: len(matching()) >= count, timeout):
                raise TimeoutError(f"expected {count} {kind or 'any'} requests, got {len(matching())}")
            return matching()

    # -- used by the handler --------------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        """A fresh id like `msg_fake00000001` (message, tool use and request ids count together)."""
        with self._lock:
            return f"{prefix}_fake{next(self._ids):08d}"

    def take_step(self, body: JsonObject | None = None) -> Step:
        """The next step for a turn request: the first `for_prompt` step naming its prompt, else
        the first step without `for_prompt` (else the default)."""
        prompt = echo_text(body)[len("echo: "):] if body else None
        with self._lock:
            for wanted in (True, False):
                for index, step in enumerate(self._script):
                    if (step.get("for_prompt") == prompt) if wanted else "for_prompt" not in step:
                        return self._script.pop(index)
            return DEFAULT_STEP

    def take_verdict(self) -> JsonObject:
        """The next hook evaluation's verdict."""
        with self._lock:
            return self.verdicts.pop(0) if self.verdicts else dict(MET)

    def record(
        self,
        handler: BaseHTTPRequestHandler,
        body: JsonObject | None,
        kind: RequestKind,
        reason: str,
        step: Step | None,
    ) -> RecordedRequest:
        headers = {key.lower(): value for key, value in handler.headers.items()}
        with self._lock:
            recorded = RecordedRequest(
                len(self._requests),
                handler.command,
                handler.path,
                headers,
                body,
                kind,
                reason,
                step,
            )
            self._requests.append(recorded)
            self._lock.notify_all()
        return recorded

    def finish(self, record: RecordedRequest, outcome: str) -> None:
        with self._lock:
            record.outcome = outcome
            self._lock.notify_all()
        callback = self.on_request
        if callback is not None:
            callback(record)

    # -- lifecycle ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: ephemeral)")
    parser.add_argument("--script", default="[]", help="JSON list of fault-script steps, or @FILE")
    args = parser.parse_args(argv)
    raw = args.script
    if raw.startswith("@"):
        with open(raw[1:], encoding="utf-8") as handle:
            raw = handle.read()
    script = json.loads(raw)
    if not isinstance(script, list):
        parser.error("--script must be a JSON list")
    api = FakeAnthropicAPI(script, port=args.port)

    def log(record: RecordedRequest) -> None:
        print(json.dumps(record.summary()), file=sys.stderr, flush=True)

    api.on_request = log
    api.start()
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
