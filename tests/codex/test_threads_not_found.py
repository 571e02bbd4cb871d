"""Which app-server errors say there is no such thread (the session is not found), from its real answers."""

from __future__ import annotations

import pytest

from acp_agent.provider import RpcError
from acp_agent_codex.threads import not_found


@pytest.mark.parametrize(("message", "expected"), [
    # codex 0.163.0 to a thread id that is no UUID (thread/name/set, thread/archive, thread/resume)
    ("invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` followed by "
     "[0-9a-fA-F-], found `n` at 1", True),
    ("no rollout found for thread id 0199a213-81c0-7800-8aa1-bbab2a035a53", True),
    ("thread not found: 0199a213-81c0-7800-8aa1-bbab2a035a53", True),
    ("Internal error: failed to write the rollout", False),
])
def test_not_found(message: str, expected: bool) -> None:
    assert not_found(RpcError(-32600, message)) is expected
