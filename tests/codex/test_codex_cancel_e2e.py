"""A cancelled codex prompt stops app-server's turn: every later prompt gets its own answer (issue 9, item 2).

Real `codex app-server` against the fake Responses API, whose `echo` step answers with the prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from tests.codex.e2e_support import (
    HELD,
    codex_agent,
    stand_in_env,
    text,
    wait_for_turn_requests,
    workspace,
    write_codex_home,
)
from tests.e2e.cancel_support import HOW, assert_cancelled, cancel_prompt, own_answer
from tests.e2e.harness import spawn_agent
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]



@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
@pytest.mark.parametrize("how", HOW)
async def test_a_cancelled_prompt_never_shifts_the_answers(tmp_path: Path, capable: bool, how: str) -> None:
    with FakeResponsesAPI([HELD, {"echo": True}, {"echo": True}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            first = await cancel_prompt(agent, session.session_id, "alpha-first", how,
                                        lambda: wait_for_turn_requests(api, 1))
            # The held answer lasts 30 s: it ends at once only if the turn was interrupted.
            [held] = api.turn_requests
            assert await anyio.to_thread.run_sync(lambda: held.wait_ended(10)) == "disconnected"
            second = await own_answer(agent, session.session_id, "bravo-second")
            third = await own_answer(agent, session.session_id, "charlie-third")
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert third == "echo: charlie-third"
    assert agent.frames.problems == []
    if not capable:
        assert "sessionFailure" not in agent.frames.text()


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": {"threadId": "$THREAD", **params}}


LATE_TURN = {
    "late": [note("turn/started", turn={"id": "turn-late", "status": "inProgress"})],
    "turn/start": {"after": [
        note("turn/started", turn={"id": "turn-1", "status": "inProgress"}),
        note("item/agentMessage/delta", turnId="turn-1", itemId="m1", delta="second answer"),
        note("turn/completed", turn={"id": "turn-1", "status": "completed", "error": None}),
    ]},
}


async def test_a_turn_acknowledged_after_its_deadline_is_interrupted(tmp_path: Path) -> None:
    """turn/start is not acknowledged within the submit deadline, and that turn starts later anyway
    (while the next prompt runs): the agent interrupts it rather than leave it running."""
    log = tmp_path / "stand-in.jsonl"
    env = stand_in_env(tmp_path, STAND_IN_LATE_ONCE="turn/start", STAND_IN_SCRIPT=json.dumps(LATE_TURN),
                       STAND_IN_LOG=str(log), ACP_AGENT_SUBMIT_TIMEOUT_MS="300")
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=True)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        first = await agent.conn.prompt(session_id=session.session_id, prompt=text("alpha-first"))
        second = await own_answer(agent, session.session_id, "bravo-second", timeout_s=20)
        await agent.conn.list_sessions()  # answered after whatever the agent sent before it
    assert first.field_meta["jetbrains"]["air"]["sessionFailure"]["title"].startswith(
        "Codex did not acknowledge the turn within 300 ms")
    assert second == "second answer"
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    interrupts = [r["params"] for r in requests if r["method"] == "turn/interrupt"]
    assert interrupts == [{"threadId": "00000000-0000-7000-8000-000000000001", "turnId": "turn-late"}]
    assert agent.frames.problems == []
