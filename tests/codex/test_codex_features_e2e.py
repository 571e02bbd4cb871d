"""Terminals, compaction, titles and questions through `acp-agent --provider codex` (issue 12).

The backend is the real `codex app-server` against the loopback fake Responses API, scripted to
call codex's own tools. Each feature runs for a client that opts in and for one that does not;
every frame the agent writes is validated against the ACP SDK's models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.codex.e2e_support import codex_agent, stand_in_env, text, workspace, write_codex_home
from tests.e2e.harness import spawn_agent
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

TERMINAL_CLIENTS = [pytest.param({"terminal_output_delta": True}, id="terminal_output_delta"),
                    pytest.param({"terminal_output": True}, id="terminal_output"),
                    pytest.param({}, id="no-terminal")]


def tool_updates(updates: list[dict[str, Any]], tool_call_id: str) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("toolCallId") == tool_call_id]


def chunk_of(update: dict[str, Any]) -> dict[str, Any] | None:
    meta = update.get("_meta") or {}
    return meta.get("terminal_output_delta") or meta.get("terminal_output")


@pytest.mark.parametrize("meta", TERMINAL_CLIENTS)
async def test_a_slow_shell_command_streams_into_a_terminal(tmp_path: Path, meta: dict[str, Any]) -> None:
    """The command prints `tick` until a file exists that the test creates only once it saw a tick
    on the wire: the output reached the client while the command still ran. (It keeps printing
    because codex 0.163 sometimes leaves output written right at the start out of its deltas; the
    final `aggregatedOutput` has it all.)"""
    work = Path(workspace(tmp_path))
    gate = work / "go"
    script = f"while [ ! -f {gate} ]; do echo tick; sleep 0.1; done; echo second"
    with FakeResponsesAPI([{"shell": ["bash", "-lc", script]}, {"reply": "all done"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=meta) as agent:
            session = await agent.conn.new_session(cwd=str(work))
            sid = session.session_id

            def shows_first(frame: dict[str, Any]) -> bool:
                update = (frame.get("params") or {}).get("update") or {}
                if frame.get("method") != "session/update" or update.get("sessionUpdate") != "tool_call_update":
                    return False
                chunk = chunk_of(update)
                if chunk is not None:
                    return "tick" in chunk["data"]
                return any("tick" in (c.get("content") or {}).get("text", "") for c in update.get("content") or [])

            async def open_the_gate() -> None:
                await agent.watched.wait_for(shows_first, timeout_s=60)
                gate.write_text("")

            async with anyio.create_task_group() as tg:
                tg.start_soon(open_the_gate)
                outcome = await agent.conn.prompt(session_id=sid, prompt=text("run it"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = agent.frames.updates(sid)
    call = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    call_id = call["toolCallId"]
    later = tool_updates(updates, call_id)[1:]
    final = later[-1]
    assert final["status"] == "completed"
    if meta:
        assert call["content"] == [{"type": "terminal", "terminalId": call_id}]
        assert call["_meta"]["terminal_info"]["terminal_id"] == call_id
        assert call["_meta"]["terminal_info"]["cwd"] == str(work)
        key = next(iter(meta))
        chunks = [u["_meta"][key] for u in later if key in (u.get("_meta") or {})]
        assert all(chunk["terminal_id"] == call_id for chunk in chunks)
        streamed = "".join(chunk["data"] for chunk in chunks)
        assert "tick\n" in streamed and streamed.endswith("tick\nsecond\n")
        assert len(chunks) >= 2  # a tick went out before "second" existed
        assert final["_meta"]["terminal_exit"] == {"terminal_id": call_id, "exit_code": 0, "signal": None}
        assert final["content"] == [{"type": "terminal", "terminalId": call_id}]
        assert "rawOutput" not in final
    else:  # today's rendering: the output so far as text, the exit code in rawOutput
        assert "content" not in call or call["content"] == []
        assert not any("terminal" in key for u in tool_updates(updates, call_id) for key in (u.get("_meta") or {}))
        texts = [u["content"][0]["content"]["text"] for u in later if u.get("content")]
        assert "second" not in texts[0] and texts[-1].endswith("tick\nsecond\n")
        assert final["rawOutput"]["exitCode"] == 0 and final["rawOutput"]["output"] == texts[-1]


# --- compaction ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_automatic_compaction_is_a_compact_conversation_tool_call(tmp_path: Path, capable: bool) -> None:
    """A low auto-compact limit makes codex compact before the second turn's sampling request."""
    with FakeResponsesAPI([{"reply": "first answer"}, {"reply": "second answer"}]) as api:
        home = write_codex_home(api, tmp_path, top="model_auto_compact_token_limit = 2000\n")
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            before = len(agent.frames.updates(sid))
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("second"))
    assert outcome.stop_reason == "end_turn"
    assert [r.request_kind for r in api.side_requests] == ["compaction"]
    assert agent.frames.problems == []
    updates = agent.frames.updates(sid)[before:]
    start = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    assert (start["title"], start["kind"], start["status"]) == ("Compact conversation", "think", "in_progress")
    done = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == start["toolCallId"]]
    assert [u["status"] for u in done] == ["completed"]
    for report in (start, *done):
        if capable:
            assert report["_meta"]["jetbrains"]["air"]["contextCompaction"] == {"version": 1}
        else:
            assert "_meta" not in report
    texts = "".join(u["content"]["text"] for u in agent.frames.updates(sid) if u["sessionUpdate"] == "agent_message_chunk")
    assert "compacted" not in texts.lower()  # no longer the italic line
    assert "second answer" in texts
    if not capable:
        assert "sessionFailure" not in agent.frames.text()


