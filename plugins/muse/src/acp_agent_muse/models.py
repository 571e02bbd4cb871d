"""The session's model and reasoning-effort options: `model/list` (within an advisory budget,
else a built-in catalog) as ACP config options."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import anyio

from acp_agent.provider import ConfigOption, ConfigOptionValue, ConnectionClosed, RpcError
from acp_agent_muse.host import MuseHost
from acp_agent_muse.sessions import MuseSession

log = logging.getLogger(__name__)

MODELS_BUDGET_S: Final = 5.0
# Used when `model/list` fails or does not answer within its advisory budget.
BUILTIN_MODELS: Final = (
    ConfigOptionValue("muse-code", "Muse Code", "Muse Code's default model."),
    ConfigOptionValue("muse-code-fast", "Muse Code Fast", "A faster, lighter model."),
)
EFFORT: Final = "reasoning_effort"


def efforts_of(entry: Mapping[str, Any]) -> tuple[list[ConfigOptionValue], str | None]:
    """A `model/list` row's described reasoning-effort tiers and its default tier."""
    tiers: list[ConfigOptionValue] = []
    for variant in entry.get("reasoningEffortVariants") or []:
        tier = variant.get("tier") if isinstance(variant, Mapping) else None
        if isinstance(tier, str) and tier:
            description = variant.get("description")
            tiers.append(ConfigOptionValue(tier, tier.capitalize(), description if isinstance(description, str)
                                           else None))
    default = entry.get("defaultReasoningEffort")
    return tiers, default if isinstance(default, str) and default else None


async def discover(host: MuseHost, state: MuseSession) -> None:
    """`model/list` within its advisory budget; the built-in catalog when it fails or is late."""
    models: list[ConfigOptionValue] | None = None
    with anyio.move_on_after(MODELS_BUDGET_S):
        try:
            result = await host.call("model/list", {"sessionId": state.session_id})
        except (RpcError, ConnectionClosed) as exc:
            log.info("model/list failed (%s); using the built-in catalog", type(exc).__name__)
            result = None
        if isinstance(result, Mapping):
            models = []
            for entry in result.get("models") or []:
                if not isinstance(entry, Mapping) or not isinstance(entry.get("modelId"), str):
                    continue
                description = entry.get("description")
                models.append(ConfigOptionValue(entry["modelId"], str(entry.get("displayLabel") or entry["modelId"]),
                                                description if isinstance(description, str) else None))
                state.efforts[entry["modelId"]] = efforts_of(entry)
                if entry.get("isDefault") is True:
                    state.default_model = entry["modelId"]
                if not state.model and (entry.get("isActive") is True):
                    state.model = entry["modelId"]
    if models is None:
        log.info("model/list gave no catalog within %.0f s; using the built-in one", MODELS_BUDGET_S)
        models = list(BUILTIN_MODELS)
    state.models = models

def options(state: MuseSession) -> list[ConfigOption]:
    values = list(state.models)
    current = state.model or (values[0].value if values else None)
    if current is None:
        return []
    if all(value.value != current for value in values):
        values.insert(0, ConfigOptionValue(current, current))
    options = [ConfigOption(id="model", name="Model", current_value=current, options=values, category="model",
                            description="The model Muse Code uses for the next turns.",
                            recommended=state.default_model)]
    tiers, default = state.efforts.get(current, ([], None))
    effort = state.effort or default
    if tiers and effort in {tier.value for tier in tiers}:
        options.append(ConfigOption(id=EFFORT, name="Reasoning effort", current_value=str(effort),
                                    options=list(tiers), category="thought_level",
                                    description="How much the model reasons before it answers.",
                                    recommended=default))
    return options
