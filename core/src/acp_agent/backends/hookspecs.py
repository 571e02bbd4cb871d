"""The hook specifications: the whole surface a provider plugin implements.

Hooks are synchronous and return frozen records; async work lives in the runtimes those records
create, inside the core's task groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from acp_agent.backends.contract import ProviderSpec
    from acp_agent.backends.events import HistoryFailure
    from acp_agent.failures.protocol import FailureKind, FailureObservation

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


@hookspec(firstresult=True)
def acp_agent_classify_failure(provider: str, native: Mapping[str, Any]) -> FailureObservation | None:
    """Say which failure a backend's failure-bearing event reports; stops at the first non-None result.

    `provider` names the provider whose backend emitted `native`, the event as plain JSON exactly
    as the backend wrote it (Claude: `{"assistant": {...}, "result": {...}}`, the CLI's stream-json
    lines; Codex: the `error` notification's params or the failed `turn/completed` params; Muse: the
    failed turn's `turn/completed` params). Return None to let the next plugin (in the end the
    provider's own, registered `trylast`) answer. Example::

        @hookimpl
        def acp_agent_classify_failure(provider, native):
            if "CORP-GATEWAY-DENIED" in json.dumps(native):
                return FailureObservation(FailureKind.ACCESS_DENIED, "corpGatewayDenied")
            return None
    """
    raise NotImplementedError


@hookspec(firstresult=True)
def acp_agent_failure_title(provider: str, native: Mapping[str, Any], kind: FailureKind) -> str | None:
    """The user-facing text for the failure `native` reports; stops at the first non-None result.

    Called after `acp_agent_classify_failure` with the kind it chose; the answer replaces the
    observation's title. None keeps it (and with no title the core uses the kind's fallback).
    Example::

        @hookimpl
        def acp_agent_failure_title(provider, native, kind):
            if kind is FailureKind.ACCESS_DENIED and "CORP-GATEWAY-DENIED" in json.dumps(native):
                return "The company gateway denied this request."
            return None
    """
    raise NotImplementedError


@hookspec(firstresult=True)
def acp_agent_recognise_history(provider: str, entry: Mapping[str, Any],
                                user_message_id: str | None) -> HistoryFailure | None:
    """Recognise one stored transcript entry as a failure to replay; stops at the first non-None result.

    `entry` is one stored entry as plain JSON (Claude: a transcript line with `type`, `uuid`,
    `sessionId` and the API `message`); `user_message_id` the id of the preceding user message,
    which is the live turn's id, so the replayed record keeps the live incident id. Example::

        @hookimpl
        def acp_agent_recognise_history(provider, entry, user_message_id):
            text = json.dumps(entry.get("message"))
            if entry.get("type") != "assistant" or "CORP-GATEWAY-DENIED" not in text:
                return None
            observation = FailureObservation(FailureKind.ACCESS_DENIED, "corpGatewayDenied")
            return HistoryFailure(observation, str(entry["uuid"]), user_message_id)
    """
    raise NotImplementedError
