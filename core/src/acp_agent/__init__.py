"""acp-agent: a provider-neutral Agent Client Protocol host.

Plugins import `hookimpl` from here and register providers through the `acp_agent_providers` hook.
Importing this package is cheap: no plugin manager, no vendor SDK, no I/O; `hookimpl` (and with
it pluggy) is loaded on first use, so the command line can start a backend before that import
(`acp_agent.startup.prestart`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the command line imports this before its spawn
if TYPE_CHECKING:
    from typing import Any

    from acp_agent.backends.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        from acp_agent.backends.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'acp_agent' has no attribute {name!r}")
