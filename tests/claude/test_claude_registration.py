"""What registering the Claude provider offers without importing its CLI locator (issue 11)."""

from __future__ import annotations

import uuid

import acp_agent_claude
from acp_agent_claude import prestart


def test_find_cli_is_the_locators() -> None:
    assert acp_agent_claude.find_cli({prestart.CLI_ENV: "/opt/claude"}) == "/opt/claude"
    assert acp_agent_claude.find_cli({}) == prestart.find_cli({})


def test_every_spare_gets_a_random_version_4_session_id_it_is_tagged_with() -> None:
    environ = {prestart.CLI_ENV: "/usr/bin/claude-standin"}
    first, second = prestart.prestart(environ), prestart.prestart(environ)
    assert first is not None and second is not None
    for argv, _, greeting, session_id in (first, second):
        parsed = uuid.UUID(session_id)
        assert (str(parsed), parsed.version, parsed.variant) == (session_id, 4, uuid.RFC_4122)
        assert f"--session-id={session_id}" in argv and greeting == b""
    assert first[3] != second[3]
    rebuilt = prestart.spare(environ, first[3])  # what the runtime claims the spare with
    assert rebuilt is not None and rebuilt[1] == first[0]
