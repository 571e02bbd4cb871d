"""The Muse provider passes the conformance kit's runtime contract, against the fake MSP host.

The host's `echo` turn answers with the prompt; a prompt starting `turn:wait` is held until
`turn/cancel` (the kit then waits for the held turn's first update).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from acp_agent.testing import KitBackend, RuntimeContract, Turn
from tests.muse.e2e_support import muse_env

pytestmark = pytest.mark.timeout(60)


class TestMuseRuntime(RuntimeContract):
    provider_name = "muse"
    vendor_modules = ("acp_agent_muse.runtime",)

    @asynccontextmanager
    async def open_backend(self, tmp_path: Path, turns: Sequence[Turn]) -> AsyncIterator[KitBackend]:
        yield KitBackend(environ=muse_env(tmp_path, turn="echo"), hold_prompt=lambda text: f"turn:wait {text}")
