"""The Claude CLI's life and command line, end to end: it dies with the agent however the agent dies,
and the editor's MCP secrets never reach its command line (issue 9, items 3 and 4)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.e2e.processes import argv_of, children, kill_agent_and_wait_for
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]

ENV_SECRET = "mcp-env-secret-5f2d9c0b7a41"
HEADER_SECRET = "Bearer mcp-header-secret-93e1c8a2"


async def test_sigkill_of_the_agent_mid_turn_ends_the_cli_within_a_second(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "reply": "This answer is held open"}, {"reply": "ok"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp_servers())
            private = mcp_config_of(children(agent.process.pid)[0]).parent
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    with contextlib.suppress(Exception):  # the agent dies under it
                        await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))

                group.start_soon(run)
                await wait_for_requests(api, 1)  # the CLI is inside the turn, its stream held open
                [cli] = children(agent.process.pid)
                await kill_agent_and_wait_for(agent.process.pid, cli)
                group.cancel_scope.cancel()
        assert private.exists()  # nothing could remove it: the next agent's runtime does
        async with claude_agent(api, tmp_path, capable=False) as again:
            await again.conn.new_session(cwd=str(tmp_path))
            assert not private.exists()


def mcp_servers() -> list[Any]:
    return [
        schema.McpServerStdio(name="editor-tools", command="/bin/true", args=["--flag"],
                              env=[schema.EnvVariable(name="TOOL_TOKEN", value=ENV_SECRET)]),
        schema.HttpMcpServer(type="http", name="remote-tools", url="http://127.0.0.1:9/mcp",
                             headers=[schema.HttpHeader(name="Authorization", value=HEADER_SECRET)]),
    ]


def mcp_config_of(cli: int) -> Path:
    """The CLI's --mcp-config argument, which must be a file, not the servers themselves."""
    argv = argv_of(cli)
    return Path(os.fsdecode(argv[argv.index(b"--mcp-config") + 1]))


def assert_private(path: Path) -> None:
    mode = path.stat()
    assert stat.S_IMODE(mode.st_mode) == 0o600 and mode.st_uid == os.getuid()
    folder = path.parent.stat()
    assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == os.getuid()


async def test_mcp_secrets_stay_off_the_cli_command_line(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "ok"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            closed = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp_servers())
            [cli] = children(agent.process.pid)
            command_line = Path(f"/proc/{cli}/cmdline").read_bytes()
            path = mcp_config_of(cli)
            assert_private(path)
            config = json.loads(path.read_text())
            await agent.conn.close_session(session_id=closed.session_id)
            gone_after_close = not path.exists()

            kept = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp_servers())
            await agent.conn.prompt(session_id=kept.session_id, prompt=text("hi"))  # stores a transcript
            [first] = children(agent.process.pid)
            before = mcp_config_of(first)
            await agent.conn.resume_session(cwd=str(tmp_path), session_id=kept.session_id, mcp_servers=mcp_servers())
            [second] = children(agent.process.pid)
            after = mcp_config_of(second)
            assert_private(after)
            gone_after_replacement = not before.exists()
    assert ENV_SECRET.encode() not in command_line and b"mcp-header-secret" not in command_line
    assert config["mcpServers"]["editor-tools"] == {"type": "stdio", "command": "/bin/true", "args": ["--flag"],
                                                    "env": {"TOOL_TOKEN": ENV_SECRET}}
    assert config["mcpServers"]["remote-tools"] == {"type": "http", "url": "http://127.0.0.1:9/mcp",
                                                    "headers": {"Authorization": HEADER_SECRET}}
    assert gone_after_close
    assert gone_after_replacement and before != after
    assert not after.exists() and not after.parent.exists()  # the agent's exit removed the rest
    assert ENV_SECRET not in agent.log_text() and "mcp-header-secret" not in agent.log_text()
    assert agent.frames.problems == []
