"""A follow-up `session/prompt` while a turn runs is queued, and `_session/steering` (issue 12, item 1).

In-process agent and the scripted provider: its `wait_steer` turn is held until a steer arrives
(or the test sets the runtime's `steered` event, which ends the hold with nothing steered).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_agent.testing.client import InProcessClient, run_in_process
from acp_agent.wire.rpc import REQUEST_CANCELLED, RpcError
from acp_agent_scripted import make_spec
from tests.core.test_turn_cancel import scripted_runtime

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

CWD = "/"
HELD = [{"text": "first "}, {"wait_steer": True}]


def texts(client: InProcessClient, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in client.session_updates(session_id)
                   if u["sessionUpdate"] == "agent_message_chunk")


async def test_a_follow_up_runs_after_the_running_turn_with_its_own_answer() -> None:
    async with run_in_process(make_spec({"turns": [HELD]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            results[text] = await client.prompt(session_id, text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await anyio.wait_all_tasks_blocked()
            runtime = scripted_runtime(client)
            tg.start_soon(prompt, "bravo")
            tg.start_soon(prompt, "charlie")
            await anyio.wait_all_tasks_blocked()
            # Queued, not refused, and not started while the first turn runs.
            assert results == {}
            assert runtime.prompts == ["alpha"]
            runtime.steered[session_id].set()
    assert results == {"alpha": {"stopReason": "end_turn"}, "bravo": {"stopReason": "end_turn"},
                       "charlie": {"stopReason": "end_turn"}}
    assert runtime.prompts == ["alpha", "bravo", "charlie"]
    assert texts(client, session_id) == "first bravocharlie"
    # Every turn's updates come after the answer of the turn before it.
    kinds = [("answer" if "result" in f else f["params"]["update"]["content"]["text"])
             for f in client.frames if "result" in f or f.get("method") == "session/update"]
    assert kinds[-6:] == ["first ", "answer", "bravo", "answer", "charlie", "answer"]


async def test_cancel_cancels_the_running_turn_and_the_prompts_queued_before_it() -> None:
    async with run_in_process(make_spec({"turns": [HELD]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            results[text] = await client.prompt(session_id, text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(prompt, "bravo")
            tg.start_soon(prompt, "charlie")
            await anyio.wait_all_tasks_blocked()
            await client.notify("session/cancel", {"sessionId": session_id})
            await anyio.wait_all_tasks_blocked()
            # A prompt sent after the cancel is not cancelled by it.
            tg.start_soon(prompt, "delta")
        runtime = scripted_runtime(client)
    assert results == {"alpha": {"stopReason": "cancelled"}, "bravo": {"stopReason": "cancelled"},
                       "charlie": {"stopReason": "cancelled"}, "delta": {"stopReason": "end_turn"}}
    assert runtime.prompts == ["alpha", "delta"]


async def test_cancel_request_of_a_queued_prompt_cancels_only_that_one() -> None:
    async with run_in_process(make_spec({"turns": [HELD]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            try:
                results[text] = await client.prompt(session_id, text)
            except RpcError as exc:
                results[text] = exc.code

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await anyio.wait_all_tasks_blocked()
            runtime = scripted_runtime(client)
            bravo_id = client.connection._next_id
            tg.start_soon(prompt, "bravo")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(prompt, "charlie")
            await anyio.wait_all_tasks_blocked()
            await client.notify("$/cancel_request", {"requestId": bravo_id})
            await anyio.wait_all_tasks_blocked()
            assert results == {"bravo": REQUEST_CANCELLED}
            assert runtime.cancel_calls == []  # the running turn goes on
            runtime.steered[session_id].set()
    assert results == {"bravo": REQUEST_CANCELLED, "alpha": {"stopReason": "end_turn"},
                       "charlie": {"stopReason": "end_turn"}}
    assert runtime.prompts == ["alpha", "charlie"]


async def test_queued_prompts_do_not_run_once_the_client_is_gone() -> None:
    async with run_in_process(make_spec({"turns": [[{"wait_cancel": True}]]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.prompt, session_id, "alpha")
            await anyio.wait_all_tasks_blocked()
            runtime = scripted_runtime(client)
            bravo_id = client.connection._next_id
            tg.start_soon(client.prompt, session_id, "bravo")
            await anyio.wait_all_tasks_blocked()
            client.to_agent.close_input()
            with anyio.fail_after(10):
                await runtime.prompt_ended.wait()
            tg.cancel_scope.cancel()
    assert runtime.prompts == ["alpha"]
    # The queued prompt was answered cancelled, unrun.
    assert [f["result"] for f in client.frames if f.get("id") == bravo_id] == [{"stopReason": "cancelled"}]


async def test_close_answers_queued_prompts_cancelled() -> None:
    async with run_in_process(make_spec({"turns": [HELD]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        results: dict[str, Any] = {}

        async def prompt(text: str) -> None:
            results[text] = await client.prompt(session_id, text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, "alpha")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(prompt, "bravo")
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(RpcError, match="prompt running"):
                await client.request("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
            await client.request("session/close", {"sessionId": session_id})
    assert results == {"alpha": {"stopReason": "cancelled"}, "bravo": {"stopReason": "cancelled"}}


# -- steering ------------------------------------------------------------------------------------


async def test_steering_is_advertised_and_offered_only_where_the_provider_can() -> None:
    async with run_in_process(make_spec({})) as client:
        init = await client.initialize()
        assert "steering" not in init.get("_meta", {})
        session_id = await client.new_session(CWD)
        with pytest.raises(RpcError) as missing:
            await client.request("_session/steering", {"sessionId": session_id, "prompt": []})
        assert missing.value.code == -32601
    async with run_in_process(make_spec({"steering": True})) as client:
        init = await client.initialize()
        assert init["_meta"]["steering"] == {"supported": True}
        assert "steering" not in init["agentCapabilities"].get("_meta", {})


async def test_a_steer_joins_the_running_turn() -> None:
    async with run_in_process(make_spec({"steering": True, "turns": [HELD]})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        results: list[Any] = []
        async with anyio.create_task_group() as tg:
            async def first() -> None:
                results.append(await client.prompt(session_id, "alpha"))
            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            steer = await client.request("_session/steering", {
                "sessionId": session_id, "prompt": [{"type": "text", "text": "also this"}]})
            assert steer == {"outcome": "injected"}
        runtime = scripted_runtime(client)
    assert results == [{"stopReason": "end_turn"}]
    assert runtime.prompts == ["alpha"]
    assert texts(client, session_id) == "first steered: also this"


async def test_a_steer_with_no_turn_running() -> None:
    async with run_in_process(make_spec({"steering": True})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        required = await client.request("_session/steering", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "idle one"}],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
        assert required == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        runtime = scripted_runtime(client)
        assert runtime.prompts == []
        started = await client.request("_session/steering", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "idle two"}]})
        assert started == {"outcome": "startedNewTurn"}
        with anyio.fail_after(10):
            await runtime.prompt_ended.wait()
        # The started turn holds the session: a prompt now runs after it.
        assert await client.prompt(session_id, "next") == {"stopReason": "end_turn"}
        assert runtime.prompts == ["idle two", "next"]
        with pytest.raises(RpcError) as bad:
            await client.request("_session/steering", {
                "sessionId": session_id, "prompt": [{"type": "text", "text": "x"}],
                "_meta": {"steering": {"idleBehavior": "later"}}})
        assert bad.value.code == -32602
        with pytest.raises(RpcError) as empty:
            await client.request("_session/steering", {"sessionId": session_id, "prompt": []})
        assert empty.value.code == -32602
        with pytest.raises(RpcError) as unknown:
            await client.request("_session/steering", {
                "sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]})
        assert unknown.value.code == -32002
