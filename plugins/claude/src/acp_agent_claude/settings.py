"""A Claude session's settings as ACP config options: the model, its reasoning effort, fast mode.

The CLI's `initialize` answer lists the models with what each supports (`supportsEffort`,
`supportedEffortLevels`, `supportsAutoMode`); the options offered follow the session's model. An
effort reaches the CLI as `--effort LEVEL` when it starts and as `apply_flag_settings`
`{"effortLevel": ...}` while it runs (null clears it: the CLI's own default), as claude-agent-acp
does; the API request then carries `output_config.effort`. Fast mode (models with
`supportsFastMode`) is `apply_flag_settings` `{"fastMode": true|false}` while the CLI runs and
`--settings {"fastMode": true}` when it starts; the API request then carries `speed: "fast"`.

A new session's permission mode follows claude-agent-acp's `resolveInitialPermissionMode`: the
`permissions.defaultMode` of Claude Code's settings files when one is set, else `auto` when the
session's model supports it, else `default`. Its model is `ANTHROPIC_MODEL`, else the settings'
`model`, else the CLI's default (as claude-agent-acp's `getAvailableModels` picks it).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from acp_agent.provider import SETTINGS_LIMIT, UNSET, ConfigOption, ConfigOptionValue, UnsafeFile, read_regular_file

MODEL = "model"
EFFORT = "effort"
DEFAULT_EFFORT = "default"  # no level of the session's own: the CLI's settings decide
DEFAULT_MODEL = "default"  # the CLI's entry for the model it picks itself
FAST = "fast-mode"  # the id Codex's fast mode has too
FAST_ON, FAST_OFF = "on", "off"
AUTO_FALLBACK = "acceptEdits"  # a chosen `auto` the model cannot run (claude-agent-acp's fallback)
MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"
log = logging.getLogger(__name__)


def settings_files(environ: Mapping[str, str], cwd: str) -> list[tuple[str, str]]:
    """Claude Code's settings files as (source, path), lowest precedence first: the user's
    (`$CLAUDE_CONFIG_DIR` or `~/.claude`), the project's, the project's local, the managed one."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config_dir = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    return [("user", os.path.join(config_dir, "settings.json")),
            ("project", os.path.join(cwd, ".claude", "settings.json")),
            ("local", os.path.join(cwd, ".claude", "settings.local.json")),
            ("managed", MANAGED_SETTINGS)]


def _read(path: str) -> dict[str, Any]:
    """One settings file's values. A project's files come from a repository that is not trusted:
    only a regular file of at most `SETTINGS_LIMIT` bytes is read (a FIFO, a device or a link to
    one is skipped with a log line, never opened to wait or read without end)."""
    try:
        value = json.loads(read_regular_file(path, SETTINGS_LIMIT))
    except UnsafeFile as exc:
        log.warning("claude settings skipped: %s", exc)
        return {}
    except (OSError, ValueError):
        return {}  # absent or broken: the CLI reports its own settings problems
    return value if isinstance(value, dict) else {}


def configured(environ: Mapping[str, str], cwd: str) -> tuple[str | None, str | None]:
    """The settings' `permissions.defaultMode` and `model` (None where no file sets them). A
    repository's committed settings may not start sessions in `bypassPermissions`."""
    mode: str | None = None
    model: str | None = None
    for source, path in settings_files(environ, cwd):
        values = _read(path)
        permissions = values.get("permissions")
        chosen = permissions.get("defaultMode") if isinstance(permissions, dict) else None
        if isinstance(chosen, str) and chosen and not (source == "project" and chosen == "bypassPermissions"):
            mode = chosen
        if isinstance(values.get("model"), str) and values["model"]:
            model = values["model"]
    return mode, model


def preferred_model(models: Sequence[dict[str, Any]], environ: Mapping[str, str],
                    settings_model: str | None) -> str | None:
    """The model the CLI runs when the session chose none: `ANTHROPIC_MODEL`, else the settings'
    `model`, as the CLI's model list names it (None: the list's default)."""
    for preference in (environ.get("ANTHROPIC_MODEL"), settings_model):
        if preference:
            for entry in models:
                if preference in (entry.get("value"), entry.get("resolvedModel")):
                    return str(entry["value"])
    return None


def initial_mode(configured_mode: str | None, auto_supported: bool, offered: Sequence[str],
                 resumed: str | None = None) -> str:
    """A session's starting permission mode, as claude-agent-acp's `resolveInitialPermissionMode`:
    a reopened transcript's mode where this session offers it; else the settings' choice where it
    is offered (`auto` the model cannot run becomes `acceptEdits`); else `auto` where the model
    supports it, else `default`."""
    if resumed is not None and resumed in offered and (resumed != "auto" or auto_supported):
        return resumed
    if configured_mode is None:
        return "auto" if auto_supported else "default"
    if configured_mode == "auto" and not auto_supported:
        return AUTO_FALLBACK
    return configured_mode if configured_mode in offered else "default"


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


def recommended_model(models: Sequence[dict[str, Any]]) -> str | None:
    """The listed model the CLI's default (`value: "default"`) runs now, by `resolvedModel`; None
    where the default names no listed model (then it stays an entry of its own)."""
    default = next((m for m in models if m.get("value") == DEFAULT_MODEL), None)
    resolved = default.get("resolvedModel") if default else None
    if not isinstance(resolved, str) or not resolved:
        return None
    return next((str(m["value"]) for m in models
                 if m.get("value") != DEFAULT_MODEL and m.get("resolvedModel") == resolved), None)


def recommended_effort(models: Sequence[dict[str, Any]], model: str | None) -> str | None:
    """`medium` where the model has it, else its first level (claude-agent-acp's recommendation)."""
    levels = effort_levels(models, model)
    return "medium" if "medium" in levels else (levels[0] if levels else None)


def config_options(models: Sequence[dict[str, Any]], model: str | None, effort: str | None,
                   fast: bool = False, recommending: bool = False) -> list[ConfigOption]:
    """The session's options. A client of AIR's `recommendedValue` (`recommending`) is shown
    concrete values, as claude-agent-acp shows them: no "default" model where it names a listed
    one (which is then shown and recommended), no "Default" effort (the session runs the
    recommended level: `recommended_effort`)."""
    if not models:
        return []
    concrete = recommended_model(models) if recommending else None
    listed = [m for m in models if concrete is None or m.get("value") != DEFAULT_MODEL]
    values = [ConfigOptionValue(str(m["value"]), str(m.get("displayName") or m["value"]),
                                str(m["description"]) if m.get("description") else UNSET) for m in listed]
    current = model or str(models[0]["value"])
    if concrete is not None and current == DEFAULT_MODEL:
        current = concrete
    options = [ConfigOption(id=MODEL, name="Model", current_value=current, options=values,
                            category="model", recommended=concrete)]
    levels = effort_levels(models, model)
    if levels:
        choices = [] if recommending else [
            ConfigOptionValue(DEFAULT_EFFORT, "Default", "The level Claude Code's settings choose")]
        choices += [ConfigOptionValue(level, level_name(level)) for level in levels]
        recommended = recommended_effort(models, model) if recommending else None
        options.append(ConfigOption(id=EFFORT, name="Effort", options=choices, category="thought_level",
                                    current_value=effort if effort in levels else recommended or DEFAULT_EFFORT,
                                    description="How much Claude reasons before answering",
                                    recommended=recommended))
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
