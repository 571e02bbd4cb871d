"""Lines a Claude CLI should never write (issue 25, item 3), through `acp-agent --provider claude`
with a stand-in CLI (`standin_lines.py`) that answers each prompt with scripted stream-json lines.

Backend input is validated like client input: a malformed line is logged and skipped, never sent
to the client (the harness validates every frame against the ACP schema), and a turn that goes
wrong never hands its rest to the next prompt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.e2e.processes import gone
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


def stream(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "stream_event", "event": event, "parent_tool_use_id": None, "session_id": "s"}


def assistant(message_id: str, blocks: Any) -> dict[str, Any]:
    return {"type": "assistant", "parent_tool_use_id": None, "session_id": "s",
            "message": {"id": message_id, "type": "message", "role": "assistant", "model": "claude-test",
                        "content": blocks, "stop_reason": None}}


RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "", "session_id": "s",
          "stop_reason": "end_turn"}

# The first prompt's answer with every line the issue names, and more of the kind, before its text.
MALFORMED: list[Any] = [
    "this is not JSON {",
    "[1, 2, 3]",
    stream({"type": "message_start", "message": {"id": "msg_bad"}}),
    stream({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}),
    stream({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": ["x"]}}),
    stream({"type": "content_block_delta", "index": 0, "delta": "not an object"}),
    assistant("msg_bad", [{"type": "tool_use", "id": None, "name": 5, "input": "not an object"}]),
    assistant("msg_bad2", [{"type": "tool_use", "id": "toolu_ok", "name": "Edit", "input": {
        "file_path": "/tmp/x", "new_string": 7, "old_string": ["y"]}}, {"type": "text", "text": {"t": 1}}]),
    {"type": "user", "parent_tool_use_id": None, "session_id": "s", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_ok", "content": 9, "is_error": "no"}]}},
    {"type": "system", "subtype": "status", "status": "compacting", "uuid": 3},
    {"type": "tool_progress", "tool_use_id": 5, "elapsed_time_seconds": "1"},
    assistant("msg_ok", [{"type": "text", "text": "first answer"}]),
    {**RESULT, "usage": "lots", "modelUsage": {"m": {"contextWindow": "big"}}},
]
SCRIPT = {"one": MALFORMED, "two": [assistant("msg_two", [{"type": "text", "text": "second answer"}]), RESULT]}


def standin(tmp_path: Path, lines: dict[str, list[Any]] = SCRIPT) -> dict[str, str]:
    """The environment that makes the agent start `standin_lines.py` answering with `lines`."""
    script = tmp_path / "claude-standin"
    script.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path("
                      f"{str(Path(__file__).parent / 'standin_lines.py')!r}, run_name='__main__')\n")
    script.chmod(0o755)
    (tmp_path / "script.json").write_text(json.dumps(lines))
    return {"ACP_AGENT_CLAUDE_CLI": str(script), "STANDIN_SCRIPT": str(tmp_path / "script.json"),
            "STANDIN_PID_FILE": str(tmp_path / "pids")}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_malformed_lines_are_skipped_and_the_next_prompt_gets_its_own_answer(
        tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=capable, extra=standin(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            first = await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            texts_one = agent_texts(agent, session.session_id)
            second = await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
            texts_two = agent_texts(agent, session.session_id)[len(texts_one):]
            calls = [update for update in agent.frames.updates(session.session_id)
                     if update["sessionUpdate"] in ("tool_call", "tool_call_update")
                     and not update["toolCallId"].startswith("compact-")]
    assert agent.frames.problems == []  # every frame the agent wrote is valid ACP
    assert first.stop_reason == "end_turn"
    assert texts_one == ["first answer"]
    assert second.stop_reason == "end_turn"
    assert texts_two == ["second answer"]
    # The well-formed Edit call is shown without the wrong-typed parts of its input; the call with
    # neither id nor name is not.
    assert [(call["sessionUpdate"], call["toolCallId"]) for call in calls] == [
        ("tool_call", "toolu_ok"), ("tool_call_update", "toolu_ok")]
    assert "content" not in calls[0]
    assert "malformed" in agent.log_text()
    assert all(gone(pid) for pid in [int(line) for line in (tmp_path / "pids").read_text().split()])
