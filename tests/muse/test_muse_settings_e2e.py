"""Muse reasoning effort and workspace roots through `acp-agent --provider muse` and the fake MSP host.

MSP's `model/list` describes each model's reasoning-effort tiers, and `turn/start` takes a
`reasoningEffort` and `workspaceRoots`: what the fake host received proves what reached it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.muse.e2e_support import muse_agent, received, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


def ids(options: Any) -> list[str]:
    return [o.id for o in options or []]


def effort_of(options: Any) -> str:
    return next(o.current_value for o in options if o.id == "reasoning_effort")


@BOTH
async def test_effort_is_offered_for_models_with_tiers_and_reaches_turn_start(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        await agent.conn.prompt(session_id=sid, prompt=text("host default"))
        small = await agent.conn.set_config_option(session_id=sid, config_id="model", value="muse-small")
        high = await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="high")
        await agent.conn.prompt(session_id=sid, prompt=text("high effort"))
        large = await agent.conn.set_config_option(session_id=sid, config_id="model", value="muse-large")
        await agent.conn.prompt(session_id=sid, prompt=text("large again"))
    # muse-large has no tiers in the fake catalog; muse-small has low (its default), medium, high
    assert ids(session.config_options) == ["model"]
    assert ids(small.config_options) == ["model", "reasoning_effort"] and effort_of(small.config_options) == "low"
    effort = next(o for o in high.config_options if o.id == "reasoning_effort")
    assert [v.value for v in effort.options] == ["low", "medium", "high"] and effort.current_value == "high"
    assert ids(large.config_options) == ["model"]
    sent = [frame["params"].get("reasoningEffort") for frame in received(tmp_path, "turn/start")]
    assert sent == [None, "high", None]
    assert agent.frames.problems == []


@pytest.mark.parametrize("how", ["resume", "load", "fork"])
async def test_a_chosen_effort_is_kept_when_the_session_is_reopened(tmp_path: Path, how: str) -> None:
    async with muse_agent(tmp_path, capable=True) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        await agent.conn.set_config_option(session_id=sid, config_id="model", value="muse-small")
        await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="medium")
        await agent.conn.prompt(session_id=sid, prompt=text("medium"))
        if how == "fork":
            reopened: Any = await agent.conn.fork_session(cwd=str(tmp_path), session_id=sid)
            sid = reopened.session_id
        else:
            await agent.conn.close_session(session_id=sid)
            call = agent.conn.resume_session if how == "resume" else agent.conn.load_session
            reopened = await call(cwd=str(tmp_path), session_id=sid)
        await agent.conn.prompt(session_id=sid, prompt=text("after reopening"))
    assert effort_of(reopened.config_options) == "medium"
    assert [frame["params"].get("reasoningEffort") for frame in received(tmp_path, "turn/start")] == ["medium"] * 2
    assert agent.frames.problems == []


@pytest.mark.parametrize("uses", [True, False], ids=["with-directories", "without"])
async def test_additional_directories_are_workspace_roots(tmp_path: Path, uses: bool) -> None:
    work, extra = tmp_path / "work", tmp_path / "extra"
    work.mkdir()
    extra.mkdir()
    async with muse_agent(tmp_path, capable=True) as agent:
        caps = [frame["result"]["agentCapabilities"] for frame in agent.frames.incoming
                if isinstance(frame.get("result"), dict) and "agentCapabilities" in frame["result"]]
        session = await agent.conn.new_session(cwd=str(work), additional_directories=[str(extra)] if uses else None)
        await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
    expected = [str(work), str(extra)] if uses else None
    assert caps[0]["sessionCapabilities"]["additionalDirectories"] == {}
    assert [f["params"].get("workspaceRoots") for f in received(tmp_path, "session/start")] == [expected]
    assert [f["params"].get("workspaceRoots") for f in received(tmp_path, "turn/start")] == [expected]
    assert agent.frames.problems == []
