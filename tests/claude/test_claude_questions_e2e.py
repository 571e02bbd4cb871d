"""Claude Code asking the user (issue 12, items 3 and 4): AskUserQuestion becomes an ACP
elicitation for a client that offers one, else permission requests whose options are the answers,
and the answers reach the CLI as the tool's input; an MCP server's elicitation (the CLI's
`elicitation` control request) is asked the same way and its answer reaches the server; leaving plan mode (ExitPlanMode) offers
claude-agent-acp's choices and switches the session's mode.

Real Claude Code CLI against the fake Anthropic API, which scripts the tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI, RecordedRequest
from tests.fakes.mcp_http import FakeMcpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]

ASK = {"tool_use": {"name": "AskUserQuestion", "id": "toolu_ask1", "input": {"questions": [
    {"question": "Which color?", "header": "Color", "multiSelect": False,
     "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}]}]}}}
FORM = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
PLAN = "1. Write the code\n2. Test it"
EXIT_PLAN = {"tool_use": {"name": "ExitPlanMode", "id": "toolu_plan1", "input": {"plan": PLAN}}}


def tool_result(request: RecordedRequest, tool_use_id: str) -> dict[str, Any]:
    """The tool_result block the CLI sent back to the model for `tool_use_id`."""
    for message in (request.body or {}).get("messages") or []:
        for block in message.get("content") or [] if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                return block
    raise AssertionError(f"no tool_result for {tool_use_id}")


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


async def ask_once(tmp_path: Path, *, elicitation: Any = None, **answer: Any) -> tuple[Any, FakeAnthropicAPI, str, str]:
    with FakeAnthropicAPI([ASK, {"reply": "noted"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, elicitation=elicitation) as agent:
            if "elicit" in answer:
                agent.client.elicitation = answer["elicit"]
            if "permission" in answer:
                agent.client.permission = answer["permission"]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
    assert agent.frames.problems == []
    return agent, api, session.session_id, outcome.stop_reason


@pytest.mark.parametrize(("response", "expected"), [
    (schema.AcceptElicitationResponse(action="accept", content={"question_0": "Red"}), '"Which color?"="Red"'),
    (schema.DeclineElicitationResponse(action="decline"), None),
], ids=["accept", "decline"])
async def test_ask_user_question_is_an_elicitation_for_a_client_that_offers_it(
        tmp_path: Path, response: Any, expected: str | None) -> None:
    agent, api, _, stop = await ask_once(tmp_path, elicitation=FORM, elicit=lambda message, mode: response)
    assert stop == "end_turn"
    [(message, mode)] = agent.client.elicitations
    assert message == "Which color?"
    [params] = [f["params"] for f in agent.frames.incoming if f.get("method") == "elicitation/create"]
    assert params["toolCallId"] == "toolu_ask1"
    field = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)["properties"]["question_0"]
    assert field["title"] == "Color"
    assert [(o["const"], o.get("description")) for o in field["oneOf"]] == [("Blue", "cool"), ("Red", "warm")]
    assert agent.client.permission_requests == []
    answer = result_text(tool_result(api.turn_requests[1], "toolu_ask1"))
    if expected is not None:
        assert expected in answer
    else:
        assert "Red" not in answer and "Blue" not in answer


async def test_ask_user_question_is_a_permission_whose_options_are_the_answers_otherwise(tmp_path: Path) -> None:
    agent, api, sid, stop = await ask_once(tmp_path, permission=lambda options: options[1].option_id)
    assert stop == "end_turn"
    assert agent.client.elicitations == []
    [(tool_call, options)] = agent.client.permission_requests
    assert tool_call.title == "Which color?"
    assert tool_call.tool_call_id == "toolu_ask1"  # asked on the tool's own call, shown once
    reports = [u for u in agent.frames.updates(sid) if u.get("toolCallId") == "toolu_ask1"]
    assert [u["sessionUpdate"] for u in reports].count("tool_call") == 1
    assert reports[-1]["status"] == "completed"
    assert len({u.get("toolCallId") for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call"}) == 1
    assert [(o.option_id, o.name) for o in options] == [("choice-0", "Blue"), ("choice-1", "Red"), ("decline", "Decline")]
    assert '"Which color?"="Red"' in result_text(tool_result(api.turn_requests[1], "toolu_ask1"))


async def test_a_dismissed_question_refuses_the_tool(tmp_path: Path) -> None:
    _agent, api, _, stop = await ask_once(tmp_path, permission=lambda options: None)
    assert stop == "end_turn"
    block = tool_result(api.turn_requests[1], "toolu_ask1")
    assert block.get("is_error") is True
    assert "Red" not in result_text(block) and "Blue" not in result_text(block)


async def test_cancel_while_a_question_is_open_ends_the_turn_cancelled(tmp_path: Path) -> None:
    with FakeAnthropicAPI([ASK, {"reply": "noted"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, elicitation=FORM) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            prompt_done = anyio.Event()

            async def cancel_instead(message: str, mode: Any) -> Any:
                await agent.conn.cancel(session_id=session.session_id)
                await prompt_done.wait()  # the agent stopped waiting for this answer by itself
                return schema.AcceptElicitationResponse(action="accept", content={"question_0": "Blue"})

            agent.client.elicitation = cancel_instead
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
            prompt_done.set()
            assert len(api.turn_requests) == 1  # the model never heard an answer
    assert outcome.stop_reason == "cancelled"
    assert len(agent.client.elicitations) == 1
    assert agent.frames.problems == []


# --- leaving plan mode --------------------------------------------------------------------------


async def plan_once(tmp_path: Path, choose: Any, *, capable: bool) -> tuple[Any, FakeAnthropicAPI, str, str]:
    with FakeAnthropicAPI([EXIT_PLAN, {"reply": "done"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            agent.client.permission = choose
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("plan it"))
            if outcome.stop_reason == "end_turn":
                # the CLI itself left plan mode: the next turn's model call sees the new mode's tools
                api.set_script([{"reply": "again"}])
                await agent.conn.prompt(session_id=session.session_id, prompt=text("go on"))
    assert agent.frames.problems == []
    return agent, api, session.session_id, outcome.stop_reason


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_leaving_plan_mode_offers_the_modes_and_switches_to_the_chosen_one(tmp_path: Path, capable: bool) -> None:
    agent, api, sid, stop = await plan_once(tmp_path, lambda options: "exit-plan-accept-edits", capable=capable)
    assert stop == "end_turn"
    [(tool_call, options)] = agent.client.permission_requests
    assert tool_call.title == "Ready to code?"
    ids = [o.option_id for o in options]
    assert ids[-3:] == ["exit-plan-accept-edits", "exit-plan-default", "reject"]
    assert [o.name for o in options][-1] == "No, keep planning"
    modes = [u["currentModeId"] for u in agent.frames.updates(sid) if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["plan", "acceptEdits"]
    block = tool_result(api.turn_requests[1], "toolu_plan1")
    assert block.get("is_error") is not True
    assert "approved" in result_text(block).lower()


async def test_keep_planning_refuses_and_ends_the_turn_in_plan_mode(tmp_path: Path) -> None:
    agent, api, sid, stop = await plan_once(tmp_path, lambda options: "reject", capable=False)
    assert stop == "cancelled"  # the user stopped it to say what to plan instead
    assert len(api.turn_requests) == 1
    modes = [u["currentModeId"] for u in agent.frames.updates(sid) if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["plan"]


# --- MCP servers' elicitations ----------------------------------------------------------------------


async def elicit_once(tmp_path: Path, *, url: bool = False, elicitation: Any = None,
                      **answer: Any) -> tuple[Any, FakeAnthropicAPI, FakeMcpHttp, str]:
    """The model calls the MCP server's `ask` tool, which elicits while it runs."""
    call = {"tool_use": {"name": "mcp__asker__ask", "id": "toolu_mcp1", "input": {"mode": "url"} if url else {}}}
    with FakeMcpHttp() as mcp, FakeAnthropicAPI([call, {"reply": "noted"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, elicitation=elicitation) as agent:
            if "elicit" in answer:
                agent.client.elicitation = answer["elicit"]
            agent.client.permission = answer.get("permission", lambda options: options[0].option_id)
            server = schema.HttpMcpServer(name="asker", url=mcp.url, headers=[], type="http")
            session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask via mcp"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    return agent, api, mcp, result_text(tool_result(api.turn_requests[1], "toolu_mcp1"))


async def test_an_mcp_elicitation_is_an_elicitation_for_a_client_that_offers_it(tmp_path: Path) -> None:
    accept = schema.AcceptElicitationResponse(action="accept", content={"color": "red"})
    agent, _, _, answer = await elicit_once(tmp_path, elicitation=FORM, elicit=lambda message, mode: accept)
    [(message, mode)] = agent.client.elicitations
    assert message == "Pick a color"
    assert mode.requested_schema.model_dump(by_alias=True, exclude_none=True)["properties"]["color"]["enum"] == [
        "blue", "red"]
    assert 'answer: {"action": "accept", "content": {"color": "red"}}' in answer


async def test_an_mcp_url_elicitation_without_the_url_capability_is_a_permission_request(tmp_path: Path) -> None:
    def choose(options: list[Any]) -> str:
        ids = [o.option_id for o in options]
        return "done" if "done" in ids else ids[0]

    agent, _, _, answer = await elicit_once(tmp_path, url=True, elicitation=FORM, permission=choose)
    assert agent.client.elicitations == []
    [_, (tool_call, options)] = agent.client.permission_requests  # the tool's permission, then the URL
    assert [o.option_id for o in options] == ["done", "decline"]
    assert "https://example.invalid/authorize" in json.dumps(tool_call.model_dump(mode="json"))
    assert 'answer: {"action": "accept"' in answer


async def test_an_mcp_form_a_client_without_elicitation_cannot_fill_is_declined(tmp_path: Path) -> None:
    agent, _, _, answer = await elicit_once(tmp_path)
    assert agent.client.elicitations == []
    assert len(agent.client.permission_requests) == 1  # only the tool's own permission
    assert 'answer: {"action": "decline"}' in answer


async def test_a_steer_while_a_question_is_open_waits_for_the_answer(tmp_path: Path) -> None:
    """Steered at priority `later` while the user answers: the answer still reaches the model,
    the steered message runs after it, and the turn ends once it is answered."""
    with FakeAnthropicAPI([ASK, {"echo": True}, {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=False, elicitation=FORM) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id

            async def steer_then_answer(message: str, mode: Any) -> Any:
                steer = await agent.conn.ext_method("session/steering", {
                    "sessionId": sid, "prompt": [{"type": "text", "text": "bravo"}]})
                assert steer == {"outcome": "injected"}
                return schema.AcceptElicitationResponse(action="accept", content={"question_0": "Blue"})

            agent.client.elicitation = steer_then_answer
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("ask me"))
            api.set_script([{"echo": True}])
            after = await agent.conn.prompt(session_id=sid, prompt=text("charlie"))
    assert outcome.stop_reason == "end_turn" and after.stop_reason == "end_turn"
    assert '"Which color?"="Blue"' in result_text(tool_result(api.turn_requests[1], "toolu_ask1"))
    texts = [u["content"]["text"] for u in agent.frames.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"]
    joined = "".join(texts)
    assert "echo: bravo" in joined and joined.endswith("echo: charlie")
    assert joined.index("echo: bravo") < joined.index("echo: charlie")
    assert agent.frames.problems == []
