"""After a compaction, the client learns the context's new size (issue 12).

codex 0.163 reports `thread/tokenUsage/updated` while it compacts: the compaction request's own
usage, then the compacted history's size (`last.totalTokens`, with no input sent), before the
`contextCompaction` item completes. The agent publishes each as `usage_update`, so the last one a
client sees when the "Compact conversation" call completes is the context after compaction.
Real codex against the fake Responses API, which answers the compaction request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])


def around_compaction(updates: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The `used` of the usage updates before the compaction started, and of those while it ran."""
    start = next(i for i, u in enumerate(updates) if u["sessionUpdate"] == "tool_call"
                 and u["title"] == "Compact conversation")
    call_id = updates[start]["toolCallId"]
    end = next(i for i, u in enumerate(updates) if i > start and u.get("toolCallId") == call_id
               and u.get("status") == "completed")
    used = [(i, u["used"]) for i, u in enumerate(updates) if u["sessionUpdate"] == "usage_update"]
    return [n for i, n in used if i < start], [n for i, n in used if start < i < end]


@BOTH
async def test_automatic_compaction_publishes_the_compacted_context_size(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "first answer"}, {"reply": "second answer"}]) as api:
        home = write_codex_home(api, tmp_path, top="model_auto_compact_token_limit = 2000\n")
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("second"))
    assert outcome.stop_reason == "end_turn"
    assert [r.request_kind for r in api.side_requests] == ["compaction"]
    assert agent.frames.problems == []
    before, during = around_compaction(agent.frames.updates(sid))
    assert during and during[-1] < before[-1]  # the history was replaced by its summary


@BOTH
async def test_compact_command_publishes_the_compacted_context_size(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "first answer"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("/compact"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    before, during = around_compaction(agent.frames.updates(sid))
    assert during and during[-1] < before[-1]


@BOTH
async def test_each_prompt_answer_carries_its_own_turns_tokens(tmp_path: Path, capable: bool) -> None:
    """`PromptResponse.usage`: what the turn itself used (app-server's `tokenUsage.total` minus
    its value when the turn began), as codex-acp reads it; the model API's own figures."""
    with FakeResponsesAPI([{"reply": "first answer"}, {"reasoning": "Thinking it over.", "reply": "second answer"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            first = await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            second = await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
        sent = [request.body for request in api.turn_requests]
    answers = [frame["result"] for frame in agent.frames.incoming
               if isinstance(frame.get("result"), dict) and "stopReason" in frame["result"]]
    assert len(sent) == 2 and len(answers) == 2
    for answer in answers:
        usage = answer["usage"]
        assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] > 0
    assert first.usage is not None and second.usage is not None
    assert answers[1]["usage"]["thoughtTokens"] == 5
    assert answers[1]["usage"]["outputTokens"] == 7 + 5  # the fake's figures for this turn alone
    assert agent.frames.problems == []
