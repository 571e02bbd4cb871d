"""A Codex session's settings as ACP config options: model, reasoning effort, fast mode and
collaboration mode.

Pure functions over app-server's `model/list` entries (each model names the reasoning efforts it
supports and its service tiers; the "Fast" tier is fast mode). What a session has chosen lives in
`Choices`; the runtime sends the changed parts with the next `turn/start` (`model`, `effort`,
`serviceTier`, `collaborationMode`), which app-server keeps for the turns after it. The
collaboration mode (codex-acp's option) is codex's plan mode: its turns plan, and the model's
`<proposed_plan>` block reaches the client as a plan item; `thread/resume` reports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from attrs import define, field

from acp_agent.provider import ConfigOption, ConfigOptionValue

MODEL: Final = "model"
EFFORT: Final = "reasoning_effort"
FAST: Final = "fast-mode"
FAST_ON: Final = "on"
FAST_OFF: Final = "off"
COLLABORATION: Final = "collaboration_mode"
DEFAULT_COLLABORATION: Final = "default"
PLAN_COLLABORATION: Final = "plan"
_FAST_TIER_NAME: Final = "fast"
_LEGACY_FAST_TIER: Final = "fast"


@define
class Choices:
    """One session's model, effort, fast mode and collaboration mode, and which of them the next turn must send."""

    model: str | None
    effort: str | None = None
    fast: bool = False
    collaboration: str = DEFAULT_COLLABORATION
    dirty: set[str] = field(factory=set)
    explicit: set[str] = field(factory=set)
    """What the user chose (sent again after app-server was restarted)."""


def visible_models(result: Any) -> list[Mapping[str, Any]]:
    """The `model/list` entries a user may pick (hidden ones left out)."""
    data = result.get("data") if isinstance(result, Mapping) else None
    return [model for model in data or [] if isinstance(model, Mapping) and isinstance(model.get("model"), str)
            and not model.get("hidden")]


def _entry(models: Sequence[Mapping[str, Any]], model: str | None) -> Mapping[str, Any] | None:
    return next((entry for entry in models if entry.get("model") == model), None)


def efforts(models: Sequence[Mapping[str, Any]], model: str | None) -> list[tuple[str, str | None]]:
    """The (effort, description) pairs the model supports, in app-server's order."""
    entry = _entry(models, model)
    supported = entry.get("supportedReasoningEfforts") if entry is not None else None
    pairs: list[tuple[str, str | None]] = []
    for option in supported if isinstance(supported, list) else []:
        effort = option.get("reasoningEffort") if isinstance(option, Mapping) else None
        if isinstance(effort, str) and effort:
            description = option.get("description")
            pairs.append((effort, description if isinstance(description, str) else None))
    return pairs


def default_effort(models: Sequence[Mapping[str, Any]], model: str | None) -> str | None:
    entry = _entry(models, model)
    value = entry.get("defaultReasoningEffort") if entry is not None else None
    return value if isinstance(value, str) and value else None


def fast_tier(models: Sequence[Mapping[str, Any]], model: str | None) -> tuple[str, str | None] | None:
    """The service tier that is fast mode for this model (its id and description), if it has one."""
    entry = _entry(models, model)
    if entry is None:
        return None
    tiers = entry.get("serviceTiers")
    for tier in tiers if isinstance(tiers, list) else []:
        if isinstance(tier, Mapping) and isinstance(tier.get("id"), str) and \
                str(tier.get("name", "")).lower() == _FAST_TIER_NAME:
            description = tier.get("description")
            return tier["id"], description if isinstance(description, str) else None
    legacy = entry.get("additionalSpeedTiers")
    if isinstance(legacy, list) and _LEGACY_FAST_TIER in legacy:
        return _LEGACY_FAST_TIER, None
    return None


