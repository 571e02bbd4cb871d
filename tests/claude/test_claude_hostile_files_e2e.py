"""Hostile project files and stores through `acp-agent --provider claude`, with the real bundled CLI
and the fake API: a settings file (the project's, its local one, the user's) that is a FIFO, a
symlink to the agent's own stdin or to `/dev/zero`, and a FIFO named like a transcript in the
Claude store. A cloned repository is not trusted: each is skipped (logged), the session starts,
the list answers with every other session, other requests go on meanwhile, and no thread of the
agent stays blocked on the file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
ANSWER_S = 20.0  # far beyond a session/new here (about 1 s), far below the 99 s a FIFO held it


def fifo(path: Path) -> None:
    os.mkfifo(path)


def to_stdin(path: Path) -> None:
    path.symlink_to("/proc/self/fd/0")


def to_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


HOSTILE: dict[str, Callable[[Path], None]] = {"fifo": fifo, "stdin": to_stdin, "zero": to_zero}


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


def settings_path(tmp_path: Path, project: Path, which: str) -> Path:
    if which == "user":
        return tmp_path / "claude-config" / "settings.json"
    return project / ".claude" / ("settings.json" if which == "project" else "settings.local.json")


async def answered(call: Any, within_s: float = ANSWER_S) -> Any:
    """The request's answer, or a test failure naming the hang."""
    with anyio.fail_after(within_s):
        return await call


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("which", ["project", "local", "user"])
async def test_a_hostile_settings_file_is_skipped_and_blocks_nothing(tmp_path: Path, which: str,
                                                                     kind: str) -> None:
    """session/new in a project whose settings file is hostile answers, with that file ignored,
    while a session in a clean project answers too; the agent's memory stays small."""
    hostile, clean = tmp_path / "hostile", tmp_path / "clean"
    (hostile / ".claude").mkdir(parents=True)
    clean.mkdir()
    with FakeAnthropicAPI([{"reply": "still here"}]) as api:
        # the user's settings are written by claude_env (the default mode); a hostile user's
        # settings replace that file once the agent is up (the CLI then meets it too)
        async with claude_agent(api, tmp_path, capable=True) as agent:
            target = settings_path(tmp_path, hostile, which)
            target.unlink(missing_ok=True)
            HOSTILE[kind](target)
            pid = agent.process.pid
            results: dict[str, Any] = {}

            async def open_in(name: str, cwd: Path) -> None:
                results[name] = await answered(agent.conn.new_session(cwd=str(cwd)))

            for _ in range(3):  # call after call
                async with anyio.create_task_group() as group:
                    group.start_soon(open_in, "hostile", hostile)
                    group.start_soon(open_in, "clean", clean)
            sid = results["hostile"].session_id
            reply = await answered(agent.conn.prompt(session_id=sid, prompt=text("hello")))
            memory = rss_kib(pid)
            log = agent.log_text()
    assert reply.stop_reason == "end_turn"
    assert results["clean"].session_id != sid
    assert memory < 400 * 1024, f"agent RSS {memory} KiB"
    assert str(target) in log and "not a regular file" in log
    assert agent.frames.problems == []


def store_dir(tmp_path: Path, project: Path) -> Path:
    """The Claude store's directory for `project` (the CLI's naming: every non-alphanumeric a dash)."""
    name = "".join(c if c.isalnum() else "-" for c in os.path.realpath(project))
    return tmp_path / "claude-config" / "projects" / name


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_transcript_in_the_store_leaves_the_list_whole(tmp_path: Path, kind: str) -> None:
    """A FIFO (or symlink to stdin or /dev/zero) named like a transcript in a project directory of
    the store: session/list, for that project and for all, lists every real session, at once,
    call after call, without a thread left behind per call; other requests go on meanwhile."""
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            pid = agent.process.pid
            first = await agent.conn.new_session(cwd=str(project))
            await agent.conn.prompt(session_id=first.session_id, prompt=text("in the project"))
            second = await agent.conn.new_session(cwd=str(other))
            await agent.conn.prompt(session_id=second.session_id, prompt=text("elsewhere"))
            directory = store_dir(tmp_path, project)
            assert (directory / f"{first.session_id}.jsonl").is_file()
            bad = directory / "11111111-2222-4333-8444-555555555555.jsonl"
            HOSTILE[kind](bad)
            listings: list[set[str]] = []
            counts = []
            for _ in range(5):  # the first rounds start the worker threads the later ones reuse
                for cwd in (str(project), None):
                    listed = await answered(agent.conn.list_sessions(cwd=cwd), within_s=10)
                    listings.append({s.session_id for s in listed.sessions})
                counts.append(threads(pid))
            async with anyio.create_task_group() as group:  # a list and a new session at once
                group.start_soon(answered, agent.conn.list_sessions(cwd=None))
                group.start_soon(answered, agent.conn.new_session(cwd=str(other)), 10)
            log = agent.log_text()
    assert listings[0] == {first.session_id}
    assert listings[1] == {first.session_id, second.session_id}
    assert listings == [listings[0], listings[1]] * 5
    assert counts[-1] <= counts[1], f"threads {counts}"  # none left blocked per call
    assert str(bad) in log and "not a regular file" in log
    assert agent.frames.problems == []


async def test_a_settings_file_too_large_is_skipped(tmp_path: Path) -> None:
    """A regular settings file past the bound is skipped with a log line; the session starts."""
    project = tmp_path / "big"
    (project / ".claude").mkdir(parents=True)
    big = project / ".claude" / "settings.json"
    big.write_text(json.dumps({"model": "x", "pad": "p" * (2 << 20)}))
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            session = await answered(agent.conn.new_session(cwd=str(project)))
            log = agent.log_text()
    assert session.session_id
    assert str(big) in log and "larger than" in log
    assert agent.frames.problems == []



@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_transcript_is_no_session_to_load_or_fork(tmp_path: Path, kind: str) -> None:
    """session/load, session/resume and session/fork of the id a hostile store entry is named by
    answer "not found" at once (the SDK's reader would block on it, or read without end), leave
    no thread behind, and a real session of the same project still loads."""
    project = tmp_path / "project"
    project.mkdir()
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            pid = agent.process.pid
            real = await agent.conn.new_session(cwd=str(project))
            await agent.conn.prompt(session_id=real.session_id, prompt=text("in the project"))
            bad_id = "11111111-2222-4333-8444-555555555555"
            HOSTILE[kind](store_dir(tmp_path, project) / f"{bad_id}.jsonl")
            codes, counts = [], []
            for _ in range(4):  # the first rounds start the worker threads the later ones reuse
                for method, params in (("session/load", {"mcpServers": []}), ("session/resume", {}),
                                       ("session/fork", {"mcpServers": []})):
                    with pytest.raises(RequestError) as refused:
                        await answered(agent.conn._conn.send_request(
                            method, {"sessionId": bad_id, "cwd": str(project), **params}), within_s=10)
                    codes.append(refused.value.code)
                counts.append(threads(pid))
            await agent.conn.close_session(session_id=real.session_id)
            loaded = await answered(agent.conn.load_session(cwd=str(project), session_id=real.session_id))
            log = agent.log_text()
    assert codes == [-32002] * 12
    assert counts[-1] <= counts[1], f"threads {counts}"
    assert loaded is not None
    assert bad_id in log and "not a regular file" in log
    assert agent.frames.problems == []
