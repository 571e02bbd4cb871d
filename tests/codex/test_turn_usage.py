"""A Codex turn's own tokens from app-server's `thread/tokenUsage/updated` (pure)."""

from __future__ import annotations

from acp_agent.provider import TurnUsage
from acp_agent_codex.items import turn_usage


def token_usage(total: int, input_: int, cached: int, output: int, reasoning: int) -> dict[str, object]:
    counts = {"totalTokens": total, "inputTokens": input_, "cachedInputTokens": cached, "outputTokens": output,
              "reasoningOutputTokens": reasoning}
    return {"total": counts, "last": counts, "modelContextWindow": 258400}


def test_the_turns_tokens_are_the_total_minus_the_total_when_it_began() -> None:
    before = token_usage(1000, 900, 100, 100, 20)
    now = {"threadId": "t", "turnId": "u", "tokenUsage": token_usage(1600, 1400, 300, 200, 50)}
    assert turn_usage(before, now) == TurnUsage(input_tokens=500, output_tokens=100, thought_tokens=30,
                                                cached_read_tokens=200, total_tokens=600)
    assert turn_usage(None, now) == TurnUsage(1400, 200, 50, 300, None, 1600)  # the thread's first turn


def test_no_totals_no_usage() -> None:
    assert turn_usage(None, {"tokenUsage": {"last": {"totalTokens": 5}}}) is None
    assert turn_usage(None, {"tokenUsage": "broken"}) is None
    assert turn_usage(None, {}) is None
    smaller = turn_usage(token_usage(50, 50, 0, 0, 0), {"tokenUsage": token_usage(10, 10, 0, 0, 0)})
    assert smaller is not None and smaller.total_tokens == 0  # never negative
