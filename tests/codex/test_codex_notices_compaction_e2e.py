"""Notices with severities (a model reroute among them) and compaction replay, through
`acp-agent --provider codex` against the real app-server (issue 27 items 1 and 2).

The fake Responses API answers with another model than the one asked for (`served_model`: the
`openai-model` header); the real codex 0.163 then sends `model/rerouted` and a `warning`. A client
with `session.notices` gets both as `notice` updates (info, warning); a plain client keeps today's
frames (the warning as text, nothing for the reroute). A `/compact`ed thread's compaction replays
on `session/load` as a completed one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, is_notice_text, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
REROUTED = "Model rerouted from gpt-5.5 to gpt-5.4-mini"
FLAGGED = "Your account was flagged for potentially high-risk cyber activity"


@pytest.mark.parametrize("notices", [True, False], ids=["notices", "plain"])
async def test_a_model_reroute_is_an_info_notice(tmp_path: Path, notices: bool) -> None:
    with FakeResponsesAPI([{"reply": "answered", "served_model": "gpt-5.4-mini"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, session={"notices": {}} if notices else None) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert outcome.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    shown = [u for u in updates if u["sessionUpdate"] == "notice"]
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    if notices:
        reroute = next(u for u in shown if u["title"] == REROUTED)
        assert reroute["severity"] == "info"
        assert reroute["description"] == ("Codex answered with gpt-5.4-mini: the request was flagged for "
                                          "potentially high-risk cyber activity.")
        assert [u["severity"] for u in shown if u["title"].startswith(FLAGGED)] == ["warning"]
        assert texts == ["answered"]
    else:  # today's frames: codex's warning as text, the reroute not at all
        assert shown == []
        assert [t for t in texts if t.startswith(f"Warning: {FLAGGED}")]
        assert not any("rerouted" in t for t in texts)
        assert [t for t in texts if not is_notice_text(t)] == ["answered"]
    assert agent.frames.failure_records() == []
    assert agent.frames.problems == []


def compactions(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(u["compactionId"], u["status"]) for u in updates if u["sessionUpdate"] == "compaction_update"]


@pytest.mark.parametrize("compaction", [True, False], ids=["compaction", "plain"])
async def test_a_stored_compaction_replays_as_a_completed_one(tmp_path: Path, compaction: bool) -> None:
    caps = {"compaction": {}} if compaction else None
    with FakeResponsesAPI([{"reply": "first answer"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=False, session=caps, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("first"))
            await first.conn.prompt(session_id=session.session_id, prompt=text("/compact"))
        async with codex_agent(home, tmp_path, capable=False, session=caps, log_name="second") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
    live, replayed = first.frames.updates(session.session_id), second.frames.updates(session.session_id)
    if compaction:
        assert [status for _, status in compactions(live)] == ["in_progress", "completed"]
        assert compactions(replayed) == compactions(live)
        assert not any(u["sessionUpdate"] == "tool_call" for u in replayed)
    else:
        def calls(updates: list[dict[str, Any]]) -> list[str]:
            return [u["toolCallId"] for u in updates if u["sessionUpdate"] == "tool_call"
                    and u["title"] == "Compact conversation"]
        assert calls(replayed) == calls(live) and len(calls(live)) == 1
        assert [u["status"] for u in replayed if u["sessionUpdate"] == "tool_call"] == ["completed"]
        assert compactions(replayed) == []
    assert first.frames.problems == [] and second.frames.problems == []
