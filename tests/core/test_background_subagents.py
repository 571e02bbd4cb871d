"""AIR's `backgroundSubagents`: advertised only with the runtime's capability, to a client that
declares it, on ACP v1; the client's flag as a turn's channel reads it; and Claude's rule for a
result that is not the turn's own (a cycle the CLI ran on a background task's notification)."""

from __future__ import annotations

from typing import Any

from acp_agent.backends.contract import RuntimeCapabilities, background_subagents
from acp_agent.initialization import air_capabilities
from acp_agent.sessions.presentation import ClientFeatures
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.subagents import autonomous

SERVED = RuntimeCapabilities(background_subagents=True)
DECLARED = frozenset({"backgroundSubagents"})


def test_advertised_only_to_a_declaring_v1_client_of_a_runtime_that_serves_it() -> None:
    assert "backgroundSubagents" in air_capabilities(SERVED, DECLARED)
    assert "backgroundSubagents" not in air_capabilities(SERVED)  # not declared
    assert "backgroundSubagents" not in air_capabilities(SERVED, DECLARED, v2=True)  # v2 keeps the hold
    assert "backgroundSubagents" not in air_capabilities(RuntimeCapabilities(), DECLARED)


def test_the_client_s_flag_reaches_a_channel_that_carries_it() -> None:
    meta = {"jetbrains": {"air": {"version": 1, "capabilities": ["backgroundSubagents"]}}}
    assert ClientFeatures.from_capabilities(meta, None).background_subagents
    assert not ClientFeatures.from_capabilities({}, None).background_subagents

    class Channel:
        background_subagents = True

    assert background_subagents(Channel())  # type: ignore[arg-type]
    assert not background_subagents(object())  # type: ignore[arg-type]  # a channel without it


RESULT: dict[str, Any] = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                          "result": "after notification", "stop_reason": "end_turn"}


def test_a_result_of_the_cli_s_own_cycle_is_not_the_turn_s() -> None:
    own = {**RESULT, "origin": {"kind": "task-notification", "runId": "r"}}
    assert autonomous(own, {"u1"})
    assert not autonomous({**own, "user_message_uuids": ["u1"]}, {"u1"})  # the prompt was folded into it
    assert not autonomous(RESULT, {"u1"})  # no origin: a prompt's
    assert not autonomous({**RESULT, "origin": {"kind": "human"}}, {"u1"})
    fold = TurnFold()
    fold.prompts.add("u1")
    fold.feed(own)
    assert fold.outcome is None  # the turn goes on
    fold.feed({**RESULT, "user_message_uuids": ["u1"]})
    assert fold.outcome is not None
