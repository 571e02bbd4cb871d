"""`acp_agent.sessions.holds`: one agent process at a time holds a session, and a dead holder holds nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent.sessions.holds import HeldElsewhere, SessionHolds, state_directory

HOLDER = """
import sys
from pathlib import Path
from acp_agent.sessions.holds import SessionHolds
SessionHolds("claude", Path(sys.argv[1])).acquire(sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


def test_state_directory_follows_the_override_then_xdg_then_home() -> None:
    assert state_directory({"ACP_AGENT_STATE_DIR": "/s", "XDG_STATE_HOME": "/x", "HOME": "/h"}) == Path("/s")
    assert state_directory({"XDG_STATE_HOME": "/x", "HOME": "/h"}) == Path("/x/acp-agent")
    assert state_directory({"XDG_STATE_HOME": "relative", "HOME": "/h"}) == Path("/h/.local/state/acp-agent")
    assert state_directory({}) is None


def test_another_process_holding_the_session_is_named_and_its_death_frees_it(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), "s-1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"held\n"
        holds = SessionHolds("claude", tmp_path)
        with pytest.raises(HeldElsewhere) as caught:
            holds.acquire("s-1")
        assert caught.value.holder == holder.pid
        SessionHolds("codex", tmp_path).acquire("s-1")  # per provider
        os.kill(holder.pid, signal.SIGKILL)  # crashed: the kernel drops its lock
        holder.wait(timeout=10)
        holds.acquire("s-1")
        assert holds.holds("s-1")
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=10)


def test_release_lets_another_holder_in_and_removes_the_file(tmp_path: Path) -> None:
    first, second = SessionHolds("claude", tmp_path), SessionHolds("claude", tmp_path)
    first.acquire("../../escape")  # an id never names a path
    assert [p.parent for p in tmp_path.rglob("*.lock")] == [tmp_path / "sessions" / "claude"]
    with pytest.raises(HeldElsewhere):
        second.acquire("../../escape")
    first.release("../../escape")
    assert list(tmp_path.rglob("*.lock")) == []
    second.acquire("../../escape")
    second.release_all()
    assert not second.holds("../../escape")


@pytest.mark.parametrize("kind", ["symlink", "fifo", "garbage"])
def test_a_lock_file_is_not_trusted(tmp_path: Path, kind: str) -> None:
    holds = SessionHolds("claude", tmp_path)
    path = holds._path("s-1")
    path.parent.mkdir(parents=True)
    target = tmp_path / "target"
    target.write_text("keep")
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(b"9" * 4096 + b"\n")
    holds.acquire("s-1")  # never blocks, never follows the link; unheld if the file is unusable
    assert target.read_text() == "keep"
    assert holds.holds("s-1") == (kind == "garbage")
    if kind == "garbage":
        with pytest.raises(HeldElsewhere) as caught:
            SessionHolds("claude", tmp_path).acquire("s-1")
        assert caught.value.holder == os.getpid()


@pytest.mark.anyio
async def test_an_agent_refuses_a_session_another_process_holds_and_releases_its_own(tmp_path: Path) -> None:
    from acp_agent.testing import run_in_process
    from acp_agent.wire.rpc import RpcError
    from acp_agent_scripted import make_spec

    elsewhere = SessionHolds("scripted", tmp_path)  # another descriptor: as another process
    elsewhere.acquire("old-1")
    elsewhere.acquire("scripted-1")
    environ = {"ACP_AGENT_STATE_DIR": str(tmp_path)}
    load = {"sessionId": "old-1", "cwd": str(tmp_path), "mcpServers": []}
    async with run_in_process(make_spec({"history": {"old-1": []}}), environ=environ) as client:
        for method in ("session/load", "session/resume"):
            with pytest.raises(RpcError) as refused:
                await client.request(method, load)
            assert refused.value.code == -32602
            assert "close it there" in refused.value.message
        with pytest.raises(RpcError):  # even a new session's id, if it were held elsewhere
            await client.new_session(str(tmp_path))
        elsewhere.release_all()
        await client.request("session/load", load)
        with pytest.raises(HeldElsewhere):
            SessionHolds("scripted", tmp_path).acquire("old-1")
    SessionHolds("scripted", tmp_path).acquire("old-1")  # the agent's exit released it
