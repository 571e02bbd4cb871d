"""A TurnChannel for in-process runtime tests whose first text chunk waits, like an emit to a stalled client."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from attrs import define, field

from acp_agent.backends.events import Event
from acp_agent.failures.protocol import FailureObservation
from acp_agent.wire.acp import AgentMessageChunk, PermissionOption, TextContent, ToolCallUpdate


@define(eq=False)
class HeldTurn:
    """Collects the turn's text; the first text chunk waits for `release` (`held` says it got there)."""

    session_id: str = ""
    turn_id: str = "t"
    credentials: dict[str, str] = field(factory=dict)
    texts: list[str] = field(factory=list)
    failures: list[FailureObservation] = field(factory=list)
    held: anyio.Event = field(factory=anyio.Event)
    release: anyio.Event = field(factory=anyio.Event)

    async def emit(self, event: Event) -> None:
        if isinstance(event, AgentMessageChunk) and isinstance(event.content, TextContent):
            if not self.held.is_set():
                self.held.set()
                await self.release.wait()
            self.texts.append(event.content.text)

    async def request_permission(self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]) -> str | None:
        return None

    def record_failure(self, observation: FailureObservation) -> None:
        self.failures.append(observation)

    def adopt_turn_id(self, backend_turn_id: str) -> bool:
        return False


async def first_of(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as group:
        for event in events:
            async def wait(event: anyio.Event = event) -> None:
                await event.wait()
                group.cancel_scope.cancel()
            group.start_soon(wait)
