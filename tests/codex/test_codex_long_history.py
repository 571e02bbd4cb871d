"""`session/load` of a long Codex thread (issue 25, item 11): the stored turns are read page by
page (`thread/turns/list`), each page replayed as it comes, under a deadline on progress (each page
within the read budget), so a thread that takes longer than the budget to read is still opened,
and only the thread's last turn can hold an active failure.

The runtime's replay runs against an app-server double whose `thread/turns/list` answers each page
after a pause: the pause stands for a slow app-server (the scenario), it synchronises nothing.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acp_agent.backends.contract import RuntimeContext
from acp_agent.backends.events import Event, HistoryFailure
from acp_agent.backends.phases import Deadlines, Phase, PhaseClock, PhaseDeadlineExceeded
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.acp import UserMessageChunk
from acp_agent_codex.runtime import CodexRuntime, rollout_size
from acp_agent_codex.sessions import replay_turns

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def turn(n: int, *, failed: bool = False) -> dict[str, Any]:
    items = [{"type": "userMessage", "id": f"u{n}", "content": [{"type": "text", "text": f"prompt {n}"}]},
             {"type": "agentMessage", "id": f"a{n}", "text": f"answer {n}"}]
    stored: dict[str, Any] = {"id": f"t{n}", "items": items, "status": "failed" if failed else "completed"}
    if failed:
        stored["error"] = {"message": "We’re currently experiencing high demand.",
                           "codexErrorInfo": "internalServerError"}
    return stored


class PagedServer:
    """`thread/turns/list` over `turns`, `page` at a time, each answered after `pause_s`
    (`stall_after`: that page is never answered)."""

    def __init__(self, turns: list[dict[str, Any]], page: int, pause_s: float, stall_after: int | None = None) -> None:
        self.turns, self.page, self.pause_s, self.stall_after = turns, page, pause_s, stall_after
        self.calls = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "thread/turns/list"
        self.calls += 1
        if self.stall_after is not None and self.calls > self.stall_after:
            await anyio.sleep_forever()
        await anyio.sleep(self.pause_s)
        start = int(params.get("cursor") or 0)
        end = start + self.page
        return {"data": self.turns[start:end], "nextCursor": str(end) if end < len(self.turns) else None}


class Channel:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)


def runtime(read_ms: int) -> Any:
    """What `sessions.replay_turns` uses of a runtime (its clock, hooks, redaction, page reader)."""
    environ: dict[str, str] = {}
    context = RuntimeContext(hooks=installed_hooks(), environ=environ, clock=PhaseClock(Deadlines(read_ms=read_ms), "Codex"),
                             redact=Redactor.from_environment(environ))
    double = SimpleNamespace(clock=context.clock, context=context, _opening=0)
    double._pages = lambda server, session_id: CodexRuntime._pages(double, server, session_id)  # type: ignore[arg-type]
    return double


def prompts(events: list[Event]) -> list[str]:
    return [e.content.text for e in events if isinstance(e, UserMessageChunk)]  # type: ignore[union-attr]


async def test_a_thread_read_slower_than_the_budget_but_steadily_is_opened() -> None:
    """12 pages, 100 ms each: 1.2 s against a 300 ms budget; every turn, in order; only the
    thread's last turn's failure is active (an earlier page's last turn is not the thread's)."""
    turns = [turn(n, failed=n in (10, 120)) for n in range(1, 121)]
    server, channel = PagedServer(turns, page=10, pause_s=0.1), Channel()
    rt = runtime(300)
    await replay_turns(server, rt.clock, rt.context, "thread", channel)  # type: ignore[arg-type]
    assert prompts(channel.events) == [f"prompt {n}" for n in range(1, 121)]
    assert [f.active for f in channel.events if isinstance(f, HistoryFailure)] == [False, True]
    assert server.calls == 12


async def test_a_stalled_read_meets_the_deadline_after_replaying_what_came() -> None:
    server, channel = PagedServer([turn(n) for n in range(1, 41)], page=10, pause_s=0.0, stall_after=2), Channel()
    rt = runtime(300)
    with pytest.raises(PhaseDeadlineExceeded) as caught:
        await replay_turns(server, rt.clock, rt.context, "thread", channel)  # type: ignore[arg-type]
    assert "within 300 ms" in str(caught.value)
    assert prompts(channel.events) == [f"prompt {n}" for n in range(1, 21)]


def test_the_rollout_size_is_found_by_thread_id(tmp_path: Any) -> None:
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-01T00-00-00-0abc.jsonl").write_bytes(b"x" * 100)
    assert rollout_size(str(tmp_path), "0abc") == 100
    assert rollout_size(str(tmp_path), "0abd") == 0
    assert rollout_size(str(tmp_path / "missing"), "0abc") == 0


async def test_a_resume_budget_scaled_by_its_rollout_holds_a_longer_answer() -> None:
    """thread/resume answers once it has read the whole rollout: its budget grows with the size."""
    clock = PhaseClock(Deadlines(read_ms=100), "Codex")
    async with clock.phase(Phase.READING, label="thread/resume", scale=RESUME_SCALE):
        await anyio.sleep(0.3)  # a resume that takes three budgets (the scenario, not a sync)
    with pytest.raises(PhaseDeadlineExceeded) as caught:
        async with clock.phase(Phase.READING, label="thread/resume", scale=0.5):  # never below the budget
            await anyio.sleep(0.3)
    assert "within 100 ms" in str(caught.value)


RESUME_SCALE = 6.0
