"""Loads of one session in one agent take turns, and its other requests wait for them (issue 25,
item 5): one session never gets two backends, and a prompt never reaches a half-open session."""

from __future__ import annotations

import tempfile
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from acp_agent.testing import run_in_process
from acp_agent_scripted import make_spec

pytestmark = pytest.mark.anyio


async def test_two_loads_and_a_prompt_of_one_session_take_turns() -> None:
    gate = anyio.Event()
    script = {"history": {"old-1": [{"user": "earlier"}]}, "load_gate": gate, "turns": [[{"text": "ok"}]]}
    cwd = tempfile.gettempdir()
    async with run_in_process(make_spec(script)) as client:
        assert client.agent is not None
        results: dict[str, Any] = {}

        async def call(name: str, method: str, params: dict[str, Any]) -> None:
            results[name] = await client.request(method, params)

        load = {"sessionId": "old-1", "cwd": cwd, "mcpServers": []}
        prompt = {"sessionId": "old-1", "prompt": [{"type": "text", "text": "now"}]}
        async with anyio.create_task_group() as group:
            group.start_soon(call, "first", "session/load", load)
            await wait_all_tasks_blocked()
            group.start_soon(call, "second", "session/load", load)
            group.start_soon(call, "prompt", "session/prompt", prompt)
            await wait_all_tasks_blocked()
            host = client.agent._opening
            assert host is not None and host.runtime is not None
            runtime: Any = host.runtime
            assert (runtime.loading, results) == (1, {})  # the second load and the prompt wait
            gate.set()
        replayed = [u["content"]["text"] for u in client.session_updates("old-1")
                    if u["sessionUpdate"] == "user_message_chunk"]
    assert runtime.most_loading == 1
    assert results["prompt"]["stopReason"] == "end_turn"
    assert replayed == ["earlier", "earlier"]  # a load of an open session replays it again
