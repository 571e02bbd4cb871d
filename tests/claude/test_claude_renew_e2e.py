"""A key stored in the keyring while sessions are open reaches those sessions at their next
prompt (not only later sessions): the session's CLI is replaced by one with the new key, resuming
its transcript. Real CLI, the fake API accepting only the new key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.claude.test_claude_auth import keyring_env
from tests.claude.test_claude_idle_e2e import user_texts
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]

OLD_KEY = "sk-ant-old-key-0123456789abcdef"
NEW_KEY = "sk-ant-new-key-fedcba9876543210"


def keyring_backend(tmp_path: Path) -> Any:
    """The agent's keyring (a plaintext file under the test's XDG_DATA_HOME), as `auth set` writes it."""
    from keyrings.alt.file import PlaintextKeyring

    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "data" / "python_keyring" / "keyring_pass.cfg")  # type: ignore[misc]
    return backend


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_key_stored_mid_session_reaches_the_open_session(tmp_path: Path, capable: bool) -> None:
    backend = keyring_backend(tmp_path)
    backend.set_password("acp-agent", "claude", OLD_KEY)
    # the fake answers the old key 401 without using a step
    with FakeAnthropicAPI([{"reply": "first answer"}, {"reply": "second answer"}], keys=[NEW_KEY]) as api:
        async with claude_agent(api, tmp_path, capable=capable, key=None, retries=0,
                                extra=keyring_env(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            try:  # a capable client hears the failure in the answer's _meta, a legacy one as an error
                first = await agent.conn.prompt(session_id=sid, prompt=text("one"))
                refused = "sessionFailure" in str(first.field_meta)
            except acp.RequestError:
                refused = True
            backend.set_password("acp-agent", "claude", NEW_KEY)  # `acp-agent auth set` meanwhile
            second = await agent.conn.prompt(session_id=sid, prompt=text("two"))
            third = await agent.conn.prompt(session_id=sid, prompt=text("three"))
        requests = [r for r in api.requests if r.kind == "turn"]
    keys = [r.headers.get("x-api-key") for r in requests]
    assert keys[0] == OLD_KEY and set(keys[1:]) == {NEW_KEY}
    assert refused
    assert second.stop_reason == "end_turn" and third.stop_reason == "end_turn"
    # the same session, its history kept: the resumed transcript goes on
    accepted = [r for r in requests if r.headers.get("x-api-key") == NEW_KEY]
    assert user_texts(accepted[-1].body)[-3:] == ["user: two", "assistant: first answer", "user: three"]
    assert OLD_KEY not in str(agent.frames.incoming) and NEW_KEY not in str(agent.frames.incoming)
    assert agent.frames.problems == []
