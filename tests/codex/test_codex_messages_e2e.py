"""Message ids on chunks and a fork at a message, through `acp-agent --provider codex` against the
real app-server (issue 27 item 3): a chunk's `messageId` is its app-server item's id, the same live
and on `session/load`; AIR's `session/fork` `_meta.jetbrains.air.fork.messageId` forks through the
turn that holds that item."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from tests.codex.e2e_support import codex_agent, is_notice_text, model_text, said, text, workspace, write_codex_home
from tests.e2e.harness import fork_meta, messages
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])




@BOTH
async def test_chunks_carry_the_item_id_live_and_on_load(tmp_path: Path, capable: bool) -> None:
    script = [{"reasoning": "thinking it over", "reply": "first answer"}, {"reply": "second answer"}]
    with FakeResponsesAPI(script) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("hello there"))
            await first.conn.prompt(session_id=session.session_id, prompt=text("and again"))
        async with codex_agent(home, tmp_path, capable=capable, log_name="second") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
    live = messages(first.frames.updates(session.session_id))
    replayed = messages(second.frames.updates(session.session_id))
    agent_live = [m for m in live if m[0] != "user_message_chunk" and not is_notice_text(m[2])]
    assert [(kind, words) for kind, _, words in agent_live] == [
        ("agent_thought_chunk", "thinking it over"), ("agent_message_chunk", "first answer"),
        ("agent_message_chunk", "second answer")]
    ids = [message_id for _, message_id, _ in agent_live]
    assert all(ids) and len(set(ids)) == 3
    # the same messages, with the same ids, come back on load; the user's messages have theirs
    assert [m for m in replayed if m[0] != "user_message_chunk" and not is_notice_text(m[2])] == agent_live
    users = [m for m in replayed if m[0] == "user_message_chunk"]
    assert [words for _, _, words in users] == ["hello there", "and again"]
    assert all(message_id for _, message_id, _ in users) and len({m[1] for m in users}) == 2
    assert first.frames.problems == [] and second.frames.problems == []


async def test_a_fork_at_a_message_keeps_the_turns_through_it(tmp_path: Path) -> None:
    script = [{"reply": "answer one"}, {"reply": "answer two"}, {"reply": "answer three"}, {"reply": "in the fork"}]
    with FakeResponsesAPI(script) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            caps = agent.initialized.agent_capabilities.session_capabilities
            source = await agent.conn.new_session(cwd=cwd)
            for words in ("turn one", "turn two", "turn three"):
                await agent.conn.prompt(session_id=source.session_id, prompt=text(words))
            live = messages(agent.frames.updates(source.session_id), ("agent_message_chunk",))
            (second,) = [message_id for _, message_id, words in live if words == "answer two"]
            fork = await agent.conn.fork_session(cwd=cwd, session_id=source.session_id,
                                                 **fork_meta(f"{second}:segment:1"))
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("after the fork"))
            fork_text = model_text(agent, fork.session_id)
            with pytest.raises(RequestError) as unknown:
                await agent.conn.fork_session(cwd=cwd, session_id=source.session_id,
                                              **fork_meta("msg_not_in_this_thread"))
        requests = api.turn_requests
    assert caps.fork is not None
    assert fork_text == "in the fork"
    # the fork's model request holds the turns through the one with the message, not the third
    assert said(requests[3]) == ["turn one", "turn two", "after the fork"]
    assert unknown.value.code == -32602
    assert agent.frames.problems == []
