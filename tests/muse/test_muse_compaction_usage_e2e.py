"""After a compaction, the client learns the context's new size (issue 12).

The host reports the context's use with `session/contextUsage` and a compaction's result in the
`compaction` item (`tokensAfter`); the next `contextUsage` may come only with the next model call.
The agent publishes the compacted size as a `usage_update` (against the window the host last
reported) once the compaction completes. Through `acp-agent --provider muse` and the fake MSP host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.muse.e2e_support import assert_legacy_clean, muse_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
async def test_a_compaction_publishes_the_compacted_context_size(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="compact") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        result = await agent.conn.prompt(session_id=sid, prompt=text("go on"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = agent.frames.updates(sid)
    start = next(i for i, u in enumerate(updates) if u["sessionUpdate"] == "tool_call")
    done = next(i for i, u in enumerate(updates) if u.get("status") == "completed"
                and u.get("toolCallId") == updates[start]["toolCallId"])
    usage = [(i, u["used"], u["size"]) for i, u in enumerate(updates) if u["sessionUpdate"] == "usage_update"]
    assert [(used, size) for _, used, size in usage] == [(150000, 200000), (20000, 200000)]
    assert usage[0][0] < start and usage[1][0] > done  # before the compaction, and once it completed
    if not capable:
        assert_legacy_clean(agent)


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_the_sessions_cost_and_the_turns_tokens_are_published(tmp_path: Path, capable: bool) -> None:
    """`session/tokenUsage`: the session's cost so far (`cumulative.cost.usd`) on a
    `usage_update`, and the turn's tokens (the host's counted-once total) as the prompt answer's
    `usage`."""
    async with muse_agent(tmp_path, capable=capable) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        first = await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
        second = await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    costs = [u.get("cost") for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "usage_update"]
    assert [cost for cost in costs if cost] == [{"amount": 0.0125, "currency": "USD"},
                                                {"amount": 0.025, "currency": "USD"}]
    answers = [frame["result"] for frame in agent.frames.incoming
               if isinstance(frame.get("result"), dict) and "stopReason" in frame["result"]]
    expected = {"totalTokens": 1020, "inputTokens": 1200, "outputTokens": 20, "thoughtTokens": 5,
                "cachedReadTokens": 200}
    assert [answer["usage"] for answer in answers] == [expected, expected]
    assert first.usage is not None and second.usage is not None
    assert agent.frames.problems == []
