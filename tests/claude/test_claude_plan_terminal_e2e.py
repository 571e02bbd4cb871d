"""Plans from the task tools, Bash as a terminal, compaction and subagent progress, through
`acp-agent --provider claude` with the real bundled CLI and the fake Anthropic API, for a client
that opts in to terminals and one that does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.fakes.anthropic_api import SIDE_TITLE, FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
TERMINALS = pytest.mark.parametrize("terminals", [True, False], ids=["terminals", "legacy"])
SLOW = "echo one; sleep 2; echo two"


def _meta(terminals: bool) -> dict[str, Any] | None:
    return {"terminal_output": True} if terminals else None


@TERMINALS
async def test_task_tools_become_the_plan_and_bash_a_terminal(tmp_path: Path, terminals: bool) -> None:
    script = [
        {"tool_use": {"name": "ToolSearch", "input": {"query": "select:TaskCreate,TaskUpdate", "max_results": 2}}},
        {"tool_use": {"name": "TaskCreate", "input": {"subject": "Write the parser", "description": "Parse",
                                                      "activeForm": "Writing the parser"}}},
        {"tool_use": {"name": "TaskCreate", "input": {"subject": "Test the parser", "description": "Test"}}},
        {"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "in_progress"}}},
        {"tool_use": {"name": "Bash", "input": {"command": SLOW, "description": "Slow"}}},
        {"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}},
        {"reply": "Done."},
    ]
    # Under the SDK entrypoint this CLI offers the task tools only with this switch, deferred behind
    # ToolSearch (see fixtures/README.md).
    extra = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=_meta(terminals), extra=extra) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Plan it"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    plans = [[(e["content"], e["status"]) for e in u["entries"]] for u in updates if u["sessionUpdate"] == "plan"]
    assert plans == [
        [("Write the parser", "pending")],
        [("Write the parser", "pending"), ("Test the parser", "pending")],
        [("Writing the parser", "in_progress"), ("Test the parser", "pending")],
        [("Write the parser", "completed"), ("Test the parser", "pending")],
    ]
    calls = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert [call["title"] for call in calls] == ["ToolSearch", f"`{SLOW}`"]  # task calls are the plan
    bash = calls[1]
    after = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == bash["toolCallId"]]
    if terminals:
        terminal_id = bash["toolCallId"]
        assert bash["_meta"]["terminal_info"] == {"terminal_id": terminal_id, "cwd": str(tmp_path)}
        assert bash["content"] == [{"type": "terminal", "terminalId": terminal_id}]
        output = [u["_meta"]["terminal_output"]["data"] for u in after if "terminal_output" in u.get("_meta", {})]
        assert output == ["one\ntwo"]
        [done] = [u for u in after if u.get("status") == "completed"]
        assert done["_meta"]["terminal_exit"] == {"terminal_id": terminal_id, "exit_code": 0, "signal": None}
        assert done["content"] == [{"type": "terminal", "terminalId": terminal_id}]
    else:
        assert "_meta" not in bash and "content" not in bash
        [done] = [u for u in after if u.get("status") == "completed"]
        assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "```\none\ntwo\n```"}}]
        assert all("terminal" not in json.dumps(u) for u in after)
    assert agent.frames.problems == []


@TERMINALS
async def test_compact_shows_as_a_compaction(tmp_path: Path, terminals: bool) -> None:
    with FakeAnthropicAPI([{"reply": "first answer"}, {"reply": "after compaction"}]) as api:
        async with claude_agent(api, tmp_path, capable=terminals, meta=_meta(terminals)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            compacted = await agent.conn.prompt(session_id=session.session_id, prompt=text("/compact"))
            after = await agent.conn.prompt(session_id=session.session_id, prompt=text("again"))
    assert (compacted.stop_reason, after.stop_reason) == ("end_turn", "end_turn")
    updates = agent.frames.updates(session.session_id)
    [start] = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Compact conversation"]
    assert start["status"] == "in_progress" and start["kind"] == "think"
    ends = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == start["toolCallId"]]
    assert ends and {u["status"] for u in ends} == {"completed"}
    last = ends[-1]
    if terminals:  # AIR's names, as claude-agent-acp sends them
        air = last["_meta"]["jetbrains"]["air"]["contextCompaction"]
        assert air["trigger"] == "manual" and air["preTokens"] > air["postTokens"] > 0
    else:
        facts = last["rawOutput"]
        assert facts["trigger"] == "manual" and facts["tokensBefore"] > facts["tokensAfter"] > 0
    assert agent.frames.problems == []


async def test_subagent_text_shows_on_its_agent_call(tmp_path: Path) -> None:
    """The Agent call runs in the foreground; the subagent's answer (the step for its prompt)
    shows on that call, never as the agent's own text."""
    script = [
        {"tool_use": {"name": "Agent", "input": {"description": "Look around", "prompt": "find files",
                                                 "subagent_type": "general-purpose", "run_in_background": False}}},
        # (the main loop waits for a foreground subagent, so the order is fixed)
        {"for_prompt": "find files", "tool_use": {"name": "Bash", "input": {"command": "echo sub-marker"}}},
        {"reply": "subagent report"},
        {"reply": "main answer"},
    ]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    [agent_call] = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Look around"]
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "main answer"
    on_call = [u for u in updates if u["sessionUpdate"] == "tool_call_update"
               and u["toolCallId"] == agent_call["toolCallId"]]
    [sub_call] = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "`echo sub-marker`"]
    assert sub_call["_meta"]["claudeCode"]["parentToolUseId"] == agent_call["toolCallId"]
    sub_done = [u for u in updates if u["sessionUpdate"] == "tool_call_update"
                and u["toolCallId"] == sub_call["toolCallId"] and u.get("status") == "completed"]
    assert sub_done and sub_done[-1]["_meta"]["claudeCode"]["parentToolUseId"] == agent_call["toolCallId"]
    assert any("subagent report" in json.dumps(u.get("content")) for u in on_call)
    assert on_call[-1]["status"] == "completed"
    assert agent.frames.problems == []


