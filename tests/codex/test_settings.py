"""Codex config options from `model/list` entries (shapes from codex 0.163.0's app-server)."""

from __future__ import annotations

from typing import Any

from acp_agent_codex import settings

MODELS: list[dict[str, Any]] = [
    {"model": "gpt-5.5", "displayName": "GPT-5.5", "description": "d", "hidden": False,
     "defaultReasoningEffort": "medium",
     "supportedReasoningEfforts": [{"reasoningEffort": e, "description": e} for e in ("low", "medium", "high")],
     "serviceTiers": [{"id": "priority", "name": "Fast", "description": "1.5x speed, increased usage"}],
     "additionalSpeedTiers": ["fast"]},
    {"model": "old", "displayName": "Old", "hidden": False, "defaultReasoningEffort": "high",
     "supportedReasoningEfforts": [{"reasoningEffort": "high", "description": "h"}], "serviceTiers": [],
     "additionalSpeedTiers": ["fast"]},
    {"model": "plain", "displayName": "Plain", "hidden": False, "supportedReasoningEfforts": []},
    {"model": "secret", "hidden": True},
]


def test_hidden_models_are_not_offered() -> None:
    assert [m["model"] for m in settings.visible_models({"data": MODELS})] == ["gpt-5.5", "old", "plain"]


def test_fast_mode_is_the_fast_service_tier_or_the_legacy_speed_tier() -> None:
    assert settings.fast_tier(MODELS, "gpt-5.5") == ("priority", "1.5x speed, increased usage")
    assert settings.fast_tier(MODELS, "old") == ("fast", None)
    assert settings.fast_tier(MODELS, "plain") is None


def test_opened_reads_the_threads_effort_and_tier_else_the_models_default() -> None:
    assert settings.opened(MODELS, {"model": "gpt-5.5", "reasoningEffort": None, "serviceTier": None}) == \
        settings.Choices("gpt-5.5", "medium", False)
    assert settings.opened(MODELS, {"model": "gpt-5.5", "reasoningEffort": "high", "serviceTier": "priority"}) == \
        settings.Choices("gpt-5.5", "high", True)
    # an effort the model does not list is replaced by its default
    assert settings.opened(MODELS, {"model": "gpt-5.5", "reasoningEffort": "ultra"}).effort == "medium"


def test_a_model_without_effort_or_fast_offers_only_the_model() -> None:
    choices = settings.opened(MODELS, {"model": "plain"})
    assert [o.id for o in settings.options(choices, MODELS)] == ["collaboration_mode", "model"]


def test_the_collaboration_mode_goes_with_the_turn_and_names_the_model_and_effort() -> None:
    choices = settings.opened(MODELS, {"model": "gpt-5.5", "collaborationMode": {"mode": "plan"}})
    assert choices.collaboration == "plan" and settings.turn_overrides(choices, MODELS) == {}
    choices = settings.opened(MODELS, {"model": "gpt-5.5"})
    settings.choose(choices, MODELS, settings.COLLABORATION, "plan")
    assert settings.turn_overrides(choices, MODELS) == {"collaborationMode": {
        "mode": "plan", "settings": {"model": "gpt-5.5", "reasoning_effort": "medium", "developer_instructions": None}}}
    choices.dirty.clear()
    settings.choose(choices, MODELS, settings.EFFORT, "high")  # plan mode runs the new effort too
    assert settings.turn_overrides(choices, MODELS)["collaborationMode"]["settings"]["reasoning_effort"] == "high"


def test_changing_the_model_keeps_what_it_supports_and_sends_only_changes() -> None:
    choices = settings.opened(MODELS, {"model": "gpt-5.5"})
    assert settings.turn_overrides(choices, MODELS) == {}
    settings.choose(choices, MODELS, settings.FAST, "on")
    assert settings.turn_overrides(choices, MODELS) == {"serviceTier": "priority"}
    choices.dirty.clear()
    settings.choose(choices, MODELS, settings.MODEL, "plain")
    assert (choices.effort, choices.fast) == (None, False)
    assert settings.turn_overrides(choices, MODELS) == {"model": "plain", "serviceTier": None}
    assert choices.explicit == {settings.FAST, settings.MODEL}
