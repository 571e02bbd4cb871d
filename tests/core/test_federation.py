"""The front of every provider, in parts: its options, its directory, its view of the client."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_agent.federation import directory as directory_module
from acp_agent.federation import listing, options
from acp_agent.federation.directory import KnownModels, Placement, SessionDirectory
from acp_agent.federation.link import ProviderLink
from acp_agent.federation.signin import merge_meta
from acp_agent.wire.rpc import RpcError

pytestmark = pytest.mark.timeout(30)

TITLES = {"claude": "Claude Code", "codex": "Codex"}
CLAUDE_OPTIONS = [
    {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "opus",
     "options": [{"value": "opus", "name": "Opus"}, {"value": "sonnet", "name": "Sonnet"}]},
    {"id": "effort", "name": "Effort", "category": "thought_level", "type": "select", "currentValue": "high",
     "options": [{"value": "high", "name": "High"}]},
]
MODES = {"currentModeId": "default", "availableModes": [{"id": "default", "name": "Default"},
                                                        {"id": "plan", "name": "Plan", "description": "Plan first"}]}


def test_options_put_the_provider_first_the_modes_next_and_every_providers_models_in_one_list() -> None:
    shown = options.shown(CLAUDE_OPTIONS, provider="claude", titles=TITLES, fixed=False, modes=MODES,
                          models={"codex": [{"value": "gpt-5.5", "name": "GPT-5.5"}]})
    assert [option["id"] for option in shown] == ["provider", "mode", "model", "effort"]
    assert shown[0]["currentValue"] == "claude"
    assert [choice["value"] for choice in shown[0]["options"]] == ["claude", "codex"]
    assert shown[1]["options"][1] == {"value": "plan", "name": "Plan", "description": "Plan first"}
    assert [(choice["value"], choice["name"]) for choice in shown[2]["options"]] == [
        ("opus", "Opus · Claude Code"), ("sonnet", "Sonnet · Claude Code"), ("codex:gpt-5.5", "GPT-5.5 · Codex")]
    assert shown[3] == CLAUDE_OPTIONS[1]


def test_a_fixed_session_offers_its_own_provider_and_models_alone() -> None:
    shown = options.shown(CLAUDE_OPTIONS, provider="claude", titles=TITLES, fixed=True, modes=None,
                          models={"codex": [{"value": "gpt-5.5", "name": "GPT-5.5"}]})
    assert [choice["value"] for choice in shown[0]["options"]] == ["claude"]
    assert "fixed after its first prompt" in shown[0]["description"]
    assert [choice["value"] for choice in shown[1]["options"]] == ["opus", "sonnet"]


@pytest.mark.parametrize(("value", "expected"), [
    ("codex:gpt-5.5", ("codex", "gpt-5.5")), ("opus", None), ("claude:opus", None),  # its own provider
    ("arn:aws:bedrock:model", None), ("codex:", None), (3, None)])
def test_a_model_of_another_provider_is_named_by_its_prefix(value: Any, expected: Any) -> None:
    assert options.foreign_model(value, "claude", TITLES) == expected


def test_models_of_reads_the_model_select_only() -> None:
    assert options.models_of(CLAUDE_OPTIONS) == [{"value": "opus", "name": "Opus"}, {"value": "sonnet", "name": "Sonnet"}]
    assert options.models_of([CLAUDE_OPTIONS[1]]) == []


def test_the_directory_outlives_its_process_and_bounds_itself(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(directory_module, "MAX_ENTRIES", 10)
    directory = SessionDirectory(tmp_path)
    directory.record("a", Placement("claude", "a"))
    directory.record("b", Placement("codex", "thread-1"))
    again = SessionDirectory(tmp_path)
    assert again.find("b") == Placement("codex", "thread-1")
    assert again.client_id("codex", "thread-1") == "b"
    assert again.client_id("codex", "thread-2") == "thread-2"
    again.forget("a")
    assert SessionDirectory(tmp_path).find("a") is None
    for number in range(15):
        again.record(f"s{number}", Placement("claude", f"s{number}"))
    kept = json.loads((tmp_path / "providers-of-sessions.json").read_text())
    assert len(kept) == 10 and "s4" not in kept and "s14" in kept


def test_a_damaged_or_hostile_directory_file_is_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "providers-of-sessions.json"
    path.write_text("{not json")
    assert SessionDirectory(tmp_path).find("a") is None
    path.write_text(json.dumps({"a": {"provider": 3}, "b": "x", "c": {"provider": "codex", "backendId": "t"}}))
    assert SessionDirectory(tmp_path).find("c") == Placement("codex", "t")
    path.unlink()
    os.mkfifo(path)  # never opened for reading: it would block (the test's timeout would say so)
    assert SessionDirectory(tmp_path).find("a") is None


def test_known_models_are_kept_beside_the_directory(tmp_path: Path) -> None:
    KnownModels(tmp_path).learn("codex", [{"value": "gpt-5.5", "name": "GPT-5.5"}])
    assert KnownModels(tmp_path).all() == {"codex": [{"value": "gpt-5.5", "name": "GPT-5.5"}]}


class Client:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        self.sent.append((method, params))
        return True

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        self.sent.append((method, params))
        return {"outcome": "ok"}


@pytest.mark.anyio
async def test_the_link_names_a_moved_session_by_the_clients_id_and_holds_its_first_frames() -> None:
    client = Client()
    auth: list[bool] = []

    async def auth_changed() -> None:
        auth.append(True)

    link = ProviderLink(client, lambda session_id, update: {**update, "seen": session_id}, auth_changed)
    with link.moving():
        await link.notify("session/update", {"sessionId": "thread-1", "update": {"sessionUpdate": "x"}})
        assert client.sent == []  # its name is not known yet
        link.name("thread-1", "client-1")
    await link.release()
    await link.request("session/request_permission", {"sessionId": "thread-1"})
    await link.notify("auth/status_update", {"state": "authenticated"})
    assert client.sent == [
        ("session/update", {"sessionId": "client-1", "update": {"sessionUpdate": "x", "seen": "client-1"}}),
        ("session/request_permission", {"sessionId": "client-1"})]
    assert auth == [True]


def test_meta_merges_objects_and_unites_lists() -> None:
    merged: dict[str, Any] = {}
    merge_meta(merged, {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "diffPatch"]}}})
    merge_meta(merged, {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "goal"]}},
                         "steering": {"supported": True}})
    assert merged == {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "diffPatch", "goal"]}},
                      "steering": {"supported": True}}


@pytest.mark.parametrize("cursor", ["nope", listing.cursor(-1), "eyJvZmZzZXQiOiAidHdvIn0="])
def test_a_cursor_the_front_did_not_give_is_invalid_params(cursor: str) -> None:
    with pytest.raises(RpcError) as error:
        listing.offset(cursor)
    assert error.value.code == -32602
    assert listing.offset(listing.cursor(50)) == 50 and listing.offset(None) == 0
