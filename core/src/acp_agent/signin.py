"""Sign-in: which credentials the provider has, the auth methods offered, and the vendor's login state.

Kept apart from `Agent` so that the agent only routes `authenticate`/`logout`: what counts as
signed in, the vendor CLI's status and logout commands and the keyring live here, while the
agent keeps what those methods do to sessions and the backend (ending them, replacing it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from acp_agent import terminal_auth
from acp_agent.backends.contract import ProviderSpec
from acp_agent.failures.auth_status import (
    CredentialState,
    KeyringStore,
    KeyringUnavailable,
    auth_status_key,
    configuration_status,
    in_keyring_thread,
    keyring_consulted,
    read_credentials,
)
from acp_agent.failures.redaction import Redactor
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET, Unset, clip
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

log = logging.getLogger(__name__)


class SignIn:
    """The provider's sign-in state for one connection."""

    def __init__(self, provider: ProviderSpec, environ: Mapping[str, str], keyring: KeyringStore | None,
                 redact: Redactor, agent_command: tuple[str, ...], *,
                 backend_environ: Callable[[], Awaitable[dict[str, str]]], logout_budget_s: float) -> None:
        self.provider = provider
        self.environ = environ
        self.keyring = keyring
        self.redact = redact
        self.agent_command = agent_command
        self.backend_environ = backend_environ
        """The environment a vendor command runs in: the backend's, with a keyring credential."""
        self.logout_budget_s = logout_budget_s
        self.client_capabilities = acp.ClientCapabilities()
        """What the client said at `initialize`: which auth methods it can run."""

    async def credentials(self) -> CredentialState:
        """Which credentials are configured (the keyring asked off the event loop, bounded)."""
        return await read_credentials(self.provider.name, self.provider.credentials, self.environ, self.keyring)

    def keyring_needed(self) -> bool:
        """Whether resolving the credentials asks the keyring (no key in the environment)."""
        return keyring_consulted(self.provider.credentials, self.environ, self.keyring)

    async def load_keyring(self) -> None:
        """Load the keyring's backend now (`KeyringStore.load`, from its own thread, bounded)."""
        if self.keyring is not None:
            try:
                await in_keyring_thread(self.keyring, self.keyring.load)
            except KeyringUnavailable as exc:
                log.info("keyring not loaded: %s", exc)

    async def auth_meta(self, negotiated: bool) -> dict[str, Any] | Unset:
        """The auth status a response carries, for a client that negotiated it."""
        if not negotiated:
            return UNSET
        return {auth_status_key(self.provider.name): configuration_status(await self.credentials())}

    def auth_methods(self) -> list[acp.AuthMethod]:
        return terminal_auth.auth_methods(self.provider, self.client_capabilities, self.environ,
                                          self.agent_command)

    async def authenticate(self, method_id: str) -> None:
        """Raise unless `method_id` is offered and the provider is now signed in by it."""
        known = {method.id for method in self.auth_methods()}
        if method_id not in known:
            raise RpcError(INVALID_PARAMS, f"Unknown auth method: {clip(method_id)}", {"field": "methodId"})
        spec = self.provider.credentials
        login = next((login for login in spec.terminal_logins if login.id == method_id), None)
        if login is not None:
            await self._check_vendor_sign_in(login.name, login.id)
        elif not (await self.credentials()).configured:
            variables = " or ".join(spec.env_vars) if spec.env_vars else "the provider's credentials"
            hint = spec.login_hint or f"run `acp-agent auth set --provider {self.provider.name}`"
            raise RpcError(-32000, f"No {self.provider.title} credentials are configured: set {variables}, or {hint}.",
                           {"provider": self.provider.name})

    async def _check_vendor_sign_in(self, name: str, method_id: str) -> None:
        """After a terminal sign-in: ask the vendor CLI's status command, else the credential evidence."""
        spec = self.provider.credentials
        program = spec.vendor_cli(self.environ) if spec.vendor_cli and spec.status_args else None
        signed_in = None
        if program:
            signed_in = await terminal_auth.vendor_status(program, spec.status_args, await self.backend_environ())
        if signed_in is None:
            signed_in = (await self.credentials()).configured
        if not signed_in:
            raise RpcError(-32000, f"Not signed in to {self.provider.title}: the sign-in ({name}) did not "
                           "complete. Run it again in the terminal.",
                           {"provider": self.provider.name, "methodId": method_id})

    async def logout(self) -> None:
        """The vendor's logout command, then the stored credential leaves the keyring."""
        await self._run_logout_command()
        keyring = self.keyring
        if keyring is not None:
            name = self.provider.name
            try:
                secret = await in_keyring_thread(keyring, lambda: keyring.get(name))
                await in_keyring_thread(keyring, lambda: keyring.delete(name))
                self.redact.add(secret)
            except KeyringUnavailable as exc:
                log.info("logout could not reach the keyring: %s", exc)

    async def _run_logout_command(self) -> None:
        """The vendor's own logout (e.g. `muse logout`), bounded; its output only reaches the log."""
        spec = self.provider.credentials
        program = spec.vendor_cli(self.environ) if spec.vendor_cli and spec.logout_args else None
        if not program:
            return
        from acp_agent.backends.process import parent_death_argv  # not needed to answer `initialize`

        command = (program, *spec.logout_args)
        try:
            with anyio.fail_after(self.logout_budget_s):
                result = await anyio.run_process(parent_death_argv(command, self.environ),
                                                 env=dict(self.environ), check=False)
            log.info("%s exited with %d", command[0], result.returncode)
        except (OSError, TimeoutError) as exc:
            log.warning("%s could not be run: %s", command[0], type(exc).__name__)


__all__ = ["SignIn"]
