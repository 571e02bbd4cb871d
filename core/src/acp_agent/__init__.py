"""acp-agent: a provider-neutral Agent Client Protocol host.

Plugins import `hookimpl` from here and register providers through the `acp_agent_providers` hook.
Importing this package is cheap: no plugin manager, no vendor SDK, no I/O.
"""

from acp_agent.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]
