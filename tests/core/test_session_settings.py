"""`session/set_mode` and `session/set_config_option` are checked by the core against what the
session advertised, so a runtime never sees (nor has to refuse) a mode or value it did not offer."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from acp_agent.testing import run_in_process
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()
OFFERS = {"modes": ["ask", "code"], "models": ["small", "large"]}


def runtime_of(client: Any) -> ScriptedRuntime:
    host = client.agent._opening
    assert host is not None and isinstance(host.runtime, ScriptedRuntime)
    return host.runtime


async def refused(client: Any, method: str, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await client.request(method, params)
    return caught.value


async def test_an_unknown_mode_is_invalid_params_and_never_reaches_the_runtime() -> None:
    async with run_in_process(make_spec(dict(OFFERS))) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        error = await refused(client, "session/set_mode", {"sessionId": session_id, "modeId": "yolo"})
        changed = await client.request("session/set_mode", {"sessionId": session_id, "modeId": "code"})
        calls = runtime_of(client).settings_calls
    assert (error.code, error.data) == (-32602, {"field": "modeId"})
    assert error.message == "Unknown mode 'yolo'; choose one of ask, code."
    assert changed == {}
    assert calls == [("mode", session_id, "code")]
    modes = [u["currentModeId"] for u in client.session_updates(session_id) if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["code"]


async def test_an_unknown_option_or_value_is_invalid_params_naming_the_field() -> None:
    async with run_in_process(make_spec(dict(OFFERS))) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        option = await refused(client, "session/set_config_option",
                               {"sessionId": session_id, "configId": "effort", "value": "high"})
        value = await refused(client, "session/set_config_option",
                              {"sessionId": session_id, "configId": "model", "value": "huge"})
        changed = await client.request("session/set_config_option",
                                       {"sessionId": session_id, "configId": "model", "value": "large"})
        calls = runtime_of(client).settings_calls
    assert (option.code, option.data) == (-32602, {"field": "configId"})
    assert option.message == "Unknown config option 'effort'; choose one of model."
    assert (value.code, value.data) == (-32602, {"field": "value"})
    assert value.message == "Unknown value 'huge' for Model; choose one of small, large."
    assert changed["configOptions"][0]["currentValue"] == "large"
    assert calls == [("option", session_id, "model", "large")]


async def test_a_session_that_offers_nothing_refuses_every_mode_and_option() -> None:
    async with run_in_process(make_spec({})) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        mode = await refused(client, "session/set_mode", {"sessionId": session_id, "modeId": "ask"})
        option = await refused(client, "session/set_config_option",
                               {"sessionId": session_id, "configId": "model", "value": "small"})
        calls = runtime_of(client).settings_calls
    assert (mode.code, mode.data, option.code, option.data) == (-32602, {"field": "modeId"}, -32602,
                                                                {"field": "configId"})
    assert mode.message.endswith("this session offers none.")
    assert calls == []


async def test_what_the_last_set_config_option_returned_is_what_counts() -> None:
    script = {**OFFERS, "models_after_set": ["large", "huge"]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        await client.request("session/set_config_option", {"sessionId": session_id, "configId": "model",
                                                           "value": "large"})
        gone = await refused(client, "session/set_config_option",
                             {"sessionId": session_id, "configId": "model", "value": "small"})
        await client.request("session/set_config_option", {"sessionId": session_id, "configId": "model",
                                                           "value": "huge"})
        calls = runtime_of(client).settings_calls
    assert (gone.code, gone.data) == (-32602, {"field": "value"})
    assert [call[-1] for call in calls] == ["large", "huge"]


async def test_options_a_provider_announces_during_a_turn_count_too() -> None:
    script = {**OFFERS, "turns": [[{"offer_models": ["small", "huge"]}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        session_id = await client.new_session(CWD)
        await client.prompt(session_id, "hi")
        accepted = await client.request("session/set_config_option",
                                        {"sessionId": session_id, "configId": "model", "value": "huge"})
        gone = await refused(client, "session/set_config_option",
                             {"sessionId": session_id, "configId": "model", "value": "large"})
    assert accepted["configOptions"][0]["currentValue"] == "huge"
    assert gone.data == {"field": "value"}


@pytest.mark.parametrize("method", ["session/load", "session/resume", "session/fork"])
async def test_loaded_resumed_and_forked_sessions_are_checked_against_their_own_offer(method: str) -> None:
    script = {**OFFERS, "history": {"stored": [{"user": "hi"}]}}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        if method == "session/fork":
            source = await client.new_session(CWD)
            opened = await client.request(method, {"sessionId": source, "cwd": CWD, "mcpServers": []})
            session_id = opened["sessionId"]
        else:
            opened = await client.request(method, {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
            session_id = "stored"
        error = await refused(client, "session/set_mode", {"sessionId": session_id, "modeId": "yolo"})
        await client.request("session/set_mode", {"sessionId": session_id, "modeId": "ask"})
        calls = runtime_of(client).settings_calls
    assert [mode["id"] for mode in opened["modes"]["availableModes"]] == ["ask", "code"]
    assert error.data == {"field": "modeId"}
    assert calls == [("mode", session_id, "ask")]


async def test_an_unknown_session_is_still_not_found_before_any_check() -> None:
    async with run_in_process(make_spec(dict(OFFERS))) as client:
        await client.initialize()
        error = await refused(client, "session/set_mode", {"sessionId": "nope", "modeId": "yolo"})
    assert (error.code, error.data) == (-32002, {"field": "sessionId"})


async def choose(client: Any, session_id: str, *choices: tuple[str, str]) -> None:
    for what, value in choices:
        if what == "mode":
            await client.request("session/set_mode", {"sessionId": session_id, "modeId": value})
        else:
            await client.request("session/set_config_option",
                                 {"sessionId": session_id, "configId": what, "value": value})


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_what_the_user_chose_comes_back_when_a_closed_session_is_reopened(method: str) -> None:
    """The core keeps the choices (the runtime keeps nothing of a closed session) and hands them to
    the runtime again once the session is reopened, in the order they were last made."""
    script = {**OFFERS, "history": {"stored": [{"user": "hi"}]}}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        opened = await client.request(method, {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        await choose(client, "stored", ("model", "large"), ("mode", "code"), ("model", "small"))
        await client.request("session/close", {"sessionId": "stored"})
        runtime = runtime_of(client)
        runtime.model = None  # (the scripted backend would remember the model itself)
        before = len(runtime.settings_calls)
        reopened = await client.request(method, {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        calls = runtime.settings_calls[before:]
    assert opened["modes"]["currentModeId"] == "ask"
    assert calls == [("mode", "stored", "code"), ("option", "stored", "model", "small")]
    assert reopened["modes"]["currentModeId"] == "code"
    assert reopened["configOptions"][0]["currentValue"] == "small"


async def test_a_fork_runs_with_the_choices_of_its_source() -> None:
    async with run_in_process(make_spec(dict(OFFERS))) as client:
        await client.initialize()
        source = await client.new_session(CWD)
        await choose(client, source, ("mode", "code"))
        forked = await client.request("session/fork", {"sessionId": source, "cwd": CWD, "mcpServers": []})
        calls = runtime_of(client).settings_calls
    assert calls == [("mode", source, "code"), ("mode", forked["sessionId"], "code")]
    assert forked["modes"]["currentModeId"] == "code"


async def test_a_choice_the_reopened_session_no_longer_offers_is_left_out() -> None:
    script = {**OFFERS, "history": {"stored": [{"user": "hi"}]}}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        await choose(client, "stored", ("mode", "code"), ("model", "large"))
        await client.request("session/close", {"sessionId": "stored"})
        runtime = runtime_of(client)
        script["modes"], runtime.model = ["ask"], None
        before = len(runtime.settings_calls)
        reopened = await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        calls = runtime.settings_calls[before:]
    assert calls == [("option", "stored", "model", "large")]
    assert reopened["modes"]["currentModeId"] == "ask"
    assert reopened["configOptions"][0]["currentValue"] == "large"


async def test_a_mode_the_backend_switched_to_is_the_one_that_comes_back() -> None:
    """A mode the runtime announced itself (a plan approved with a mode to go on in, say) is the
    session's latest choice: a reopened session goes on in it, not in the one set before."""
    script = {**OFFERS, "history": {"stored": [{"user": "hi"}]}, "turns": [[{"switch_mode": "ask"}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize()
        await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        await choose(client, "stored", ("mode", "code"))
        await client.prompt("stored", "plan it")
        await client.request("session/close", {"sessionId": "stored"})
        runtime = runtime_of(client)
        before = len(runtime.settings_calls)
        reopened = await client.request("session/resume", {"sessionId": "stored", "cwd": CWD, "mcpServers": []})
        calls = runtime.settings_calls[before:]
    assert calls == [("mode", "stored", "ask")]
    assert reopened["modes"]["currentModeId"] == "ask"
