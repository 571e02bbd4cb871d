"""A key stored in the keyring while sessions are open reaches those sessions at their next
prompt: app-server (which keeps the environment it started with) is replaced and the thread
resumed on the new one, its history kept. Real codex, the fake API accepting only the new key."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.claude.test_claude_renew_e2e import keyring_backend
from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]

OLD_KEY = "sk-codex-old-key-0123456789abcdef"
NEW_KEY = "sk-codex-new-key-fedcba9876543210"


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_key_stored_mid_session_reaches_the_open_session(tmp_path: Path, capable: bool) -> None:
    backend = keyring_backend(tmp_path)
    backend.set_password("acp-agent", "codex", OLD_KEY)
    # the fake answers the old key 401 without using a step
    with FakeResponsesAPI([{"reply": "first answer"}, {"reply": "second answer"}], keys=[NEW_KEY]) as api:
        home = write_codex_home(api, tmp_path, retries=0)
        config = home / "config.toml"  # the provider reads the variable the keyring key is handed over as
        config.write_text(config.read_text().replace('env_key = "FAKE_OPENAI_API_KEY"', 'env_key = "OPENAI_API_KEY"'))
        (tmp_path / "home").mkdir()
        env = {"FAKE_OPENAI_API_KEY": "", "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data"),
               "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring"}
        async with codex_agent(home, tmp_path, capable=capable, env=env) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            try:  # a capable client hears the failure in the answer's _meta, a legacy one as an error
                first = await agent.conn.prompt(session_id=sid, prompt=text("one"))
                refused = "sessionFailure" in str(first.field_meta)
            except acp.RequestError:
                refused = True
            backend.set_password("acp-agent", "codex", NEW_KEY)  # `acp-agent auth set` meanwhile
            second = await agent.conn.prompt(session_id=sid, prompt=text("two"))
            third = await agent.conn.prompt(session_id=sid, prompt=text("three"))
        requests = api.turn_requests
    keys = [r.headers.get("authorization") for r in requests]
    assert refused
    assert keys[0] == f"Bearer {OLD_KEY}" and set(keys[1:]) == {f"Bearer {NEW_KEY}"}
    assert second.stop_reason == "end_turn" and third.stop_reason == "end_turn"
    # the same thread, resumed: the last request carries the earlier turns
    said = str(requests[-1].body)
    assert "first answer" in said and "'two'" in said and "'three'" in said
    assert OLD_KEY not in str(agent.frames.incoming) and NEW_KEY not in str(agent.frames.incoming)
    assert agent.frames.problems == []
