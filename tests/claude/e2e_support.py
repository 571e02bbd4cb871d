"""Running `acp-agent --provider claude` against the real bundled CLI and the loopback fake API."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from acp import schema

from tests.e2e.harness import AgentProcess, spawn_agent
from tests.e2e.processes import kill_child
from tests.fakes.anthropic_api import FakeAnthropicAPI

API_KEY = "sk-ant-test-e2e-0123456789abcdef"


def claude_env(api: FakeAnthropicAPI, tmp_path: Path, *, retries: int = 2, key: str | None = API_KEY,
               extra: dict[str, str] | None = None, default_mode: str | None = "default") -> dict[str, str]:
    """The CLI's environment. `default_mode` is written as Claude Code's own
    `permissions.defaultMode` setting: the tests start sessions in `default` (the user decides
    every permission) unless they test the built-in start (`None`: `auto` where the model has it)."""
    env = {
        "ANTHROPIC_BASE_URL": api.base_url,
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
        "CLAUDE_CODE_MAX_RETRIES": str(retries),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HOME": str(tmp_path / "home"),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    if default_mode is not None:
        config = tmp_path / "claude-config"
        config.mkdir(exist_ok=True)
        path = config / "settings.json"  # a test's own user settings are kept, the mode added
        settings = json.loads(path.read_text()) if path.exists() else {}
        settings.setdefault("permissions", {}).setdefault("defaultMode", default_mode)
        path.write_text(json.dumps(settings))
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    env.update(extra or {})
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ACP_AGENT_CLAUDE_CLI"):
        env.setdefault(name, "")
    return env


@asynccontextmanager
async def claude_agent(api: FakeAnthropicAPI, tmp_path: Path, *, capable: bool, meta: dict[str, Any] | None = None,
                       elicitation: schema.ElicitationCapabilities | None = None,
                       session: dict[str, Any] | None = None, plan: bool = False, subagents: bool = False,
                       **env_options: Any) -> AsyncIterator[AgentProcess]:
    env = claude_env(api, tmp_path, **env_options)
    # "" unsets an inherited variable; unstable: the client answers elicitation/create
    async with spawn_agent("claude", tmp_path, env, unstable=elicitation is not None) as agent:
        await agent.initialize(capable=capable, meta=meta, elicitation=elicitation, session=session, plan=plan,
                               subagents=subagents)
        yield agent


def text(value: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=value)]


async def wait_for_requests(api: FakeAnthropicAPI, count: int, **kwargs: Any) -> None:
    await anyio.to_thread.run_sync(lambda: api.wait_for(count, **kwargs))


def kill_claude_cli(agent_pid: int) -> int:
    """SIGKILL the CLI the agent spawned, by PID."""
    return kill_child(agent_pid, lambda argv: any(re.search(rb"claude$", part) for part in argv[:2]), "Claude CLI")


def agent_texts(agent: AgentProcess, session_id: str) -> list[str]:
    return [u["content"]["text"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]
