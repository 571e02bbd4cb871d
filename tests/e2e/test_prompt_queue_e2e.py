"""`acp-agent --provider scripted` as a subprocess: follow-ups queue, `_session/steering` where offered
(issue 12, item 1). The scripted turn `wait_fifo` is held until the test writes to a named pipe;
`wait_steer` until a steer arrives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.e2e.cancel_support import REQUEST_CANCELLED, send_cancel_request
from tests.e2e.harness import answers_and_texts, spawn_agent
from tests.e2e.test_scripted_e2e import script_env, text_prompt

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


async def release(fifo: Path) -> None:
    def write() -> None:
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write("go\n")
    await anyio.to_thread.run_sync(write)


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_follow_ups_queue_in_order_for_any_client(tmp_path: Path, capable: bool) -> None:
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    script = {"turns": [[{"text": "first "}, {"wait_fifo": str(fifo)}, {"text": "done"}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        init = await agent.initialize(capable=capable)
        assert "steering" not in (init.field_meta or {})
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            results[text] = (await agent.conn.prompt(session_id=sid, prompt=text_prompt(text))).stop_reason

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await agent.conn.list_sessions()  # answered once alpha is running
            tg.start_soon(prompt, "bravo")
            tg.start_soon(prompt, "charlie")
            await agent.conn.list_sessions()  # answered once bravo and charlie are in line
            assert results == {}
            await release(fifo)
    assert results == {"alpha": "end_turn", "bravo": "end_turn", "charlie": "end_turn"}
    assert answers_and_texts(agent, sid) == ["first ", "done", "<end_turn>", "bravo", "<end_turn>",
                                             "charlie", "<end_turn>"]
    assert agent.frames.problems == []


async def test_cancel_ends_the_running_turn_and_the_queued_prompts(tmp_path: Path) -> None:
    script = {"turns": [[{"text": "first "}, {"wait_cancel": True}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            results[text] = (await agent.conn.prompt(session_id=sid, prompt=text_prompt(text))).stop_reason

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await agent.conn.list_sessions()
            tg.start_soon(prompt, "bravo")
            await agent.conn.list_sessions()
            await agent.conn.cancel(session_id=sid)
        after = await agent.conn.prompt(session_id=sid, prompt=text_prompt("charlie"))
    assert results == {"alpha": "cancelled", "bravo": "cancelled"}
    assert after.stop_reason == "end_turn"
    assert answers_and_texts(agent, sid)[-2:] == ["charlie", "<end_turn>"]
    assert "bravo" not in answers_and_texts(agent, sid)
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_client_that_steers_the_running_turn(tmp_path: Path, capable: bool) -> None:
    script = {"steering": True, "turns": [[{"text": "first "}, {"wait_steer": True}, {"text": " done"}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        init = await agent.initialize(capable=capable)
        assert init.field_meta["steering"] == {"supported": True}
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: list[str] = []

        async def prompt(text: str) -> None:
            results.append((await agent.conn.prompt(session_id=sid, prompt=text_prompt(text))).stop_reason)

        running = anyio.Event()  # the turn's first text is shown: the backend is in its turn
        agent.client.update_hook = lambda _sid, update: (
            running.set() if update.session_update == "agent_message_chunk" else None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await running.wait()
            steer = await agent.conn.ext_method("session/steering", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "and this"}]})
            assert steer == {"outcome": "injected"}
        idle = await agent.conn.ext_method("session/steering", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "later"}],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
        assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert results == ["end_turn"]
    assert answers_and_texts(agent, sid) == ["first ", "steered: and this", " done", "<end_turn>"]
    assert agent.frames.problems == []


async def test_cancel_request_of_a_queued_prompt_cancels_just_that_one(tmp_path: Path) -> None:
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    script = {"turns": [[{"text": "first "}, {"wait_fifo": str(fifo)}, {"text": "done"}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            try:
                results[text] = (await agent.conn.prompt(session_id=sid, prompt=text_prompt(text))).stop_reason
            except acp.RequestError as error:
                results[text] = error.code

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await agent.conn.list_sessions()
            tg.start_soon(prompt, "bravo")
            await agent.conn.list_sessions()
            await send_cancel_request(agent, "session/prompt")  # bravo's, the latest
            tg.start_soon(prompt, "charlie")
            await agent.conn.list_sessions()
            assert results == {"bravo": REQUEST_CANCELLED}
            await release(fifo)
    assert results == {"bravo": REQUEST_CANCELLED, "alpha": "end_turn", "charlie": "end_turn"}
    assert answers_and_texts(agent, sid) == ["first ", "done", "<end_turn>", "charlie", "<end_turn>"]
    assert agent.frames.problems == []
