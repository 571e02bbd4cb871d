"""A fake MCP server over stdio whose `ask` tool asks the user (MCP elicitation) while it runs.

Run as `python tests/fakes/mcp_stdio.py LOG_PATH` (an ACP `mcpServers` stdio entry): newline-
delimited JSON-RPC 2.0 on stdin/stdout, standard library only (it runs outside the test's
interpreter path). `initialize`, `tools/list` (`ask`, `echo`), `tools/call`, `ping`. `tools/call`
of `ask` sends an `elicitation/create` request (a form, or a URL when the call's `mode` is `url`),
and once the client answers it, the tool's result quotes the answer as JSON (`answer: {...}`).
Every message received is appended to LOG_PATH, one JSON object a line, for the test to read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ASK_MESSAGE = "Pick a size"
ASK_SCHEMA = {"type": "object", "properties": {"size": {"type": "string", "enum": ["small", "large"]}},
              "required": ["size"]}
ASK_URL = "https://example.invalid/size"
TOOLS = [
    {"name": "ask", "description": "Ask the user for a size.",
     "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}}},
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
]


def received(log_path: Path) -> list[dict[str, Any]]:
    """The messages the server received, in order (for tests)."""
    if not log_path.exists():
        return []
    return [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def _result(message: dict[str, Any]) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion") or "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-mcp-stdio", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": f"echo: {text}"}]}
    if method == "ping":
        return {}
    return None


def main(log_path: Path) -> None:
    pending: dict[str, Any] = {}  # our elicitation request id → the tools/call it answers
    with log_path.open("a") as log:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            log.write(json.dumps(message) + "\n")
            log.flush()
            if "method" not in message:  # the client's answer to our request
                call_id = pending.pop(str(message.get("id")), None)
                if call_id is not None:
                    answer = json.dumps(message.get("result", message.get("error")), sort_keys=True)
                    _send({"id": call_id, "result": {"content": [{"type": "text", "text": f"answer: {answer}"}]}})
                continue
            if "id" not in message:  # a notification
                continue
            params = message.get("params") or {}
            if message["method"] == "tools/call" and params.get("name") == "ask":
                request_id = f"elicit-{len(pending) + 1}"
                pending[request_id] = message["id"]
                url = (params.get("arguments") or {}).get("mode") == "url"
                ask = ({"mode": "url", "message": ASK_MESSAGE, "url": ASK_URL, "elicitationId": request_id} if url
                       else {"mode": "form", "message": ASK_MESSAGE, "requestedSchema": ASK_SCHEMA})
                _send({"id": request_id, "method": "elicitation/create", "params": ask})
                continue
            result = _result(message)
            if result is None:
                _send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
            else:
                _send({"id": message["id"], "result": result})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
