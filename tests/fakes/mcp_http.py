"""A fake MCP server over streamable HTTP on 127.0.0.1: `echo` and `ask` tools, every request recorded.

Enough of the transport for a client to connect and list tools: `POST <url>` with a JSON-RPC
message is answered with one JSON body (`initialize`, `tools/list`, `tools/call`, `ping`), a
notification or a response with 202; `GET` (the optional server stream) is 405, which the spec
allows. `tools/call` of `ask` is answered as an event stream: an `elicitation/create` request
(`ASK_SCHEMA`, or a URL when the call's `mode` is `url`), then, once the client POSTs its answer,
the tool's result, which quotes the answer as JSON.

The older HTTP+SSE transport is served too, at `sse_url`: `GET /sse` opens the event stream and
names `/messages` as the endpoint; a `POST /messages` is answered 202 and its response is sent as
an SSE `message` event on that stream.
"""

from __future__ import annotations

import json
import queue
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackFake

TOOL = {"name": "echo", "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
ASK_TOOL = {"name": "ask", "description": "Ask the user for a color.",
            "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}}}
ASK_MESSAGE = "Pick a color"
ASK_SCHEMA = {"type": "object", "properties": {"color": {"type": "string", "enum": ["blue", "red"]}},
              "required": ["color"]}
ASK_URL = "https://example.invalid/authorize"
ANSWER_TIMEOUT_S = 60.0


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/sse":
            self._stream()
            return
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        message = json.loads(self.rfile.read(length) or b"{}")
        fake: FakeMcpHttp = self.server.api
        fake.record(message, {key.lower(): value for key, value in self.headers.items()})
        if self.path.split("?")[0] == "/messages":
            if "id" in message:
                fake.events.put({"jsonrpc": "2.0", "id": message["id"], "result": _result(message)})
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "id" not in message or "method" not in message:  # a notification, or the client's answer
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        params = message.get("params") or {}
        if message.get("method") == "tools/call" and params.get("name") == "ask":
            self._ask(fake, message["id"], (params.get("arguments") or {}).get("mode") == "url")
            return
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": _result(message)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "fake-mcp-session")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


    def _ask(self, fake: FakeMcpHttp, call_id: Any, url: bool) -> None:
        """The `ask` tool: elicit on the call's stream, wait for the answer, then the result."""
        fake.asked += 1
        request_id = f"elicit-{fake.asked}"
        params: dict[str, Any] = (
            {"mode": "url", "message": ASK_MESSAGE, "url": ASK_URL, "elicitationId": request_id} if url
            else {"mode": "form", "message": ASK_MESSAGE, "requestedSchema": ASK_SCHEMA})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", "fake-mcp-session")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self._event({"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params})
        answer = fake.answer(request_id)
        text = json.dumps(answer.get("result", answer.get("error")), sort_keys=True)
        self._event({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": f"answer: {text}"}]}})
        self.close_connection = True

    def _stream(self) -> None:
        """The SSE transport's stream: the endpoint, then each response, until the fake stops."""
        fake: FakeMcpHttp = self.server.api
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            self.wfile.write(b"event: endpoint\ndata: /messages\n\n")
            self.wfile.flush()
            while not fake.stopping.is_set():
                try:
                    event = fake.events.get(timeout=0.2)
                except queue.Empty:
                    continue
                self.wfile.write(f"event: message\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
        except OSError:
            return

    def _event(self, message: dict[str, Any]) -> None:
        self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
        self.wfile.flush()


def _result(message: dict[str, Any]) -> dict[str, Any]:
    method = message.get("method")
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion") or "2025-06-18"
        return {"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-mcp-http", "version": "1"}}
    if method == "tools/list":
        return {"tools": [TOOL, ASK_TOOL]}
    if method == "tools/call":
        text = ((message.get("params") or {}).get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": f"echo: {text}"}]}
    return {}


class FakeMcpHttp(LoopbackFake):
    handler = _Handler
    thread_name = "fake-mcp-http"

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.messages: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.asked = 0
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()  # the SSE transport's responses
        self._init_loopback(0)

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeMcpHttp is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/mcp"

    @property
    def sse_url(self) -> str:
        assert self._server is not None, "FakeMcpHttp is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/sse"

    def record(self, message: dict[str, Any], headers: dict[str, str]) -> None:
        with self._changed:
            self.messages.append(message)
            self.headers.append(headers)
            self._changed.notify_all()

    def methods(self) -> list[str]:
        with self._changed:
            return [str(message.get("method")) for message in self.messages]

    def wait_for(self, method: str, *, timeout: float = 20.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: any(m.get("method") == method for m in self.messages), timeout):
                raise TimeoutError(f"no {method} in {timeout}s")

    def answer(self, request_id: str, *, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """The client's response to our request `request_id` ({} if none came in time)."""
        def found() -> dict[str, Any] | None:
            return next((m for m in self.messages if m.get("id") == request_id and "method" not in m), None)

        with self._changed:
            self._changed.wait_for(lambda: found() is not None, timeout)
            return found() or {}
