"""A turn that fails while its CLI is still on it never hands the rest to the next prompt.

The Claude CLI's stream is matched to turns by order: the lines after a prompt are its answer up
to the result. A turn cut off before its result (an error while handling a line, like the
`AttributeError` a wrong-typed `tool_use` raised before issue 25) leaves the rest of its answer
in the stream; the CLI is replaced before the next prompt, which gets its own answer. The error is
injected into the fold here (no CLI line makes the fold raise any more), through the real agent
in-process against `standin_lines.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from acp_agent.backends.plugins import discover
from acp_agent.testing.client import run_in_process
from acp_agent.testing.conformance import answer_text, kit_environ, running
from acp_agent.wire.rpc import RpcError
from acp_agent_claude.fold import TurnFold
from tests.claude.e2e_support import claude_env
from tests.claude.test_claude_backend_lines_e2e import RESULT, assistant, standin
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BOOM = {"type": "system", "subtype": "boom"}
SCRIPT = {"one": [assistant("msg_1a", [{"type": "text", "text": "start of one"}]), BOOM,
                  assistant("msg_1b", [{"type": "text", "text": "rest of one"}]), RESULT],
          "two": [assistant("msg_2", [{"type": "text", "text": "second answer"}]), RESULT]}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_turn_failed_mid_stream_leaves_the_next_prompt_its_own_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capable: bool) -> None:
    feed = TurnFold.feed

    def failing_feed(self: TurnFold, message: Mapping[str, Any]) -> Any:
        if message.get("subtype") == "boom":
            raise RuntimeError("injected: the fold failed on a line")
        return feed(self, message)

    monkeypatch.setattr(TurnFold, "feed", failing_feed)
    loaded = discover().get("claude")
    assert loaded is not None
    with FakeAnthropicAPI([]) as api:
        environ = kit_environ(claude_env(api, tmp_path, extra=standin(tmp_path, SCRIPT)))
        async with run_in_process(loaded.spec, environ=environ) as client:
            await client.initialize(capable=capable)
            session_id = await client.new_session(str(tmp_path))
            if capable:  # the typed record on the answer
                first = await client.prompt(session_id, "one")
                records = client.failure_records(session_id)
            else:  # the baseline error with data.failure
                with pytest.raises(RpcError) as failed:
                    await client.prompt(session_id, "one")
            mark = len(client.updates)
            second = await client.prompt(session_id, "two")
            answer = answer_text(client, session_id, mark)
    if capable:
        assert first["stopReason"] == "end_turn"
        assert [record["title"] for record in records] == [
            "The agent hit an internal error while running the turn."]
    else:
        assert failed.value.code == -32603  # the core's typed internal error
        assert failed.value.data["failure"]["kind"] == "internalError"
    assert second["stopReason"] == "end_turn"
    assert answer == "second answer"
    pids = [int(line) for line in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2  # the CLI that was on the failed turn was replaced
    assert not any(running(pid) for pid in pids)
