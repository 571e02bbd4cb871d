"""`session/load` of long Claude histories (issue 25, item 11): the replay is streamed as the
transcript is read, in one pass that also finds the stored mode, while the CLI starts resuming;
the read's deadline is on progress, so a long history is never cut off and a stalled one is.

The in-process tests read the transcript from a FIFO: a FIFO can be read only once and only as
it is written, so an update that arrives before the writer has written the end proves the replay
is streamed, and a complete replay with the right mode proves a single pass.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.backends.contract import RuntimeContext
from acp_agent.backends.events import Event
from acp_agent.backends.phases import Deadlines, PhaseClock, PhaseDeadlineExceeded
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.acp import AgentMessageChunk, ToolCall, UserMessageChunk
from acp_agent_claude import store
from acp_agent_claude.clis import LiveCLIs
from acp_agent_claude.runtime import ClaudeRuntime
from acp_agent_claude.session import ClaudeSession
from tests.claude import long_transcript
from tests.claude.e2e_support import claude_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]
SESSION = "5b9a3a53-0b0e-4c55-9f55-0e5f3c7b2a11"
WAIT_S = 20.0  # the longest a writer waits on the reader (a deadline, never a pace)


class Channel:
    """The core's session channel as the runtime sees it: records the replay."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.first = threading.Event()
        self.session_id, self.credentials = SESSION, dict[str, str]()

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        self.first.set()


