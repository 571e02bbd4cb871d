"""Where app-server notifications go, driven by a scripted stand-in app-server, end to end.

An error that arrives before the turn id is known belongs to the prompt once `turn/started`
(or the `turn/start` response) names it; an error of another turn, or one after the prompt
ended, is session-scoped; a warning between the deltas is a notice in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import agent_texts, stand_in_env, text
from tests.e2e.harness import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": {"threadId": "$THREAD", **params}}


def error(turn_id: str, message: str, info: Any, *, retry: bool) -> dict[str, Any]:
    return note("error", turnId=turn_id, willRetry=retry,
                error={"message": message, "codexErrorInfo": info, "additionalDetails": "private detail at http://x"})


SCRIPT = {"turn/start": {
    "before": [error("turn-1", "Reconnecting... 1/1", {"responseStreamDisconnected": {"httpStatusCode": None}},
                     retry=True)],
    "after": [
        note("turn/started", turn={"id": "turn-1", "status": "inProgress"}),
        error("turn-0", "An older turn failed.", "internalServerError", retry=False),
        note("item/agentMessage/delta", turnId="turn-1", itemId="m1", delta="recovered"),
        note("warning", message="Heads up."),
        note("turn/completed", turn={"id": "turn-1", "status": "completed", "error": None}),
        error("turn-1", "Late failure after the prompt.", "other", retry=False),
    ],
}}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_errors_and_warnings_are_routed_by_turn(tmp_path: Path, capable: bool) -> None:
    env = stand_in_env(tmp_path, STAND_IN_SCRIPT=json.dumps(SCRIPT))
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=capable)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
        # the stand-in answers this after the late error, so that error was handled before it
        await agent.conn.list_sessions()
    sid = session.session_id
    assert result.stop_reason == "end_turn" and result.field_meta is None
    wire = agent.frames.text()
    assert "private detail" not in wire
    if capable:
        records = [(r["id"].replace(sid, "S"), r["revision"], r["severity"], r["title"])
                   for r in agent.frames.failure_records()]
        turn_record, older, notice, late = records
        assert turn_record[1:] == (1, "warning", "Reconnecting... 1/1") and turn_record[0].endswith(":error")
        assert older[0].startswith("S:session-error:") and older[1:] == (1, "error", "An older turn failed.")
        assert notice[0].startswith("S:notice:") and notice[1:] == (1, "warning", "Heads up.")
        assert late[0].startswith("S:session-error:") and late[1:] == (1, "error", "Late failure after the prompt.")
        assert older[0] != late[0]
        assert agent_texts(agent, sid) == ["recovered"]
    else:
        assert agent_texts(agent, sid) == ["recovered", "Warning: Heads up.\n\n"]
        assert "sessionFailure" not in wire
    assert agent.frames.problems == []
