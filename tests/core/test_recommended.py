"""AIR's `recommendedValue`: a select the backend recommends a value of carries it in
`_meta.jetbrains.air.recommendedValue` for a client that declares it; other clients get the
options as offered (pure)."""

from __future__ import annotations

from acp_agent.sessions.switches import shown
from acp_agent.wire import acp
from acp_agent.wire.convert import make_converter

V = acp.ConfigOptionValue
MODEL = acp.ConfigOption("model", "Model", "b", [V("a", "A"), V("b", "B")], recommended="a")
EFFORT = acp.ConfigOption("effort", "Effort", "low", [V("low", "Low")], recommended="high")  # not offered
FAST = acp.ConfigOption("fast-mode", "Fast", "off", [V("off", "Off"), V("on", "On")])


def test_a_declaring_client_gets_the_recommended_value() -> None:
    converter = make_converter()
    [model, effort, fast] = [converter.unstructure(o) for o in shown([MODEL, EFFORT, FAST], False, True)]
    assert model["_meta"] == {"jetbrains": {"air": {"version": 1, "recommendedValue": "a"}}}
    assert (model["currentValue"], [o["value"] for o in model["options"]]) == ("b", ["a", "b"])  # unchanged
    assert "_meta" not in effort  # a value the option does not offer is not recommended
    assert "_meta" not in fast
    assert "recommended" not in model


def test_other_clients_get_the_options_as_offered() -> None:
    converter = make_converter()
    assert [converter.unstructure(o) for o in shown([MODEL, EFFORT], False)] == [
        {"id": "model", "name": "Model", "currentValue": "b", "type": "select",
         "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]},
        {"id": "effort", "name": "Effort", "currentValue": "low", "type": "select",
         "options": [{"value": "low", "name": "Low"}]}]


def test_booleans_and_recommendations_together() -> None:
    [model, fast] = shown([MODEL, FAST], True, True)
    assert isinstance(fast, acp.BooleanConfigOption)
    assert isinstance(model, acp.ConfigOption) and model.meta == {
        "jetbrains": {"air": {"version": 1, "recommendedValue": "a"}}}
