"""`acp-agent` without `--provider`: every installed provider whose backend can run, one front.

Each provider gets the agent `--provider NAME` would run (its own deadlines, clock and sign-in;
the redactor, the keyring and the failure hooks are shared). The order is the providers' names
in alphabetical order (`acp-agent providers`), which is also the order a new session's default
is looked for in when `--default-provider` does not name one.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_agent.backends.plugins import ProviderRegistry
    from acp_agent.failures.redaction import Redactor
    from acp_agent.federation.front import Front

log = logging.getLogger(__name__)


def every_provider_front(registry: ProviderRegistry, args: argparse.Namespace, redactor: Redactor) -> Front | int:
    """The front of every usable provider, for the command line to serve; 2 when none can
    serve, or on a bad option."""
    from acp_agent.backends.phases import DeadlineConfigError, Deadlines, PhaseClock

    for name in registry.secret_env_vars:
        redactor.add(os.environ.get(name))
    usable: list[str] = []
    unusable: list[str] = []
    for name in registry.names():
        loaded = registry.providers[name]
        try:
            status = loaded.spec.check_backend()
        except Exception as exc:  # a plugin's check is its own code: it may fail
            unusable.append(f"{name} ({type(exc).__name__}: {exc})")
            continue
        (usable if status.usable else unusable).append(name if status.usable else f"{name} ({status.detail})")
    for problem in unusable:
        log.warning("not served, its backend cannot run: %s", problem)
    if not usable:
        print("acp-agent: no installed provider can run here (see `acp-agent providers`)"
              + "".join(f"\n  {problem}" for problem in unusable), file=sys.stderr)
        return 2
    default = args.default_provider
    if default is not None and default not in usable:
        print(f"acp-agent: --default-provider {default!r} is not one of the providers served here: "
              + ", ".join(usable), file=sys.stderr)
        return 2
    from acp_agent.agent import Agent, AgentSettings
    from acp_agent.failures.auth_status import KeyringStore
    from acp_agent.terminal_auth import agent_command

    keyring = KeyringStore()
    agents = {}
    for name in usable:
        loaded = registry.providers[name]
        try:
            deadlines = Deadlines.from_environment(os.environ, loaded.spec.deadline_aliases)
        except DeadlineConfigError as exc:
            print(f"acp-agent: {exc}", file=sys.stderr)
            return 2
        agents[name] = Agent(AgentSettings(
            provider=loaded.spec, environ=dict(os.environ), clock=PhaseClock(deadlines, loaded.spec.title),
            redact=redactor, keyring=keyring, agent_version=loaded.version, hooks=registry.hooks,
            agent_command=agent_command()))
    from acp_agent import __version__
    from acp_agent.federation.directory import KnownModels, SessionDirectory
    from acp_agent.federation.front import Front
    from acp_agent.sessions.holds import state_directory

    state = state_directory(os.environ)
    return Front(agents, default=default, directory=SessionDirectory(state), models=KnownModels(state),
                 agent_version=__version__)
