"""Issue 12's last Claude gaps, through `acp-agent --provider claude` with the real bundled CLI and
the fake Anthropic API, for a client that opts in and one that does not: plans from the task tools
with the agent's own defaults, multi-select questions without elicitation, and the context size
after a compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, text
from tests.claude.test_claude_questions_e2e import result_text, tool_result
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
CAPABLE = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
# The CLI offers its task tools to the models it lists (`claude-sonnet-4-6` among them: the 4.x and
# 3.x families), or with CLAUDE_CODE_ENABLE_TODO_TOOLS=1 (docs/providers/claude.md).
TASK_MODEL = "claude-sonnet-4-6"


def _user_settings(tmp_path: Path, settings: dict[str, Any]) -> None:
    """The user's own ~/.claude/settings.json (CLAUDE_CONFIG_DIR in these tests)."""
    config = tmp_path / "claude-config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps(settings))


def _plans(updates: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    return [[(e["content"], e["status"]) for e in u["entries"]] for u in updates if u["sessionUpdate"] == "plan"]


TASK_SCRIPT = [
    {"tool_use": {"name": "ToolSearch", "input": {"query": "select:TaskCreate,TaskUpdate", "max_results": 2}}},
    {"tool_use": {"name": "TaskCreate", "input": {"subject": "Write the parser", "description": "Parse",
                                                  "activeForm": "Writing the parser"}}},
    {"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "in_progress"}}},
    {"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}},
    {"reply": "Done."},
]


@CAPABLE
async def test_task_tools_plan_with_the_agents_defaults(tmp_path: Path, capable: bool) -> None:
    """No switch set by the test: the user's model is one the CLI offers the task tools to (as
    for claude-agent-acp's users), and the agent's defaults let the task calls through."""
    _user_settings(tmp_path, {"model": TASK_MODEL})
    with FakeAnthropicAPI(TASK_SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Plan it"))
    assert result.stop_reason == "end_turn"
    first = api.turn_requests[0]
    assert first.model == TASK_MODEL and "TaskCreate" in json.dumps(first.body)
    assert _plans(agent.frames.updates(session.session_id)) == [
        [("Write the parser", "pending")],
        [("Writing the parser", "in_progress")],
        [("Write the parser", "completed")],
    ]
    # each task call was answered by the CLI's own tool, not refused as unknown
    results = [json.dumps(r.body["messages"][-1]) for r in api.turn_requests[2:]]
    assert all("No such tool" not in r and "is_error\": true" not in r for r in results)
    assert agent.frames.problems == []


def _context_after_compaction(agent: Any, session_id: str) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """The compaction's last update and the usage updates that followed it."""
    updates = agent.frames.updates(session_id)
    [start] = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Compact conversation"]
    ends = [i for i, u in enumerate(updates)
            if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == start["toolCallId"]]
    last = updates[ends[-1]]
    usage = [(u["used"], u["size"]) for u in updates[ends[-1]:] if u["sessionUpdate"] == "usage_update"]
    return last, usage


def _facts(last: dict[str, Any], capable: bool) -> dict[str, Any]:
    """The compaction's facts under the tool call's raw output's names (AIR's: `preTokens`,
    `postTokens`, trigger `automatic`, as claude-agent-acp sends them)."""
    if not capable:
        return dict(last["rawOutput"])
    air = last["_meta"]["jetbrains"]["air"]["contextCompaction"]
    return {"trigger": {"automatic": "auto"}.get(air["trigger"], air["trigger"]),
            "tokensBefore": air["preTokens"], "tokensAfter": air["postTokens"]}


@CAPABLE
async def test_compact_publishes_the_new_context_size(tmp_path: Path, capable: bool) -> None:
    """`/compact` makes no model call; the context it kept is published at once (and again by
    its turn's result), not the result's zero usage."""
    with FakeAnthropicAPI([{"reply": "first answer"}, {"reply": "after compaction"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            sizes = {u["size"] for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "usage_update"}
            compacted = await agent.conn.prompt(session_id=session.session_id, prompt=text("/compact"))
            last, usage = _context_after_compaction(agent, session.session_id)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("again"))
    assert compacted.stop_reason == "end_turn"
    [size] = sizes
    facts = _facts(last, capable)
    assert facts["tokensAfter"] > 0
    assert usage == [(facts["tokensAfter"], size), (facts["tokensAfter"], size)]
    assert agent.frames.problems == []


@CAPABLE
async def test_automatic_compaction_publishes_the_new_context_size(tmp_path: Path, capable: bool) -> None:
    script = [{"reply": "first", "usage": {"input_tokens": 990000}}, {"reply": "second"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            [(before, size)] = [(u["used"], u["size"]) for u in agent.frames.updates(session.session_id)
                                if u["sessionUpdate"] == "usage_update"]
            await agent.conn.prompt(session_id=session.session_id, prompt=text("again"))
    last, usage = _context_after_compaction(agent, session.session_id)
    facts = _facts(last, capable)
    assert before > 900000 and facts["trigger"] == "auto"
    # at the boundary the context kept; then the answer's own usage, far below what it was
    assert usage[0] == (facts["tokensAfter"], size)
    assert len(usage) == 2 and usage[1][1] == size and usage[1][0] < 100000
    assert agent.frames.problems == []


MULTI = {"tool_use": {"name": "AskUserQuestion", "id": "toolu_multi", "input": {"questions": [
    {"question": "Which parts?", "header": "Parts", "multiSelect": True,
     "options": [{"label": "Tests", "description": "unit and e2e"}, {"label": "Docs", "description": "the guide"},
                 {"label": "Bench", "description": "numbers"}]}]}}}


def _tool_result_text(request: Any, tool_use_id: str) -> tuple[str, bool]:
    block = tool_result(request, tool_use_id)
    return result_text(block), bool(block.get("is_error"))


def _pick(options: list[Any], name: str) -> str:
    return next(o.option_id for o in options if o.name == name)


@CAPABLE
async def test_a_multi_select_question_takes_several_answers(tmp_path: Path, capable: bool) -> None:
    """A client with elicitation ticks both in the form; one without picks them one request at a
    time and says Done. Either way the CLI hears both answers."""
    form = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities()) if capable else None
    picks = ["Docs", "Tests", "Done"]
    with FakeAnthropicAPI([MULTI, {"reply": "noted"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable, elicitation=form) as agent:
            agent.client.elicitation = lambda message, mode: schema.AcceptElicitationResponse(
                action="accept", content={"question_0": ["Docs", "Tests"]})
            agent.client.permission = lambda options: _pick(options, picks.pop(0))
            session = await agent.conn.new_session(cwd=str(tmp_path))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
    assert outcome.stop_reason == "end_turn"
    said, is_error = _tool_result_text(api.turn_requests[1], "toolu_multi")
    assert not is_error and '"Which parts?"="Docs, Tests"' in said, said
    if capable:
        assert len(agent.client.elicitations) == 1 and agent.client.permission_requests == []
    else:
        assert picks == [] and agent.client.elicitations == []
        asked = [([o.name for o in options], call.title) for call, options in agent.client.permission_requests]
        assert asked == [(["Tests", "Docs", "Bench", "Decline"], "Which parts?"),
                         (["Tests", "Bench", "Done", "Decline"], "Which parts? (chosen: Docs)"),
                         (["Bench", "Done", "Decline"], "Which parts? (chosen: Docs, Tests)")]
        assert {call.tool_call_id for call, _ in agent.client.permission_requests} == {"toolu_multi"}
    assert agent.frames.problems == []


async def test_a_multi_select_question_declined_or_cancelled_midway(tmp_path: Path) -> None:
    """Without elicitation: Decline after a pick answers nothing; session/cancel while the next
    pick is open ends the turn cancelled and the model hears no answer."""
    picks = ["Docs", "Decline"]
    with FakeAnthropicAPI([MULTI, {"reply": "noted"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            agent.client.permission = lambda options: _pick(options, picks.pop(0))
            session = await agent.conn.new_session(cwd=str(tmp_path))
            declined = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
            said, _ = _tool_result_text(api.turn_requests[1], "toolu_multi")
            api.set_script([MULTI, {"reply": "noted"}])
            requests_before = len(api.turn_requests)

            async def cancel_on_second(options: list[Any], tool_call: Any) -> Any:
                if len([o for o in options if o.name == "Done"]) == 0:  # the first pick
                    return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(
                        outcome="selected", option_id=options[0].option_id))
                await agent.conn.cancel(session_id=session.session_id)
                return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

            agent.client.permission_hook = cancel_on_second
            cancelled = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask again"))
            heard = len(api.turn_requests) - requests_before
    assert declined.stop_reason == "end_turn"
    assert "Docs" not in said
    assert cancelled.stop_reason == "cancelled"
    assert heard == 1  # only the request that asked: no answer went to the model
    assert agent.frames.problems == []
