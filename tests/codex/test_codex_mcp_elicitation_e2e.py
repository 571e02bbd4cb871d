"""An MCP server's elicitation through `acp-agent --provider codex` (issue 12, item 3).

The real codex app-server connects to the fake MCP server (`tests/fakes/mcp_http.py`, the one the
Claude tests use) whose `ask` tool elicits while it runs; the fake Responses API calls that tool.
codex 0.163 offers a model from its catalog the MCP tools only behind `tool_search`; for a model
slug outside the catalog it offers them directly, as a `namespace` tool (`mcp__<server>`), which the
fake model can call. codex first asks whether the tool may run (its own elicitation, a form without
fields marked `codex_approval_kind: mcp_tool_call`): that is a permission request on the tool call
for every client, as codex-acp asks it. The server's own form or URL then becomes an ACP
elicitation for a client that offers it, a permission request (URL) or a decline (a form with
fields) otherwise, as for Claude; the answer is what the MCP server receives and the model reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.codex.e2e_support import CodexAgent, codex_agent, text, workspace, write_codex_home
from tests.fakes import mcp_stdio
from tests.fakes.mcp_http import ASK_MESSAGE, ASK_URL, FakeMcpHttp
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

FORM = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
URL = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities(), url=schema.ElicitationUrlCapabilities())
OUTSIDE_CATALOG = 'model = "gpt-outside-catalog"'


def call_ask(*, url: bool = False) -> dict[str, Any]:
    return {"function_call": {"namespace": "mcp__asker", "name": "ask", "arguments": {"mode": "url"} if url else {}}}


def tool_output(api: FakeResponsesAPI) -> str:
    """What the model read back from the MCP tool."""
    body = api.turn_requests[1].body or {}
    [output] = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    return output if isinstance(output, str) else "\n".join(str(part.get("text", "")) for part in output)


def server_answers(mcp: FakeMcpHttp) -> list[dict[str, Any]]:
    """The client's (codex's) answers to the fake MCP server's elicitation requests."""
    return [m for m in mcp.messages if str(m.get("id", "")).startswith("elicit-") and "method" not in m]


async def ask_once(tmp_path: Path, *, url: bool = False, elicitation: Any = None, elicit: Any = None,
                   permission: Any = None) -> tuple[CodexAgent, FakeResponsesAPI, FakeMcpHttp, str]:
    with FakeResponsesAPI([call_ask(url=url), {"reply": "noted"}]) as api, FakeMcpHttp() as mcp:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace('model = "gpt-5.5"', OUTSIDE_CATALOG))
        async with codex_agent(home, tmp_path, capable=False, elicitation=elicitation) as agent:
            if elicit is not None:
                agent.client.elicitation = elicit
            agent.client.permission = permission or (lambda options: options[0].option_id)
            server = schema.HttpMcpServer(type="http", name="asker", url=mcp.url, headers=[])
            session = await agent.conn.new_session(cwd=workspace(tmp_path), mcp_servers=[server])
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")  # the user decides
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask via mcp"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    return agent, api, mcp, session.session_id


def the_tool_call(agent: CodexAgent, sid: str) -> dict[str, Any]:
    [call] = [u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "asker: ask"
    return call


def assert_approval_asked(agent: CodexAgent, call: dict[str, Any]) -> None:
    """codex's "may the tool run?" is a permission request on the tool's own call."""
    tool_call, options = agent.client.permission_requests[0]
    assert tool_call.tool_call_id == call["toolCallId"] and tool_call.status == "pending"
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow", "Allow", "allow_once"), ("allow_session", "Allow for this session", "allow_always"),
        ("allow_always", "Always allow", "allow_always"), ("cancel", "Cancel", "reject_once")]


