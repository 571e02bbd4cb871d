"""A company's rules for every provider, as a plugin that implements only the failure hooks.

The company's gateway answers a request it refuses with an error whose text carries
`CORP-GATEWAY-DENIED`. Whatever provider relayed it, that is an `access_denied` failure with the
company's own title, live and when a Claude transcript holding it is loaded. Anything without the
marker is left to the next plugin (in the end the provider's own classification).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from acp_agent import hookimpl
from acp_agent.backends.events import HistoryFailure
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.acp import agent_text

MARKER = "CORP-GATEWAY-DENIED"
NATIVE_KIND = "corpGatewayDenied"
TITLE = "The Corp gateway denied this request. Ask the IT service desk for access to this model."


def _marked(value: Any) -> bool:
    return MARKER in json.dumps(value, ensure_ascii=False, default=str)


def denied() -> FailureObservation:
    return FailureObservation(
        kind=FailureKind.ACCESS_DENIED, native_kind=NATIVE_KIND, title=TITLE, source="provider",
        outcome="failed", execution="possiblySubmitted", phase="running", retryable=False,
        native_data={"corpGateway": "denied"},
    )


@hookimpl
def acp_agent_classify_failure(provider: str, native: Mapping[str, Any]) -> FailureObservation | None:
    return denied() if _marked(native) else None


@hookimpl
def acp_agent_failure_title(native: Mapping[str, Any], kind: FailureKind) -> str | None:
    return TITLE if kind is FailureKind.ACCESS_DENIED and _marked(native) else None


@hookimpl
def acp_agent_recognise_history(provider: str, entry: Mapping[str, Any],
                                user_message_id: str | None) -> HistoryFailure | None:
    """A Claude transcript's assistant entry carrying the gateway's refusal (the CLI stores it as
    its `<synthetic>` error message), replayed as the live failure was."""
    message = entry.get("message")
    if provider != "claude" or entry.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    text = "".join(str(b.get("text") or "") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text")
    if MARKER not in text:
        return None
    return HistoryFailure(denied(), message_id=str(entry.get("uuid") or ""), user_message_id=user_message_id,
                          legacy_updates=(agent_text(text),))
