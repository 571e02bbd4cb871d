"""A Claude session's settings as ACP config options: the model, its reasoning effort, fast mode.

The CLI's `initialize` answer lists the models with what each supports (`supportsEffort`,
`supportedEffortLevels`, `supportsAutoMode`); the options offered follow the session's model. An
effort reaches the CLI as `--effort LEVEL` when it starts and as `apply_flag_settings`
`{"effortLevel": ...}` while it runs (null clears it: the CLI's own default), as claude-agent-acp
does; the API request then carries `output_config.effort`. Fast mode (models with
`supportsFastMode`) is `apply_flag_settings` `{"fastMode": true|false}` while the CLI runs and
`--settings {"fastMode": true}` when it starts; the API request then carries `speed: "fast"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_agent.acp import ConfigOption, ConfigOptionValue
from acp_agent.wire import UNSET

MODEL = "model"
EFFORT = "effort"
DEFAULT_EFFORT = "default"  # no level of the session's own: the CLI's settings decide
FAST = "fast-mode"  # the id Codex's fast mode has too
FAST_ON, FAST_OFF = "on", "off"


def model_info(models: Sequence[dict[str, Any]], model: str | None) -> dict[str, Any] | None:
    """The CLI's entry for the session's model (the first, its default, when none was chosen)."""
    if not models:
        return None
    if model is None:
        return models[0]
    return next((m for m in models if m.get("value") == model), None)


def effort_levels(models: Sequence[dict[str, Any]], model: str | None) -> list[str]:
    """The effort levels the model accepts (none: it has no effort setting)."""
    info = model_info(models, model)
    if info is None or not info.get("supportsEffort"):
        return []
    levels = info.get("supportedEffortLevels") or []
    return [str(level) for level in levels if isinstance(level, str) and level]


def supports_auto_mode(models: Sequence[dict[str, Any]], model: str | None) -> bool:
    info = model_info(models, model)
    return bool(info and info.get("supportsAutoMode"))


def supports_fast_mode(models: Sequence[dict[str, Any]], model: str | None) -> bool:
    info = model_info(models, model)
    return bool(info and info.get("supportsFastMode"))


def level_name(level: str) -> str:
    """`xhigh` reads "Extra high"; the others are capitalised, as claude-agent-acp names them."""
    return {"xhigh": "Extra high"}.get(level, level[:1].upper() + level[1:])


def config_options(models: Sequence[dict[str, Any]], model: str | None,
                   effort: str | None, fast: bool = False) -> list[ConfigOption]:
    if not models:
        return []
    values = [ConfigOptionValue(str(m["value"]), str(m.get("displayName") or m["value"]),
                                str(m["description"]) if m.get("description") else UNSET) for m in models]
    options = [ConfigOption(id=MODEL, name="Model", current_value=model or values[0].value, options=values,
                            category="model")]
    levels = effort_levels(models, model)
    if levels:
        choices = [ConfigOptionValue(DEFAULT_EFFORT, "Default", "The level Claude Code's settings choose")]
        choices += [ConfigOptionValue(level, level_name(level)) for level in levels]
        current = effort if effort in levels else DEFAULT_EFFORT
        options.append(ConfigOption(id=EFFORT, name="Effort", current_value=current, options=choices,
                                    description="How much Claude reasons before answering",
                                    category="thought_level"))
    if supports_fast_mode(models, model):
        faster = "Faster answers, at a higher price per token"
        options.append(ConfigOption(
            id=FAST, name="Fast mode", current_value=FAST_ON if fast else FAST_OFF, category="model_config",
            description=faster, options=[ConfigOptionValue(FAST_OFF, "Off", "Default speed and price"),
                                         ConfigOptionValue(FAST_ON, "On", faster)]))
    return options


def effort_value(value: str) -> str | None:
    """The session's effort for an option value: None for the CLI's default."""
    return None if value == DEFAULT_EFFORT else value
