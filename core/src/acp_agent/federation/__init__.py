"""Every installed provider behind one connection: `acp-agent` without `--provider`.

One `Agent` per provider, each as `acp-agent --provider NAME` runs it, writes to the one client;
the front (`front.Front`) answers the methods: `initialize` and sign-in merged, a new session
opened with the default provider or moved to another before its first prompt, every other
session method handed to the session's provider (`directory`), `session/list` merged.
"""

from collections.abc import Awaitable, Callable
from typing import Any

ProviderCall = Callable[[str, str, Any], Awaitable[Any]]
"""One provider agent's answer to a method: `(provider, method, params) -> answer` (a `Reply` too)."""
