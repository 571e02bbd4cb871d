"""Known secrets never reach the client: a filter on the byte stream every frame is written to.

Sits below the JSON-RPC writer (installed by `Agent.serve`), so it covers every frame whatever
produced it: responses, errors, session updates, tool output, requests to the client. Only the
values the redactor holds are replaced (secret-named environment variables, keyring values,
per-session credentials, MCP server env values and headers); the pattern rules and the length
bound of `redact` are for error texts and logs and do not apply to frames, so long tool output
stays whole.

Fast path: per write, a substring search over the encoded bytes for every form a secret can take
in a frame (as is, JSON-escaped, ASCII-escaped); the forms are rebuilt only when the redactor's
set of secrets changes. Slow path, only for a line that contains a form: the line is decoded, the
secrets are replaced in every string (object keys too) and the value is encoded again, so the
frame stays valid JSON whatever the secret looks like (`true`, `"`, `\\`), and a line where the
match was only JSON syntax (a secret `true` beside a boolean) is written unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio.abc
from anyio import TypedAttributeProvider

from acp_agent.failures.redaction import MASK, Redactor

_MASK_BYTES = MASK.encode()


def _forms(secret: str) -> set[bytes]:
    """The byte sequences a secret can appear as in a UTF-8 JSON frame."""
    forms = {json.dumps(secret, ensure_ascii=True)[1:-1].encode("ascii")}
    for text in (secret, json.dumps(secret, ensure_ascii=False)[1:-1]):
        try:
            forms.add(text.encode())
        except UnicodeEncodeError:  # a lone surrogate (undecodable environment bytes)
            continue
    return forms


class FrameScrubber:
    """Replaces every secret the redactor holds in newline-delimited JSON frames."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._version = -1
        self._forms: tuple[bytes, ...] = ()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None

    def _refresh(self) -> None:
        self._version = self._redactor.version
        secrets = sorted(self._redactor.secrets(), key=len, reverse=True)
        forms = sorted({form for secret in secrets for form in _forms(secret)}, key=len, reverse=True)
        self._forms = tuple(forms)
        self._text = _secret_pattern(secrets)
        self._bytes = re.compile(b"|".join(map(re.escape, forms))) if forms else None

    def __call__(self, data: bytes) -> bytes:
        if self._version != self._redactor.version:
            self._refresh()
        if not self._contains(data):
            return data
        return b"\n".join(self._line(line) if self._contains(line) else line for line in data.split(b"\n"))

    def _contains(self, data: bytes) -> bool:
        # One substring search per form, in a plain loop: measured faster than a regex alternation
        # for any realistic number of secrets (bench/bench_scrub.py); no generator on the hot path.
        for form in self._forms:  # noqa: SIM110
            if form in data:
                return True
        return False

    def _line(self, line: bytes) -> bytes:
        text, raw = self._text, self._bytes
        assert text is not None and raw is not None
        try:
            value = json.loads(line)
            cleaned = _clean(value, text)
            if cleaned == value:
                return line  # the match was JSON syntax, not a string's content
            try:
                out = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            except UnicodeEncodeError:
                out = json.dumps(cleaned, separators=(",", ":"), allow_nan=False).encode()
        except (ValueError, RecursionError):
            out = raw.sub(_MASK_BYTES, line)  # not a JSON frame: plain replacement is all there is
        return out


def _secret_pattern(secrets: list[str]) -> re.Pattern[str] | None:
    """Any secret, longest first (`secrets` sorted so), so one that contains another leaves nothing
    of either; None without secrets."""
    return re.compile("|".join(map(re.escape, secrets))) if secrets else None


