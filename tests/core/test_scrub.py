"""The output-stream scrubber: no secret the redactor holds survives in a frame, and frames stay JSON."""

from __future__ import annotations

import json
import string
from typing import Any

import anyio
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acp_agent.failures.redaction import MASK, Redactor
from acp_agent.failures.scrub import FrameScrubber, ScrubbingSendStream

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-scrub-0123456789abcdef"


def frame(payload: Any, *, ascii_only: bool = False) -> bytes:
    """Encoded the way the JSON-RPC writer encodes (or ASCII-escaped, as other encoders do)."""
    return json.dumps(payload, ensure_ascii=ascii_only, separators=(",", ":")).encode() + b"\n"


def update(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "rawOutput": {"stdout": text, "exitCode": 0, "ok": True, "none": None}}}}


def scrub(data: bytes, *secrets: str) -> bytes:
    redactor = Redactor()
    redactor.add(*secrets)
    return FrameScrubber(redactor)(data)


def lines(data: bytes) -> list[Any]:
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def strings(value: Any) -> list[str]:
    """Every string in a decoded frame, object keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *strings(item)]]
    return []


CASES: list[tuple[str, str, Any, Any]] = [
    ("in text", KEY, update(f"ANTHROPIC_API_KEY={KEY}\n"), update(f"ANTHROPIC_API_KEY={MASK}\n")),
    ("whole string", KEY, update(KEY), update(MASK)),
    ("twice in one string", KEY, update(f"{KEY} {KEY}"), update(f"{MASK} {MASK}")),
    ("in an object key", KEY, {"result": {KEY: "v", "x": {f"k-{KEY}": 1}}},
     {"result": {MASK: "v", "x": {f"k-{MASK}": 1}}}),
    ("with a quote and a backslash", 'pa"ss\\word', update('pw=pa"ss\\word'), update(f"pw={MASK}")),
    ("with a newline (a PEM body)", "line-one\nline-two", update("k: line-one\nline-two."), update(f"k: {MASK}.")),
    ("non-ASCII", "clé-secrète-ü", update("key clé-secrète-ü end"), update(f"key {MASK} end")),
    ("true-like: a secret that is a JSON literal", "true", update("it is true"), update(f"it is {MASK}")),
    ("null-like", "null", update("null pointer"), update(f"{MASK} pointer")),
    ("a secret inside a longer one", "abcd", update("xx abcdefgh abcd"), update(f"xx {MASK} {MASK}")),
]


@pytest.mark.parametrize(("secret", "payload", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
@pytest.mark.parametrize("ascii_only", [False, True], ids=["utf8", "ascii-escaped"])
def test_secret_is_replaced_and_the_frame_stays_json(secret: str, payload: Any, expected: Any,
                                                     ascii_only: bool) -> None:
    extra = "abcdefgh" if secret == "abcd" else None
    out = scrub(frame(payload, ascii_only=ascii_only), secret, *([extra] if extra else []))
    assert lines(out) == [expected]
    assert not [text for text in strings(lines(out)) if secret in text]


@pytest.mark.parametrize("secret", ["true", "false", "null", "1234", "0123456789"])
def test_a_secret_that_only_matches_json_syntax_leaves_the_frame_untouched(secret: str) -> None:
    data = frame({"jsonrpc": "2.0", "id": 1234, "result": {"a": True, "b": False, "c": None, "n": 123456789}})
    assert scrub(data, secret) == data


def test_no_secret_means_the_same_bytes() -> None:
    data = frame(update("nothing to hide here")) + frame({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert scrub(data) is data
    assert scrub(data, KEY) is data


def test_one_write_of_several_frames_rewrites_only_the_lines_with_a_secret() -> None:
    clean = [frame(update(f"clean {index}")) for index in range(3)]
    data = clean[0] + frame(update(f"first {KEY}")) + clean[1] + frame(update(f"{KEY} again")) + clean[2]
    out = scrub(data, KEY)
    parts = out.split(b"\n")
    assert parts[0] + b"\n" == clean[0] and parts[2] + b"\n" == clean[1] and parts[4] + b"\n" == clean[2]
    assert [item["params"]["update"]["rawOutput"]["stdout"] for item in lines(out)] == [
        "clean 0", f"first {MASK}", "clean 1", f"{MASK} again", "clean 2"]


def test_long_tool_output_is_not_truncated() -> None:
    text = ("x" * 50_000) + KEY + ("y" * 50_000)
    [out] = lines(scrub(frame(update(text)), KEY))
    assert out["params"]["update"]["rawOutput"]["stdout"] == "x" * 50_000 + MASK + "y" * 50_000


def test_secrets_added_later_are_picked_up() -> None:
    redactor = Redactor()
    scrubber = FrameScrubber(redactor)
    data = frame(update(KEY))
    assert scrubber(data) == data
    redactor.add(KEY)
    assert KEY.encode() not in scrubber(data)
    redactor.discard(KEY)
    assert scrubber(data) == data


class Collect(anyio.abc.ByteSendStream):
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    async def send(self, item: bytes) -> None:
        self.writes.append(item)

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.anyio
async def test_stream_finds_a_secret_split_across_two_writes() -> None:
    redactor = Redactor()
    redactor.add(KEY)
    inner = Collect()
    stream = ScrubbingSendStream(inner, redactor)
    data = frame(update(f"key={KEY}")) + frame(update("after"))
    cut = data.index(KEY.encode()) + 5
    await stream.send(data[:cut])
    await stream.send(data[cut:])
    await stream.aclose()
    written = b"".join(inner.writes)
    assert KEY.encode() not in written
    assert [item["params"]["update"]["rawOutput"]["stdout"] for item in lines(written)] == [f"key={MASK}", "after"]
    assert all(write.endswith(b"\n") for write in inner.writes)
    assert inner.closed


@pytest.mark.anyio
async def test_stream_passes_clean_frames_through_unchanged() -> None:
    redactor = Redactor()
    redactor.add(KEY)
    inner = Collect()
    stream = ScrubbingSendStream(inner, redactor)
    data = frame(update("hello")) * 3
    await stream.send(data)
    assert inner.writes == [data]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
# No brackets: a secret could otherwise straddle the mask's edge, or be a piece of the mask itself.
secret_text = st.text(alphabet=string.printable.replace("[", "").replace("]", "") + "éü\u2028",
                      min_size=4, max_size=24).filter(lambda secret: secret not in MASK)


@settings(max_examples=300, deadline=None)
@given(value=json_values, secret=secret_text, before=st.text(max_size=20), ascii_only=st.booleans())
def test_property_a_planted_secret_never_survives_and_frames_stay_json(value: Any, secret: str, before: str,
                                                                        ascii_only: bool) -> None:
    assume(secret not in '"jsonrpc":"2.0","method":"session/update","params"')  # the envelope stays readable
    # Keys made of brackets, which no generated secret contains, so the secret cannot collide with them.
    payload = {"jsonrpc": "2.0", "method": "session/update",
               "params": {"[": value, "]": before + secret, secret: [secret]}}
    out = scrub(frame(payload, ascii_only=ascii_only), secret)
    [decoded] = lines(out)
    assert not [text for text in strings(decoded) if secret in text]
    assert decoded["params"]["]"] == (before + secret).replace(secret, MASK)
    assert decoded["params"]["["] == _replaced(value, secret)
    assert decoded["params"][MASK] == [MASK]


def _replaced(value: Any, secret: str) -> Any:
    """What the scrubber must leave of a value: everything but the secret's occurrences in strings."""
    if isinstance(value, str):
        return value.replace(secret, MASK)
    if isinstance(value, list):
        return [_replaced(item, secret) for item in value]
    if isinstance(value, dict):
        return {_replaced(key, secret): _replaced(item, secret) for key, item in value.items()}
    return value


