"""A session's config options as the front shows them: the provider to run it, its modes as an
option, and one model list with every provider's models.

Pure functions over the options a provider's agent answered. A model of another provider has the
value `<provider>:<model>`; choosing it moves the session there (before its first prompt). The
other providers' models are the ones they listed the last time one of their sessions opened (their
backends are not started to ask).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROVIDER_OPTION = "provider"
MODE_OPTION = "mode"
MODEL_CATEGORY = "model"


def provider_option(current: str, titles: Mapping[str, str], *, fixed: bool) -> dict[str, Any]:
    """The select that moves a session to another provider; once the session has a prompt it
    offers its own provider alone and says so."""
    names = [current] if fixed else list(titles)
    return {
        "id": PROVIDER_OPTION, "name": "Agent", "type": "select", "currentValue": current,
        "description": (f"{titles[current]} runs this session (fixed after its first prompt)" if fixed
                        else "Which vendor's agent runs this session (until its first prompt)"),
        "options": [{"value": name, "name": titles[name]} for name in names],
    }


def mode_option(modes: Any) -> dict[str, Any] | None:
    """The session's modes (`modes` of its answer) as a select, as claude-agent-acp offers them,
    so a client sees the modes of the provider a session moves to."""
    if not isinstance(modes, Mapping) or not isinstance(modes.get("availableModes"), list):
        return None
    options = [{"value": mode["id"], "name": mode.get("name") or mode["id"],
                **({"description": mode["description"]} if isinstance(mode.get("description"), str) else {})}
               for mode in modes["availableModes"] if isinstance(mode, Mapping) and isinstance(mode.get("id"), str)]
    current = modes.get("currentModeId")
    if not options or not isinstance(current, str):
        return None
    return {"id": MODE_OPTION, "name": "Mode", "category": "mode", "type": "select",
            "currentValue": current, "options": options}


def is_model_option(option: Any) -> bool:
    return isinstance(option, Mapping) and option.get("category") == MODEL_CATEGORY \
        and option.get("type", "select") == "select" and isinstance(option.get("options"), list)


def models_of(options: Sequence[Any]) -> list[dict[str, Any]]:
    """A provider's own model choices (value, name), from its options."""
    for option in options:
        if is_model_option(option):
            return [{"value": value["value"], "name": value.get("name") or value["value"]}
                    for value in option["options"]
                    if isinstance(value, Mapping) and isinstance(value.get("value"), str)]
    return []


def shown(options: Sequence[Any], *, provider: str, titles: Mapping[str, str], fixed: bool,
          modes: Any, models: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Any]:
    """`options` (a provider agent's) with the provider select first, the modes as a select
    (unless the provider has one), and the model select listing every provider's models, each
    named with its provider's title."""
    result: list[Any] = [provider_option(provider, titles, fixed=fixed)]
    if not any(isinstance(option, Mapping) and option.get("category") == "mode" for option in options):
        modes_select = mode_option(modes)
        if modes_select is not None:
            result.append(modes_select)
    for option in options:
        if not is_model_option(option):
            result.append(option)
            continue
        own = [{**value, "name": f"{value.get('name') or value.get('value')} · {titles[provider]}"}
               for value in option["options"] if isinstance(value, Mapping)]
        foreign = [] if fixed else [
            {"value": f"{name}:{model['value']}", "name": f"{model['name']} · {titles[name]}"}
            for name in titles if name != provider for model in models.get(name, ())]
        result.append({**option, "options": own + foreign})
    return result


def foreign_model(value: Any, provider: str, titles: Mapping[str, str]) -> tuple[str, str] | None:
    """(provider, model) of a model value that names another served provider's model."""
    if not isinstance(value, str):
        return None
    name, colon, model = value.partition(":")
    if colon and model and name in titles and name != provider:
        return name, model
    return None
