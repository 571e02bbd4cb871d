"""ACP v2 over the fake MSP host (`tests/fakes/muse_host.py`): a v2 client's turn and the session
mode set as the `mode` config option, every agent frame valid v2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.raw import raw_agent
from tests.e2e.test_v2_e2e import V2Client, idle, started
from tests.muse.e2e_support import muse_env, received

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]


async def test_a_v2_client_prompts_muse_and_sets_its_mode(tmp_path: Path) -> None:
    async with raw_agent("muse", tmp_path, muse_env(tmp_path)) as agent:
        client: V2Client = await started(agent)
        new = await client.result("session/new", {"cwd": str(tmp_path)})
        session_id = new["sessionId"]
        options = {option["configId"]: option for option in new["configOptions"]}
        assert options["mode"]["currentValue"] == "default"
        assert [choice["value"] for choice in options["mode"]["options"]] == [
            "default", "readOnly", "plan", "bypassApprovals", "rejectApprovals"]
        assert options["model"]["currentValue"] == "muse-large"
        answer = await client.result("session/set_config_option", {
            "sessionId": session_id, "configId": "mode", "type": "id", "value": "plan"})
        assert next(o for o in answer["configOptions"] if o["configId"] == "mode")["currentValue"] == "plan"
        await client.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]})
        end = (await client.until(idle))["params"]["update"]
        assert end["stopReason"] == "end_turn"
        updates = client.updates(session_id)
        texts = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
        thoughts = [u for u in updates if u["sessionUpdate"] == "agent_thought_chunk"]
        assert "".join(u["content"]["text"] for u in texts) == "Hello, world."
        assert "".join(u["content"]["text"] for u in thoughts) == "Thinking it over."
        assert len({u["messageId"] for u in texts}) == 1 and len({u["messageId"] for u in thoughts}) == 1
        client.check_all()
    [approval] = received(tmp_path, "session/setApprovalMode")  # Muse's plan mode reached the host
    assert approval["params"]["sessionId"] == session_id
