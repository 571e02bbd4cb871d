"""The Claude CLI driven directly over stream-json: no claude-agent-sdk on the way to a session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent_claude.locate import bundled_cli
from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])

SHADOW = '''import os
with open(os.environ["IMPORT_MARKER"], "a") as marker:
    marker.write(__name__ + "\\n")
raise ImportError("imported on the way to a session")
'''


def shadow_packages(tmp_path: Path) -> tuple[Path, Path]:
    """Packages that take the place of claude_agent_sdk and mcp and record being imported."""
    root = tmp_path / "shadow"
    for name in ("claude_agent_sdk", "mcp"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(SHADOW)
    return root, tmp_path / "imported.txt"


@BOTH
async def test_a_session_and_its_turns_never_import_the_sdk(tmp_path: Path, capable: bool) -> None:
    """session/new, a prompt with a permission request and a mode change run with the SDK (and
    `mcp`, which it imports) made unimportable: none of them needs it."""
    cli = bundled_cli()
    assert cli is not None
    root, marker = shadow_packages(tmp_path)
    env = {"PYTHONPATH": str(root), "IMPORT_MARKER": str(marker), "ACP_AGENT_CLAUDE_CLI": cli}
    script = [{"tool_use": {"name": "Bash", "input": {"command": "touch allowed.txt", "description": "Create a file"}}},
              {"reply": "Done without the SDK."}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable, extra=env) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Run it"))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="acceptEdits")
            texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts).endswith("Done without the SDK.")
    assert agent.client.permission_requests, "the CLI's can_use_tool request reached the client"
    assert (tmp_path / "allowed.txt").exists()
    assert not marker.exists(), marker.read_text()
    assert agent.frames.problems == []


def test_the_bundled_cli_is_found_without_importing_the_sdk() -> None:
    code = ("import sys; from acp_agent_claude.locate import find_cli; path = find_cli({}); "
            "print(path); print('claude_agent_sdk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0].endswith("/claude_agent_sdk/_bundled/claude") and Path(out[0]).is_file()
    assert out[1] == "False"


@BOTH
async def test_a_long_streamed_answer_arrives_whole_and_in_order(tmp_path: Path, capable: bool) -> None:
    """2,000 deltas, read from the CLI in bursts and handed over without a pass per line: every
    chunk arrives, once, in order, as the API streamed it."""
    answer = " ".join(f"w{i}" for i in range(2000))
    with FakeAnthropicAPI([{"reply": answer}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Go"))
            texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert len(texts) == 2000
    assert "".join(texts) == answer
    assert agent.frames.problems == []
