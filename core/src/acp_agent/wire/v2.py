"""ACP v2 (the draft of `@agentclientprotocol/sdk` 2.4.0) as translations of v1 frames.

The agent speaks v1. A client that asks `initialize` for protocol version 2 gets the same agent
through these translations (`acp_agent.v2.V2Surface` applies them per connection): a v2 request
becomes the v1 request the agent serves, its v1 answer and v1 notifications become v2 frames. As
claude-agent-acp's `dist/v2/` (initialize.js, session.js, prompt.js, session-update.js,
tool-call.js, permission.js), whose shapes these follow. Pure functions on wire dicts; a request
v2 cannot express in v1 is refused with -32602.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

PROTOCOL_VERSION = 2
V1_PROTOCOL_VERSION = 1
MODE_CONFIG_ID = "mode"
"""The config option that is the session mode for a v2 client (v2 has no modes), as cacp's."""
SESSION_PLAN_ID = "plan"
"""The id of a session's one plan: a v1 `plan` replaces it whole (cacp's `SESSION_PLAN_ID`)."""
UNSERVED_META_KEYS = ("steering",)
"""Extensions of the v1 `initialize` answer the v2 surface does not serve (`_session/steering`)."""

JsonObject = dict[str, Any]


def requested(params: Any) -> bool:
    """Whether an `initialize` asks for v2 (or newer, which is answered 2)."""
    version = params.get("protocolVersion") if isinstance(params, Mapping) else None
    return isinstance(version, int) and not isinstance(version, bool) and version >= PROTOCOL_VERSION


def _object(value: Any) -> JsonObject:
    return dict(value) if isinstance(value, Mapping) else {}


def _with_meta(target: JsonObject, source: Mapping[str, Any]) -> JsonObject:
    if source.get("_meta") is not None:
        target["_meta"] = source["_meta"]
    return target


def _invalid(message: str, field: str) -> RpcError:
    return RpcError(INVALID_PARAMS, message, {"field": field})


# -- initialize and auth ------------------------------------------------------------------------

def v1_initialize(params: Mapping[str, Any]) -> JsonObject:
    """The v1 `initialize` a v2 client means (cacp `v1InitializeRequest`): no client file system
    or terminals, and what every v2 client takes (boolean options, notices, compaction updates)."""
    capabilities = _object(params.get("capabilities"))
    auth = _object(capabilities.get("auth"))
    client: JsonObject = {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "session": {"configOptions": {"boolean": {}}, "notices": {}, "compaction": {}},
        "auth": {"terminal": auth.get("terminal") is not None},
    }
    if capabilities.get("elicitation") is not None:
        client["elicitation"] = capabilities["elicitation"]
    if capabilities.get("_meta") is not None:
        client["_meta"] = capabilities["_meta"]
    request: JsonObject = {"protocolVersion": V1_PROTOCOL_VERSION, "clientCapabilities": client}
    if params.get("info") is not None:
        request["clientInfo"] = params["info"]
    return _with_meta(request, params)


def v2_initialize(result: Mapping[str, Any]) -> JsonObject:
    """The v2 answer for the agent's v1 `initialize` answer (cacp `v2InitializeResponse`)."""
    v1_caps = _object(result.get("agentCapabilities"))
    prompt = _object(v1_caps.get("promptCapabilities"))
    mcp = _object(v1_caps.get("mcpCapabilities"))
    v1_session = _object(v1_caps.get("sessionCapabilities"))
    session: JsonObject = {
        "prompt": {name: {} for name in ("image", "audio", "embeddedContext") if prompt.get(name)},
        "mcp": {"stdio": {}, **({"http": {}} if mcp.get("http") else {})},
    }
    for name in ("delete", "fork", "additionalDirectories"):
        if v1_session.get(name) is not None:
            session[name] = {}
    capabilities: JsonObject = {"session": session}
    status = _object(v1_caps.get("auth")).get("status")
    if status is not None:
        capabilities["auth"] = {"status": status}
    if v1_caps.get("providers") is not None:  # gateways: the same methods and shapes in v2
        capabilities["providers"] = v1_caps["providers"]
    answer: JsonObject = {
        "protocolVersion": PROTOCOL_VERSION,
        "info": result["agentInfo"],
        "capabilities": capabilities,
        "authMethods": [v2_auth_method(method) for method in result.get("authMethods") or []],
    }
    meta = {key: value for key, value in _object(result.get("_meta")).items() if key not in UNSERVED_META_KEYS}
    if meta:
        answer["_meta"] = meta
    return answer