# --- questions -----------------------------------------------------------------------------------------------

ASK = {"function_call": {"name": "request_user_input", "arguments": {"questions": [
    {"id": "color", "header": "Color", "question": "Which color?",
     "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}]}]}}}
FORM = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())


def answer_codex_got(api: FakeResponsesAPI) -> Any:
    """What the model read back as the request_user_input tool's output."""
    body = api.turn_requests[1].body or {}
    [output] = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    return json.loads(output)


async def ask_once(tmp_path: Path, **client: Any) -> tuple[Any, FakeResponsesAPI, Any]:
    """One turn in which the model asks a question (codex offers request_user_input outside plan
    mode only with `features.default_mode_request_user_input`)."""
    with FakeResponsesAPI([ASK, {"reply": "noted"}]) as api:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace("[features]\n", "[features]\ndefault_mode_request_user_input = true\n"))
        answer = client.pop("answer")
        async with codex_agent(home, tmp_path, capable=False, **client) as agent:
            if client.get("elicitation") is not None:
                agent.client.elicitation = answer
            else:
                agent.client.permission = answer
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    return agent, api, session.session_id


@pytest.mark.parametrize(("response", "expected"), [
    (schema.AcceptElicitationResponse(action="accept", content={"color": "Red"}), {"color": {"answers": ["Red"]}}),
    (schema.DeclineElicitationResponse(action="decline"), {}),
    (schema.CancelElicitationResponse(action="cancel"), {}),
], ids=["accept", "decline", "cancel"])
async def test_a_question_is_an_elicitation_for_a_client_that_offers_it(tmp_path: Path, response: Any,
                                                                          expected: Any) -> None:
    agent, api, _ = await ask_once(tmp_path, elicitation=FORM, answer=lambda message, mode: response)
    [(message, mode)] = agent.client.elicitations
    assert message == "Which color?"
    field = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)["properties"]["color"]
    assert field["title"] == "Color" and field["type"] == "string"
    assert [(o["const"], o.get("description")) for o in field["oneOf"]] == [("Blue", "cool"), ("Red", "warm")]
    assert agent.client.permission_requests == []
    assert answer_codex_got(api) == {"answers": expected}


@pytest.mark.parametrize(("choose", "expected"), [
    (lambda options: options[0].option_id, {"color": {"answers": ["Blue"]}}),
    (lambda options: "decline", {}),
    (lambda options: None, {}),
], ids=["answer", "decline", "dismiss"])
async def test_a_question_is_a_permission_whose_options_are_the_answers_otherwise(tmp_path: Path, choose: Any,
                                                                                    expected: Any) -> None:
    agent, api, sid = await ask_once(tmp_path, answer=choose)
    [(tool_call, options)] = agent.client.permission_requests
    assert tool_call.title == "Which color?"
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("choice-0", "Blue", "allow_once"), ("choice-1", "Red", "allow_once"), ("decline", "Decline", "reject_once")]
    assert agent.client.elicitations == []
    assert answer_codex_got(api) == {"answers": expected}
    reports = [u for u in agent.frames.updates(sid) if u.get("toolCallId") == tool_call.tool_call_id]
    assert reports[0]["sessionUpdate"] == "tool_call" and reports[0]["status"] == "pending"
    assert reports[-1]["status"] == ("completed" if expected else "failed")


async def test_cancel_while_a_question_is_open_declines_it_and_ends_the_turn(tmp_path: Path) -> None:
    with FakeResponsesAPI([ASK, {"reply": "noted"}]) as api:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace("[features]\n", "[features]\ndefault_mode_request_user_input = true\n"))
        async with codex_agent(home, tmp_path, capable=False, elicitation=FORM) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            prompt_done = anyio.Event()

            async def cancel_instead(message: str, mode: Any) -> Any:
                await agent.conn.cancel(session_id=session.session_id)
                await prompt_done.wait()  # the agent stopped waiting for this answer by itself
                return schema.AcceptElicitationResponse(action="accept", content={"color": "Blue"})

            agent.client.elicitation = cancel_instead
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("ask me"))
            prompt_done.set()
    assert outcome.stop_reason == "cancelled"
    assert len(agent.client.elicitations) == 1
    assert agent.frames.problems == []