async def test_an_mcp_form_is_an_elicitation_for_a_client_that_offers_it(tmp_path: Path) -> None:
    accept = schema.AcceptElicitationResponse(action="accept", content={"color": "red"})
    agent, api, mcp, sid = await ask_once(tmp_path, elicitation=FORM, elicit=lambda message, mode: accept)
    call = the_tool_call(agent, sid)
    assert_approval_asked(agent, call)
    assert len(agent.client.permission_requests) == 1
    [(message, mode)] = agent.client.elicitations
    assert message == ASK_MESSAGE
    assert mode.requested_schema.model_dump(by_alias=True, exclude_none=True)["properties"]["color"]["enum"] == [
        "blue", "red"]
    [params] = [f["params"] for f in agent.frames.incoming if f.get("method") == "elicitation/create"]
    assert params["toolCallId"] == call["toolCallId"]  # asked on the tool call the client shows
    assert [a["result"] for a in server_answers(mcp)] == [{"action": "accept", "content": {"color": "red"}}]
    assert 'answer: {"action": "accept", "content": {"color": "red"}}' in tool_output(api)
    updates = [u for u in agent.frames.updates(sid) if u.get("toolCallId") == call["toolCallId"]]
    assert updates[-1]["status"] == "completed"


async def test_an_mcp_form_a_client_without_elicitation_cannot_fill_is_declined(tmp_path: Path) -> None:
    agent, api, mcp, sid = await ask_once(tmp_path)
    assert_approval_asked(agent, the_tool_call(agent, sid))
    assert len(agent.client.permission_requests) == 1  # only the tool's own permission
    assert agent.client.elicitations == []
    assert [a["result"]["action"] for a in server_answers(mcp)] == ["decline"]
    assert 'answer: {"action": "decline"' in tool_output(api)


async def test_an_mcp_url_is_a_url_elicitation_for_a_client_that_offers_it(tmp_path: Path) -> None:
    accept = schema.AcceptElicitationResponse(action="accept")
    agent, api, mcp, sid = await ask_once(tmp_path, url=True, elicitation=URL, elicit=lambda message, mode: accept)
    [(message, mode)] = agent.client.elicitations
    assert message == ASK_MESSAGE
    assert str(mode.url) == ASK_URL and mode.elicitation_id == "elicit-1"
    assert mode.tool_call_id == the_tool_call(agent, sid)["toolCallId"]
    assert len(agent.client.permission_requests) == 1
    assert [a["result"]["action"] for a in server_answers(mcp)] == ["accept"]
    assert 'answer: {"action": "accept"' in tool_output(api)


async def test_an_mcp_url_without_the_url_capability_is_a_permission_request(tmp_path: Path) -> None:
    def choose(options: list[Any]) -> str:
        ids = [o.option_id for o in options]
        return "done" if "done" in ids else ids[0]

    agent, api, mcp, sid = await ask_once(tmp_path, url=True, elicitation=FORM, permission=choose)
    call = the_tool_call(agent, sid)
    assert agent.client.elicitations == []
    [_, (tool_call, options)] = agent.client.permission_requests  # the tool's permission, then the URL
    assert [o.option_id for o in options] == ["done", "decline"]
    assert tool_call.tool_call_id == call["toolCallId"]
    assert ASK_URL in json.dumps(tool_call.model_dump(mode="json"))
    assert [a["result"]["action"] for a in server_answers(mcp)] == ["accept"]
    assert 'answer: {"action": "accept"' in tool_output(api)


async def test_refusing_the_tool_cancels_it_without_running_it(tmp_path: Path) -> None:
    agent, _, mcp, sid = await ask_once(tmp_path, elicitation=FORM, permission=lambda options: "cancel")
    assert_approval_asked(agent, the_tool_call(agent, sid))
    assert "tools/call" not in mcp.methods() and agent.client.elicitations == []
    updates = [u for u in agent.frames.updates(sid) if u.get("toolCallId") == the_tool_call(agent, sid)["toolCallId"]]
    assert updates[-1]["status"] == "failed"


