"""AIR's fork point (`_meta.jetbrains.air.fork`) of a `session/fork` (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.session_methods import fork_point
from acp_agent.wire.rpc import RpcError


@pytest.mark.parametrize(("meta", "expected"), [
    (None, None),
    ({}, None),
    ({"jetbrains": {"air": {"version": 1}}}, None),
    ({"jetbrains": {"air": {"fork": {"version": 1, "messageId": "msg_01abc"}}}}, "msg_01abc"),
    ({"jetbrains": {"air": {"fork": {"version": 1, "messageId": "msg_01abc:segment:2",
                                     "messageFingerprint": "sha256:00"}}}}, "msg_01abc"),
])
def test_the_message_to_branch_at(meta: Any, expected: str | None) -> None:
    assert fork_point(meta) == expected


@pytest.mark.parametrize("fork", [{}, {"messageId": ""}, {"messageId": 5}, "msg_01"])
def test_a_fork_point_without_a_message_id_is_invalid_params(fork: Any) -> None:
    with pytest.raises(RpcError) as caught:
        fork_point({"jetbrains": {"air": {"fork": fork}}})
    assert caught.value.code == -32602