@TERMINALS
async def test_the_sessions_title_is_published(tmp_path: Path, terminals: bool) -> None:
    """The CLI titles the session from its first prompt (a side request the fake answers with
    SIDE_TITLE); the agent publishes it as `session_info_update` with `updatedAt`, after the
    prompt itself, which is the title until then."""
    with FakeAnthropicAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        async with claude_agent(api, tmp_path, capable=terminals, meta=_meta(terminals)) as agent:
            titled = anyio.Event()
            agent.client.update_hook = lambda _sid, update: (
                titled.set() if getattr(update, "title", None) == SIDE_TITLE else None)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id,
                                    prompt=text("Refactor the parser module into a table-driven design"))
            await wait_for_requests(api, 1, kind="side", finished=True)
            with anyio.fail_after(30):  # the CLI's answer reaches the agent after the fake sent it
                await titled.wait()
            # a second turn: the title, known now, is not asked for or published again
            await agent.conn.prompt(session_id=session.session_id, prompt=text("Thanks"))
    infos = [u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "session_info_update"]
    assert [info["title"] for info in infos] == ["Refactor the parser module into a table-driven design",
                                                 SIDE_TITLE]
    assert all(info["updatedAt"].endswith("Z") for info in infos)
    assert agent.frames.problems == []


@TERMINALS
async def test_automatic_compaction_shows_as_a_compaction(tmp_path: Path, terminals: bool) -> None:
    """The first answer reports a nearly full context window, so the CLI compacts before the next."""
    script = [{"reply": "first", "usage": {"input_tokens": 990000}}, {"reply": "second"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=terminals, meta=_meta(terminals)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("again"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    [start] = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Compact conversation"]
    last = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == start["toolCallId"]][-1]
    if terminals:  # AIR's names, as claude-agent-acp sends them
        air = last["_meta"]["jetbrains"]["air"]["contextCompaction"]
        assert (last["status"], air["trigger"]) == ("completed", "automatic") and air["preTokens"] > 900000
    else:
        facts = last["rawOutput"]
        assert (last["status"], facts["trigger"]) == ("completed", "auto") and facts["tokensBefore"] > 900000
    # the summary request is a side request (it takes no step): the turn after it gets its answer
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(texts) == "firstsecond"
    assert [request.kind for request in api.requests if request.kind != "other"].count("turn") == 2
    assert agent.frames.problems == []