@pytest.mark.parametrize("elicitation", [pytest.param(FORM, id="capable"), pytest.param(None, id="legacy")])
async def test_cancel_while_an_mcp_server_asks_cancels_its_question(tmp_path: Path, elicitation: Any) -> None:
    """`session/cancel` while the user is being asked: the MCP server is told `cancel` and the
    turn ends cancelled (legacy: asked the URL as a permission request)."""
    with FakeResponsesAPI([call_ask(url=elicitation is None), {"reply": "noted"}]) as api, FakeMcpHttp() as mcp:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace('model = "gpt-5.5"', OUTSIDE_CATALOG))
        async with codex_agent(home, tmp_path, capable=False, elicitation=elicitation) as agent:
            server = schema.HttpMcpServer(type="http", name="asker", url=mcp.url, headers=[])
            session = await agent.conn.new_session(cwd=workspace(tmp_path), mcp_servers=[server])
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")  # the user decides
            sid = session.session_id
            prompt_done = anyio.Event()

            async def cancel_instead(*_: Any) -> Any:
                await agent.conn.cancel(session_id=sid)
                await prompt_done.wait()  # the agent stopped waiting for this answer by itself
                return schema.AcceptElicitationResponse(action="accept", content={"color": "blue"})

            async def permission(options: list[Any], tool_call: Any) -> Any:
                if options[0].option_id == "allow":  # the tool's own approval: let it run
                    return schema.RequestPermissionResponse(
                        outcome=schema.AllowedOutcome(outcome="selected", option_id="allow"))
                await cancel_instead()
                return schema.RequestPermissionResponse(
                    outcome=schema.AllowedOutcome(outcome="selected", option_id="done"))

            agent.client.elicitation = cancel_instead
            agent.client.permission_hook = permission
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("ask via mcp"))
            prompt_done.set()
            await anyio.to_thread.run_sync(lambda: mcp.wait_for("tools/call"))
    assert outcome.stop_reason == "cancelled"
    assert agent.frames.problems == []
    assert [a["result"]["action"] for a in server_answers(mcp)] == ["cancel"]


@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_a_stdio_mcp_servers_question_reaches_the_user_and_back(tmp_path: Path, capable: bool) -> None:
    """The same through an ACP stdio `mcpServers` entry (tests/fakes/mcp_stdio.py): a capable client
    answers the form; a legacy client is asked the URL as a permission request."""
    log = tmp_path / "mcp-stdio.jsonl"
    ask = {"function_call": {"namespace": "mcp__sizer", "name": "ask",
                             "arguments": {} if capable else {"mode": "url"}}}
    accept = schema.AcceptElicitationResponse(action="accept", content={"size": "large"})
    with FakeResponsesAPI([ask, {"reply": "noted"}]) as api:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace('model = "gpt-5.5"', OUTSIDE_CATALOG))
        async with codex_agent(home, tmp_path, capable=False, elicitation=FORM if capable else None) as agent:
            agent.client.elicitation = lambda message, mode: accept
            agent.client.permission = lambda options: "done" if options[0].option_id == "done" else "allow"
            server = schema.McpServerStdio(name="sizer", command=sys.executable,
                                           args=[mcp_stdio.__file__, str(log)], env=[])
            session = await agent.conn.new_session(cwd=workspace(tmp_path), mcp_servers=[server])
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")  # the user decides
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask via mcp"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    [call] = [u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "sizer: ask"
    answers = [m["result"] for m in mcp_stdio.received(log) if str(m.get("id", "")).startswith("elicit-")]
    if capable:
        [(message, _)] = agent.client.elicitations
        assert message == mcp_stdio.ASK_MESSAGE
        assert answers == [{"action": "accept", "content": {"size": "large"}}]
        assert len(agent.client.permission_requests) == 1  # the tool's own approval
    else:
        assert agent.client.elicitations == []
        [_, (tool_call, options)] = agent.client.permission_requests
        assert tool_call.tool_call_id == call["toolCallId"]
        assert [o.option_id for o in options] == ["done", "decline"]
        assert mcp_stdio.ASK_URL in json.dumps(tool_call.model_dump(mode="json"))
        assert [a["action"] for a in answers] == ["accept"]
    assert f"answer: {json.dumps(answers[0], sort_keys=True)}" in tool_output(api)
