"""Through the real command: an `initialize` already waiting when the agent has imported what it
needs is answered before the event loop starts (issue 11, target 6), with the answer the loop
gives, and what the client sent after it is served as usual.

The request is in the pipe before the agent is spawned, so it is waiting by construction; the
modules imported before the answer come from `-X importtime`, whose report shares the answer's pipe. No time is
asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import CAPABLE_META, PipeFrames, agent_executable, reaped

pytestmark = pytest.mark.timeout(120)

DEADLINE_S = 60.0
LOOP_TIME = ("asyncio", "anyio.lowlevel", "anyio.streams.memory", "anyio._core._synchronization")
"""What the event loop and the connection need, and the answer does not: loaded after it."""
NOOP = {"jsonrpc": "2.0", "method": "_acp_agent_test/noop"}
"""A notification nobody handles: first in line, it leaves `initialize` to the event loop."""


def frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def initialize(meta: dict[str, Any] | None) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    if meta is not None:
        capabilities["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": capabilities}}


def serve(tmp_path: Path, first: list[dict[str, Any]], *, provider: str = "scripted",
          session: bool = True) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """Spawn the agent with `first` already in its stdin; then (`session`) open a session and
    prompt it. Returns the initialize answer, the modules imported before it, the later frames."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "ACP_AGENT_"))}
    env.update(HOME=str(tmp_path), CODEX_HOME=str(tmp_path / ".codex"), SCRIPTED_API_KEY="scripted-key-0000",
               ANTHROPIC_API_KEY="sk-ant-test-000000", OPENAI_API_KEY="sk-test-000000")
    read_end, write_end = os.pipe()
    os.write(write_end, b"".join(frame(message) for message in first))
    process = subprocess.Popen([sys.executable, "-X", "importtime", agent_executable(), "--provider", provider],
                               stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    os.close(read_end)
    later: list[dict[str, Any]] = []
    with reaped(process, DEADLINE_S):
        try:
            assert process.stdout is not None
            lines = PipeFrames(process.stdout.fileno(), DEADLINE_S, importtime=True)
            answer = lines.next()
            seen = list(lines.imported)  # imported before the answer was written (one pipe: in order)
            if session:
                os.write(write_end, frame({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                           "params": {"cwd": str(tmp_path), "mcpServers": []}}))
                later.append(lines.next())
                while later[-1].get("id") != 2:  # an AIR client is pushed `_auth/status_update` meanwhile
                    later.append(lines.next())
                session_id = later[-1]["result"]["sessionId"]
                os.write(write_end, frame({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
                    "sessionId": session_id, "prompt": [{"type": "text", "text": "hello early"}]}}))
                while "id" not in later[-1] or later[-1]["id"] != 3:
                    later.append(lines.next())
            os.close(write_end)
            write_end = -1
            assert process.wait(timeout=DEADLINE_S) == 0
        finally:
            if write_end >= 0:
                os.close(write_end)
    return answer, seen, later


@pytest.mark.parametrize("meta", [None, CAPABLE_META], ids=["plain client", "negotiates the extension"])
def test_a_waiting_initialize_is_answered_before_the_loop_starts_as_the_loop_answers_it(
        tmp_path: Path, meta: dict[str, Any] | None) -> None:
    (tmp_path / "early").mkdir()
    (tmp_path / "loop").mkdir()
    answer, modules, later = serve(tmp_path / "early", [initialize(meta)])
    assert "acp_agent.agent" in modules  # the output was read
    assert "asyncio" not in modules, "the event loop started before the answer"
    assert sorted(set(LOOP_TIME) & set(modules)) == []
    loop_answer, loop_modules, _ = serve(tmp_path / "loop", [NOOP, initialize(meta)])
    assert "asyncio" in loop_modules  # this one was answered on the loop
    assert answer == loop_answer
    assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "acp-agent-scripted"
    assert ("_meta" in answer["result"]) is (meta is not None)
    # What came after is served as usual: the session, the prompt's echo, its end.
    texts = [message["params"]["update"]["content"]["text"] for message in later
             if message.get("method") == "session/update"
             and message["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]
    assert "".join(texts) == "hello early"
    assert later[-1]["result"]["stopReason"] == "end_turn"


def test_a_client_that_asks_for_auth_status_is_answered_on_the_loop(tmp_path: Path) -> None:
    answer, modules, _ = serve(tmp_path, [initialize({"scripted/authStatus": 1})])
    assert "asyncio" in modules
    status = answer["result"]["_meta"]["scripted/authStatus"]
    assert status["configured"] is True and status["source"] == "environment"
    assert "scripted-key-0000" not in json.dumps(answer)


@pytest.mark.parametrize("provider", ["claude", "codex"])
@pytest.mark.parametrize("meta", [None, CAPABLE_META], ids=["plain client", "negotiates the extension"])
def test_the_vendor_providers_answer_early_too(tmp_path: Path, provider: str, meta: dict[str, Any] | None) -> None:
    """With their backends started by the command line (Claude's CLI, Codex's app-server) and
    stopped at exit; the answer equals the loop's."""
    (tmp_path / "early").mkdir()
    (tmp_path / "loop").mkdir()
    answer, modules, _ = serve(tmp_path / "early", [initialize(meta)], provider=provider, session=False)
    assert "acp_agent.agent" in modules
    assert sorted(set(LOOP_TIME) & set(modules)) == []
    loop_answer, loop_modules, _ = serve(tmp_path / "loop", [NOOP, initialize(meta)], provider=provider,
                                         session=False)
    assert "asyncio" in loop_modules
    assert answer == loop_answer
    assert answer["result"]["agentInfo"]["name"] == f"acp-agent-{provider}"