# --- titles ----------------------------------------------------------------------------------------------------


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": {"threadId": "$THREAD", **params}}


NAMED_TURN = {"turn/start": {"after": [
    note("turn/started", turn={"id": "turn-1", "status": "inProgress"}),
    note("thread/name/updated", threadName="Fix the\nlogin  test"),
    note("turn/completed", turn={"id": "turn-1", "status": "completed", "error": None}),
    note("thread/name/updated", threadName="Login test, renamed"),
]}}


@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_thread_names_become_session_titles_in_and_between_turns(tmp_path: Path, capable: bool) -> None:
    """A stand-in app-server plays the notifications here, in and between turns (the agent's own
    naming of a new thread with the real binary is in test_codex_titles_e2e.py)."""
    env = stand_in_env(tmp_path, STAND_IN_SCRIPT=json.dumps(NAMED_TURN))
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=capable)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
        await agent.conn.list_sessions()  # answered after the agent handled what app-server sent before it
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    titles = [u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in titles] == ["Fix the login test", "Login test, renamed"]
    assert all(isinstance(u["updatedAt"], str) for u in titles)
    if not capable:
        assert "sessionFailure" not in agent.frames.text()


@pytest.mark.parametrize("meta", TERMINAL_CLIENTS)
async def test_a_loaded_thread_replays_its_commands_as_finished_terminals(tmp_path: Path, meta: dict[str, Any]) -> None:
    with FakeResponsesAPI([{"shell": ["bash", "-lc", "echo stored; exit 3"]}, {"reply": "it failed"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=False, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("run it"))
        async with codex_agent(home, tmp_path, capable=False, meta=meta, log_name="second") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
    assert second.frames.problems == []
    replay = [u for u in second.frames.updates(session.session_id) if "toolCallId" in u]
    call = replay[0]
    assert (call["sessionUpdate"], call["status"], call["kind"]) == ("tool_call", "failed", "execute")  # exit 3
    call_id = call["toolCallId"]
    if meta:
        key = next(iter(meta))
        assert call["content"] == [{"type": "terminal", "terminalId": call_id}]
        [data] = [u["_meta"][key]["data"] for u in replay[1:] if key in u.get("_meta", {})]
        assert data.endswith("stored\n")  # (a login shell may print its own warnings first)
        assert replay[-1]["_meta"]["terminal_exit"] == {"terminal_id": call_id, "exit_code": 3, "signal": None}
    else:  # as before: the one finished tool call with its output
        assert replay == [call]
        assert call["content"][0]["content"]["text"].endswith("stored\n")


@pytest.mark.parametrize("meta", TERMINAL_CLIENTS)
async def test_cancel_during_a_command_ends_its_terminal(tmp_path: Path, meta: dict[str, Any]) -> None:
    """codex abandons a command it interrupts without `item/completed`; a terminal client still
    sees its terminal end (failed, exit code unknown); other clients see what they saw before."""
    work = Path(workspace(tmp_path))
    script = f"while [ ! -f {work / 'never'} ]; do echo tick; sleep 0.1; done"
    with FakeResponsesAPI([{"shell": ["bash", "-lc", script]}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=meta) as agent:
            session = await agent.conn.new_session(cwd=str(work))
            sid = session.session_id

            async def cancel_once_running() -> None:
                await agent.watched.wait_for(lambda f: ((f.get("params") or {}).get("update") or {}).get(
                    "sessionUpdate") == "tool_call", timeout_s=60)
                await agent.conn.cancel(session_id=sid)

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_once_running)
                outcome = await agent.conn.prompt(session_id=sid, prompt=text("run forever"))
    assert outcome.stop_reason == "cancelled"
    assert agent.frames.problems == []
    updates = agent.frames.updates(sid)
    call = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    reports = [u for u in updates if u.get("toolCallId") == call["toolCallId"]]
    if meta:
        assert reports[-1]["status"] == "failed"
        assert reports[-1]["_meta"]["terminal_exit"] == {"terminal_id": call["toolCallId"], "exit_code": None,
                                                         "signal": None}
    else:
        assert not any(u.get("status") in ("completed", "failed") for u in reports)
