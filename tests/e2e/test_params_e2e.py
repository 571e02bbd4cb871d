"""What the agent answers to wrongly typed or oversized params, through the `acp-agent` subprocess.

Raw JSON lines (tests/e2e/raw.py): the SDK client would refuse to send most of these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw import RawAgent, raw_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

INIT = {"protocolVersion": 1, "clientCapabilities": {}}
HUGE = "x" * 100_000
# An echoed value is cut to a short prefix: the whole error frame stays far below this.
ERROR_BUDGET = 600


def scripted_env(tmp_path: Path, script: dict[str, Any] | None = None) -> dict[str, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script or {}))
    return {"ACP_AGENT_SCRIPTED_SCRIPT": str(path)}


async def started(agent: RawAgent) -> None:
    answer = await agent.ask("initialize", INIT)
    assert answer["result"]["protocolVersion"] == 1


@pytest.mark.parametrize("version", ["1", True, 1.5, None, [1], {"v": 1}])
async def test_initialize_rejects_a_protocol_version_that_is_not_an_integer(tmp_path: Path, version: Any) -> None:
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        answer = await agent.ask("initialize", {"protocolVersion": version, "clientCapabilities": {}})
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"] == {"field": "params.protocolVersion"}
        # the connection stays up and a correct initialize is answered
        await started(agent)


@pytest.mark.parametrize(("version", "answered"), [(0, 1), (2, 2), (99, 2), (65535, 2)])
async def test_initialize_answers_an_unsupported_version_with_the_one_it_supports(tmp_path: Path, version: int,
                                                                                  answered: int) -> None:
    """The highest version the agent speaks at or below the one asked (ACP v2: `acp_agent.v2`)."""
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        answer = await agent.ask("initialize", {"protocolVersion": version, "clientCapabilities": {}})
    assert answer["result"]["protocolVersion"] == answered


async def test_null_for_an_optional_capability_means_absent(tmp_path: Path) -> None:
    """Clients serialize unset options as null: strict types must not refuse the whole initialize,
    while a wrong type is still -32602."""
    capabilities = {"fs": {"readTextFile": None, "writeTextFile": True}, "terminal": None, "_meta": None}
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        answer = await agent.ask("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        assert answer["result"]["protocolVersion"] == 1, answer
        wrong = await agent.ask("initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": "yes"}})
        assert wrong["error"]["code"] == -32602
        assert wrong["error"]["data"] == {"field": "params.clientCapabilities.terminal"}


async def test_numbers_are_not_strings(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        await started(agent)
        new = await agent.ask("session/new", {"cwd": 123, "mcpServers": []})
        created = await agent.ask("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = created["result"]["sessionId"]
        prompt = await agent.ask("session/prompt", {"sessionId": 12, "prompt": []})
        load = await agent.ask("session/load", {"sessionId": 7, "cwd": str(tmp_path), "mcpServers": []})
        text = await agent.ask("session/prompt", {"sessionId": session_id,
                                                  "prompt": [{"type": "text", "text": 5}]})
        flag = await agent.ask("initialize", {"protocolVersion": 1,
                                              "clientCapabilities": {"fs": {"readTextFile": "false"}}})
        ok = await agent.ask("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]})
    assert (new["error"]["code"], new["error"]["data"]) == (-32602, {"field": "params.cwd"})
    assert (prompt["error"]["code"], prompt["error"]["data"]) == (-32602, {"field": "params.sessionId"})
    assert (load["error"]["code"], load["error"]["data"]) == (-32602, {"field": "params.sessionId"})
    assert (text["error"]["code"], text["error"]["data"]) == (-32602, {"field": "params.prompt[0].text"})
    assert (flag["error"]["code"], flag["error"]["data"]) == (
        -32602, {"field": "params.clientCapabilities.fs.readTextFile"})
    assert ok["result"]["stopReason"] == "end_turn"


STDIO = {"name": "tools", "command": "/usr/bin/true", "args": ["--flag"], "env": [{"name": "A", "value": "1"}]}
HTTP = {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]}
MALFORMED: list[tuple[Any, str]] = [
    ("tools", "params.mcpServers"),
    ({"name": "tools"}, "params.mcpServers"),
    (["tools"], "params.mcpServers[0]"),
    ([{"name": "tools"}], "params.mcpServers[0].command"),
    ([{"command": "/usr/bin/true"}], "params.mcpServers[0].name"),
    ([{**STDIO, "command": 5}], "params.mcpServers[0].command"),
    ([{**STDIO, "name": ""}], "params.mcpServers[0].name"),
    ([{**STDIO, "args": "--flag"}], "params.mcpServers[0].args"),
    ([{**STDIO, "args": [1]}], "params.mcpServers[0].args[0]"),
    ([{**STDIO, "env": {"A": "1"}}], "params.mcpServers[0].env"),
    ([{**STDIO, "env": [{"name": "A"}]}], "params.mcpServers[0].env[0].value"),
    ([{**STDIO, "env": [{"name": "A", "value": 1}]}], "params.mcpServers[0].env[0].value"),
    ([STDIO, {**HTTP, "url": None}], "params.mcpServers[1].url"),
    ([STDIO, {**HTTP, "headers": [["X", "y"]]}], "params.mcpServers[1].headers[0]"),
    ([STDIO, {**HTTP, "type": "websocket"}], "params.mcpServers[1].type"),
    ([STDIO, {**HTTP, "name": "tools"}], "params.mcpServers[1].name"),
]


@pytest.mark.parametrize(("servers", "field"), MALFORMED, ids=[field + ":" + json.dumps(s)[:40] for s, field in MALFORMED])
async def test_malformed_mcp_servers_are_invalid_params(tmp_path: Path, servers: Any, field: str) -> None:
    script = {"history": {"stored": [{"user": "hi"}]}}
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path, script)) as agent:
        await started(agent)
        answers = [
            await agent.ask("session/new", {"cwd": str(tmp_path), "mcpServers": servers}),
            await agent.ask("session/load", {"sessionId": "stored", "cwd": str(tmp_path), "mcpServers": servers}),
            await agent.ask("session/resume", {"sessionId": "stored", "cwd": str(tmp_path), "mcpServers": servers}),
        ]
        accepted = await agent.ask("session/new", {"cwd": str(tmp_path), "mcpServers": [STDIO, HTTP]})
    for answer in answers:
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"] == {"field": field}
        assert field in answer["error"]["message"]
    assert "sessionId" in accepted["result"]


async def test_echoed_client_values_are_cut_short(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        await started(agent)
        answers = {
            "prompt": await agent.ask("session/prompt", {"sessionId": HUGE, "prompt": []}),
            "load": await agent.ask("session/load", {"sessionId": HUGE, "cwd": str(tmp_path), "mcpServers": []}),
            "mode": await agent.ask("session/set_mode", {"sessionId": HUGE, "modeId": HUGE}),
            "method": await agent.ask(HUGE, {}),
            "cwd": await agent.ask("session/new", {"cwd": HUGE, "mcpServers": []}),
            "missing cwd": await agent.ask("session/new", {"cwd": "/" + HUGE, "mcpServers": []}),
            "auth": await agent.ask("authenticate", {"methodId": HUGE}),
            "content": await agent.ask("session/prompt", {"sessionId": "s", "prompt": [{"type": HUGE}]}),
        }
    for what, answer in answers.items():
        error = answer["error"]
        assert len(json.dumps(error)) < ERROR_BUDGET, (what, len(json.dumps(error)))
        if what != "content":  # the value is still recognisable by its prefix
            assert "xxxxxxxxxx" in error["message"], what
    assert answers["method"]["error"]["code"] == -32601
    assert answers["cwd"]["error"]["code"] == answers["missing cwd"]["error"]["code"] == -32602


async def test_an_unknown_session_reads_the_same_everywhere(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, scripted_env(tmp_path)) as agent:
        await started(agent)
        held = await agent.ask("session/prompt", {"sessionId": "nope", "prompt": []})
        stored = await agent.ask("session/load", {"sessionId": "nope", "cwd": str(tmp_path), "mcpServers": []})
        mode = await agent.ask("session/set_mode", {"sessionId": "nope", "modeId": "default"})
    for answer in (held, stored, mode):
        assert answer["error"] == {"code": -32002, "message": "Session not found: nope", "data": {"field": "sessionId"}}