def v2_auth_method(method: Mapping[str, Any]) -> JsonObject:
    """v2 names the id `methodId`, requires `type` and lists `env` as name and value pairs."""
    v2 = {key: value for key, value in method.items() if key != "id"}
    v2["methodId"] = method["id"]
    if method.get("type") == "terminal":
        env = method.get("env")
        if isinstance(env, Mapping):
            v2["env"] = [{"name": name, "value": value} for name, value in env.items()]
        return v2
    v2["type"] = "agent"
    return v2


# -- session setup ------------------------------------------------------------------------------

def v1_mcp_servers(servers: Any) -> list[JsonObject] | None:
    """v2 tags every transport with `type`; v1 knows a stdio server by its missing `type`. A
    transport the agent does not advertise (`acp`, a custom one) is -32602, not dropped."""
    if servers is None:
        return None
    if not isinstance(servers, list):
        raise _invalid("Invalid params: mcpServers must be an array", "mcpServers")
    v1: list[JsonObject] = []
    for given in servers:
        server = _object(given)
        kind = server.get("type")
        if kind == "stdio":
            v1.append(_with_meta({"name": server.get("name"), "command": server.get("command"),
                                  "args": server.get("args") or [], "env": server.get("env") or []}, server))
        elif kind == "http":
            v1.append({**server, "headers": server.get("headers") or []})
        else:
            raise _invalid(f"MCP servers of type {str(kind)[:40]!r} are not supported", "mcpServers")
    return v1


def _no_system_prompt(params: Mapping[str, Any]) -> None:
    if params.get("systemPrompt") is not None:  # not advertised: refused rather than ignored
        raise _invalid("systemPrompt is not supported", "systemPrompt")


def v1_new_session(params: Mapping[str, Any]) -> JsonObject:
    """`session/new` (and `session/fork`): v1 requires the MCP server list, v2 does not."""
    _no_system_prompt(params)
    request = {key: value for key, value in params.items() if key not in ("mcpServers", "systemPrompt")}
    request["mcpServers"] = v1_mcp_servers(params.get("mcpServers")) or []
    return request


def v1_restore(params: Mapping[str, Any]) -> tuple[str, JsonObject]:
    """The v1 method and request of a v2 `session/resume` (cacp `v1RestoreSessionRequest`):
    without `replayFrom` it resumes (no history), `replayFrom: {type: "start"}` loads (the whole
    history replayed first); a cursor that starts elsewhere is -32602."""
    _no_system_prompt(params)
    replay_from = params.get("replayFrom")
    request = {key: value for key, value in params.items()
               if key not in ("replayFrom", "mcpServers", "systemPrompt")}
    request["mcpServers"] = v1_mcp_servers(params.get("mcpServers")) or []
    if replay_from is None:
        return "session/resume", request
    kind = _object(replay_from).get("type")
    if kind != "start":
        raise RpcError(INVALID_PARAMS, f"Replaying from a {str(kind)[:40]} cursor is not supported",
                       {"field": "replayFrom", "replayFrom": replay_from})
    return "session/load", request


def mode_option(modes: Mapping[str, Any]) -> JsonObject:
    """The session's modes as the v2 `mode` config option (cacp `SessionMode.configOption`)."""
    options = []
    for mode in modes.get("availableModes") or []:
        option = {"value": mode["id"], "name": mode["name"]}
        if mode.get("description") is not None:
            option["description"] = mode["description"]
        options.append(option)
    return {"configId": MODE_CONFIG_ID, "name": "Mode", "description": "Session mode", "category": "mode",
            "type": "select", "currentValue": modes["currentModeId"], "options": options}


def serves_mode_option(options: Iterable[Mapping[str, Any]], modes: Mapping[str, Any] | None) -> bool:
    """Whether `mode` is the session's modes (not an option of the provider's own by that id)."""
    return bool(modes) and not any(option.get("id") == MODE_CONFIG_ID for option in options)


