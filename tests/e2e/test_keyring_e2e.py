"""A keyring that never answers, through the real entry point: the agent answers after the
keyring's deadline as if there were no keyring, does not wait for it again while it stays silent,
and exits at once when its input ends (the keyring's thread is a daemon: the interpreter does not
wait for it)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from acp_agent.failures.auth_status import KEYRING_DEADLINE_S
from tests.e2e.raw import raw_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]

REPOSITORY = Path(__file__).resolve().parents[2]


async def test_a_keyring_that_never_answers_neither_hangs_the_agent_nor_its_exit(tmp_path: Path) -> None:
    env = {"PYTHON_KEYRING_BACKEND": "tests.fakes.stuck_keyring.StuckKeyring", "SCRIPTED_API_KEY": "",
           "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    async with raw_agent("scripted", tmp_path, env) as agent:
        # Auth status at initialize reads the credentials, so the keyring (no key in the environment).
        answer = await agent.ask("initialize", {
            "protocolVersion": 1, "clientCapabilities": {"_meta": {"scripted/authStatus": 1}}},
            deadline_s=KEYRING_DEADLINE_S + 20)
        assert answer["result"]["_meta"]["scripted/authStatus"]["source"] == "none"
        # The keyring is still silent: a later read does not wait for it again (session/new reads
        # the credentials for the backend's environment).
        opened = await agent.ask("session/new", {"cwd": str(tmp_path), "mcpServers": []}, deadline_s=5)
        assert "sessionId" in opened["result"]
        assert agent.process.stdin is not None
        await agent.process.stdin.aclose()
        with anyio.fail_after(10):  # not held by the thread still waiting for the keyring
            await agent.process.wait()
        assert agent.process.returncode == 0
    log = (tmp_path / "raw-scripted.log").read_text()
    assert f"the keyring did not answer within {KEYRING_DEADLINE_S:g} s" in log