@contextmanager
def fifo(tmp_path: Path, write: Callable[[Any], None]) -> Iterator[Path]:
    """A FIFO that a thread writes with `write(handle)`; joined (it ends by its own deadlines)."""
    path = tmp_path / f"{SESSION}.jsonl"
    os.mkfifo(path)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            with path.open("wb", buffering=0) as handle:
                write(handle)
        except BaseException as exc:
            failures.append(exc)

    writer = threading.Thread(target=run, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # the reader gave up: a writer still waiting to open is let through
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(WAIT_S)
    assert not failures, failures


@asynccontextmanager
async def runtime(monkeypatch: pytest.MonkeyPatch, path: Path, read_ms: int = 20_000,
                  connected: list[str | None] | None = None) -> AsyncIterator[ClaudeRuntime]:
    """A Claude runtime whose transcript is `path` and whose CLI start only records when the
    stored mode reached it (no CLI runs: these tests are about the read)."""
    async def connect(self: LiveCLIs, session: ClaudeSession, *, resume: bool,
                      mode_known: anyio.Event | None = None, **_: Any) -> None:
        assert connected is not None and mode_known is not None
        connected.append("started")
        await mode_known.wait()
        connected.append(session.resumed_mode)

    monkeypatch.setattr(store, "find_transcript", lambda session_id, directory: path)
    monkeypatch.setattr(LiveCLIs, "connect", connect)
    environ = {"ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": "0"}
    context = RuntimeContext(hooks=installed_hooks(), environ=environ, clock=PhaseClock(Deadlines(read_ms=read_ms), "Claude"),
                             redact=Redactor.from_environment(environ))
    async with anyio.create_task_group() as tg:
        yield ClaudeRuntime(context, None, tg)
        tg.cancel_scope.cancel()


def texts(events: list[Event]) -> list[str]:
    return [event.content.text for event in events  # type: ignore[union-attr]
            if isinstance(event, UserMessageChunk | AgentMessageChunk)]


def expected(turns: int) -> list[str]:
    return [text for n in range(1, turns + 1)
            for text in (long_transcript.prompt_text(n), long_transcript.answer_text(n))]


async def test_the_replay_streams_as_it_is_read_in_one_pass_with_the_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first updates arrive while the transcript's end is not written yet; the CLI starts
    before the read ends and gets the mode the last turn stored."""
    channel, connected = Channel(), list[str | None]()
    written_end = threading.Event()

    def write(handle: Any) -> None:
        parent = long_transcript.write_turns(handle, 1, 10, None, SESSION, str(tmp_path))
        assert channel.first.wait(WAIT_S), "no update before the transcript's end was written"
        assert connected == ["started"], connected
        parent = long_transcript.write_turns(handle, 11, 1_989, parent, SESSION, str(tmp_path))
        long_transcript.write_turns(handle, 2_000, 1, parent, SESSION, str(tmp_path), mode="plan")
        written_end.set()

    with fifo(tmp_path, write) as path:
        async with runtime(monkeypatch, path, connected=connected) as claude:
            session = ClaudeSession(SESSION, str(tmp_path), choose_mode=True)
            await claude.transcripts.replay_and_resume(session, channel, replay=True, read_mode=True)
    assert written_end.is_set()
    assert texts(channel.events) == expected(2_000)
    assert sum(isinstance(event, ToolCall) for event in channel.events) == 2_000
    assert connected == ["started", "plan"]
    assert session.resumed_mode == "plan"


async def test_a_slow_read_that_keeps_going_is_not_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that takes four times the read budget, each line well within it, completes."""
    channel = Channel()

    def write(handle: Any) -> None:
        parent = None
        for n in range(1, 13):  # 12 × 100 ms: 1.2 s against a 300 ms budget
            parent = long_transcript.write_turns(handle, n, 1, parent, SESSION, str(tmp_path))
            time.sleep(0.1)  # the slow source itself (a paced writer), not a synchronisation

    with fifo(tmp_path, write) as path:
        async with runtime(monkeypatch, path, read_ms=300, connected=[]) as claude:
            session = ClaudeSession(SESSION, str(tmp_path), choose_mode=True)
            await claude.transcripts.replay_and_resume(session, channel, replay=True, read_mode=True)
    assert texts(channel.events) == expected(12)


async def test_a_stalled_read_meets_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transcript that stops coming (the writer holds it open) fails the load on the read's
    deadline, after what was read was replayed."""
    channel = Channel()
    release = threading.Event()

    def write(handle: Any) -> None:
        long_transcript.write_turns(handle, 1, 3, None, SESSION, str(tmp_path))
        release.wait(WAIT_S)  # stalled: open, nothing more

    with fifo(tmp_path, write) as path:
        async with runtime(monkeypatch, path, read_ms=300, connected=[]) as claude:
            session = ClaudeSession(SESSION, str(tmp_path), choose_mode=True)
            with pytest.raises(PhaseDeadlineExceeded) as caught:
                await claude.transcripts.replay_and_resume(session, channel, replay=True, read_mode=True)
            release.set()
    assert "within 300 ms" in str(caught.value)
    assert texts(channel.events) == expected(3)


async def test_a_long_history_loads_complete_and_in_order_with_its_mode(tmp_path: Path) -> None:
    """Through `acp-agent --provider claude` with the real CLI resuming: 2,000 turns."""
    work = tmp_path / "work"
    work.mkdir()
    session_id = long_transcript.install(tmp_path / "claude-config", work, 2_000, last_mode="acceptEdits")
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            loaded = await agent.conn.load_session(cwd=str(work), session_id=session_id)
            updates = list(agent.frames.updates(session_id))
    replayed = [u["content"]["text"] for u in updates
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
    assert replayed == expected(2_000)
    assert sum(u["sessionUpdate"] == "tool_call" for u in updates) == 2_000
    assert loaded.modes is not None and loaded.modes.current_mode_id == "acceptEdits"
    assert agent.frames.problems == []


def test_the_transcript_is_found_where_the_cli_writes_it_without_the_sdk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The load's first update does not wait for claude-agent-sdk's import (over a second): the
    transcript is found where the CLI writes it; anything else is left to the SDK's search."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    session_id = long_transcript.install(tmp_path / "config", work, 1)
    path = long_transcript.project_dir(tmp_path / "config", work) / f"{session_id}.jsonl"
    assert store.written_transcript(session_id, str(work)) == path
    assert store.written_transcript(SESSION, str(work)) is None  # not written
    assert store.written_transcript("../../etc/passwd", str(work)) is None  # not a session id
    (path.parent / f"{SESSION}.jsonl").write_bytes(b"")
    assert store.written_transcript(SESSION, str(work)) is None  # empty: the SDK decides


async def test_a_resume_reads_only_the_mode_and_replays_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`session/resume` in a new agent: the same one pass finds the stored mode; no update is sent."""
    channel, connected = Channel(), list[str | None]()

    def write(handle: Any) -> None:
        parent = long_transcript.write_turns(handle, 1, 500, None, SESSION, str(tmp_path))
        long_transcript.write_turns(handle, 501, 1, parent, SESSION, str(tmp_path), mode="acceptEdits")

    with fifo(tmp_path, write) as path:
        async with runtime(monkeypatch, path, connected=connected) as claude:
            session = ClaudeSession(SESSION, str(tmp_path), choose_mode=True)
            await claude.transcripts.replay_and_resume(session, channel, replay=False, read_mode=True)
    assert channel.events == []
    assert connected == ["started", "acceptEdits"]
