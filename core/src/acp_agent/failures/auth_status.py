"""Credential configuration evidence, the keyring entry, and per-session auth observations (DESIGN §6).

The adapter never reads a vendor's stored credential file: existence and size are the evidence.
A keyring credential reaches the backend only through its environment. `authenticate` consults
configuration only; verification comes from what real turns observed.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

import anyio
from attrs import define, field

from acp_agent.backends.contract import CredentialSpec
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.records import frozen

log = logging.getLogger(__name__)
T = TypeVar("T")

KEYRING_SERVICE = "acp-agent"
KEYRING_DEADLINE_S: Final = 10.0
"""How long the agent waits for the keyring (a D-Bus service: a locked keyring may wait for a
person to unlock it) before it goes on without it, as if it had no keyring."""
Source = Literal["environment", "keyring", "stored", "none", "clientProvider"]
Verification = Literal["unknown", "rejected", "acceptedForTurn"]


class KeyringUnavailable(Exception):
    """No usable keyring backend on this machine (a headless server, say)."""


class KeyringStore:
    """The `acp-agent` keyring service; every failure becomes `KeyringUnavailable`, never a traceback."""

    def __init__(self, backend: Any = None) -> None:
        self._backend = backend
        self._loading = threading.Lock()  # read from threads: one finds the backend at a time
        self.overdue = 0
        """Calls past their deadline that have not returned (`in_keyring_thread`): while any is
        outstanding the keyring is taken as unavailable at once instead of waited for again."""

    def _keyring(self) -> Any:
        if self._backend is not None:
            return self._backend
        with self._loading:
            return self._backend if self._backend is not None else self._load()

    def load(self) -> None:
        """Import keyring and find its backend now (slow: it probes its backends), so that the first
        read only asks the backend; KeyringUnavailable if there is none."""
        self._keyring()

    def _load(self) -> Any:
        try:
            import keyring
            import keyring.backends.fail
        except Exception as exc:  # keyring missing or broken: same as no backend
            raise KeyringUnavailable(f"the keyring library cannot be loaded ({type(exc).__name__})") from None
        backend = keyring.get_keyring()
        chainer = getattr(keyring.backends, "chainer", None)
        if isinstance(backend, keyring.backends.fail.Keyring) or (
            chainer is not None and isinstance(backend, chainer.ChainerBackend) and not backend.backends
        ):
            raise KeyringUnavailable("no keyring backend is available on this machine")
        self._backend = backend
        return backend

    def backend_name(self) -> str:
        """The backend's class, as `PYTHON_KEYRING_BACKEND` names it (for messages; never a secret)."""
        backend = type(self._keyring())
        return f"{backend.__module__}.{backend.__qualname__}"

    def get(self, provider: str) -> str | None:
        try:
            value = self._keyring().get_password(KEYRING_SERVICE, provider)
        except KeyringUnavailable:
            raise
        except Exception as exc:
            raise KeyringUnavailable(f"the keyring could not be read ({type(exc).__name__})") from None
        return value if isinstance(value, str) and value else None

    def set(self, provider: str, secret: str) -> None:
        try:
            self._keyring().set_password(KEYRING_SERVICE, provider, secret)
        except KeyringUnavailable:
            raise
        except Exception as exc:
            raise KeyringUnavailable(f"the keyring could not be written ({type(exc).__name__})") from None

    def delete(self, provider: str) -> bool:
        try:
            backend = self._keyring()
            if backend.get_password(KEYRING_SERVICE, provider) is None:
                return False
            backend.delete_password(KEYRING_SERVICE, provider)
            return True
        except KeyringUnavailable:
            raise
        except Exception as exc:
            raise KeyringUnavailable(f"the keyring entry could not be deleted ({type(exc).__name__})") from None


@frozen
class CredentialState:
    """Configuration evidence; `secret` is the keyring value to hand to the backend (never shown)."""

    configured: bool
    source: Source
    secret: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"configured": self.configured, "source": self.source}


def stored_file_present(path: str, min_bytes: int) -> bool:
    """A stored credential counts when the file exists and is larger than `min_bytes`; never read."""
    try:
        return os.stat(path).st_size > min_bytes
    except OSError:
        return False


