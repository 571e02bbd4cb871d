"""However a prompt ends early, the provider's `cancel` runs before the prompt is over (issue 9, item 2).

The scripted provider records every `cancel` call and how each of its prompts ended: `cancelled`
means the provider's turn finished on its own after the cancel, `forced` that the core cut it off.
"""

from __future__ import annotations

import tempfile
from typing import Any

import anyio
import pytest

from acp_agent import agent as agent_module
from acp_agent.backends.phases import Deadlines
from acp_agent.testing import InProcessClient, run_in_process
from acp_agent.wire.rpc import REQUEST_CANCELLED, RpcError
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()


def scripted_runtime(client: InProcessClient) -> ScriptedRuntime:
    agent = client.agent
    assert agent is not None and agent._opening is not None
    runtime = agent._opening.runtime
    assert isinstance(runtime, ScriptedRuntime)
    return runtime


async def test_cancel_request_runs_the_providers_cancel_and_waits_for_its_turn_to_end() -> None:
    async with run_in_process(make_spec({"turns": [[{"text": "working"}, {"wait_cancel": True}]]})) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        runtime = scripted_runtime(client)
        results: list[Any] = []

        async def first() -> None:
            try:
                results.append(await client.prompt(session_id, "first"))
            except RpcError as exc:
                results.append(exc)

        async with anyio.create_task_group() as tg:
            request_id = client.connection._next_id  # the id the prompt is about to be sent with
            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            assert runtime.cancelled.get(session_id) is not None  # the provider's turn is running
            await client.notify("$/cancel_request", {"requestId": request_id})
        [error] = results
        assert isinstance(error, RpcError) and error.code == REQUEST_CANCELLED
        assert runtime.cancel_calls == [session_id]
        assert runtime.prompt_ends == ["cancelled"]  # it ended through the cancel, before the answer
        assert await client.prompt(session_id, "second") == {"stopReason": "end_turn"}
        texts = [u["content"]["text"] for u in client.session_updates(session_id)
                 if u["sessionUpdate"] == "agent_message_chunk"]
        assert texts == ["working", "second"]


async def test_the_client_going_away_runs_the_providers_cancel() -> None:
    async with run_in_process(make_spec({"turns": [[{"wait_cancel": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        runtime = scripted_runtime(client)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.prompt, session_id, "first")
            await anyio.wait_all_tasks_blocked()
            assert runtime.cancelled.get(session_id) is not None
            client.to_agent.close_input()
            with anyio.fail_after(10):
                await runtime.prompt_ended.wait()
            tg.cancel_scope.cancel()
    assert runtime.cancel_calls == [session_id]
    assert runtime.prompt_ends == ["cancelled"]


async def test_a_submit_deadline_runs_the_providers_cancel() -> None:
    spec = make_spec({"turns": [[{"hang_submit": True}]]})
    async with run_in_process(spec, deadlines=Deadlines(submit_ms=50)) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        runtime = scripted_runtime(client)
        with pytest.raises(RpcError) as failed:
            await client.prompt(session_id, "first")
        assert failed.value.data["failure"]["kind"] == "deadlineExceeded"
        assert runtime.cancel_calls == [session_id]
        assert await client.prompt(session_id, "second") == {"stopReason": "end_turn"}


async def test_a_provider_that_ignores_the_cancel_holds_the_session_until_the_grace_is_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_module, "CANCEL_GRACE_S", 0.5)
    async with run_in_process(make_spec({"turns": [[{"hang_submit": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        runtime = scripted_runtime(client)
        results: list[Any] = []

        async def first() -> None:
            try:
                results.append(await client.prompt(session_id, "first"))
            except RpcError as exc:
                results.append(exc)

        async with anyio.create_task_group() as tg:
            request_id = client.connection._next_id
            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            await client.notify("$/cancel_request", {"requestId": request_id})
            # The backend's turn is not over yet: another prompt waits until the grace is over.
            early = await client.prompt(session_id, "too early")
            assert runtime.prompt_ends[0] == "forced"
            assert early == {"stopReason": "end_turn"}
        [error] = results
        assert isinstance(error, RpcError) and error.code == REQUEST_CANCELLED
        assert runtime.cancel_calls == [session_id]
        assert runtime.prompt_ends == ["forced", "end_turn"]
        assert await client.prompt(session_id, "second") == {"stopReason": "end_turn"}


async def test_with_the_client_gone_a_provider_that_ignores_the_cancel_is_cut_off_after_the_short_grace() -> None:
    """At EOF a prompt may still finish within the EOF grace; then it is cancelled with the short
    grace of a client that is gone, not the 10 s a connected client's cancel allows."""
    async with run_in_process(make_spec({"turns": [[{"hang_submit": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        runtime = scripted_runtime(client)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.prompt, session_id, "first")
            await anyio.wait_all_tasks_blocked()
            client.to_agent.close_input()
            with anyio.fail_after(agent_module.EOF_GRACE_S + agent_module.INPUT_GONE_CANCEL_GRACE_S + 2):
                await runtime.prompt_ended.wait()
            tg.cancel_scope.cancel()
    assert runtime.cancel_calls == [session_id]
    assert runtime.prompt_ends == ["forced"]
