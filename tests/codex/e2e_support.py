"""Running `acp-agent --provider codex` against the real codex binary and the loopback fake Responses API."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from acp import schema

from tests.e2e.harness import AgentProcess, spawn_agent
from tests.e2e.processes import child_matching, kill_child
from tests.e2e.processes import gone as process_gone
from tests.fakes.responses_api import FakeResponsesAPI

HELD = {"echo": True, "slow_stream": {"text": " ".join(f"word{n}" for n in range(600)), "interval_s": 0.05}}
"""A fake model answer that streams for 30 s: a turn to cancel, freeze or cut off mid-way."""


FAKE_KEY = "sk-fake-test-key-0123456789"
STAND_IN = Path(__file__).with_name("stand_in_app_server.py")
BUBBLEWRAP_PREFIX = "Codex could not find bubblewrap on PATH."

CONFIG = """{top}
model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false
{policy}
[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false

[model_providers.fake]
name = "Fake Responses API"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = {retries}
stream_idle_timeout_ms = 10000
"""


def write_codex_home(api: FakeResponsesAPI, tmp_path: Path, *, retries: int = 2, top: str = "",
                     policy: str = "") -> Path:
    """A fresh CODEX_HOME whose config routes the model provider to the fake (no other network)."""
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(CONFIG.format(top=top, policy=policy, base_url=api.base_url, retries=retries))
    return home


def workspace(tmp_path: Path) -> str:
    path = tmp_path / "work"
    path.mkdir(exist_ok=True)
    return str(path)


TITLES_OFF = {"ACP_AGENT_CODEX_TITLES": "0"}
"""A new session's title is generated with a model request after its first turn; the tests of
other features script every model request, so they run without it (tests/codex/test_codex_titles_e2e.py
turns it on)."""


def codex_env(home: Path) -> dict[str, str]:
    return {"CODEX_HOME": str(home), "FAKE_OPENAI_API_KEY": FAKE_KEY, "OPENAI_API_KEY": "", "CODEX_API_KEY": "",
            "ACP_AGENT_CODEX_BIN": "", "RUST_LOG": "warn", **TITLES_OFF}


@asynccontextmanager
async def codex_agent(home: Path, tmp_path: Path, *, capable: bool, env: dict[str, str] | None = None,
                      log_name: str = "agent", meta: dict[str, Any] | None = None,
                      elicitation: Any = None, session: dict[str, Any] | None = None,
                      plan: bool = False, subagents: bool = False) -> AsyncIterator[CodexAgent]:
    """`acp-agent --provider codex` on this CODEX_HOME, initialized as a capable or legacy client."""
    full = {**codex_env(home), **(env or {})}
    log_dir = tmp_path / log_name
    log_dir.mkdir(exist_ok=True)
    async with spawn_agent("codex", log_dir, full, unstable=elicitation is not None) as agent:
        agent.frames.incoming = WatchedFrames(agent.frames.incoming)
        codex = CodexAgent(agent.conn, agent.process, agent.frames, agent.client, agent.log_path)
        codex.initialized = await agent.initialize(capable=capable, meta=meta, elicitation=elicitation,
                                                   session=session, plan=plan, subagents=subagents)
        yield codex


class WatchedFrames(list[dict[str, Any]]):
    """The FrameLog's list of agent frames, able to wake a test when a frame it waits for arrives."""

    def __init__(self, frames: list[dict[str, Any]]) -> None:
        super().__init__(frames)
        self._changed = anyio.Event()

    def append(self, frame: dict[str, Any]) -> None:
        super().append(frame)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], *, timeout_s: float = 20) -> dict[str, Any]:
        with anyio.fail_after(timeout_s):
            while True:
                for frame in self:
                    if predicate(frame):
                        return frame
                await self._changed.wait()


class CodexAgent(AgentProcess):
    """The harness's agent process plus its initialize response and watchable frames."""

    initialized: Any = None

    @property
    def watched(self) -> WatchedFrames:
        assert isinstance(self.frames.incoming, WatchedFrames)
        return self.frames.incoming


def text(value: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=value)]


async def wait_for_turn_requests(api: FakeResponsesAPI, count: int) -> None:
    await anyio.to_thread.run_sync(lambda: api.wait_for_requests(count, timeout=30))


def is_app_server(argv: list[bytes]) -> bool:
    return len(argv) >= 2 and argv[0].endswith(b"codex") and argv[1] == b"app-server"


def app_server_pid(agent_pid: int) -> int:
    """The `codex app-server` child of the agent, found through /proc."""
    return child_matching(agent_pid, is_app_server, "codex app-server")


def kill_app_server(agent_pid: int) -> int:
    return kill_child(agent_pid, is_app_server, "codex app-server")



def is_notice_text(value: str) -> bool:
    return value.startswith(("Config warning: ", "Warning: "))


def agent_texts(agent: AgentProcess, session_id: str) -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]


def model_text(agent: AgentProcess, session_id: str) -> str:
    """What the model said: agent text without the notices a legacy client sees as text."""
    return "".join(t for t in agent_texts(agent, session_id) if not is_notice_text(t))


def turn_records(agent: AgentProcess) -> list[dict[str, Any]]:
    return [r for r in agent.frames.failure_records() if r["id"].endswith(":error")]


def notice_records(agent: AgentProcess, session_id: str) -> list[dict[str, Any]]:
    return [r for r in agent.frames.failure_records() if r["id"].startswith(f"{session_id}:notice:")]


def turn_metadata(request: Any) -> dict[str, Any]:
    raw = request.headers.get("x-codex-turn-metadata") or "{}"
    parsed = json.loads(raw)
    return parsed if isinstance(parsed, dict) else {}


def stand_in_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """Environment that makes the agent run tests/codex/stand_in_app_server.py as its codex binary."""
    wrapper = tmp_path / "codex"
    wrapper.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(STAND_IN)!r}, run_name='__main__')\n")
    wrapper.chmod(0o755)
    return {"ACP_AGENT_CODEX_BIN": str(wrapper), "STAND_IN_PID_FILE": str(tmp_path / "stand-in.pid"),
            "CODEX_HOME": str(tmp_path), **TITLES_OFF, **settings}


def stand_in_gone(tmp_path: Path) -> bool:
    pid = int((tmp_path / "stand-in.pid").read_text())
    return process_gone(pid)


def said(request: Any) -> list[str]:
    """The user texts of a Responses API request's input, in order."""
    texts: list[str] = []
    for item in request.body.get("input") or []:
        if item.get("role") == "user":
            texts.extend(part.get("text", "") for part in item.get("content") or [] if part.get("type") == "input_text")
    return [t for t in texts if not t.lstrip().startswith("<")]
