"""`initialize` is answered without loading what only sessions need (issue 11, target 6).

The real `acp-agent` console script runs with `-X importtime` in an installation holding only the
core and the Claude provider (this environment's site-packages minus the other `acp_agent`
plugins' distributions: a test plugin that imports session types at its top level would load them
for every provider). The modules imported before the `initialize` answer is written are read from
that output; no time is asserted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

import acp_agent
import acp_agent_claude
from tests.e2e.harness import PipeFrames, agent_executable, reaped

SESSION_TIME = (
    "acp_agent.wire.acp_session",  # the ~56 session wire classes
    "acp_agent.backends.events",
    "acp_agent.sessions.session",
    "acp_agent.sessions.presentation",
    "acp_agent.sessions.questions",
    "acp_agent.sessions.admission",
    "acp_agent.sessions.routing",
    "acp_agent.sessions.queue",
    "acp_agent.wire.prompt",
    "acp_agent.backends.process",
    "acp_agent_claude.runtime",
    "keyring",  # only when a client negotiates auth status (its answer needs the keyring), or
    # once `initialize` is answered (in a worker thread) when no key is in the environment
)
"""Modules a Claude session needs and `initialize` must not load."""

NEVER_AT_START = ("importlib.metadata",)
"""Entry points are read by `acp_agent.startup.entry_points` (importlib.metadata only for unusual layouts)."""

DEADLINE_S = 60.0


def _site_dirs() -> list[Path]:
    return [Path(entry) for entry in site.getsitepackages() if Path(entry).is_dir()]


def _other_plugin(entry: Path) -> bool:
    """A distribution registering `acp_agent` entry points other than the core and Claude's."""
    if not entry.name.endswith(".dist-info"):
        return False
    points = entry / "entry_points.txt"
    if not points.is_file() or "[acp_agent]" not in points.read_text():
        return False
    return not entry.name.startswith(("acp_agent_claude-", "acp_agent_core-"))


def claude_only_path(tmp_path: Path) -> list[str]:
    """sys.path entries for an installation of only the core and the Claude provider."""
    kept = tmp_path / "site-packages"
    kept.mkdir()
    dropped = []
    for directory in _site_dirs():
        for entry in directory.iterdir():
            if _other_plugin(entry):
                dropped.append(entry.name)
            elif not (kept / entry.name).exists() and entry.suffix != ".pth":
                (kept / entry.name).symlink_to(entry)
    assert dropped, "expected other acp_agent plugins installed beside the Claude provider"
    # Editable installs keep the packages outside site-packages (their .pth files are not read).
    sources = {str(Path(module.__file__ or "").parent.parent) for module in (acp_agent, acp_agent_claude)}
    return [str(kept), *sorted(source for source in sources if Path(source) not in _site_dirs())]


def imported_before_initialize(tmp_path: Path) -> list[str]:
    """Module names `-X importtime` reported up to the moment the initialize answer was read."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    # A key in the environment: without one the agent loads the keyring's backend from a worker
    # thread as soon as `initialize` is answered, which this reading of stderr could catch.
    env.update(PYTHONPATH=os.pathsep.join(claude_only_path(tmp_path)), HOME=str(tmp_path),
               ACP_AGENT_LOG_FILE=str(tmp_path / "agent.log"), ANTHROPIC_API_KEY="sk-ant-test-000000")
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}
    process = subprocess.Popen(
        [sys.executable, "-S", "-X", "importtime", agent_executable(), "--provider", "claude"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    with reaped(process, DEADLINE_S):
        assert process.stdin is not None
        process.stdin.write((json.dumps(request) + "\n").encode())
        process.stdin.flush()
        assert process.stdout is not None
        frames = PipeFrames(process.stdout.fileno(), DEADLINE_S, importtime=True)
        answer = frames.next()  # the import report shares the pipe: what came before it, in order
        process.stdin.close()
        assert process.wait(timeout=DEADLINE_S) == 0
    assert answer.get("id") == 1 and "result" in answer, answer
    assert answer["result"]["agentInfo"]["name"] == "acp-agent-claude"
    return frames.imported


@pytest.mark.timeout(120)
def test_initialize_imports_nothing_only_sessions_need(tmp_path: Path) -> None:
    for name in SESSION_TIME + NEVER_AT_START:  # every name is a real module, so its absence below means something
        assert importlib.util.find_spec(name) is not None, name
    modules = imported_before_initialize(tmp_path)
    # The output was read: the agent, its wire types and the mandated libraries are there.
    for needed in ("acp_agent.agent", "acp_agent.wire.acp", "acp_agent.backends.plugins", "anyio", "cattrs", "pluggy"):
        assert needed in modules, needed
    loaded = sorted(set(SESSION_TIME + NEVER_AT_START) & set(modules))
    assert loaded == [], f"imported before the initialize answer: {loaded}"
