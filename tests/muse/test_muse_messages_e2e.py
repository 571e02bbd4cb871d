"""Message ids on chunks and a fork at a message, through `acp-agent --provider muse` and the fake
MSP host (issue 27 item 3): a chunk's `messageId` is its MSP item's `itemId`, the same live and on
`session/load`; AIR's `session/fork` `_meta.jetbrains.air.fork.messageId` forks through the turn
that holds that item (`session/fork {cutPoint: {lastTurnId}}`)."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.e2e.harness import fork_meta, messages
from tests.muse.e2e_support import muse_agent, received, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])




@BOTH
async def test_chunks_carry_the_item_id_live_and_on_load(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="text") as first:
        session = await first.conn.new_session(cwd=str(tmp_path))
        await first.conn.prompt(session_id=session.session_id, prompt=text("first question"))
        await first.conn.prompt(session_id=session.session_id, prompt=text("second question"))
    async with muse_agent(tmp_path, capable=capable) as second:
        await second.conn.load_session(session_id=session.session_id, cwd=str(tmp_path))
    live = messages(first.frames.updates(session.session_id))
    replayed = messages(second.frames.updates(session.session_id))
    assert [(kind, words) for kind, _, words in live] == [
        ("agent_thought_chunk", "Thinking it over."), ("agent_message_chunk", "Hello, world.")] * 2
    ids = [message_id for _, message_id, _ in live]
    assert all(ids) and len(set(ids)) == 4
    # the same messages, with the same ids, on load; the user's messages have their item ids
    assert [m for m in replayed if m[0] != "user_message_chunk"] == live
    users = [m for m in replayed if m[0] == "user_message_chunk"]
    assert [words for _, _, words in users] == ["first question", "second question"]
    assert all(message_id for _, message_id, _ in users) and len({m[1] for m in users}) == 2
    assert first.frames.problems == [] and second.frames.problems == []


async def test_a_fork_at_a_message_keeps_the_turns_through_it(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="echo") as agent:
        source = await agent.conn.new_session(cwd=str(tmp_path))
        for words in ("turn one", "turn two", "turn three"):
            await agent.conn.prompt(session_id=source.session_id, prompt=text(words))
        live = messages(agent.frames.updates(source.session_id))
        (second,) = [message_id for _, message_id, words in live if words == "echo: turn two"]
        assert second is not None
        fork = await agent.conn.fork_session(cwd=str(tmp_path), session_id=source.session_id,
                                             **fork_meta(f"{second}:segment:2"))
        with pytest.raises(acp.RequestError) as unknown:
            await agent.conn.fork_session(cwd=str(tmp_path), session_id=source.session_id,
                                          **fork_meta("turn-not-here-answer"))
    async with muse_agent(tmp_path, capable=True) as reader:
        await reader.conn.load_session(session_id=fork.session_id, cwd=str(tmp_path))
    replayed = [(kind, words) for kind, _, words in messages(reader.frames.updates(fork.session_id))]
    assert replayed == [("user_message_chunk", "turn one"), ("agent_message_chunk", "echo: turn one"),
                        ("user_message_chunk", "turn two"), ("agent_message_chunk", "echo: turn two")]
    [cut] = [f["params"]["cutPoint"] for f in received(tmp_path, "session/fork")]
    assert cut["lastTurnId"] == second.removesuffix("-answer")
    assert unknown.value.code == -32602
    assert agent.frames.problems == [] and reader.frames.problems == []
