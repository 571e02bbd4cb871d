"""A Claude `session/load` sends its first replayed update before claude-agent-sdk is imported
(over a second of CPU): the transcript is found and checked where the CLI writes it. The hostile
files check (issue 25, item 4) once brought the import back onto that path (item 11's first
update then came after 2 s).

The real console script runs under `-X importtime` (stderr into a file) with the real Claude CLI
resuming against the fake API; the modules imported by the time the first update arrives are read
from that file. No time is asserted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.claude import long_transcript
from tests.claude.e2e_support import claude_env
from tests.e2e.harness import CAPABLE_META, agent_under_importtime, send_frame
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

DEADLINE_S = 60.0


@pytest.mark.parametrize("meta", [None, CAPABLE_META], ids=["plain client", "negotiates the extension"])
def test_a_loads_first_update_comes_before_the_sdk_is_imported(tmp_path: Path, meta: dict[str, Any] | None) -> None:
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    if meta is not None:
        capabilities["_meta"] = meta
    work = tmp_path / "work"
    work.mkdir()
    with FakeAnthropicAPI([]) as api:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "ACP_AGENT_"))}
        env.update(claude_env(api, tmp_path))
        session_id = long_transcript.install(Path(env["CLAUDE_CONFIG_DIR"]), work, 50)
        with agent_under_importtime("claude", env, tmp_path, DEADLINE_S) as (process, frames):
            assert process.stdin is not None
            send_frame(process, {"id": 1, "method": "initialize",
                                 "params": {"protocolVersion": 1, "clientCapabilities": capabilities}})
            assert frames.answer(1)["result"]["agentInfo"]["name"]
            send_frame(process, {"id": 2, "method": "session/load",
                                 "params": {"sessionId": session_id, "cwd": str(work), "mcpServers": []}})
            while True:
                frame = frames.next()
                assert frame.get("id") != 2, f"the load answered before any update: {frame}"
                if frame.get("method") == "session/update":
                    break
            modules = list(frames.imported)  # what was loaded by the first update
            assert frames.answer(2).get("result") is not None
            process.stdin.close()
            assert process.wait(timeout=DEADLINE_S) == 0
    assert "acp_agent_claude.runtime" in modules  # the output was read
    assert [name for name in modules if name.split(".")[0] == "claude_agent_sdk"] == []
