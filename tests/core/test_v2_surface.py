"""`acp_agent.v2.V2Surface` in process, for what the wire cannot order: a `session/cancel` that
comes after a prompt's `{messageId}` answer and before its turn joined the session's line."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acp_agent.v2 import V2Surface
from acp_agent.wire.rpc import Methods, Reply

pytestmark = pytest.mark.anyio


class _Connection:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        self.updates.append(params["update"])
        return True


class _Agent:
    """What the surface asks of the agent: parsing, the session, the task group, the connection."""

    def __init__(self) -> None:
        self.connection = _Connection()
        self._task_group: Any = None

    def _parse(self, params: Any, cls: Any) -> Any:
        return SimpleNamespace(session_id=params["sessionId"])

    async def _opened(self, session_id: str) -> Any:
        return SimpleNamespace(turn=None)


async def _surface(prompts: list[Any], cancels: list[Any]) -> tuple[V2Surface, _Agent, Methods]:
    async def prompt(params: Any) -> Any:
        prompts.append(params)
        return {"stopReason": "end_turn"}

    async def cancel(params: Any) -> None:
        cancels.append(params)

    agent = _Agent()
    surface = V2Surface(agent)  # type: ignore[arg-type]
    table = surface.methods(Methods(requests={"session/prompt": prompt}, notifications={"session/cancel": cancel}))
    return surface, agent, table


async def test_a_cancel_before_the_turn_joined_the_line_cancels_it() -> None:
    prompts: list[Any] = []
    cancels: list[Any] = []
    _, agent, table = await _surface(prompts, cancels)
    reply = await table.requests["session/prompt"]({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]})
    assert isinstance(reply, Reply)
    await table.notifications["session/cancel"]({"sessionId": "s"})
    async with anyio.create_task_group() as group:
        agent._task_group = group
        reply.on_written(True)
    assert prompts == [] and cancels == [{"sessionId": "s"}]
    assert [u["sessionUpdate"] for u in agent.connection.updates] == ["user_message", "state_update"]
    assert agent.connection.updates[-1] == {"sessionUpdate": "state_update", "state": "idle",
                                            "stopReason": "cancelled"}


async def test_a_prompt_accepted_after_the_cancel_runs() -> None:
    prompts: list[Any] = []
    surface, agent, table = await _surface(prompts, [])
    await table.notifications["session/cancel"]({"sessionId": "s"})
    reply = await table.requests["session/prompt"]({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]})
    async with anyio.create_task_group() as group:
        agent._task_group = group
        reply.on_written(True)
    assert len(prompts) == 1
    assert [u.get("state") for u in agent.connection.updates[1:]] == ["running", "idle"]
    assert not any(surface.accepted.values())
