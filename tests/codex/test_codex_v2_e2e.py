"""ACP v2 over the real `codex app-server` (loopback fake Responses API): a v2 client's turn, and
the session replayed by `session/resume` from the start, every agent frame valid v2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.codex.e2e_support import codex_env, workspace, write_codex_home
from tests.e2e.raw import raw_agent
from tests.e2e.test_v2_e2e import idle, started
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]


async def test_a_v2_client_prompts_codex_and_resumes_with_replay(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reasoning": "Thinking it over.", "reply": "Hello from the fake model"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with raw_agent("codex", tmp_path, codex_env(home)) as agent:
            client = await started(agent)
            new = await client.result("session/new", {"cwd": workspace(tmp_path)})
            session_id = new["sessionId"]
            assert "modes" not in new
            prompt = await client.result("session/prompt", {"sessionId": session_id,
                                                            "prompt": [{"type": "text", "text": "say hello"}]})
            end = (await client.until(idle))["params"]["update"]
            assert end["stopReason"] == "end_turn"
            live = client.updates(session_id)
            users = [u for u in live if u["sessionUpdate"] == "user_message"]
            assert [u["messageId"] for u in users] == [prompt["messageId"]]
            texts = [u for u in live if u["sessionUpdate"] == "agent_message_chunk"]
            assert "".join(u["content"]["text"] for u in texts) == "Hello from the fake model"
            assert len({u["messageId"] for u in texts}) == 1
            before = len(live)
            await client.result("session/resume", {"sessionId": session_id, "cwd": workspace(tmp_path),
                                                   "replayFrom": {"type": "start"}})
            replayed = client.updates(session_id)[before:]
            kinds = [u["sessionUpdate"] for u in replayed]
            assert "user_message_chunk" in kinds and "agent_message_chunk" in kinds
            assert kinds[-1] == "state_update"
            replayed_text = [u for u in replayed if u["sessionUpdate"] == "agent_message_chunk"]
            assert "".join(u["content"]["text"] for u in replayed_text) == "Hello from the fake model"
            client.check_all()
