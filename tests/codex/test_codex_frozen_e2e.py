"""A frozen codex app-server is replaced, and a running prompt is answered when the agent stops (issue 25, item 2).

Real `codex app-server` against the fake Responses API. The app-server is frozen with SIGSTOP,
found by PID as the agent's child; it is woken and killed by PID when a test ends. Each wait on
the agent has a deadline well below the 20 s a cancel or a close took before (and the 10 s the
agent took to exit on SIGTERM), generous for a loaded machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.codex.e2e_support import (
    HELD,
    CodexAgent,
    app_server_pid,
    codex_agent,
    text,
    wait_for_turn_requests,
    workspace,
    write_codex_home,
)
from tests.e2e.cancel_support import own_answer, prompt_outcome
from tests.e2e.processes import wait_ended
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

ANSWER_DEADLINE_S = 15.0
"""Below the old 20 s wait, above the 10 s cancel grace."""
GONE_DEADLINE_S = 10.0


@contextlib.contextmanager
def frozen_later() -> Iterator[list[int]]:
    """PIDs frozen during the test, woken and killed (by PID) when it ends."""
    frozen: list[int] = []
    try:
        yield frozen
    finally:
        for pid in frozen:
            for signum in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)


def freeze_app_server(agent: CodexAgent, frozen: list[int]) -> int:
    pid = app_server_pid(agent.process.pid)
    frozen.append(pid)
    os.kill(pid, signal.SIGSTOP)
    return pid


async def freeze_the_turn_and_end_it(agent: CodexAgent, api: FakeResponsesAPI, frozen: list[int], session_id: str,
                                     end: Callable[[], Awaitable[object]]) -> tuple[Any, int]:
    """Prompt `alpha-first`; once its turn reached the model, freeze app-server and `end` the
    prompt (a cancel, a close). The prompt's outcome (within the answer deadline) and the frozen
    app-server's PID, once that process is gone."""
    outcome: list[Any] = []
    answered = anyio.Event()
    async with anyio.create_task_group() as group:
        async def run() -> None:
            outcome.append(await prompt_outcome(agent, session_id, "alpha-first"))
            answered.set()

        group.start_soon(run)
        await wait_for_turn_requests(api, 1)
        pid = freeze_app_server(agent, frozen)
        with anyio.fail_after(ANSWER_DEADLINE_S):
            await end()
            await answered.wait()
    await wait_ended([pid], within_s=GONE_DEADLINE_S)
    return outcome[0], pid


async def test_a_cancel_replaces_a_frozen_app_server(tmp_path: Path) -> None:
    """The app-server freezes mid-turn: the cancel answers `cancelled` by the cancel grace, the
    frozen process is killed, and the session's next prompt runs on a new app-server."""
    with FakeResponsesAPI([HELD, {"echo": True}]) as api, frozen_later() as frozen:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome, pid = await freeze_the_turn_and_end_it(
                agent, api, frozen, session.session_id, lambda: agent.conn.cancel(session_id=session.session_id))
            second = await own_answer(agent, session.session_id, "bravo-second", timeout_s=60)
            assert app_server_pid(agent.process.pid) != pid
    assert outcome.stop_reason == "cancelled", outcome
    assert second == "echo: bravo-second"
    assert agent.frames.problems == []


async def test_a_missed_submit_deadline_replaces_a_frozen_app_server(tmp_path: Path) -> None:
    """Frozen between turns: the prompt fails its submit deadline, and the next prompt of the
    session runs on a new app-server instead of failing that deadline again. (The session has
    had a turn: a thread that never ran one has no rollout another app-server could resume.)"""
    with FakeResponsesAPI([{"echo": True}, {"echo": True}]) as api, frozen_later() as frozen:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True, env={"ACP_AGENT_SUBMIT_TIMEOUT_MS": "2000"}) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            assert await own_answer(agent, session.session_id, "alpha-zero") == "echo: alpha-zero"
            pid = freeze_app_server(agent, frozen)
            with anyio.fail_after(ANSWER_DEADLINE_S):
                first = await agent.conn.prompt(session_id=session.session_id, prompt=text("alpha-first"))
            await wait_ended([pid], within_s=GONE_DEADLINE_S)
            second = await own_answer(agent, session.session_id, "bravo-second", timeout_s=60)
    record = first.field_meta["jetbrains"]["air"]["sessionFailure"]
    assert record["title"].startswith("Codex did not acknowledge the turn within 2000 ms")
    assert second == "echo: bravo-second"
    assert agent.frames.problems == []


