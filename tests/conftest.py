"""Shared test configuration: every async test runs on anyio's asyncio backend."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _own_state_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Agents this run starts hold their sessions (`acp_agent.sessions.holds`) under a state directory of
    the run's own, never the user's, so runs side by side never see each other's holds."""
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved
