"""The ACP v2 translations (`acp_agent.wire.v2`), from tables; each v2 frame is checked against
the v2 draft schema of `@agentclientprotocol/sdk` 2.4.0, each v1 request against v1's."""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.v2 import MessageIds
from acp_agent.wire import v2
from acp_agent.wire.rpc import RpcError
from tests import acp_schema


@pytest.mark.parametrize(("params", "wanted"), [
    ({"protocolVersion": 2}, True), ({"protocolVersion": 3}, True), ({"protocolVersion": 1}, False),
    ({"protocolVersion": True}, False), ({"protocolVersion": "2"}, False), ({}, False), (None, False), ([], False),
])
def test_requested(params: Any, wanted: bool) -> None:
    assert v2.requested(params) is wanted


def test_v1_initialize_is_what_a_v2_client_means() -> None:
    params = {"protocolVersion": 2, "info": {"name": "c", "version": "1"},
              "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}}, "_meta": {"x": 1}},
              "_meta": {"top": True}}
    acp_schema.check_params("initialize", params, version="v2")
    request = v2.v1_initialize(params)
    acp_schema.check_params("initialize", request)
    assert request == {
        "protocolVersion": 1, "clientInfo": {"name": "c", "version": "1"}, "_meta": {"top": True},
        "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
            "session": {"configOptions": {"boolean": {}}, "notices": {}, "compaction": {}},
            "auth": {"terminal": True}, "elicitation": {"form": {}}, "_meta": {"x": 1}}}
    assert v2.v1_initialize({"protocolVersion": 2})["clientCapabilities"]["auth"] == {"terminal": False}


def test_v2_initialize_answer() -> None:
    v1 = {"protocolVersion": 1,
          "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True, "audio": False,
                                                                            "embeddedContext": True},
                                "mcpCapabilities": {"http": True, "sse": False},
                                "sessionCapabilities": {"list": {}, "resume": {}, "fork": {}, "close": {}},
                                "auth": {"logout": {}, "status": {}}},
          "authMethods": [{"id": "key", "name": "Key"},
                          {"id": "login", "name": "Log in", "type": "terminal", "args": ["login"],
                           "env": {"A": "1"}}],
          "agentInfo": {"name": "acp-agent-x", "version": "1"},
          "_meta": {"steering": {"supported": True}, "jetbrains": {"air": {}}}}
    acp_schema.check_result("initialize", v1)
    answer = v2.v2_initialize(v1)
    acp_schema.check_result("initialize", answer, version="v2")
    assert answer == {
        "protocolVersion": 2, "info": {"name": "acp-agent-x", "version": "1"},
        "capabilities": {"session": {"prompt": {"image": {}, "embeddedContext": {}},
                                     "mcp": {"stdio": {}, "http": {}}, "fork": {}},
                         "auth": {"status": {}}},
        "authMethods": [{"methodId": "key", "name": "Key", "type": "agent"},
                        {"methodId": "login", "name": "Log in", "type": "terminal", "args": ["login"],
                         "env": [{"name": "A", "value": "1"}]}],
        "_meta": {"jetbrains": {"air": {}}}}


