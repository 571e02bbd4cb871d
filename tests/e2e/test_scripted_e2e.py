"""`acp-agent --provider scripted` as a subprocess, driven by the agent-client-protocol SDK client."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from tests.core.test_failures import LEGACY_AIR_SHAPES
from tests.e2e.harness import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

RATE = {"kind": "rate_limited", "native_kind": "rate_limit", "title": "API Error: 429 rate limited",
        "retryable": True}
SCRIPT = {"turns": [
    [{"text": "hello"}],
    [{"retry": "Retrying, attempt 1 of 2.", "kind": "rate_limited"},
     {"retry": "Retrying, attempt 2 of 2.", "kind": "rate_limited"}, {"fail": RATE}],
    [{"notice": "Config warning: model is deprecated", "legacy": "Config warning: model is deprecated\n\n"},
     {"text": "done"}],
]}


def script_env(tmp_path: Path, script: dict[str, Any]) -> dict[str, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return {"ACP_AGENT_SCRIPTED_SCRIPT": str(path)}


def text_prompt(text: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=text)]


async def test_capable_client_sees_typed_records_on_both_carriers(tmp_path: Path) -> None:
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, SCRIPT)) as agent:
        init = await agent.initialize(capable=True)
        assert init.field_meta["jetbrains"]["air"] == {"version": 1, "capabilities": ["sessionFailure"]}
        session = await agent.conn.new_session(cwd=str(tmp_path))
        ok = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
        assert ok.stop_reason == "end_turn"
        failed = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("two"))
        assert failed.stop_reason == "end_turn"
        terminal = failed.field_meta["jetbrains"]["air"]["sessionFailure"]
        noticed = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("three"))
        assert noticed.stop_reason == "end_turn"
    records = agent.frames.failure_records()
    assert [(r["revision"], r["severity"]) for r in records[:3]] == [(1, "warning"), (2, "warning"), (3, "error")]
    assert len({r["id"] for r in records[:3]}) == 1
    assert records[2] == terminal
    assert (terminal["category"], terminal["actions"], terminal["title"]) == ("limit", ["retry"], RATE["title"])
    notice = records[3]
    assert notice["id"].startswith(f"{session.session_id}:notice:")
    assert (notice["severity"], notice["category"], notice["actions"]) == ("warning", "unknown", [])
    assert agent.frames.problems == []


async def test_legacy_client_never_sees_the_extension(tmp_path: Path) -> None:
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, SCRIPT)) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("two"))
        await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("three"))
    assert caught.value.code == -32603
    assert caught.value.data["failure"] == {"kind": "rate_limit", "source": "provider", "retryable": True,
                                            "outcome": "failed", "recovery": "Wait a moment before trying again."}
    assert "sessionFailure" not in agent.frames.text()
    texts = [u["content"]["text"] for u in agent.frames.updates() if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["hello", "Config warning: model is deprecated\n\n", "done"]
    assert agent.frames.problems == []


@pytest.mark.parametrize("air", LEGACY_AIR_SHAPES, ids=[json.dumps(a) for a in LEGACY_AIR_SHAPES])
async def test_malformed_capability_shapes_stay_legacy(tmp_path: Path, air: Any) -> None:
    script = {"turns": [[{"fail": RATE}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        await agent.initialize(capable=False, meta={"jetbrains": {"air": air}})
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError):
            await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("x"))
    incoming = agent.frames.text()
    assert "sessionFailure" not in incoming
    assert agent.frames.problems == []


async def test_malformed_lines_get_errors_and_the_connection_stays_up(tmp_path: Path) -> None:
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, {})) as agent:
        await agent.initialize(capable=False)
        agent.process.stdin.write(b'this is not json\n{"jsonrpc":"2.0","id":"raw-1","method":"no/such"}\n[]\n')
        await agent.process.stdin.drain()
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("still here"))
        assert result.stop_reason == "end_turn"
    errors = [frame["error"]["code"] for frame in agent.frames.incoming if "error" in frame]
    assert sorted(errors) == [-32700, -32601, -32600]
    assert agent.frames.problems == []


async def test_eof_shuts_down_cleanly(tmp_path: Path) -> None:
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, {})) as agent:
        await agent.initialize(capable=False)
        await agent.conn.new_session(cwd=str(tmp_path))
        agent.process.stdin.close()
        with anyio.fail_after(5):
            code = await agent.process.wait()
    assert code == 0


async def test_sigterm_shuts_down_cleanly(tmp_path: Path) -> None:
    script = {"turns": [[{"wait_cancel": True}]]}
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        async with anyio.create_task_group() as tg:

            async def prompt() -> None:
                try:
                    await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("wait"))
                except Exception:  # the connection closes under it: that is the point
                    return

            tg.start_soon(prompt)
            while not any(frame.get("method") == "session/prompt" for frame in agent.frames.outgoing):
                await anyio.wait_all_tasks_blocked()
            agent.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(5):
                code = await agent.process.wait()
            tg.cancel_scope.cancel()
    assert code == 0


RECOVERED_THEN_FAILED = {"turns": [[
    {"retry": "Overloaded, retrying (attempt 1 of 3).", "kind": "overloaded"}, {"text": "partial answer"},
    {"retry": "Overloaded, retrying (attempt 1 of 3).", "kind": "overloaded"}, {"fail": RATE}]]}


@pytest.mark.parametrize("capable", [True, False])
async def test_a_failure_after_a_recovered_retry_is_a_new_entry(tmp_path: Path, capable: bool) -> None:
    """spec/000: once the retry recovered (the model answered), a later failure of the same turn is
    an independent occurrence with its own id; the recovered warning is never updated."""
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, RECOVERED_THEN_FAILED)) as agent:
        await agent.initialize(capable=capable)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        if capable:
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("go"))
            assert result.stop_reason == "end_turn"
        else:
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("go"))
    assert agent.frames.problems == []
    if not capable:
        assert caught.value.code == -32603
        assert "sessionFailure" not in agent.frames.text()
        return
    records = agent.frames.failure_records()
    first = records[0]["id"]
    assert first.endswith(":error")
    assert [(r["id"], r["revision"], r["severity"]) for r in records] == [
        (first, 1, "warning"), (f"{first}:2", 1, "warning"), (f"{first}:2", 2, "error")]
    assert result.field_meta["jetbrains"]["air"]["sessionFailure"] == records[-1]


NOTICE_SCRIPT = {"turns": [[{"notice": "Config warning: model is deprecated", "details": "Use the newer one.",
                             "legacy": "Config warning: model is deprecated\n\n"}, {"text": "done"}]]}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "plain"])
async def test_a_client_that_presents_notices_gets_a_notice_not_a_record_or_text(
        tmp_path: Path, capable: bool) -> None:
    """`clientCapabilities.session.notices`: a backend's notice is a `notice` update, also for a
    client of the failure extension (no advisory record), and no agent text."""
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, NOTICE_SCRIPT)) as agent:
        await agent.initialize(capable=capable, session={"notices": {}})
        session = await agent.conn.new_session(cwd=str(tmp_path))
        done = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
    assert done.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    assert [u for u in updates if u["sessionUpdate"] == "notice"] == [
        {"sessionUpdate": "notice", "severity": "warning", "title": "Config warning: model is deprecated",
         "description": "Use the newer one."}]
    assert [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"] == ["done"]
    assert agent.frames.failure_records() == []
    assert agent.frames.problems == []


USAGE_SCRIPT = {"turns": [
    [{"usage": {"input_tokens": 10, "output_tokens": 2}}, {"text": "a"},
     {"usage": {"input_tokens": 120, "output_tokens": 30, "thought_tokens": 5, "cached_read_tokens": 100}}],
    [{"text": "no usage reported"}],
    [{"usage": {"input_tokens": 7, "output_tokens": 1, "total_tokens": 7}}, {"fail": RATE}],
]}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "plain"])
async def test_the_prompt_answer_carries_the_turns_usage(tmp_path: Path, capable: bool) -> None:
    """`PromptResponse.usage`: the backend's last report of the turn's tokens (total: the sum
    where the backend gives none); nothing when it reported none."""
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, USAGE_SCRIPT)) as agent:
        await agent.initialize(capable=capable)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        first = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
        second = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("two"))
        try:
            third = await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("three"))
        except acp.RequestError as error:
            third = error
    answers = [frame["result"] for frame in agent.frames.incoming
               if "result" in frame and isinstance(frame["result"], dict) and "stopReason" in frame["result"]]
    assert answers[0]["usage"] == {"totalTokens": 255, "inputTokens": 120, "outputTokens": 30, "thoughtTokens": 5,
                                   "cachedReadTokens": 100}
    assert first.usage is not None and first.usage.total_tokens == 255
    assert "usage" not in answers[1] and second.usage is None
    if capable:  # the failed turn's answer is a result with its record, and its usage
        assert answers[2]["usage"] == {"totalTokens": 7, "inputTokens": 7, "outputTokens": 1}
    else:
        assert isinstance(third, acp.RequestError)
    assert agent.frames.problems == []


async def test_chunks_carry_their_message_id_and_a_secret_split_across_them_is_masked(tmp_path: Path) -> None:
    secret = "sk-scripted-secret-0123456789"
    script = {"turns": [[{"thought": "thinking", "message_id": "m1"}, {"text": f"key {secret[:9]}", "message_id": "m1"},
                         {"text": f"{secret[9:]} end", "message_id": "m1"}, {"text": "next", "message_id": "m2"},
                         {"text": "plain"}]]}
    async with spawn_agent("scripted", tmp_path, {**script_env(tmp_path, script), "SCRIPTED_TOKEN": secret}) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("one"))
    chunks = [(u["sessionUpdate"], u.get("messageId"), u["content"]["text"]) for u in agent.frames.updates()
              if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")]
    assert [(kind, message_id) for kind, message_id, _ in chunks] == [
        ("agent_thought_chunk", "m1"), *[("agent_message_chunk", "m1")] * (len(chunks) - 3),
        ("agent_message_chunk", "m2"), ("agent_message_chunk", None)]
    assert "".join(text for _, message_id, text in chunks if message_id == "m1").startswith("thinkingkey ")
    assert secret not in agent.frames.text()
    assert agent.frames.problems == []


@pytest.mark.parametrize("declared", [True, False], ids=["loadReplayEnd", "not-declared"])
async def test_a_load_replay_ends_with_airs_marker_for_a_client_that_declares_it(
        tmp_path: Path, declared: bool) -> None:
    """AIR's `loadReplayEnd`: after the whole replay, before the `session/load` answer, one
    `session_info_update` with `_meta.jetbrains.air.loadReplayEnd: true` (no title, no time)."""
    script = {"history": {"stored": [{"user": "hi"}, {"agent": "hello"}]}}
    capabilities = ["sessionFailure", "loadReplayEnd"] if declared else ["sessionFailure"]
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, script)) as agent:
        await agent.initialize(capable=False, meta={"jetbrains": {"air": {"version": 1, "capabilities": capabilities}}})
        await agent.conn.load_session(session_id="stored", cwd=str(tmp_path), mcp_servers=[])
        frames = list(agent.frames.incoming)
    answer = next(i for i, frame in enumerate(frames) if isinstance(frame.get("result"), dict)
                  and frame is not frames[0])
    updates = [frame["params"]["update"] for frame in frames[:answer] if frame.get("method") == "session/update"]
    end = {"sessionUpdate": "session_info_update", "_meta": {"jetbrains": {"air": {"version": 1, "loadReplayEnd": True}}}}
    kinds = [update["sessionUpdate"] for update in updates]
    if declared:
        assert updates[-1] == end and kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
    else:
        assert end not in updates
    init_meta = frames[0]["result"].get("_meta", {})
    assert "loadReplayEnd" not in str(init_meta)  # the client declares it; the agent does not advertise it
    assert agent.frames.problems == []
