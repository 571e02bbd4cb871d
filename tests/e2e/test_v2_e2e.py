"""ACP v2 through `acp-agent --provider scripted`: a client that asks `initialize` for version 2
speaks v2 from then on (`acp_agent.v2`); every frame the agent writes is checked against the v2
draft schema of `@agentclientprotocol/sdk` 2.4.0."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import acp_schema
from tests.e2e.raw import RawAgent, raw_agent
from tests.e2e.test_prompt_queue_e2e import release

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

INITIALIZE = {"protocolVersion": 2, "info": {"name": "v2-test", "version": "1"}, "capabilities": {}}
FRAME_DEADLINE_S = 20.0


def scripted(tmp_path: Path, script: dict[str, Any]) -> dict[str, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return {"ACP_AGENT_SCRIPTED_SCRIPT": str(path)}


class V2Client:
    """A raw v2 client: every agent frame is kept and checked against the v2 schema."""

    def __init__(self, agent: RawAgent) -> None:
        self.agent = agent
        self.methods: dict[Any, str] = {}
        self.seen = 0

    async def ask(self, method: str, params: Any) -> dict[str, Any]:
        frame = await self.agent.ask(method, params)
        self.methods[frame.get("id")] = method
        return frame

    async def result(self, method: str, params: Any) -> Any:
        frame = await self.ask(method, params)
        assert "result" in frame, frame
        acp_schema.check_result(method, frame["result"], version="v2")
        return frame["result"]

    async def until(self, wanted: Callable[[dict[str, Any]], bool], *, allow: bool = False,
                    deadline_s: float = FRAME_DEADLINE_S) -> dict[str, Any]:
        """The first frame from now on (or already read and not yet passed) that `wanted` takes;
        with `allow`, each permission request on the way is answered with its first allow option."""
        with anyio.fail_after(deadline_s):
            while True:
                while self.seen < len(self.agent.frames):
                    frame = self.agent.frames[self.seen]
                    self.seen += 1
                    if wanted(frame):
                        return frame
                    if allow and frame.get("method") == "session/request_permission":
                        option = next(o for o in frame["params"]["options"] if o["kind"].startswith("allow"))
                        await self.agent.send({"jsonrpc": "2.0", "id": frame["id"], "result": {
                            "outcome": {"outcome": "selected", "optionId": option["optionId"]}}})
                await self.agent._frame()

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [frame["params"]["update"] for frame in self.agent.frames
                if frame.get("method") == "session/update"
                and (session_id is None or frame["params"]["sessionId"] == session_id)]

    def check_all(self) -> None:
        """Every notification and request the agent wrote is a valid v2 frame."""
        for frame in self.agent.frames:
            if frame.get("method") == "session/update" or frame.get("method") == "auth/status_update":
                acp_schema.check_notification(frame, version="v2")
            elif "method" in frame and "id" in frame:
                acp_schema.check(frame["params"], _request_definition(frame["method"]), version="v2")


def _request_definition(method: str) -> str:
    defs = acp_schema._schema("v2", "unstable")["$defs"]
    return next(name for name, body in defs.items() if body.get("x-method") == method
                and body.get("x-side") == "client" and name.endswith("Request"))


def chunk_text(update: dict[str, Any]) -> str | None:
    content = update.get("content")
    return content.get("text") if update["sessionUpdate"].endswith("_chunk") and isinstance(content, dict) else None


def idle(frame: dict[str, Any]) -> bool:
    return (frame.get("method") == "session/update"
            and frame["params"]["update"].get("sessionUpdate") == "state_update"
            and frame["params"]["update"].get("state") == "idle")


async def started(agent: RawAgent) -> V2Client:
    client = V2Client(agent)
    answer = await client.result("initialize", INITIALIZE)
    assert answer["protocolVersion"] == 2
    return client


async def test_a_v2_client_gets_v2_initialize_new_prompt_and_state_updates(tmp_path: Path) -> None:
    script = {"modes": ["default", "plan"], "models": ["m-1", "m-2"],
              "turns": [[{"thought": "hmm"}, {"text": "hello "}, {"text": "world"},
                         {"tool": "Run ls", "id": "t1"}, {"text": "after"},
                         {"usage": {"input_tokens": 3, "output_tokens": 4}}]]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = V2Client(agent)
        answer = await client.result("initialize", INITIALIZE)
        assert answer["protocolVersion"] == 2
        assert answer["info"]["name"] == "acp-agent-scripted"
        assert {"prompt", "mcp", "fork"} <= set(answer["capabilities"]["session"])
        assert answer["authMethods"] and all({"methodId", "type"} <= set(m) for m in answer["authMethods"])
        assert "agentCapabilities" not in answer and "steering" not in answer.get("_meta", {})

        new = await client.result("session/new", {"cwd": str(tmp_path)})
        session_id = new["sessionId"]
        assert "modes" not in new
        options = {option["configId"]: option for option in new["configOptions"]}
        assert options["mode"]["currentValue"] == "default" and options["mode"]["category"] == "mode"
        assert [choice["value"] for choice in options["mode"]["options"]] == ["default", "plan"]
        assert options["model"]["currentValue"] == "m-1"

        prompt = await client.result("session/prompt", {"sessionId": session_id,
                                                        "prompt": [{"type": "text", "text": "hi"}]})
        message_id = prompt["messageId"]
        end = (await client.until(idle))["params"]["update"]
        assert end["stopReason"] == "end_turn"
        assert end["usage"]["inputTokens"] == 3 and end["usage"]["outputTokens"] == 4
        updates = client.updates(session_id)
        kinds = [update["sessionUpdate"] for update in updates]
        assert kinds[:2] == ["user_message", "state_update"] and updates[1]["state"] == "running"
        assert updates[0] == {"sessionUpdate": "user_message", "messageId": message_id,
                              "content": [{"type": "text", "text": "hi"}]}
        assert "tool_call" not in kinds and "tool_call_update" in kinds
        chunks = [(u["sessionUpdate"], u["messageId"]) for u in updates if u["sessionUpdate"].endswith("_chunk")]
        assert [kind for kind, _ in chunks] == ["agent_thought_chunk", "agent_message_chunk", "agent_message_chunk",
                                                "agent_message_chunk"]
        # one message per run of chunks: the text before the tool call is one, after it another
        assert chunks[1][1] == chunks[2][1] and len({chunks[0][1], chunks[1][1], chunks[3][1]}) == 3
        assert kinds[-1] == "state_update"
        client.check_all()


async def test_mode_is_a_config_option_and_set_config_option_sets_it(tmp_path: Path) -> None:
    script = {"modes": ["default", "plan"], "models": ["m-1", "m-2"]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = await started(agent)
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        answer = await client.result("session/set_config_option", {
            "sessionId": session_id, "configId": "mode", "type": "id", "value": "plan"})
        assert {o["configId"]: o["currentValue"] for o in answer["configOptions"]} == {"mode": "plan", "model": "m-1"}
        answer = await client.result("session/set_config_option", {
            "sessionId": session_id, "configId": "model", "type": "id", "value": "m-2"})
        assert {o["configId"]: o["currentValue"] for o in answer["configOptions"]} == {"mode": "plan", "model": "m-2"}
        updates = client.updates(session_id)
        assert "current_mode_update" not in [u["sessionUpdate"] for u in updates]
        option_updates = [u for u in updates if u["sessionUpdate"] == "config_option_update"]
        assert [{o["configId"]: o["currentValue"] for o in u["configOptions"]} for u in option_updates] == [
            {"mode": "plan", "model": "m-1"}, {"mode": "plan", "model": "m-2"}]
        unknown = await client.ask("session/set_config_option", {
            "sessionId": session_id, "configId": "mode", "type": "id", "value": "nope"})
        assert unknown["error"]["code"] == -32602
        for gone in ("session/set_mode", "session/load", "authenticate", "logout"):
            answer_frame = await client.ask(gone, {"sessionId": session_id})
            assert answer_frame["error"]["code"] == -32601, gone
        client.check_all()


async def test_resume_with_replay_from_start_replays_and_without_it_does_not(tmp_path: Path) -> None:
    history = {"old-1": [{"user": "question"}, {"agent": "answer "}, {"agent": "more"}, {"user": "again"},
                         {"agent": "second"}]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, {"history": history})) as agent:
        client = await started(agent)
        cursor = await client.ask("session/resume", {"sessionId": "old-1", "cwd": str(tmp_path),
                                                     "replayFrom": {"type": "message", "messageId": "x"}})
        assert cursor["error"]["code"] == -32602
        await client.result("session/resume", {"sessionId": "old-1", "cwd": str(tmp_path),
                                               "replayFrom": {"type": "start"}})
        updates = client.updates("old-1")
        kinds = [u["sessionUpdate"] for u in updates]
        assert kinds == ["user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
                         "agent_message_chunk", "user_message", "user_message_chunk", "agent_message",
                         "agent_message_chunk", "state_update"]
        assert all(u["content"] == [] for u in updates if u["sessionUpdate"] in ("user_message", "agent_message"))
        assert updates[2]["messageId"] == updates[3]["messageId"] == updates[4]["messageId"]
        assert updates[-1] == {"sessionUpdate": "state_update", "state": "idle"}
        before = len(updates)
        await client.result("session/resume", {"sessionId": "old-1", "cwd": str(tmp_path)})
        after = client.updates("old-1")[before:]
        assert [u["sessionUpdate"] for u in after] == ["state_update"]
        client.check_all()


async def test_a_permission_request_is_v2_and_the_session_requires_action(tmp_path: Path) -> None:
    script = {"turns": [[{"permission": "Write the file"}]]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = await started(agent)
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        ask = await client.until(lambda f: f.get("method") == "session/request_permission")
        assert ask["params"]["title"] == "Write the file"
        assert ask["params"]["subject"]["type"] == "tool_call"
        await agent.send({"jsonrpc": "2.0", "id": ask["id"],
                          "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        await client.until(idle)
        updates = client.updates(session_id)
        states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]
        texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
        assert texts == ["permission: allow"]
        client.check_all()


async def test_tool_call_cancel_cancels_the_turn_running_it(tmp_path: Path) -> None:
    script = {"turns": [[{"tool": "Run sleep", "id": "t1"}, {"wait_cancel": True}]]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = await started(agent)
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        unknown = await client.ask("tool_call/cancel", {"sessionId": session_id, "toolCallId": "t1"})
        assert unknown["error"]["code"] == -32602
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        await client.until(lambda f: f.get("method") == "session/update"
                           and f["params"]["update"].get("toolCallId") == "t1")
        assert await client.result("tool_call/cancel", {"sessionId": session_id, "toolCallId": "t1"}) == {}
        end = (await client.until(idle))["params"]["update"]
        assert end["stopReason"] == "cancelled"
        client.check_all()


async def test_a_failed_turn_ends_idle_with_the_error(tmp_path: Path) -> None:
    failure = {"kind": "rate_limited", "native_kind": "rate_limit", "title": "API Error: 429 rate limited"}
    script = {"turns": [[{"fail": failure}], [{"text": "fine"}]]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = await started(agent)
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "a"}]})
        end = (await client.until(idle))["params"]["update"]
        assert end["stopReason"] == "error"
        assert isinstance(end["error"]["code"], int) and "429" in end["error"]["message"]
        # the session takes the next prompt once the failed turn's end was written
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "b"}]})
        assert (await client.until(idle))["params"]["update"]["stopReason"] == "end_turn"
        empty = await client.ask("session/prompt", {"sessionId": session_id, "prompt": []})
        assert empty["error"]["code"] == -32602
        missing = await client.ask("session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "c"}]})
        assert missing["error"]["code"] == -32002
        client.check_all()


async def test_auth_login_and_logout(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, {**scripted(tmp_path, {}), "SCRIPTED_API_KEY": "k-1"}) as agent:
        client = await started(agent)
        answer = (await client.ask("initialize", INITIALIZE))["result"]
        method_id = answer["authMethods"][0]["methodId"]
        await client.result("auth/login", {"methodId": method_id})
        unknown = await client.ask("auth/login", {"methodId": "nope"})
        assert unknown["error"]["code"] == -32602
        await client.result("auth/logout", {})
        client.check_all()


async def test_a_v1_initialize_after_v2_speaks_v1_again(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, {"modes": ["default", "plan"]})) as agent:
        client = await started(agent)
        v1 = (await client.ask("initialize", {"protocolVersion": 1}))["result"]
        assert v1["protocolVersion"] == 1 and "agentCapabilities" in v1
        new = (await client.ask("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]
        assert new["modes"]["currentModeId"] == "default"
        assert (await client.ask("session/set_mode", {"sessionId": new["sessionId"], "modeId": "plan"}))["result"] == {}


async def test_list_fork_close_and_mcp_servers(tmp_path: Path) -> None:
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, {})) as agent:
        client = await started(agent)
        stdio = {"type": "stdio", "name": "m", "command": "/bin/true"}
        session_id = (await client.result("session/new", {"cwd": str(tmp_path), "mcpServers": [stdio]}))["sessionId"]
        refused = await client.ask("session/new", {"cwd": str(tmp_path),
                                                   "mcpServers": [{"type": "acp", "name": "a", "id": "x"}]})
        assert refused["error"]["code"] == -32602
        listed = await client.result("session/list", {})
        assert session_id in [entry["sessionId"] for entry in listed["sessions"]]
        forked = await client.result("session/fork", {"sessionId": session_id, "cwd": str(tmp_path)})
        assert forked["sessionId"] != session_id
        await client.result("session/prompt", {"sessionId": forked["sessionId"],
                                               "prompt": [{"type": "text", "text": "echo me"}]})
        assert (await client.until(idle))["params"]["sessionId"] == forked["sessionId"]
        assert await client.result("session/close", {"sessionId": forked["sessionId"]}) == {}
        client.check_all()


async def test_a_v2_initialize_answered_in_the_event_loop(tmp_path: Path) -> None:
    """A client that negotiates auth status is answered by the loop, not before it (startup.early)."""
    params = {**INITIALIZE, "capabilities": {"_meta": {"scripted/authStatus": 1}}}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, {})) as agent:
        client = V2Client(agent)
        assert (await client.result("initialize", params))["protocolVersion"] == 2
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "x"}]})
        assert (await client.until(idle))["params"]["update"]["stopReason"] == "end_turn"
        client.check_all()
    assert "before the event loop" not in (tmp_path / "raw-scripted.log").read_text()


async def test_a_queued_prompt_runs_after_the_turn_before_it(tmp_path: Path) -> None:
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    script = {"turns": [[{"text": "one"}, {"wait_fifo": str(fifo)}], [{"text": "two"}]]}
    async with raw_agent("scripted", tmp_path, scripted(tmp_path, script)) as agent:
        client = await started(agent)
        session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "a"}]})
        await client.until(lambda f: f.get("method") == "session/update"
                           and chunk_text(f["params"]["update"]) == "one")
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "b"}]})
        await release(fifo)
        await client.until(idle)
        await client.until(idle)
        sequence = [u.get("state") or chunk_text(u) or u["sessionUpdate"]
                    for u in client.updates(session_id) if u["sessionUpdate"] != "user_message"]
        assert sequence == ["running", "one", "idle", "running", "two", "idle"]
        client.check_all()
