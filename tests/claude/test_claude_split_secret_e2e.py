"""A secret the model streams split across text deltas never reaches the client, whole or not.

The fake API streams the answer in exactly the given deltas; the real Claude Code CLI turns each
into a stream event and the agent into an `agent_message_chunk`. The key is cut inside itself
(a client joining the chunks would read it whole), and a start of the key that turns out not to
be one (`sk-ant-` then ordinary text) is held back and then arrives, so no text is lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.claude.e2e_support import API_KEY, agent_texts, claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
CLIENT_KEY = "sk-ant-client-split-e2e-5647382910"


def split_answer(key: str) -> list[str]:
    return ["Look: sk-", "ant-", "nothing here. The key is ", key[:9], key[9:20], key[20:-1],
            key[-1], " as printed."]


@pytest.mark.parametrize("source", ["environment", "client"])
async def test_a_key_split_across_text_deltas_is_masked(tmp_path: Path, source: str) -> None:
    key = API_KEY if source == "environment" else CLIENT_KEY
    meta = {"claude/credentials": {"ANTHROPIC_API_KEY": CLIENT_KEY}} if source == "client" else {}
    with FakeAnthropicAPI([{"reply_pieces": split_answer(key)}]) as api:
        async with claude_agent(api, tmp_path, capable=True,
                                key=API_KEY if source == "environment" else None) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), **meta)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Say the key"))
    assert result.stop_reason == "end_turn"
    texts = agent_texts(agent, session.session_id)
    assert "".join(texts) == "Look: sk-ant-nothing here. The key is [REDACTED] as printed."
    # Each chunk went out as soon as it could no longer be the key's start: the ordinary text
    # came without waiting for the end of the message.
    assert texts[0] == "Look: "
    assert texts[-1].endswith(" as printed.")
    wire = json.dumps(agent.frames.incoming, ensure_ascii=False)
    assert key not in wire
    assert key[7:] not in "".join(texts)
    assert key not in agent.log_text()
    assert agent.frames.problems == []