@pytest.mark.parametrize(("params", "method", "request_"), [
    ({"sessionId": "s", "cwd": "/w"}, "session/resume", {"sessionId": "s", "cwd": "/w", "mcpServers": []}),
    ({"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "start"}}, "session/load",
     {"sessionId": "s", "cwd": "/w", "mcpServers": []}),
    ({"sessionId": "s", "cwd": "/w", "replayFrom": None,
      "mcpServers": [{"type": "stdio", "name": "m", "command": "/bin/m"},
                     {"type": "http", "name": "h", "url": "http://127.0.0.1/"}]}, "session/resume",
     {"sessionId": "s", "cwd": "/w", "mcpServers": [{"name": "m", "command": "/bin/m", "args": [], "env": []},
                                                    {"type": "http", "name": "h", "url": "http://127.0.0.1/",
                                                     "headers": []}]}),
])
def test_v1_restore(params: dict[str, Any], method: str, request_: dict[str, Any]) -> None:
    acp_schema.check_params("session/resume", params, version="v2")
    assert v2.v1_restore(params) == (method, request_)
    acp_schema.check_params(method, request_)


@pytest.mark.parametrize("params", [
    {"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "message", "messageId": "m"}},
    {"sessionId": "s", "cwd": "/w", "mcpServers": [{"type": "acp", "name": "a", "id": "x"}]},
])
def test_v1_restore_refuses_what_v1_cannot_do(params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as caught:
        v2.v1_restore(params)
    assert caught.value.code == -32602


MODES = {"currentModeId": "default", "availableModes": [{"id": "default", "name": "Default"},
                                                        {"id": "plan", "name": "Plan", "description": "Plan first"}]}
MODEL = {"id": "model", "name": "Model", "type": "select", "currentValue": "a", "description": None,
         "options": [{"value": "a", "name": "A"}]}
GROUPED = {"id": "effort", "name": "Effort", "type": "select", "currentValue": "lo",
           "options": [{"group": "g", "name": "G", "options": [{"value": "lo", "name": "Low"}]}]}


@pytest.mark.parametrize(("options", "modes", "wanted"), [
    ([MODEL], MODES, ["mode", "model"]),
    ([MODEL], None, ["model"]),
    ([{**MODEL, "id": "mode"}], MODES, ["mode"]),  # the provider's own `mode` option wins
    ([GROUPED], {"currentModeId": "x", "availableModes": []}, ["effort"]),
])
def test_v2_config_options(options: list[dict[str, Any]], modes: dict[str, Any] | None, wanted: list[str]) -> None:
    converted = v2.v2_config_options(options, modes)
    assert [option["configId"] for option in converted] == wanted
    acp_schema.check_result("session/set_config_option", {"configOptions": converted}, version="v2")
    if modes is MODES and wanted[0] == "mode" and len(wanted) == 2:
        assert converted[0]["currentValue"] == "default"
        assert converted[0]["options"][1] == {"value": "plan", "name": "Plan", "description": "Plan first"}
        assert "description" not in converted[1]  # a v1 null is left out
    if options == [GROUPED]:
        assert converted[0]["options"][0]["groupId"] == "g" and "group" not in converted[0]["options"][0]


@pytest.mark.parametrize(("params", "request_"), [
    ({"sessionId": "s", "configId": "model", "type": "id", "value": "a"},
     {"sessionId": "s", "configId": "model", "value": "a"}),
    ({"sessionId": "s", "configId": "fast", "type": "boolean", "value": True},
     {"sessionId": "s", "configId": "fast", "type": "boolean", "value": True}),
])
def test_v1_set_config_option(params: dict[str, Any], request_: dict[str, Any]) -> None:
    acp_schema.check_params("session/set_config_option", params, version="v2")
    assert v2.v1_set_config_option(params) == request_


def test_v1_set_config_option_refuses_an_unknown_value_type() -> None:
    with pytest.raises(RpcError):
        v2.v1_set_config_option({"sessionId": "s", "configId": "x", "type": "_custom", "value": 1})


UPDATES: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "high", "status": "pending"}]},
     {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "plan",
                                               "entries": [{"content": "a", "priority": "high",
                                                            "status": "pending"}]}}),
    ({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "kind": "execute", "status": "pending",
      "locations": None},
     {"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Run", "kind": "execute",
      "status": "pending"}),
    ({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
      "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]},
     {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
      "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]}),
    ({"sessionUpdate": "available_commands_update",
      "availableCommands": [{"name": "init", "description": "Init", "input": {"hint": "what"}}]},
     {"sessionUpdate": "available_commands_update",
      "availableCommands": [{"type": "command", "name": "init", "description": "Init",
                             "input": {"type": "text", "hint": "what"}}]}),
    ({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}, None),
    ({"sessionUpdate": "usage_update", "used": 1, "size": 10},
     {"sessionUpdate": "usage_update", "used": 1, "size": 10}),
    ({"sessionUpdate": "notice", "severity": "warning", "title": "T"},
     {"sessionUpdate": "notice", "severity": "warning", "title": "T"}),
]


@pytest.mark.parametrize(("update", "wanted"), UPDATES)
def test_v2_session_update(update: dict[str, Any], wanted: dict[str, Any] | None) -> None:
    translated = v2.v2_session_update(update)
    assert translated == wanted
    if translated is not None:
        acp_schema.check_notification({"method": "session/update", "params": {"sessionId": "s",
                                                                              "update": translated}}, version="v2")


@pytest.mark.parametrize(("old", "operation"), [(None, "add"), ("a\nb\n", "modify")])
def test_a_v1_diff_becomes_a_v2_diff_with_its_git_patch(old: str | None, operation: str) -> None:
    item = {"type": "diff", "path": "/w/f.txt", "oldText": old, "newText": "a\nc\n"}
    diff = v2.v2_diff(item)
    assert diff["changes"] == [{"operation": operation, "path": "/w/f.txt", "fileType": "text"}]
    text = diff["patch"]["text"]
    assert text.startswith("diff --git /w/f.txt /w/f.txt\n") and "+c\n" in text
    assert ("--- /dev/null\n" in text) is (old is None)
    update = v2.v2_tool_call({"sessionUpdate": "tool_call_update", "toolCallId": "t", "content": [item]})
    acp_schema.check_notification({"method": "session/update", "params": {"sessionId": "s", "update": update}},
                                  version="v2")


@pytest.mark.parametrize(("result", "wanted"), [
    ({"stopReason": "end_turn"}, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ({"stopReason": "cancelled", "usage": {"totalTokens": 2, "inputTokens": 1, "outputTokens": 1},
      "_meta": {"k": 1}},
     {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled",
      "usage": {"totalTokens": 2, "inputTokens": 1, "outputTokens": 1}, "_meta": {"k": 1}}),
])
def test_idle_update(result: dict[str, Any], wanted: dict[str, Any]) -> None:
    assert v2.idle_update(result) == wanted
    acp_schema.check_notification({"method": "session/update", "params": {"sessionId": "s", "update": wanted}},
                                  version="v2")


def test_error_update() -> None:
    update = v2.error_update(RpcError(-32000, "Sign in", {"provider": "x"}))
    assert update == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "error",
                      "error": {"code": -32000, "message": "Sign in", "data": {"provider": "x"}}}
    acp_schema.check_notification({"method": "session/update", "params": {"sessionId": "s", "update": update}},
                                  version="v2")


def test_permission_request_and_answer() -> None:
    v1 = {"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "Write f", "status": None},
          "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}
    request = v2.v2_permission_request(v1)
    assert request == {"sessionId": "s", "title": "Write f",
                       "subject": {"type": "tool_call", "toolCall": {"toolCallId": "t", "title": "Write f"}},
                       "options": v1["options"]}
    acp_schema.check(request, "RequestPermissionRequest", version="v2")
    assert v2.v1_permission_response({"outcome": {"outcome": "selected", "optionId": "a"}}) == {
        "outcome": {"outcome": "selected", "optionId": "a"}}
    assert v2.v1_permission_response({"outcome": {"outcome": "_dismissed"}}) == {
        "outcome": {"outcome": "cancelled"}}
    assert v2.v1_permission_response(None) == {"outcome": {"outcome": "cancelled"}}


def test_message_ids_one_per_run_of_one_kind() -> None:
    ids = MessageIds()
    first = ids.chunk("s", "agent_message_chunk", None)
    assert ids.chunk("s", "agent_message_chunk", None) == first
    assert ids.chunk("other", "agent_message_chunk", None) != first
    thought = ids.chunk("s", "agent_thought_chunk", None)
    assert thought != first
    assert ids.chunk("s", "agent_message_chunk", None) not in (first, thought)
    given = ids.chunk("s", "agent_message_chunk", "m-1")
    assert given == "m-1"
    after = ids.chunk("s", "agent_message_chunk", None)
    ids.other("s")
    assert ids.chunk("s", "agent_message_chunk", None) != after
