"""The first Codex session is ready without loading what only a turn needs (issue 11, target 2):
anyio's text streams.

The real `acp-agent` console script runs under `-X importtime` (stderr line-buffered into a file)
with the real `codex app-server` against the fake Responses API; the modules imported by the time
`session/new` is answered are read from that file. No time is asserted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_env, workspace, write_codex_home
from tests.e2e.harness import CAPABLE_META, agent_under_importtime, send_frame
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

DEADLINE_S = 60.0
NOT_FOR_A_SESSION = ("anyio.streams.text",)
"""Loaded by a library a session does not use."""


@pytest.mark.parametrize("meta", [None, CAPABLE_META], ids=["plain client", "negotiates the extension"])
def test_a_first_codex_session_is_ready_without_launcher_or_turn_only_modules(
        tmp_path: Path, meta: dict[str, Any] | None) -> None:
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    if meta is not None:
        capabilities["_meta"] = meta
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "ACP_AGENT_"))}
    with FakeResponsesAPI([]) as api:
        # A key in the environment, as a user who exports it has it: without one the keyring's
        # backends load once `initialize` is answered (in a thread), and they import shutil.
        env.update(codex_env(write_codex_home(api, tmp_path)), HOME=str(tmp_path), OPENAI_API_KEY="sk-test-000000")
        with agent_under_importtime("codex", env, tmp_path, DEADLINE_S) as (process, frames):
            assert process.stdin is not None
            send_frame(process, {"id": 1, "method": "initialize",
                                 "params": {"protocolVersion": 1, "clientCapabilities": capabilities}})
            assert frames.answer(1)["result"]["agentInfo"]["name"] == "acp-agent-codex"
            send_frame(process, {"id": 2, "method": "session/new",
                                 "params": {"cwd": workspace(tmp_path), "mcpServers": []}})
            assert frames.answer(2)["result"]["sessionId"]
            modules = list(frames.imported)  # what was loaded by the time it was ready
            process.stdin.close()
            assert process.wait(timeout=DEADLINE_S) == 0
    assert "acp_agent_codex.runtime" in modules and "asyncio" in modules  # the output was read
    assert "tomllib" in modules  # its config.toml (the fake's provider) is still read
    assert sorted(set(NOT_FOR_A_SESSION) & set(modules)) == []
