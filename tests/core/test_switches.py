"""`acp_agent.sessions.switches`: on/off options as booleans for the clients that render them (pure)."""

from __future__ import annotations

import pytest

from acp_agent.sessions.switches import requested, shown
from acp_agent.wire import acp
from acp_agent.wire.convert import make_converter
from acp_agent.wire.rpc import RpcError

FAST = acp.ConfigOption("fast-mode", "Fast mode", "off", [acp.ConfigOptionValue("off", "Off"),
                                                        acp.ConfigOptionValue("on", "On")], "Faster", "model_config")
LIGHT = acp.ConfigOption("light", "Light", "on", [acp.ConfigOptionValue("on", "On"), acp.ConfigOptionValue("off", "Off")])
EFFORT = acp.ConfigOption("effort", "Effort", "low", [acp.ConfigOptionValue("low", "Low"),
                                                     acp.ConfigOptionValue("on", "On")])
OPTIONS = [FAST, LIGHT, EFFORT]


def test_switches_are_booleans_only_for_a_client_that_renders_them() -> None:
    assert shown(OPTIONS, False) == OPTIONS
    dumped = [make_converter().unstructure(option) for option in shown(OPTIONS, True)]
    assert dumped[0] == {"id": "fast", "name": "Fast mode", "currentValue": False, "description": "Faster",
                         "category": "model_config", "type": "boolean"}
    assert (dumped[1]["id"], dumped[1]["currentValue"], dumped[1]["type"]) == ("light", True, "boolean")
    assert dumped[2]["type"] == "select"  # not exactly on/off


@pytest.mark.parametrize(("boolean", "request_", "expected"), [
    (True, acp.SetConfigOptionRequest("s", "fast", True, "boolean"), ("fast-mode", "on")),
    (True, acp.SetConfigOptionRequest("s", "fast", False, "boolean"), ("fast-mode", "off")),
    (True, acp.SetConfigOptionRequest("s", "fast", "on"), ("fast-mode", "on")),
    (True, acp.SetConfigOptionRequest("s", "light", True, "boolean"), ("light", "on")),
    (False, acp.SetConfigOptionRequest("s", "fast-mode", True, "boolean"), ("fast-mode", "on")),
    (False, acp.SetConfigOptionRequest("s", "effort", "low"), ("effort", "low")),
])
def test_a_set_reaches_the_runtime_under_its_own_id_and_values(
        boolean: bool, request_: acp.SetConfigOptionRequest, expected: tuple[str, str]) -> None:
    assert requested(OPTIONS, request_, boolean) == expected


@pytest.mark.parametrize("request_", [
    acp.SetConfigOptionRequest("s", "fast", "on", "boolean"),
    acp.SetConfigOptionRequest("s", "effort", True, "boolean"),
    acp.SetConfigOptionRequest("s", "nothing", True, "boolean"),
    acp.SetConfigOptionRequest("s", "effort", True),
])
def test_a_value_of_the_wrong_kind_is_invalid_params(request_: acp.SetConfigOptionRequest) -> None:
    with pytest.raises(RpcError) as caught:
        requested(OPTIONS, request_, True)
    assert caught.value.code == -32602
