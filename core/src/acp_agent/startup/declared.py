"""Which hook starts a provider's backend early, as the provider's `ProviderSpec.prestart` said
at the last start.

The command line wants to spawn that backend before it imports the plugin (which imports attrs,
logging and the core's contract, all of it time the first session waits), so it cannot ask the
spec. It reads instead what the agent recorded the last time it loaded the spec: one
small file per provider under the state directory holding the reference
("package.module:function"). When the record is missing or no longer what the spec declares,
the agent rewrites it and the backend starts once the plugin is loaded, still before any
session is asked for (`Prestarted.declared`).

The record is input like any file: bounded, validated as a reference, its module loaded only
from an installed package (`acp_agent.backends.installed.module_file`), never from a path it names.
"""

from __future__ import annotations

import os

from acp_agent.backends.installed import module_file, valid_reference
from acp_agent.state import state_directory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

MAX_RECORD_BYTES = 512


def _record_path(provider: str, environ: Mapping[str, str]) -> str | None:
    directory = state_directory(environ)
    if directory is None or not provider.isidentifier():
        return None
    return os.path.join(directory, "prestart", provider)


def recorded(provider: str, environ: Mapping[str, str]) -> str | None:
    """The reference recorded for `provider`, or None (no record, or one that is not a reference)."""
    path = _record_path(provider, environ)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        reference = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    return reference if len(data) <= MAX_RECORD_BYTES and valid_reference(reference) else None


def record(provider: str, reference: str | None, environ: Mapping[str, str]) -> None:
    """Write `reference` as `provider`'s record (None: remove it), atomically; raises OSError."""
    path = _record_path(provider, environ)
    if path is None:
        return
    if reference is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="ascii") as handle:
        handle.write(reference + "\n")
    os.replace(temporary, path)


def load(reference: str, provider: str) -> Callable[[Mapping[str, str]], Any] | None:
    """The hook `reference` names, loaded from its module's file alone (its package's `__init__`
    does not run); None when the module is not installed or has no such function."""
    import importlib.util

    module_name, _, function = reference.partition(":")
    path = module_file(module_name) if valid_reference(reference) else None
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(f"_acp_agent_prestart_{provider}", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    hook = getattr(module, function, None)
    return hook if callable(hook) else None
