"""The Claude provider passes the conformance kit's runtime contract.

Real Claude Code CLI against the fake Anthropic API: its `echo` step answers with the prompt,
`hang_after_events` holds the answer after a few stream events until `release`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from acp_agent.testing import KitBackend, RuntimeContract, Turn
from tests.claude.e2e_support import claude_env, wait_for_requests
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.real_backend, pytest.mark.timeout(150)]

STEPS = {"echo": {"echo": True}, "hold": {"hang_after_events": 4, "echo": True}}


class TestClaudeRuntime(RuntimeContract):
    provider_name = "claude"
    vendor_modules = ("claude_agent_sdk", "acp_agent_claude.runtime")
    timeout_s = 120

    @asynccontextmanager
    async def open_backend(self, tmp_path: Path, turns: Sequence[Turn]) -> AsyncIterator[KitBackend]:
        held = turns.index("hold") + 1 if "hold" in turns else 0
        with FakeAnthropicAPI([STEPS[turn] for turn in turns]) as api:
            yield KitBackend(environ=claude_env(api, tmp_path),
                             turn_held=lambda: wait_for_requests(api, held), release=api.release)
