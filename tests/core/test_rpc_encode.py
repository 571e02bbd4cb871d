"""The frame encoder built once (`rpc._encode`) writes exactly what `json.dumps` with the same
options writes, and refuses what it refuses: a faster frame is never a different frame."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_agent.wire.rpc import _encode

ODD = st.sampled_from(["\ud800", "a\udfff", "\x00", "\ufeff", "é", "日本", "\u2028", "w1 ", ""])
scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20) | ODD)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8) | ODD, inner, max_size=4), max_leaves=20)


def reference(message: Any) -> bytes:
    """What `_encode` wrote before its encoder was built once (one `json.dumps` per frame)."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"


CHUNK = {"jsonrpc": "2.0", "method": "session/update",
         "params": {"sessionId": "s-1", "update": {"content": {"text": "w1 ", "type": "text"},
                                                     "sessionUpdate": "agent_message_chunk"}}}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.dictionaries(st.text(max_size=8) | ODD, values, max_size=5))
@example(CHUNK)
@example({"jsonrpc": "2.0", "id": "\ud800", "method": "x"})
@example({"text": "é \u2028 日本", "n": 1.5, "big": 10**25, "none": None, "list": [True, False]})
def test_frames_are_those_of_json_dumps(message: dict[str, Any]) -> None:
    assert _encode(message) == reference(message)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1, 2}, object(), b"bytes"])
def test_what_json_dumps_refuses_is_refused(bad: Any) -> None:
    message = {"jsonrpc": "2.0", "method": "m", "params": {"value": bad}}
    with pytest.raises((TypeError, ValueError)) as expected:
        reference(message)
    with pytest.raises(expected.type):
        _encode(message)


def test_a_cycle_is_refused_as_not_json() -> None:
    cycle: dict[str, Any] = {"jsonrpc": "2.0", "method": "m"}
    cycle["params"] = cycle
    with pytest.raises((ValueError, RecursionError)):
        _encode(cycle)
