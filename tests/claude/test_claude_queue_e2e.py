"""A follow-up while a Claude turn runs is queued by the core and runs after it (issue 12, item 1).

Real Claude Code CLI against the fake Anthropic API: the first answer is held (`hang_after_events`)
until the test releases it; `echo` answers with the prompt. `_session/steering` sends a user message
into the running turn (claude-agent-acp's convention: priority `now`), advertised in `initialize`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, wait_for_requests
from tests.e2e.harness import AgentProcess, answers_and_texts, joined
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]


def transcript(agent: AgentProcess, session_id: str) -> str:
    return joined(answers_and_texts(agent, session_id))


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_follow_up_runs_after_the_running_turn(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}, {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            results: dict[str, Any] = {}

            async def prompt(value: str) -> None:
                results[value] = (await agent.conn.prompt(
                    session_id=sid, prompt=[schema.TextContentBlock(type="text", text=value)])).stop_reason

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_requests(api, 1)
                tg.start_soon(prompt, "bravo")
                await agent.conn.list_sessions(cwd=str(tmp_path))  # answered once bravo is in line
                assert results == {}
                api.release()
    assert results == {"alpha": "end_turn", "bravo": "end_turn"}
    assert transcript(agent, sid) == "echo: alpha|<end_turn>|echo: bravo|<end_turn>"
    [init] = [f["result"] for f in agent.frames.incoming if "agentCapabilities" in (f.get("result") or {})]
    assert init["_meta"]["steering"] == {"supported": True}
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_steer_joins_the_running_turn(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}, {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            results: list[str] = []

            async def prompt(value: str) -> None:
                results.append((await agent.conn.prompt(
                    session_id=sid, prompt=[schema.TextContentBlock(type="text", text=value)])).stop_reason)

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_requests(api, 1)
                steer = await agent.conn.ext_method("session/steering", {
                    "sessionId": sid, "prompt": [{"type": "text", "text": "bravo"}]})
                assert steer == {"outcome": "injected"}
                await wait_for_requests(api, 2)  # the CLI aborted alpha's answer for the steer
                assert results == []
                api.release()
            idle = await agent.conn.ext_method("session/steering", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "charlie"}],
                "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
            api.set_script([{"echo": True}])
            after = await agent.conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="delta")])
    assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    # One turn, one answer, which ends after the steered message's own answer.
    assert results == ["end_turn"] and after.stop_reason == "end_turn"
    assert transcript(agent, sid).endswith("echo: bravo|<end_turn>|echo: delta|<end_turn>")
    assert transcript(agent, sid).count("<") == 2
    assert [r.last_user_text.rsplit("\n", 1)[-1] for r in api.turn_requests][1:] == ["bravo", "delta"]
    assert agent.frames.problems == []


async def test_cancel_after_a_steer_ends_the_turn_and_the_next_prompt_answers_itself(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}, {"hang_after_events": 4, "echo": True},
                           {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            results: list[str] = []

            async def prompt(value: str) -> None:
                results.append((await agent.conn.prompt(
                    session_id=sid, prompt=[schema.TextContentBlock(type="text", text=value)])).stop_reason)

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_requests(api, 1)
                steer = await agent.conn.ext_method("session/steering", {
                    "sessionId": sid, "prompt": [{"type": "text", "text": "bravo"}]})
                assert steer == {"outcome": "injected"}
                await wait_for_requests(api, 2)  # bravo's answer is held now
                await agent.conn.cancel(session_id=sid)
            api.release()
            after = await agent.conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="charlie")])
    assert results == ["cancelled"] and after.stop_reason == "end_turn"
    assert transcript(agent, sid).endswith("<cancelled>|echo: charlie|<end_turn>")
    assert agent.frames.problems == []