MCP_CASES = [
    ("env", "DATABASE_URL", "postgres://app:pw-1@db/app", True),
    ("env", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_0123456789", True),
    ("env", "DB_PASS", "hunter", True),  # a word, but the name says it is a secret
    ("env", "ANYTHING", "a1b2c3d4", True),
    ("env", "ALLOWED", "https://hooks.example.test/services/T0/B0/xyz", True),
    ("env", "LOG_LEVEL", "error", False),
    ("env", "FORMAT", "text", False),
    ("env", "PORT", "8080", False),
    ("env", "VERSION", "1.2.3", False),
    ("env", "DIRS", "/home/me/code:/tmp", False),
    ("headers", "Authorization", "Bearer abc123", True),
    ("headers", "X-Api-Key", "plainword", True),
    ("headers", "X-Region", "us-east-1", True),
    ("headers", "Content-Type", "application/json", False),
    ("headers", "Accept", "text/event-stream", False),
]


@pytest.mark.parametrize(("where", "name", "value", "held"), MCP_CASES, ids=[case[1] for case in MCP_CASES])
def test_which_mcp_values_are_held_as_secrets(where: str, name: str, value: str, held: bool) -> None:
    from acp_agent.failures.redaction import mcp_secret_values

    server: dict[str, Any] = ({"name": "s", "command": "/bin/true", "env": [{"name": name, "value": value}]}
                              if where == "env" else
                              {"name": "s", "type": "http", "url": "http://127.0.0.1:9", "headers": [
                                  {"name": name, "value": value}]})
    assert mcp_secret_values([server]) == ([value] if held else [])


def test_malformed_mcp_entries_are_skipped_not_fatal() -> None:
    from acp_agent.failures.redaction import mcp_secret_values

    servers = ["junk", 3, None, {"env": "x"}, {"env": [1, {"name": "A"}, {"value": 5}]},
               {"env": {"K_TOKEN": "zz-token-1"}}, {"headers": [{"value": "no-name-9x"}]}]
    assert mcp_secret_values(servers) == ["zz-token-1", "no-name-9x"]
    assert mcp_secret_values({"not": "a list"}) == []