def opened(models: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> Choices:
    """The choices a thread/start, thread/resume or thread/fork result reports."""
    model = result.get("model")
    model = model if isinstance(model, str) and model else None
    effort = result.get("reasoningEffort")
    if not isinstance(effort, str) or effort not in {value for value, _ in efforts(models, model)}:
        effort = default_effort(models, model)
    tier = fast_tier(models, model)
    fast = tier is not None and result.get("serviceTier") == tier[0]
    mode = result.get("collaborationMode")
    collaboration = mode.get("mode") if isinstance(mode, Mapping) else None
    return Choices(model, effort, fast,
                   collaboration if collaboration == PLAN_COLLABORATION else DEFAULT_COLLABORATION)


def choose(choices: Choices, models: Sequence[Mapping[str, Any]], config_id: str, value: str) -> None:
    """Apply one option change (a value the session offered: the core checked)."""
    if config_id == MODEL:
        choices.model = value
        choices.dirty.add(MODEL)
        choices.explicit.add(MODEL)
        supported = {effort for effort, _ in efforts(models, value)}
        if choices.effort not in supported:
            # The new model cannot run the old effort: its own default, sent so the turn says so.
            choices.effort = default_effort(models, value)
            choices.dirty.add(EFFORT)
        if choices.fast and fast_tier(models, value) is None:
            choices.fast = False
            choices.dirty.add(FAST)
    elif config_id == EFFORT:
        choices.effort = value
        choices.dirty.add(EFFORT)
        choices.explicit.add(EFFORT)
    elif config_id == FAST:
        choices.fast = value == FAST_ON
        choices.dirty.add(FAST)
        choices.explicit.add(FAST)
    elif config_id == COLLABORATION:
        choices.collaboration = value
        choices.dirty.add(COLLABORATION)
        choices.explicit.add(COLLABORATION)


def turn_overrides(choices: Choices, models: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `turn/start` fields for what changed since the last turn (then nothing is dirty)."""
    params: dict[str, Any] = {}
    if MODEL in choices.dirty and choices.model:
        params["model"] = choices.model
    if EFFORT in choices.dirty and choices.effort:
        params["effort"] = choices.effort
    if FAST in choices.dirty:
        tier = fast_tier(models, choices.model)
        params["serviceTier"] = tier[0] if choices.fast and tier is not None else None
    planning = choices.collaboration == PLAN_COLLABORATION
    if choices.model and (COLLABORATION in choices.dirty or (planning and {MODEL, EFFORT} & choices.dirty)):
        # The mode's settings name the model and effort it runs (codex-acp's): sent again with a
        # change of either, so plan mode runs the chosen ones.
        params["collaborationMode"] = {"mode": choices.collaboration, "settings": {
            "model": choices.model, "reasoning_effort": choices.effort, "developer_instructions": None}}
    return params


def options(choices: Choices, models: Sequence[Mapping[str, Any]]) -> list[ConfigOption]:
    """The session's config options: the collaboration mode, the model, then its reasoning effort
    and fast mode if it has them (in codex-acp's order)."""
    if choices.model is None:
        return []
    values = [ConfigOptionValue(value=entry["model"], name=str(entry.get("displayName") or entry["model"]),
                                description=entry.get("description") if isinstance(entry.get("description"), str)
                                else None)
              for entry in models]
    if all(value.value != choices.model for value in values):
        values.insert(0, ConfigOptionValue(value=choices.model, name=choices.model))
    default = next((str(entry["model"]) for entry in models if entry.get("isDefault") is True), None)
    result = [ConfigOption(id=MODEL, name="Model", current_value=choices.model, options=values, category="model",
                           description="The model Codex uses for the next turns.", recommended=default)]
    supported = efforts(models, choices.model)
    if supported and choices.effort in {effort for effort, _ in supported}:
        result.append(ConfigOption(
            id=EFFORT, name="Reasoning effort", current_value=str(choices.effort), category="thought_level",
            description="How much the model reasons before it answers.",
            options=[ConfigOptionValue(value=effort, name=effort.capitalize(), description=description)
                     for effort, description in supported],
            recommended=default_effort(models, choices.model)))  # recommended: as codex-acp, model/list's
    tier = fast_tier(models, choices.model)
    if tier is not None:
        faster = tier[1] or "Faster answers, increased usage"
        result.append(ConfigOption(
            id=FAST, name="Fast mode", current_value=FAST_ON if choices.fast else FAST_OFF, category="model_config",
            description=faster,
            options=[ConfigOptionValue(value=FAST_OFF, name="Off", description="Default speed, normal usage"),
                     ConfigOptionValue(value=FAST_ON, name="On", description=faster)]))
    collaboration = ConfigOption(
        id=COLLABORATION, name="Collaboration mode", current_value=choices.collaboration,
        category="collaboration_mode", description="How Codex collaborates for subsequent turns",
        options=[ConfigOptionValue(value=DEFAULT_COLLABORATION, name="Default"),
                 ConfigOptionValue(value=PLAN_COLLABORATION, name="Plan", description="Plan before making changes")])
    return [collaboration, *result]
