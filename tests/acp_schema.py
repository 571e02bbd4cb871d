"""Frames checked against the ACP JSON schema that `@agentclientprotocol/sdk` publishes
(tests/schema): a request's params, a response's result and a notification's params, found by
the method's `x-method` and `x-side` in the schema."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import jsonschema

SCHEMA_DIR = Path(__file__).parent / "schema" / "acp-sdk-2.4.0"
Version = Literal["v1", "v2"]
Variant = Literal["stable", "unstable"]


@functools.cache
def _schema(version: Version, variant: Variant) -> dict[str, Any]:
    name = "schema.json" if variant == "stable" else "schema.unstable.json"
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / version / name).read_text())
    return loaded


@functools.cache
def _definition(version: Version, variant: Variant, method: str, side: str, kind: str) -> str:
    """The name of the definition of `method`'s `kind` (Request, Response, Notification) that
    `side` (agent: handled by the agent; client: handled by the client) serves."""
    found = [name for name, body in _schema(version, variant)["$defs"].items()
             if body.get("x-method") == method and body.get("x-side") == side and name.endswith(kind)]
    if len(found) != 1:
        raise KeyError(f"{version} {variant}: no single {kind} for {method!r} ({side}): {found}")
    return found[0]


@functools.cache
def _validator(version: Version, variant: Variant, definition: str) -> jsonschema.Draft202012Validator:
    schema = _schema(version, variant)
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})


def check(value: Any, definition: str, *, version: Version = "v1", variant: Variant = "unstable") -> None:
    """Raise jsonschema.ValidationError unless `value` is a valid `definition`."""
    _validator(version, variant, definition).validate(value)


def check_result(method: str, result: Any, *, version: Version = "v1", variant: Variant = "unstable") -> None:
    """A response the agent gave to the client's `method`."""
    check(result, _definition(version, variant, method, "agent", "Response"), version=version, variant=variant)


def check_params(method: str, params: Any, *, version: Version = "v1", variant: Variant = "unstable") -> None:
    """A request the client sent (the agent serves it)."""
    check(params, _definition(version, variant, method, "agent", "Request"), version=version, variant=variant)


def check_client_request(method: str, params: Any, *, version: Version = "v1",
                         variant: Variant = "unstable") -> None:
    """A request the agent sent (the client serves it)."""
    check(params, _definition(version, variant, method, "client", "Request"), version=version, variant=variant)


def check_notification(frame: Mapping[str, Any], *, version: Version = "v1",
                       variant: Variant = "unstable") -> None:
    """A notification the agent sent (the client handles it)."""
    definition = _definition(version, variant, str(frame["method"]), "client", "Notification")
    check(frame.get("params"), definition, version=version, variant=variant)
