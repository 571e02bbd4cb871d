"""Issue 27 (today's ACP) for Claude, through `acp-agent --provider claude` with the real bundled
CLI and the fake Anthropic API: the turn's tokens in `PromptResponse.usage`, the session's cost on
`usage_update`, one `messageId` per message the same live and on `session/load`, notices, the
compaction summary, and a fork at a message; for a client that declares the capability and one
that does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
CAPABLE = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
TOKENS = {"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40,
          "output_tokens": 25}


def answers(agent: Any) -> list[dict[str, Any]]:
    return [frame["result"] for frame in agent.frames.incoming
            if isinstance(frame.get("result"), dict) and "stopReason" in frame["result"]]


@CAPABLE
async def test_each_answer_has_its_turns_tokens_and_the_session_cost_grows(tmp_path: Path, capable: bool) -> None:
    """`PromptResponse.usage` = the turn's result `usage` (input, output, cache read and creation
    tokens), `usage_update.cost` = the result's `total_cost_usd` (the session's running sum), as
    claude-agent-acp sends them. The second turn makes two model calls (a tool, then the reply)."""
    script = [{"reply": "first answer", "usage": TOKENS},
              {"tool_use": {"name": "Glob", "input": {"pattern": "*.none"}}, "usage": TOKENS},
              {"reply": "second answer", "usage": {**TOKENS, "output_tokens": 7}}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    first, second = (answer["usage"] for answer in answers(agent))
    assert first == {"inputTokens": 1200, "outputTokens": 25, "cachedReadTokens": 300, "cachedWriteTokens": 40,
                     "totalTokens": 1565}
    assert second == {"inputTokens": 2400, "outputTokens": 32, "cachedReadTokens": 600, "cachedWriteTokens": 80,
                      "totalTokens": 3112}
    costs = [u["cost"] for u in agent.frames.updates(session.session_id)
             if u["sessionUpdate"] == "usage_update" and "cost" in u]
    assert len(costs) == 2 and all(cost["currency"] == "USD" for cost in costs)
    assert 0 < costs[0]["amount"] < costs[1]["amount"]  # cumulative for the session
    assert agent.frames.problems == []