async def test_a_close_during_a_frozen_turn_answers_and_ends_the_app_server(tmp_path: Path) -> None:
    """`session/close` while the frozen app-server runs the session's turn: the close and the
    prompt are answered, and the frozen process is gone; a new session works."""
    with FakeResponsesAPI([HELD, {"echo": True}]) as api, frozen_later() as frozen:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome, _ = await freeze_the_turn_and_end_it(
                agent, api, frozen, session.session_id, lambda: agent.conn.close_session(session_id=session.session_id))
            again = await agent.conn.new_session(cwd=workspace(tmp_path))
            answer = await own_answer(agent, again.session_id, "bravo-second", timeout_s=60)
    assert not isinstance(outcome, acp.RequestError), outcome
    assert outcome.stop_reason == "cancelled", outcome
    assert answer == "echo: bravo-second"
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_sigterm_during_a_turn_answers_the_prompt_and_exits(tmp_path: Path, capable: bool) -> None:
    """SIGTERM to the agent while a Codex turn streams: the prompt is answered (the worker is
    shutting down, DESIGN §4 and §5) before the agent exits, and the app-server is gone."""
    with FakeResponsesAPI([HELD]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            server = app_server_pid(agent.process.pid)
            async with anyio.create_task_group() as group:
                group.start_soon(prompt_outcome, agent, session.session_id, "alpha-first")
                await wait_for_turn_requests(api, 1)
                [prompt_id] = [f["id"] for f in agent.frames.outgoing if f.get("method") == "session/prompt"]
                os.kill(agent.process.pid, signal.SIGTERM)
                with anyio.fail_after(8.0):  # it took 10 s
                    await agent.process.wait()
                    answer = await agent.watched.wait_for(lambda frame: frame.get("id") == prompt_id)
                group.cancel_scope.cancel()
            await wait_ended([server], within_s=GONE_DEADLINE_S)
    if capable:
        record = answer["result"]["_meta"]["jetbrains"]["air"]["sessionFailure"]
        assert answer["result"]["stopReason"] == "end_turn"
        assert (record["category"], record["actions"]) == ("connection", ["new_session"])
    else:
        assert answer["error"]["code"] == -32603
        assert answer["error"]["data"]["failure"]["kind"] == "workerShutdown"


CLOSE_DEADLINE_S = 4.5
"""Above the 2 s grace (generous for a loaded machine), below the 5 s thread/unsubscribe wait of before."""


def replayed_texts(agent: CodexAgent, session_id: str, kind: str) -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == kind]


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_session_that_never_ran_a_turn_goes_on_after_a_replacement(tmp_path: Path, capable: bool) -> None:
    """Sessions A and B on one agent, B never prompted; A's turn freezes app-server and A is
    cancelled, so app-server is replaced. app-server keeps no rollout of a thread before its
    first turn (`thread/resume` says "not found"): B's first prompt still runs (on a new thread
    under B's session id), so does a session C loaded before its first prompt, and B's turn is
    replayed by a later `session/load` of B in the same agent."""
    with FakeResponsesAPI([HELD, {"echo": True}, {"echo": True}]) as api, frozen_later() as frozen:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            cwd = workspace(tmp_path)
            a, b, c = [await agent.conn.new_session(cwd=cwd) for _ in range(3)]
            outcome, _ = await freeze_the_turn_and_end_it(
                agent, api, frozen, a.session_id, lambda: agent.conn.cancel(session_id=a.session_id))
            first = await own_answer(agent, b.session_id, "bravo-first", timeout_s=60)
            assert first == "echo: bravo-first"  # an AIR client's failure is answered end_turn
            with anyio.fail_after(30):
                await agent.conn.load_session(cwd=cwd, session_id=c.session_id)
            third = await own_answer(agent, c.session_id, "charlie-first", timeout_s=60)
            with anyio.fail_after(30):
                await agent.conn.close_session(session_id=b.session_id)
                before = len(replayed_texts(agent, b.session_id, "user_message_chunk"))
                await agent.conn.load_session(cwd=cwd, session_id=b.session_id)
            replayed = replayed_texts(agent, b.session_id, "user_message_chunk")[before:]
    assert outcome.stop_reason == "cancelled", outcome
    assert third == "echo: charlie-first"
    assert replayed == ["bravo-first"]
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_close_of_an_idle_session_replaces_a_frozen_app_server(tmp_path: Path, capable: bool) -> None:
    """`session/close` of a session with no running turn while app-server is frozen: answered
    within the 2 s grace (not after the whole `thread/unsubscribe` wait), the frozen process is
    killed, and another session's next prompt runs on a new app-server."""
    with FakeResponsesAPI([{"echo": True}, {"echo": True}]) as api, frozen_later() as frozen:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            cwd = workspace(tmp_path)
            idle = await agent.conn.new_session(cwd=cwd)
            other = await agent.conn.new_session(cwd=cwd)
            assert await own_answer(agent, other.session_id, "alpha-zero") == "echo: alpha-zero"
            pid = freeze_app_server(agent, frozen)
            started = anyio.current_time()
            with anyio.fail_after(20):
                await agent.conn.close_session(session_id=idle.session_id)
            took = anyio.current_time() - started
            await wait_ended([pid], within_s=GONE_DEADLINE_S)
            second = await own_answer(agent, other.session_id, "bravo-second", timeout_s=60)
            assert app_server_pid(agent.process.pid) != pid
    assert took < CLOSE_DEADLINE_S, took
    assert second == "echo: bravo-second"
    assert agent.frames.problems == []
