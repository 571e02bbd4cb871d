"""The plugin guide's example provider: registers the record only; the runtime is imported later."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from acp_agent.provider import (
    BackendStatus,
    ProviderRuntime,
    ProviderSpec,
    RuntimeCapabilities,
    RuntimeContext,
    executable_problem,
    hookimpl,
)


def check_backend() -> BackendStatus:
    """`acp-agent providers` asks this: can the model program run here? (No import of the runtime.)"""
    problem = executable_problem(sys.executable, {})
    return BackendStatus(problem is None, problem or f"echo model run by {sys.executable}")


@asynccontextmanager
async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
    from acp_agent_example.runtime import open_example_runtime  # the "vendor SDK": only once a session needs it

    async with open_example_runtime(context) as runtime:
        yield runtime


@hookimpl
def acp_agent_providers() -> list[ProviderSpec]:
    return [ProviderSpec(name="example", title="Example", open_runtime=open_runtime,
                         check_backend=check_backend, capabilities=RuntimeCapabilities(close_session=True))]
