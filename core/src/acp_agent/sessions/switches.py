"""On/off options as switches, for clients that declare `session.configOptions.boolean`.

A runtime offers every option as a select. One whose values are exactly `on` and `off` is a
switch: a client that renders boolean options gets it as `{type: "boolean", currentValue}` (fast
mode under claude-agent-acp's id `fast`), and may set it with `{type: "boolean", value: true}`;
the runtime still sees its own id and `on`/`off`. Every other client gets the select as offered.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from acp_agent.wire import acp
from acp_agent.wire.convert import clip
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

ON, OFF = "on", "off"
SHOWN_IDS = {"fast-mode": "fast"}
"""A runtime's switch ids that the reference adapters name otherwise (claude-agent-acp: `fast`)."""


def is_switch(option: acp.ConfigOption) -> bool:
    return sorted(choice.value for choice in option.options) == [OFF, ON]


def shown(options: Sequence[acp.ConfigOption | acp.BooleanConfigOption],
          boolean: bool, recommended: bool = False) -> list[acp.ConfigOption | acp.BooleanConfigOption]:
    """The options as the client sees them: switches as booleans for a `boolean` client; for a
    client of AIR's `recommendedValue` (`recommended`), a select whose backend recommends one of
    its values carries it in `_meta.jetbrains.air.recommendedValue`, as codex-acp sends it."""
    if recommended:
        options = [_recommending(option) if isinstance(option, acp.ConfigOption) else option
                   for option in options]
    if not boolean:
        return list(options)
    return [acp.BooleanConfigOption(SHOWN_IDS.get(option.id, option.id), option.name, option.current_value == ON,
                                    option.description, option.category)
            if isinstance(option, acp.ConfigOption) and is_switch(option) else option for option in options]


def _recommending(option: acp.ConfigOption) -> acp.ConfigOption:
    value = option.recommended
    if value is None or all(choice.value != value for choice in option.options):
        return option
    meta = dict(option.meta) if isinstance(option.meta, dict) else {}
    jetbrains = dict(meta.get("jetbrains") or {})
    jetbrains["air"] = {**(jetbrains.get("air") or {}), "version": 1, "recommendedValue": value}
    return attrs.evolve(option, meta={**meta, "jetbrains": jetbrains})


def requested(options: Sequence[acp.ConfigOption], request: acp.SetConfigOptionRequest,
              boolean: bool) -> tuple[str, str]:
    """The runtime's (option id, value) for a `session/set_config_option`; -32602 for a value of
    the wrong type. An unknown id or value is left to `choices.check_option` to name."""
    if request.type == "boolean":
        if not isinstance(request.value, bool):
            raise RpcError(INVALID_PARAMS, "A boolean option's value is true or false", {"field": "value"})
        wanted = {SHOWN_IDS.get(option.id, option.id) if boolean else option.id: option
                  for option in options if is_switch(option)}
        option = wanted.get(request.config_id)
        if option is None:
            kind = "a boolean option" if any(o.id == request.config_id for o in options) else "an option"
            raise RpcError(INVALID_PARAMS, f"{clip(request.config_id)!r} is not {kind} of this session",
                           {"field": "configId"})
        return option.id, ON if request.value else OFF
    if not isinstance(request.value, str):
        raise RpcError(INVALID_PARAMS, "A select option's value is a string (a boolean option's: "
                       "type \"boolean\" with true or false)", {"field": "value"})
    if boolean:  # a switch set by the id the client was shown, with on/off
        ids = {SHOWN_IDS[option.id]: option.id for option in options if is_switch(option) and option.id in SHOWN_IDS}
        return ids.get(request.config_id, request.config_id), request.value
    return request.config_id, request.value