def resolve_credentials(
    provider: str,
    spec: CredentialSpec,
    environ: Mapping[str, str],
    store: KeyringStore | None,
) -> CredentialState:
    """First source present, in the order environment, keyring, stored file, none."""
    for name in spec.env_vars:
        if environ.get(name):
            return CredentialState(True, "environment")
    if spec.keyring_env_var and store is not None:
        try:
            secret = store.get(provider)
        except KeyringUnavailable as exc:
            log.info("keyring not consulted: %s", exc)
            secret = None
        if secret:
            return CredentialState(True, "keyring", secret)
    for path in spec.stored_files(environ):
        if stored_file_present(path, spec.stored_min_bytes):
            return CredentialState(True, "stored")
    return CredentialState(False, "none")


def keyring_consulted(spec: CredentialSpec, environ: Mapping[str, str], store: KeyringStore | None) -> bool:
    """Whether resolving the credentials would ask the keyring (no key in the environment)."""
    return (store is not None and bool(spec.keyring_env_var)
            and not any(environ.get(name) for name in spec.env_vars))


async def read_credentials(provider: str, spec: CredentialSpec, environ: Mapping[str, str],
                           store: KeyringStore | None) -> CredentialState:
    """`resolve_credentials` without blocking the event loop: the keyring is asked from a thread
    of its own (its backends load slowly and talk to another process), for at most
    `KEYRING_DEADLINE_S`; after that the agent goes on as if there were no keyring (logged)."""
    if not keyring_consulted(spec, environ, store):
        return resolve_credentials(provider, spec, environ, store)
    assert store is not None  # keyring_consulted
    try:
        return await in_keyring_thread(store, lambda: resolve_credentials(provider, spec, environ, store))
    except KeyringUnavailable as exc:
        log.warning("%s; going on without it", exc)
        return resolve_credentials(provider, spec, environ, None)


async def in_keyring_thread(store: KeyringStore, call: Callable[[], T]) -> T:
    """`call` (work on `store`) from a daemon thread, for at most `KEYRING_DEADLINE_S`
    (KeyringUnavailable after that, and at once while an earlier call is still overdue). A daemon
    thread, not one of anyio's workers: those are joined when the process exits, and a keyring
    that never answers must not keep the agent from exiting; past the deadline the thread is left
    to finish, or not, on its own."""
    if store.overdue:
        raise KeyringUnavailable("the keyring has not answered an earlier request yet")
    from anyio import from_thread, lowlevel  # only where the keyring is asked: not on the way to `initialize`

    deadline_s = KEYRING_DEADLINE_S
    token = lowlevel.current_token()
    finished = anyio.Event()
    outcome: list[tuple[bool, Any]] = []
    late: list[bool] = []  # set once this call is past its deadline

    def returned() -> None:  # on the event loop's thread
        finished.set()
        if late:
            store.overdue -= 1

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller below
            outcome.append((False, exc))
        try:
            from_thread.run_sync(returned, token=token)
        except Exception:  # the event loop has finished: nobody waits for this any more
            pass

    threading.Thread(target=run, name="acp-agent keyring", daemon=True).start()
    with anyio.move_on_after(deadline_s):
        await finished.wait()
    if not finished.is_set():
        late.append(True)
        store.overdue += 1
        raise KeyringUnavailable(f"the keyring did not answer within {deadline_s:g} s")
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    result: T = value
    return result


def with_keyring_credential(environ: Mapping[str, str], state: CredentialState,
                            spec: CredentialSpec) -> dict[str, str]:
    """The backend's environment: `environ`, plus the keyring key under the provider's variable."""
    result = dict(environ)
    if state.source == "keyring" and state.secret and spec.keyring_env_var:
        result[spec.keyring_env_var] = state.secret
    return result


@define
class AuthObservation:
    """One session's verification evidence, from the turns it ran."""

    verification: Verification = "unknown"
    latest_failure: dict[str, Any] | None = None

    def turn_succeeded(self) -> None:
        self.verification = "acceptedForTurn"
        self.latest_failure = None

    def turn_failed(self, observation: FailureObservation, summary: dict[str, Any]) -> None:
        if observation.kind is FailureKind.AUTH_REQUIRED:
            self.verification = "rejected"
        self.latest_failure = summary

    def reset(self) -> None:
        self.verification = "unknown"
        self.latest_failure = None


def auth_status_key(provider: str) -> str:
    return f"{provider}/authStatus"