def v2_config_options(options: Iterable[Mapping[str, Any]], modes: Mapping[str, Any] | None = None) -> list[JsonObject]:
    """v2 names an option's id `configId` and a select group's `group` `groupId`; the modes,
    if the session has any, are the `mode` option, first."""
    options = list(options)
    v2: list[JsonObject] = []
    if modes is not None and serves_mode_option(options, modes) and modes.get("availableModes"):
        v2.append(mode_option(modes))
    for option in options:
        converted = {key: value for key, value in option.items() if key != "id" and value is not None}
        converted["configId"] = option["id"]
        if option.get("type", "select") == "select":
            converted["type"] = "select"
            converted["options"] = [
                {**{k: v for k, v in choice.items() if k != "group"}, "groupId": choice["group"]}
                if isinstance(choice, Mapping) and "group" in choice else choice
                for choice in option.get("options") or []]
        v2.append(converted)
    return v2


def v2_setup(result: Mapping[str, Any], modes: Mapping[str, Any] | None) -> JsonObject:
    """A v2 `session/new`, `resume` or `fork` answer: no `modes` (the `mode` option instead)."""
    answer: JsonObject = {}
    if "sessionId" in result:
        answer["sessionId"] = result["sessionId"]
    options = v2_config_options(result.get("configOptions") or [], modes)
    if options:
        answer["configOptions"] = options
    return _with_meta(answer, result)


def v1_set_config_option(params: Mapping[str, Any]) -> JsonObject:
    """v2 tags a select value with `type: "id"`; v1 leaves it untagged (cacp)."""
    request: JsonObject = _with_meta({"sessionId": params.get("sessionId"), "configId": params.get("configId")},
                                     params)
    kind = params.get("type")
    if kind == "id":
        request["value"] = params.get("value")
    elif kind == "boolean":
        request["type"] = "boolean"
        request["value"] = params.get("value")
    else:
        raise _invalid(f"Config option values of type {str(kind)[:40]!r} are not supported", "type")
    return request


def v2_available_commands(commands: Iterable[Mapping[str, Any]]) -> list[JsonObject]:
    """v2 tags each command `type: "command"` and its free-text input `type: "text"`."""
    v2 = []
    for command in commands:
        converted = {"type": "command", **{key: value for key, value in command.items() if key != "input"}}
        if command.get("input") is not None:
            converted["input"] = {"type": "text", **command["input"]}
        v2.append(converted)
    return v2


# -- prompts and turns --------------------------------------------------------------------------

def v1_prompt(params: Mapping[str, Any]) -> JsonObject:
    """v2 requires at least one content block; the blocks are v1's (a superset the agent checks)."""
    prompt = params.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise _invalid("`prompt` must hold at least one content block", "prompt")
    return _with_meta({"sessionId": params.get("sessionId"), "prompt": prompt}, params)


def idle_update(result: Mapping[str, Any]) -> JsonObject:
    """The `state_update` that ends a turn, from its v1 prompt answer (cacp `idle`)."""
    update: JsonObject = {"sessionUpdate": "state_update", "state": "idle", "stopReason": result.get("stopReason")}
    if result.get("usage") is not None:
        update["usage"] = result["usage"]
    return _with_meta(update, result)


def error_update(error: RpcError) -> JsonObject:
    """A turn that failed: `idle`, stop reason `error`, with the JSON-RPC error v1 answers, so a
    client handles its code as for an error answer (-32000 starts its sign-in)."""
    return {"sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": error.to_wire()}


def state_update(state: str) -> JsonObject:
    return {"sessionUpdate": "state_update", "state": state}


# -- session updates ----------------------------------------------------------------------------

CHUNKS = {"user_message_chunk": "user_message", "agent_message_chunk": "agent_message",
          "agent_thought_chunk": "agent_thought"}
"""Each chunk kind and the message update v2 has for it."""
TOOL_CALL_FIELDS = ("name", "title", "kind", "status", "content", "locations", "rawInput", "rawOutput")
FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