class StreamScrubber:
    """Scrubs a text that arrives in pieces (a message's streamed chunks) exactly as the frame
    scrubber scrubs the whole text, so a secret split across chunks is replaced all the same.

    Per piece, what is decided goes out at once; held back is only the tail that could still
    become a secret (a proper prefix of one: fewer characters than the longest secret), and
    nothing at all without secrets. The caller keeps the held text of each stream and hands it to
    `end` when the stream ends (message end, turn end, before anything else is written for it).
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._version = -1
        self._secrets: tuple[str, ...] = ()
        self._longest = 0
        self._pattern: re.Pattern[str] | None = None
        self._starts: re.Pattern[str] | None = None

    def _refresh(self) -> None:
        self._version = self._redactor.version
        secrets = sorted(self._redactor.secrets(), key=len, reverse=True)
        self._secrets = tuple(secrets)
        self._longest = len(secrets[0]) if secrets else 0
        self._pattern = _secret_pattern(secrets)
        # Where a secret may begin: its first two characters, or its first as the text's last.
        pairs = "|".join(sorted({re.escape(secret[:2]) for secret in secrets}))
        lasts = "|".join(sorted({re.escape(secret[0]) for secret in secrets}))
        self._starts = re.compile(f"{pairs}|(?:{lasts})\\Z") if secrets else None

    @property
    def active(self) -> bool:
        """Whether there are secrets to look for (without, `feed` never holds anything back)."""
        if self._version != self._redactor.version:
            self._refresh()
        return self._pattern is not None

    def feed(self, held: str, text: str) -> tuple[str, str]:
        """The next piece after `held` (what the stream held so far): what goes out now, scrubbed,
        and what is held from now on."""
        pending = held + text if held else text
        if not self.active:
            return pending, ""
        pattern = self._pattern
        assert pattern is not None
        out: list[str] = []
        pos = 0
        hold = self._hold_from(pending, 0)
        while True:
            # A match that starts before `hold` is final: no secret could still begin there.
            match = pattern.search(pending, pos)
            if match is None or match.start() >= hold:
                break
            out += (pending[pos:match.start()], MASK)
            pos = match.end()
            if hold < pos:
                hold = self._hold_from(pending, pos)
        out.append(pending[pos:hold])
        return "".join(out), pending[hold:]

    def end(self, held: str) -> str:
        """The stream ended: its held text, scrubbed."""
        pattern = self._pattern if self.active else None
        return pattern.sub(MASK, held) if pattern is not None and held else held

    def _hold_from(self, text: str, pos: int) -> int:
        """The first index from `pos` where the rest of `text` is a proper prefix of a secret
        (`len(text)` if there is none)."""
        size = len(text)
        starts = self._starts
        assert starts is not None
        # Searched again from the next character each time: two candidates may overlap.
        candidate = starts.search(text, max(pos, size - self._longest + 1))
        while candidate is not None:
            start = candidate.start()
            rest = text[start:]
            for secret in self._secrets:  # longest first
                if len(secret) <= len(rest):
                    break
                if secret.startswith(rest):
                    return start
            candidate = starts.search(text, start + 1)
        return size


def _clean(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(MASK, value)
    if isinstance(value, dict):
        return {_clean(key, pattern): _clean(item, pattern) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item, pattern) for item in value]
    return value


class ScrubbingSendStream(anyio.abc.ByteSendStream):
    """Wraps the client's output stream; every line written through it is scrubbed.

    The writer ends every frame with a newline; an unterminated tail waits for the rest of its
    line, so a secret split across two writes is still found.
    """

    def __init__(self, inner: anyio.abc.ByteSendStream, redactor: Redactor) -> None:
        self._inner = inner
        self.scrubber = FrameScrubber(redactor)
        self._tail = b""

    async def send(self, item: bytes) -> None:
        data = self._tail + bytes(item) if self._tail else bytes(item)
        cut = data.rfind(b"\n") + 1
        self._tail = data[cut:]
        if cut:
            await self._inner.send(self.scrubber(data[:cut]))

    async def aclose(self) -> None:
        tail, self._tail = self._tail, b""
        try:
            if tail:
                with anyio.CancelScope(shield=True):
                    await self._inner.send(self.scrubber(tail))
        finally:
            await self._inner.aclose()

    @property
    def extra_attributes(self) -> Any:
        inner: TypedAttributeProvider = self._inner
        return inner.extra_attributes
