"""The Codex translator and item mapping on app-server messages with fields of the wrong type
(issue 25, item 3): never raised, never forwarded as an update that is not ACP.

Each table row is one message with one field (at any depth) of another type: the captured
traffic in tests/codex/fixtures fed after the notifications before it, items of every kind, and
the requests the runtime asks the client about.
"""

from __future__ import annotations

from typing import Any

from acp_agent_codex import items
from acp_agent_codex.translate import TurnTranslator
from tests.codex.fixture_lines import FIXTURES, notifications
from tests.malformed import problems_of

MCP = {"type": "mcpToolCall", "id": "i1", "server": "s", "tool": "t", "arguments": {"a": 1}, "status": "completed",
       "result": {"content": [{"type": "text", "text": "r"}]}, "error": {"message": "m"}}
ITEMS: list[dict[str, Any]] = [
    MCP,
    {"type": "webSearch", "id": "i2", "query": "q", "action": {"query": "q", "url": "u"}},
    {"type": "imageView", "id": "i3", "path": "/p"},
    {"type": "commandExecution", "id": "i4", "command": "ls", "cwd": "/", "status": "completed",
     "aggregatedOutput": "o", "exitCode": 0},
    {"type": "fileChange", "id": "i5", "status": "completed",
     "changes": [{"path": "/a", "diff": "+x\n", "kind": {"type": "update", "move_path": "/b"}}]},
]
STORED_TURN = {"id": "t", "status": "failed", "error": {"message": "x"}, "items": [
    {"type": "userMessage", "id": "u", "content": [{"type": "text", "text": "hi"},
                                                   {"type": "image", "url": "data:image/png;base64,AA"}]},
    {"type": "agentMessage", "text": "a"}, {"type": "reasoning", "summary": ["s"]},
    {"type": "contextCompaction", "id": "c"}, *ITEMS]}


def test_captured_notifications_with_a_wrong_typed_field() -> None:
    found = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        messages = notifications(path.stem)
        for index, (method, params) in enumerate(messages):
            def run(changed: Any, index: int = index, method: str = method,
                    messages: list[Any] = messages) -> list[Any]:
                translator = TurnTranslator()
                for earlier in messages[:index]:
                    translator.feed(*earlier)
                return translator.feed(method, changed)

            found.extend(problems_of(f"{path.stem}:{index} {method}", params, run))
    assert found == []


def test_items_of_every_kind_with_a_wrong_typed_field() -> None:
    found = []
    for item in ITEMS:
        for method in ("item/started", "item/completed"):
            found.extend(problems_of(f"{method} {item['type']}", {"item": item},
                                     lambda params, method=method: TurnTranslator().feed(method, params)))
    found.extend(problems_of("history", [STORED_TURN], lambda turns: items.history_events(turns, str)))
    assert found == []


def test_requests_to_the_client_with_a_wrong_typed_field() -> None:
    command = {"itemId": "i", "reason": "r", "command": "ls", "cwd": "/"}
    found = [
        *problems_of("command approval", command, lambda params: [
            items.approval_request("item/commandExecution/requestApproval", params, ITEMS[3])[0]]),
        *problems_of("file approval", ITEMS[4], lambda item: [
            items.approval_request("item/fileChange/requestApproval", {"itemId": "i"}, item)[0]]),
        *problems_of("MCP approval", {"_meta": {"persist": ["session", "always"], "tool_params": {}}, "message": "m"},
                     lambda params: [items.mcp_approval_request(params, "i", None)[0]]),
        *problems_of("MCP approval of an item", MCP, lambda item: [items.mcp_approval_request({}, "i", item)[0]]),
        *problems_of("user input", {"questions": [{"id": "q", "question": "?", "header": "h",
                                                   "options": [{"label": "l", "description": "d"}]}]},
                     lambda params: [items.user_input_question(params)]),
        *problems_of("elicitation", {"message": "m", "mode": "url", "url": "u", "elicitationId": "e"},
                     lambda params: [items.elicitation_question(params)]),
    ]
    assert found == []
