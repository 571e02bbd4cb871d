"""What registering the Claude provider offers without importing its CLI locator (issue 11)."""

from __future__ import annotations

import uuid

import acp_agent_claude
from acp_agent_claude import prestart


def test_find_cli_is_the_locators() -> None:
    assert acp_agent_claude.find_cli({prestart.CLI_ENV: "/opt/claude"}) == "/opt/claude"
    assert acp_agent_claude.find_cli({}) == prestart.find_cli({})


def test_the_spare_session_id_is_a_stable_version_4_uuid() -> None:
    first = prestart.spare_session_id()
    assert first is not None
    parsed = uuid.UUID(first)
    assert (str(parsed), parsed.version, parsed.variant) == (first, 4, uuid.RFC_4122)
    assert prestart.spare_session_id() == first


def test_every_process_gets_its_own_spare_session_id() -> None:
    import subprocess
    import sys

    code = "from acp_agent_claude.prestart import spare_session_id; print(spare_session_id())"
    ids = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
           for _ in range(3)}
    assert len(ids) == 3 and prestart.spare_session_id() not in ids
