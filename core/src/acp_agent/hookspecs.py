"""The hook specifications: the whole surface a provider plugin implements.

Hooks are synchronous and return frozen records; async work lives in the runtimes those records
create, inside the core's task groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from acp_agent.provider import ProviderSpec

PROJECT = "acp_agent"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def acp_agent_providers() -> Sequence[ProviderSpec]:
    """Return the providers this plugin offers (usually one).

    Called once per process when the plugin manager is built; must not import a vendor SDK or
    start a process. Example::

        @hookimpl
        def acp_agent_providers():
            return [ProviderSpec(name="echo", title="Echo", open_runtime=open_echo_runtime)]
    """
    raise NotImplementedError


@hookspec
def acp_agent_secret_env_vars() -> Sequence[str]:
    """Name extra environment variables whose values must be redacted everywhere.

    The core already redacts every variable whose name ends in KEY, TOKEN, SECRET, PASSWORD or
    CREDENTIAL(S); use this for secrets with other names. Example::

        @hookimpl
        def acp_agent_secret_env_vars():
            return ["MY_VENDOR_SESSION_COOKIE"]
    """
    raise NotImplementedError
