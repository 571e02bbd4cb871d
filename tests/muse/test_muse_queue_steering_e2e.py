"""Follow-ups while a Muse turn runs are queued; `_session/steering` joins the running turn through MSP
`turn/steer` (issue 12, item 1).

`acp-agent --provider muse` against the fake MSP host: its `hold` turn answers `echo: <prompt>` and
stays running until a `turn/steer` (answered `echo: <steered>` in the same turn), a `turn/cancel`,
or a line on the named pipe `MUSE_FAKE_HOLD_FIFO`; `echo` answers with the prompt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.harness import AgentProcess, answers_and_texts, joined, spawn_agent
from tests.muse.e2e_support import assert_legacy_clean, hooked, muse_env, received, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


def transcript(agent: AgentProcess, session_id: str) -> str:
    return joined(answers_and_texts(agent, session_id))


def answering(agent: AgentProcess) -> anyio.Event:
    """Set at the first agent text: the held turn is running on the host."""
    started = anyio.Event()

    def on_update(session_id: str, update: Any) -> None:
        if getattr(update, "session_update", None) == "agent_message_chunk":
            started.set()

    hooked(agent).update_hook = on_update
    return started


async def release(fifo: Path) -> None:
    def write() -> None:
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write("go\n")
    await anyio.to_thread.run_sync(write)


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_follow_up_runs_after_the_running_turn(tmp_path: Path, capable: bool) -> None:
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    env = muse_env(tmp_path, turn="echo", MUSE_FAKE_HOLD_FIFO=str(fifo))
    async with spawn_agent("muse", tmp_path, env) as agent:
        await agent.initialize(capable=capable)
        started = answering(agent)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: dict[str, Any] = {}

        async def prompt(value: str) -> None:
            results[value] = (await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "turn:hold alpha")
            await started.wait()
            tg.start_soon(prompt, "bravo")
            await agent.conn.list_sessions()  # answered once bravo is in line
            assert results == {}
            await release(fifo)
    assert results == {"turn:hold alpha": "end_turn", "bravo": "end_turn"}
    assert transcript(agent, sid) == "echo: turn:hold alpha|<end_turn>|echo: bravo|<end_turn>"
    assert len(received(tmp_path, "turn/start")) == 2  # the agent queued it, not the host
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


async def test_cancel_ends_the_running_turn_and_the_queued_follow_up(tmp_path: Path) -> None:
    async with spawn_agent("muse", tmp_path, muse_env(tmp_path, turn="echo")) as agent:
        await agent.initialize(capable=False)
        started = answering(agent)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: dict[str, Any] = {}

        async def prompt(value: str) -> None:
            results[value] = (await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "turn:hold alpha")
            await started.wait()
            tg.start_soon(prompt, "bravo")
            await agent.conn.list_sessions()
            await agent.conn.cancel(session_id=sid)
        after = await agent.conn.prompt(session_id=sid, prompt=text("charlie"))
    assert results == {"turn:hold alpha": "cancelled", "bravo": "cancelled"}
    assert after.stop_reason == "end_turn"
    assert transcript(agent, sid) == "echo: turn:hold alpha|<cancelled>|<cancelled>|echo: charlie|<end_turn>"
    assert [m["params"]["input"][0]["text"] for m in received(tmp_path, "turn/start")] == [
        "turn:hold alpha", "charlie"]
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_steer_joins_the_running_turn(tmp_path: Path, capable: bool) -> None:
    async with spawn_agent("muse", tmp_path, muse_env(tmp_path, turn="echo")) as agent:
        init = await agent.initialize(capable=capable)
        assert init.field_meta["steering"] == {"supported": True}
        started = answering(agent)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: list[str] = []

        async def prompt(value: str) -> None:
            results.append((await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "turn:hold alpha")
            await started.wait()
            steer = await agent.conn.ext_method("session/steering", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "bravo"}]})
            assert steer == {"outcome": "injected"}
        idle = await agent.conn.ext_method("session/steering", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "charlie"}],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
    assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert results == ["end_turn"]
    assert transcript(agent, sid) == "echo: turn:hold alphaecho: bravo|<end_turn>"
    [steered] = received(tmp_path, "turn/steer")
    [started_turn] = received(tmp_path, "turn/start")
    assert steered["params"]["input"] == [{"type": "text", "text": "bravo"}]
    assert steered["params"]["sessionId"] == sid and steered["params"]["expectedTurnId"].startswith("turn-")
    assert started_turn["params"]["input"][0]["text"] == "turn:hold alpha"
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)
