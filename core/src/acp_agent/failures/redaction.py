"""The one function every user-visible or logged string that can carry backend text passes through.

Removes secrets: values of secret-named environment variables, every credential the adapter holds,
bearer tokens, URL userinfo and credential query parameters; bounds the result to 4096 characters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import define, field

MAX_LENGTH = 4096
MASK = "[REDACTED]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]+")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]*@")
_QUERY = re.compile(r"(?i)([?&;](?:api[_-]?key|key|token|access[_-]?token)=)[^&#\s\"']*")
_MIN_SECRET = 4


def secret_env_values(environ: Mapping[str, str]) -> set[str]:
    """Values of environment variables whose names say they hold a secret."""
    return {value for name, value in environ.items() if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET}


@define
class Redactor:
    """Holds the secrets to scrub; `add` more as credentials arrive (keyring, client-provided)."""

    _secrets: set[str] = field(factory=set)
    _version: int = field(default=0, init=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        return cls(secret_env_values(os.environ if environ is None else environ))

    def add(self, *secrets: str | None) -> None:
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET and secret not in self._secrets:
                self._secrets.add(secret)
                self._version += 1

    def discard(self, secret: str | None) -> None:
        if secret and secret in self._secrets:
            self._secrets.discard(secret)
            self._version += 1

    @property
    def version(self) -> int:
        """Changes whenever the set of secrets does, so derived matchers know when to rebuild."""
        return self._version

    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def __call__(self, text: str) -> str:
        return redact(text, self._secrets)

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value, object keys included (a key can be a secret)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(key) if isinstance(key, str) else key: self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Scrub secrets from text and bound it; longest secrets first so overlaps leave nothing."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, MASK)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _QUERY.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if len(text) > MAX_LENGTH:
        text = text[: MAX_LENGTH - 1] + "…"
    return text


# A name that says its value is a credential; such a value is held whatever it looks like.
_SECRET_HINT = re.compile(r"KEY|TOKEN|SECRET|PASS|PW|AUTH|CRED|COOKIE|SESSION|PRIVATE|SIGNATURE",
                          re.IGNORECASE)
# A word, a number or a local path (`debug`, `error`, `text`, `8080`, `1.2.3`, `/home/me/code`)
# carries no credential; masked, it would corrupt ordinary output, file locations and the protocol
# itself (`"error"`, `"type":"text"`).
_PLAIN_VALUE = re.compile(r"[A-Za-z]+|[0-9]+(?:\.[0-9]+)*|/[\w.\-/]*(?::/[\w.\-/]*)*")
_PLAIN_HEADERS = frozenset({"accept", "accept-encoding", "accept-language", "cache-control", "connection",
                            "content-language", "content-type", "user-agent"})


def mcp_secret_values(servers: Any) -> list[str]:
    """The `env` and `headers` values of the client's MCP servers (ACP `mcpServers`, raw JSON).

    Tokens and connection strings travel there under any name, so every value is held as a secret
    except a plain word, number or path under a name that does not say it is one, and the values
    of the standard content-negotiation headers.
    """
    values: list[str] = []
    for server in servers if isinstance(servers, list) else ():
        if not isinstance(server, Mapping):
            continue
        for key in ("env", "headers"):
            pairs = server.get(key)
            if isinstance(pairs, Mapping):
                pairs = [{"name": name, "value": value} for name, value in pairs.items()]
            for pair in pairs if isinstance(pairs, list) else ():
                if not isinstance(pair, Mapping) or not isinstance(pair.get("value"), str):
                    continue
                name, value = str(pair.get("name", "")), pair["value"]
                plain = _PLAIN_VALUE.fullmatch(value) or (key == "headers" and name.lower() in _PLAIN_HEADERS)
                if _SECRET_HINT.search(name) or not plain:
                    values.append(value)
    return values
