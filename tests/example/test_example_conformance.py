"""The guide's example provider passes the runtime contract, through its real echo-model child."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from acp_agent.testing import KitBackend, RuntimeContract, Turn

pytestmark = pytest.mark.timeout(60)


class TestExampleRuntime(RuntimeContract):
    provider_name = "example"
    vendor_modules = ("acp_agent_example.runtime",)

    @asynccontextmanager
    async def open_backend(self, tmp_path: Path, turns: Sequence[Turn]) -> AsyncIterator[KitBackend]:
        # The echo model is told by the prompt: a text starting "hold " is held until cancelled.
        yield KitBackend(hold_prompt=lambda text: f"hold {text}")
