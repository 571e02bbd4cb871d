"""The agent's exit stops a settled Claude CLI with SIGTERM and, a moment later, SIGKILL: the
plan, not a failure, so it says nothing at warning level (the real CLI takes longer than that
moment to act on SIGTERM, and the warning reached the editor's log on every exit)."""

from __future__ import annotations

import logging
import sys
import time

import anyio
import pytest

from acp_agent_claude.clis import SETTLED_S, LiveCLIs
from acp_agent_claude.session import ClaudeSession
from acp_agent_claude.transport import ClaudeCLI
from tests.claude.test_claude_transport import no_request

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

DEAF = "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); signal.pause()"
"""A CLI that does not act on SIGTERM within the exit's moment (nor ever)."""


async def deaf_cli() -> ClaudeCLI:
    process = await anyio.open_process([sys.executable, "-c", DEAF], start_new_session=True)
    assert process.stdout is not None
    said = b""
    try:
        with anyio.fail_after(10):
            while not said.endswith(b"\n"):  # once it is said, SIGTERM is ignored
                said += await process.stdout.receive()
    except BaseException:
        process.kill()
        await process.wait()
        raise
    assert said == b"ready\n"
    return ClaudeCLI(process, no_request)


@pytest.mark.parametrize("settled", [True, False], ids=["settled", "just-busy"])
async def test_a_cli_killed_as_the_exit_planned_is_no_warning(caplog: pytest.LogCaptureFixture,
                                                              settled: bool) -> None:
    cli = await deaf_cli()
    ended = time.monotonic() - SETTLED_S - 1 if settled else time.monotonic()
    session = ClaudeSession("s", "/", cli=cli, prompted=True, last_used=ended)
    try:
        with caplog.at_level(logging.DEBUG, logger="acp_agent_claude"):
            if settled:
                await LiveCLIs.stop_at_exit(session, cli)
            else:  # the orderly stop, shortened: a CLI deaf to EOF and SIGTERM past it is news
                await cli.stop(grace_s=0.01, term_s=0.01)
    finally:
        if cli.process.returncode is None:
            cli.process.kill()
            await cli.process.wait()
    assert cli.process.returncode == -9
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    killed = [record.getMessage() for record in caplog.records if "did not stop in time" in record.getMessage()]
    assert len(killed) == 1
    assert warnings == ([] if settled else killed)
