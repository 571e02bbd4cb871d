"""The Codex provider passes the conformance kit's runtime contract.

Real `codex app-server` against the fake Responses API: its `echo` step answers with the prompt;
the held turn streams its echo slowly (for 30 s), so only an interrupted turn stops in time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from acp_agent.testing import KitBackend, RuntimeContract, Turn
from tests.codex.e2e_support import HELD, codex_env, wait_for_turn_requests, write_codex_home
from tests.codex.test_classify import real_error_cases
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.real_backend, pytest.mark.timeout(120)]

STEPS = {"echo": {"echo": True}, "hold": HELD}


class TestCodexRuntime(RuntimeContract):
    provider_name = "codex"
    vendor_modules = ("acp_agent_codex.runtime",)
    timeout_s = 90
    hook_samples = tuple(native for native, _ in real_error_cases())  # every error app-server sent

    @asynccontextmanager
    async def open_backend(self, tmp_path: Path, turns: Sequence[Turn]) -> AsyncIterator[KitBackend]:
        held = turns.index("hold") + 1 if "hold" in turns else 0
        with FakeResponsesAPI([STEPS[turn] for turn in turns]) as api:
            home = write_codex_home(api, tmp_path)
            yield KitBackend(environ=codex_env(home), turn_held=lambda: wait_for_turn_requests(api, held))
