"""The "a cancelled prompt never shifts answers" scenario, shared by every provider's e2e tests.

A prompt whose answer is held is cancelled, with `session/cancel` or with `$/cancel_request` (the
SDK client has no call for it, so the raw notification goes through its connection); then each
later prompt must get its own answer from a fake model that answers with the prompt it received.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import acp
import anyio
from acp import schema

from tests.e2e.harness import AgentProcess

HOW = ["session/cancel", "$/cancel_request"]
REQUEST_CANCELLED = -32800


def text(value: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=value)]


async def prompt_outcome(agent: AgentProcess, session_id: str, value: str) -> Any:
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=text(value))
    except acp.RequestError as error:
        return error


async def send_cancel_request(agent: AgentProcess, method: str) -> None:
    """`$/cancel_request` naming the latest request of `method` the client sent."""
    [request_id] = [frame["id"] for frame in agent.frames.outgoing if frame.get("method") == method][-1:]
    await agent.conn._conn.send_notification("$/cancel_request", {"requestId": request_id})


def answer_texts(agent: AgentProcess, session_id: str) -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]


async def cancel_prompt(agent: AgentProcess, session_id: str, value: str, how: str,
                        running: Callable[[], Awaitable[None]]) -> Any:
    """Send a prompt, wait until `running` says the backend is on it, cancel it `how`; its outcome."""
    outcome: list[Any] = []

    async def run() -> None:
        outcome.append(await prompt_outcome(agent, session_id, value))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await running()
        if how == "session/cancel":
            await agent.conn.cancel(session_id=session_id)
        else:
            await send_cancel_request(agent, "session/prompt")
    return outcome[0]


def assert_cancelled(outcome: Any, how: str) -> None:
    if how == "session/cancel":
        assert outcome.stop_reason == "cancelled", outcome
    else:
        assert isinstance(outcome, acp.RequestError), outcome
        assert outcome.code == REQUEST_CANCELLED


async def own_answer(agent: AgentProcess, session_id: str, value: str, *, timeout_s: float = 60) -> str:
    """Prompt `value` (bounded) and return the text the agent streamed for this prompt alone."""
    before = len(answer_texts(agent, session_id))
    with anyio.fail_after(timeout_s):
        outcome = await prompt_outcome(agent, session_id, value)
    answer = "".join(answer_texts(agent, session_id)[before:])
    assert not isinstance(outcome, acp.RequestError), (outcome, answer)
    assert outcome.stop_reason == "end_turn", (outcome, answer)
    return answer
