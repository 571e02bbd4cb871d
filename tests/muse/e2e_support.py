"""Running `acp-agent --provider muse` against the fake MSP host (tests/fakes/muse_host.py)."""

from __future__ import annotations

import json
import os
import select
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from acp import schema

from tests.e2e.harness import AgentProcess, RecordingClient, spawn_agent

FAKE_HOST = Path(__file__).resolve().parents[1] / "fakes" / "muse_host.py"
API_KEY = "meta-test-key-0123456789abcdef"
LEGACY_MARKER = "sessionFailure"

def write_wrapper(directory: Path, name: str = "muse") -> Path:
    """A small executable that runs the fake host with this interpreter (what MUSE_CODE_EXECUTABLE names)."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / name
    script.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(FAKE_HOST)!r}, run_name='__main__')\n")
    script.chmod(0o755)
    return script


def muse_env(tmp_path: Path, *, key: str | None = API_KEY, turn: str | None = None, scenario: str | None = None,
             **extra: str) -> dict[str, str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {
        "MUSE_CODE_EXECUTABLE": str(write_wrapper(tmp_path / "bin")),
        "MUSE_FAKE_HOME": str(tmp_path / "muse-home"),
        "MUSE_FAKE_LOG": str(tmp_path / "host.jsonl"),
        "MUSE_FAKE_PIDS": str(tmp_path / "host.pids"),
        "MUSE_FAKE_TURN": turn or "",
        "MUSE_FAKE_SCENARIO": scenario or "",
        "MUSE_FAKE_ERROR_MESSAGE": "",
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
        "META_API_KEY": key or "",
        "MUSE_CODE_ACP_STARTUP_TIMEOUT_MS": "",
        "MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS": "",
    }
    env.update(extra)
    return env


@asynccontextmanager
async def muse_agent(tmp_path: Path, *, capable: bool, meta: dict[str, Any] | None = None,
                     elicitation: Any = None, session: dict[str, Any] | None = None,
                     **env_options: Any) -> AsyncIterator[AgentProcess]:
    env = muse_env(tmp_path, **env_options)
    async with spawn_agent("muse", tmp_path, env, unstable=elicitation is not None) as agent:  # "" unsets a variable
        await agent.initialize(capable=capable, meta=meta, elicitation=elicitation, session=session)
        yield agent


def hooked(agent: AgentProcess) -> RecordingClient:
    return agent.client


def text(value: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=value)]


def host_events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "host.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def received(tmp_path: Path, method: str | None = None) -> list[dict[str, Any]]:
    """Frames the fake hosts received, in order (requests and notifications)."""
    frames = [event["frame"] for event in host_events(tmp_path) if event["event"] == "recv"]
    return [frame for frame in frames if method is None or frame.get("method") == method]


def methods_received(tmp_path: Path) -> list[str]:
    return [frame["method"] for frame in received(tmp_path) if "method" in frame]


def host_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "host.pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def process_gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def assert_hosts_gone(tmp_path: Path) -> None:
    """Every host the agent started has exited (no orphan `muse serve` left behind)."""
    pids = host_pids(tmp_path)
    assert pids, "no host was started"
    alive = [pid for pid in pids if not process_gone(pid)]
    assert not alive, f"host processes still running: {alive}"


async def wait_for_exit(pid: int) -> None:
    """Block until the process exits, on its pidfd (event-driven, no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.to_thread.run_sync(lambda: select.select([fd], [], []))
    finally:
        os.close(fd)


def records(agent: AgentProcess) -> list[dict[str, Any]]:
    return agent.frames.failure_records()


def agent_texts(agent: AgentProcess, session_id: str, kind: str = "agent_message_chunk") -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == kind]


def assert_legacy_clean(agent: AgentProcess) -> None:
    assert LEGACY_MARKER not in agent.frames.text()