def auth_status_negotiated(client_meta: Any, provider: str) -> bool:
    return isinstance(client_meta, Mapping) and client_meta.get(auth_status_key(provider)) == 1 and not isinstance(
        client_meta.get(auth_status_key(provider)), bool
    )


def configuration_status(state: CredentialState) -> dict[str, Any]:
    """The initialize/authenticate/logout shape."""
    return {**state.to_wire(), "verification": "unknown", "identity": "unknown"}


def turn_status(state: CredentialState, observation: AuthObservation) -> dict[str, Any]:
    """The per-turn `session_info_update` shape."""
    return {
        **state.to_wire(),
        "verification": observation.verification,
        "identity": "unknown",
        "latestFailure": observation.latest_failure,
    }


ACCOUNT_LABELS: Final[Mapping[Source, str]] = {
    "environment": "API key from the environment",
    "keyring": "API key from the keyring",
    "stored": "Signed-in account",
    "clientProvider": "Credentials from the client",
}
"""`auth/status` account labels, by where the credentials come from."""


def acp_auth_status(state: CredentialState, rejected: bool) -> dict[str, Any]:
    """ACP's `auth/status` for the agent's own credentials: `authenticated` when some are
    configured and the backend has not refused them in the latest turn (configured is not
    proven valid, as the schema says), else `unauthenticated`; the configured credential is the
    one account, active."""
    if not state.configured:
        return {"state": "unauthenticated"}
    label = ACCOUNT_LABELS.get(state.source, "Configured credentials")
    return {"state": "unauthenticated" if rejected else "authenticated",
            "accounts": [{"label": label, "active": True}]}


def air_auth_status(state: CredentialState, title: str, env_vars: Sequence[str],
                    environ: Mapping[str, str]) -> dict[str, Any]:
    """The reference adapters' `_auth/status_update` `authStatus` for the agent's own credentials:
    `{kind: none|api_key|account, label, detail?}` (the variable's name, never its value)."""
    if not state.configured:
        return {"kind": "none", "label": "Not logged in"}
    if state.source == "stored":
        return {"kind": "account", "label": f"{title} account"}
    status: dict[str, Any] = {"kind": "api_key", "label": f"{title} API key"}
    detail = next((name for name in env_vars if environ.get(name)), None) if state.source == "environment" else (
        "keyring" if state.source == "keyring" else None)
    if detail:
        status["detail"] = detail
    return status


@define
class AuthStatusFeed:
    """What the client was told of the agent's sign-in through `auth/status`: a client that has
    asked once gets `auth/status_update` whenever the answer would differ (a sign-in or out, a
    turn the backend refused for its credentials, a turn after that it accepted); a client that
    never asked gets nothing."""

    rejected: bool = False
    """The latest turn ended for want of valid credentials (`auth_required`)."""
    last: dict[str, Any] | None = None
    """What the client was last told; None until it asks."""
    title: str = ""
    env_vars: Sequence[str] = ()
    environ: Mapping[str, str] = field(factory=dict)
    air: bool = False
    """The client is JetBrains AIR (the failure extension): it is pushed `_auth/status_update`,
    as the reference adapters push it, whenever that changes."""
    air_last: dict[str, Any] | None = None

    def answer(self, state: CredentialState) -> dict[str, Any]:
        """The `auth/status` answer; from now on the client is kept up to date."""
        self.last = acp_auth_status(state, self.rejected)
        return self.last

    def turn_ended(self, observation: AuthObservation) -> None:
        if observation.verification != "unknown":
            self.rejected = observation.verification == "rejected"

    def signed_in_or_out(self) -> None:
        self.rejected = False

    def air_update(self, state: CredentialState) -> dict[str, Any] | None:
        """The `_auth/status_update` params to push now, or None (not AIR, or nothing changed)."""
        if not self.air:
            return None
        now = air_auth_status(state, self.title, self.env_vars, self.environ)
        if now == self.air_last:
            return None
        self.air_last = now
        return {"authStatus": now}

    def update(self, state: CredentialState) -> dict[str, Any] | None:
        """The `auth/status_update` to send now, or None (the client never asked, or nothing changed)."""
        if self.last is None:
            return None
        now = acp_auth_status(state, self.rejected)
        if now == self.last:
            return None
        self.last = now
        return now
