"""A fake MCP server over streamable HTTP on 127.0.0.1: one `echo` tool, every request recorded.

Enough of the transport for a client to connect and list tools: `POST <url>` with a JSON-RPC
message is answered with one JSON body (`initialize`, `tools/list`, `tools/call`, `ping`), a
notification with 202; `GET` (the optional server stream) is 405, which the spec allows.

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
        if "id" not in message:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": _result(message)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "fake-mcp-session")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


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


def _result(message: dict[str, Any]) -> dict[str, Any]:
    method = message.get("method")
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion") or "2025-06-18"
        return {"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-mcp-http", "version": "1"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
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