def v2_session_update(update: Mapping[str, Any], options: list[JsonObject] | None = None) -> JsonObject | None:
    """The v2 form of a v1 session update, or None where v2 has no counterpart (a
    `current_mode_update`: the mode is a config option, whose update the surface sends). A
    chunk must already carry its `messageId` (`acp_agent.v2.MessageIds`); `options` are the
    session's v2 config options for a `config_option_update`."""
    kind = update.get("sessionUpdate")
    if kind == "plan":
        return _with_meta({"sessionUpdate": "plan_update",
                           "plan": {"type": "items", "planId": SESSION_PLAN_ID, "entries": update.get("entries", [])}},
                          update)
    if kind in ("tool_call", "tool_call_update"):
        return v2_tool_call(update)
    if kind == "available_commands_update":
        return {**update, "availableCommands": v2_available_commands(update.get("availableCommands") or [])}
    if kind == "config_option_update":
        return {**update, "configOptions": options if options is not None
                else v2_config_options(update.get("configOptions") or [])}
    if kind == "current_mode_update":
        return None
    return dict(update)


def v2_tool_call(report: Mapping[str, Any]) -> JsonObject:
    """v1's `tool_call` and `tool_call_update` are one upserting `tool_call_update` in v2. A v1
    `null` leaves a field unchanged, a v2 one clears it, so nulls are left out (cacp)."""
    patch = {key: value for key, value in report.items()
             if value is not None and key not in ("sessionUpdate", "content")}
    if report.get("content") is not None:
        patch["content"] = [v2_tool_call_content(item) for item in report["content"]]
    return {**patch, "sessionUpdate": "tool_call_update"}


def v2_tool_call_content(item: Mapping[str, Any]) -> JsonObject:
    if item.get("type") == "diff" and "changes" not in item:
        return v2_diff(item)
    return dict(item)


def v2_diff(item: Mapping[str, Any]) -> JsonObject:
    """A v1 diff (one path, old and new text) as a v2 diff: the change and its patch in git's
    form with the native path (cacp `v2DiffContent`)."""
    import difflib

    path = str(item.get("path", ""))
    old, new = item.get("oldText"), str(item.get("newText") or "")
    created = old is None
    lines = list(difflib.unified_diff(str(old or "").splitlines(keepends=True), new.splitlines(keepends=True), n=3))
    body = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines[2:]]
    header = [f"diff --git {path} {path}\n", *(["new file mode 100644\n"] if created else []),
              f"--- {'/dev/null' if created else path}\n", f"+++ {path}\n"]
    diff: JsonObject = {"type": "diff",
                        "changes": [{"operation": "add" if created else "modify", "path": path, "fileType": "text"}]}
    if body:
        diff["patch"] = {"format": "git_patch", "text": "".join(header + body)}
    return _with_meta(diff, item)


def empty_message(chunk_kind: str, message_id: str) -> JsonObject:
    """The message with no content that clears a replayed message before its first chunk (v2
    asks it of a message replayed as chunks, the client may hold it: cacp `replayClear`)."""
    return {"sessionUpdate": CHUNKS[chunk_kind], "messageId": message_id, "content": []}


# -- permission requests ------------------------------------------------------------------------

def v2_permission_request(params: Mapping[str, Any]) -> JsonObject:
    """v2 gives the prompt its own `title` and asks about a `subject`: the tool call, as the patch a
    `tool_call_update` carries (cacp `v2PermissionRequest`)."""
    tool_call = _object(params.get("toolCall"))
    patch = {key: value for key, value in v2_tool_call(tool_call).items() if key != "sessionUpdate"}
    title = tool_call.get("title") or tool_call.get("name") or "Allow this tool call?"
    return _with_meta({"sessionId": params.get("sessionId"), "title": title,
                       "subject": {"type": "tool_call", "toolCall": patch}, "options": params.get("options", [])},
                      params)


def v1_permission_response(answer: Any) -> JsonObject:
    """Outcomes v1 does not know are no approval: `cancelled` (cacp `v1PermissionResponse`)."""
    outcome = _object(_object(answer).get("outcome"))
    if outcome.get("outcome") == "selected":
        return {"outcome": outcome}
    return {"outcome": {"outcome": "cancelled"}}
