"""Follow-ups while a codex turn runs are queued; `_session/steering` joins the running turn through
app-server's `turn/steer` (issue 12, item 1).

Real `codex app-server` against the fake Responses API: its `hold` step keeps the first answer open
(the turn runs) until the test releases it; `echo` answers with the prompt the request carries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.codex.e2e_support import (
    CodexAgent,
    codex_agent,
    is_notice_text,
    text,
    wait_for_turn_requests,
    workspace,
    write_codex_home,
)
from tests.e2e.harness import answers_and_texts, joined
from tests.fakes.responses_api import FakeResponsesAPI, echo_text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

HELD = {"echo": True, "hold": True}
ECHO = {"echo": True}


def transcript(agent: CodexAgent, session_id: str) -> list[str]:
    """Prompt answers and agent text of one session (notices left out), in the order written."""
    return answers_and_texts(agent, session_id, keep=lambda text: not is_notice_text(text))


async def shown(agent: CodexAgent, session_id: str, words: str) -> None:
    """Wait until the client has been shown `words` of the running turn's answer: codex has then
    streamed that answer out, so input steered afterwards cannot replace it."""
    await agent.watched.wait_for(lambda _: words in joined(transcript(agent, session_id)), timeout_s=30)


async def release(api: FakeResponsesAPI) -> None:
    api.release()


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_follow_up_runs_after_the_running_turn(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([HELD, ECHO]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            results: dict[str, Any] = {}

            async def prompt(value: str) -> None:
                results[value] = (await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_turn_requests(api, 1)
                tg.start_soon(prompt, "bravo")
                await agent.conn.list_sessions()  # answered once bravo is in line
                assert results == {}
                await release(api)
    assert results == {"alpha": "end_turn", "bravo": "end_turn"}
    assert joined(transcript(agent, sid)) == "echo: alpha|<end_turn>|echo: bravo|<end_turn>"
    assert [echo_text(r.body or {}) for r in api.turn_requests] == ["echo: alpha", "echo: bravo"]
    assert agent.frames.problems == []


async def test_cancel_ends_the_running_turn_and_the_queued_follow_up(tmp_path: Path) -> None:
    with FakeResponsesAPI([HELD, ECHO]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            results: dict[str, Any] = {}

            async def prompt(value: str) -> None:
                results[value] = (await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_turn_requests(api, 1)
                tg.start_soon(prompt, "bravo")
                await agent.conn.list_sessions()
                await agent.conn.cancel(session_id=sid)
            after = await agent.conn.prompt(session_id=sid, prompt=text("charlie"))
    assert results == {"alpha": "cancelled", "bravo": "cancelled"}
    assert after.stop_reason == "end_turn"
    assert [echo_text(r.body or {}) for r in api.turn_requests] == ["echo: alpha", "echo: charlie"]
    assert joined(transcript(agent, sid)) == "echo: alpha|<cancelled>|<cancelled>|echo: charlie|<end_turn>"
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_steer_joins_the_running_turn(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([HELD, ECHO]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            assert agent.initialized.field_meta["steering"] == {"supported": True}
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            results: list[str] = []

            async def prompt(value: str) -> None:
                results.append((await agent.conn.prompt(session_id=sid, prompt=text(value))).stop_reason)

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt, "alpha")
                await wait_for_turn_requests(api, 1)
                await shown(agent, sid, "echo: alpha")
                steer = await agent.conn.ext_method("session/steering", {
                    "sessionId": sid, "prompt": [{"type": "text", "text": "bravo"}]})
                assert steer == {"outcome": "injected"}
                await release(api)
            idle = await agent.conn.ext_method("session/steering", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "charlie"}],
                "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
    assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert results == ["end_turn"]
    # One turn, one answer: app-server sent the steered input to the model in the same turn.
    assert joined(transcript(agent, sid)) == "echo: alphaecho: bravo|<end_turn>"
    assert [echo_text(r.body or {}) for r in api.turn_requests] == ["echo: alpha", "echo: bravo"]
    assert agent.frames.problems == []
