"""Reading the captured app-server traffic in tests/codex/fixtures/ (see its README)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
Message = tuple[str, dict[str, Any]]


@cache
def entries(name: str) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """The header and every logged line of a fixture."""
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    header = json.loads(lines[0])["_fixture"]
    return header, tuple(json.loads(line) for line in lines[1:] if line.strip())


def notifications(name: str, method: str | None = None, *, process: int = 0) -> list[Message]:
    """Server notifications (no id) in wire order, optionally of one method."""
    _, logged = entries(name)
    found = []
    for entry in logged:
        message = entry["msg"]
        if entry["dir"] != "server->client" or "id" in message or "method" not in message:
            continue
        if entry.get("process", 0) != process:
            continue
        if method is None or message["method"] == method:
            found.append((message["method"], message.get("params") or {}))
    return found


def params_of(name: str, method: str) -> list[dict[str, Any]]:
    return [params for _, params in notifications(name, method)]


def server_requests(name: str, method: str) -> list[dict[str, Any]]:
    """Server → client requests (approvals) of one method."""
    _, logged = entries(name)
    return [entry["msg"]["params"] for entry in logged
            if entry["dir"] == "server->client" and entry["msg"].get("method") == method and "id" in entry["msg"]]


def turn(name: str, index: int = 0, *, process: int = 0) -> list[Message]:
    """The notifications of the index-th turn: from its turn/started through its turn/completed."""
    messages = notifications(name, process=process)
    starts = [i for i, (method, _) in enumerate(messages) if method == "turn/started"]
    start = starts[index]
    turn_id = messages[start][1]["turn"]["id"]
    for end in range(start, len(messages)):
        method, params = messages[end]
        if method == "turn/completed" and params["turn"]["id"] == turn_id:
            return messages[start:end + 1]
    raise AssertionError(f"turn {index} of {name} never completed")


def response(name: str, request_method: str, *, process: int = 0, index: int = 0) -> dict[str, Any]:
    """The result of the index-th client request of a method."""
    _, logged = entries(name)
    ids = [entry["msg"]["id"] for entry in logged
           if entry["dir"] == "client->server" and entry["msg"].get("method") == request_method
           and entry.get("process", 0) == process]
    wanted = ids[index]
    for entry in logged:
        message = entry["msg"]
        if (entry["dir"] == "server->client" and entry.get("process", 0) == process and message.get("id") == wanted
                and "method" not in message):
            return dict(message["result"])
    raise AssertionError(f"no response to {request_method} in {name}")
