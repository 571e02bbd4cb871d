"""Credential evidence, the keyring store and logout, with an in-memory keyring backend."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import attrs
import pytest
from keyring.backend import KeyringBackend

from acp_agent.backends.contract import CredentialSpec
from acp_agent.failures import auth_status as auth
from acp_agent.failures.auth_status import (
    AuthObservation,
    AuthStatusFeed,
    CredentialState,
    KeyringStore,
    KeyringUnavailable,
    acp_auth_status,
    resolve_credentials,
    stored_file_present,
)
from acp_agent.testing import run_in_process
from acp_agent.testing.client import default_settings
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import make_spec

CWD = tempfile.gettempdir()


class MemoryKeyring(KeyringBackend):
    """A keyring that lives in a dict: the in-memory backend for tests."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.entries[(service, username)]


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise RuntimeError("dbus is not running")


class SilentKeyring(MemoryKeyring):
    """A keyring service that does not answer (a locked keyring waiting for a person to unlock it),
    until the test lets it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.answer = threading.Event()
        self.kept_waiting = False

    def get_password(self, service: str, username: str) -> str | None:
        self.asked.set()
        if not self.answer.wait(timeout=10):
            self.kept_waiting = True  # the test never got to let it answer
        return None


def spec_with(tmp_path: Path, min_bytes: int = 0) -> CredentialSpec:
    return CredentialSpec(env_vars=("VENDOR_API_KEY", "VENDOR_TOKEN"), keyring_env_var="VENDOR_API_KEY",
                          stored_files=lambda environ: [str(tmp_path / "auth.json")], stored_min_bytes=min_bytes)


def test_sources_in_order_environment_keyring_stored_none(tmp_path: Path) -> None:
    memory = MemoryKeyring()
    store = KeyringStore(memory)
    spec = spec_with(tmp_path)
    assert resolve_credentials("vendor", spec, {}, store).source == "none"
    (tmp_path / "auth.json").write_text('{"token": "x"}')
    assert resolve_credentials("vendor", spec, {}, store).source == "stored"
    memory.set_password("acp-agent", "vendor", "sk-keyring-123456")
    keyring_state = resolve_credentials("vendor", spec, {}, store)
    assert (keyring_state.source, keyring_state.secret) == ("keyring", "sk-keyring-123456")
    assert resolve_credentials("vendor", spec, {"VENDOR_TOKEN": "t-123456"}, store).source == "environment"
    assert resolve_credentials("vendor", spec, {"VENDOR_TOKEN": ""}, store).source == "keyring"


def test_stored_files_count_only_above_the_minimum_size(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    assert not stored_file_present(str(path), 2)
    path.write_text("{}")
    assert not stored_file_present(str(path), 2)
    path.write_text('{"a": 1}')
    assert stored_file_present(str(path), 2)


def test_a_broken_keyring_is_unavailable_never_a_crash(tmp_path: Path) -> None:
    store = KeyringStore(BrokenKeyring())
    with pytest.raises(KeyringUnavailable, match="could not be read"):
        store.get("vendor")
    assert resolve_credentials("vendor", spec_with(tmp_path), {}, store).source == "none"


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_keyring_key_goes_to_the_runtime_environment_and_logout_deletes_it() -> None:
    memory = MemoryKeyring()
    memory.set_password("acp-agent", "scripted", "sk-keyring-abcdef123456")
    seen: dict[str, Any] = {}
    spec = make_spec({"turns": [[{"text": "ok"}]]})
    original = spec.open_runtime

    def spying_open_runtime(context: Any) -> Any:
        seen["environ"] = dict(context.environ)
        return original(context)

    spec = attrs.evolve(spec, open_runtime=spying_open_runtime)
    async with run_in_process(spec, keyring=memory) as client:
        init = await client.initialize(meta={"scripted/authStatus": 1})
        session_id = await client.new_session(CWD)
        await client.prompt(session_id, "hi")
        logged_out = await client.request("logout", {})
        with pytest.raises(RpcError) as gone:
            await client.prompt(session_id, "after logout")
        with pytest.raises(RpcError) as unconfigured:
            await client.request("authenticate", {"methodId": "scripted"})
    assert init["_meta"]["scripted/authStatus"]["source"] == "keyring"
    assert seen["environ"]["SCRIPTED_API_KEY"] == "sk-keyring-abcdef123456"
    assert memory.entries == {}
    assert logged_out["_meta"]["scripted/authStatus"] == {"configured": False, "source": "none",
                                                          "verification": "unknown", "identity": "unknown"}
    assert gone.value.code == -32002
    assert unconfigured.value.code == -32000
    assert "SCRIPTED_API_KEY" in unconfigured.value.message
    assert "sk-keyring-abcdef123456" not in json.dumps(client.frames)


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_keyring_that_does_not_answer_neither_stalls_the_agent_nor_holds_it_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyring is asked from a worker thread for at most KEYRING_DEADLINE_S: while it does
    not answer, the agent answers other requests; after the deadline it goes on as if there were
    no keyring. (It was asked on the event loop, without a deadline: the whole agent stalled.)"""
    monkeypatch.setattr(auth, "KEYRING_DEADLINE_S", 0.5, raising=False)  # raising: the old code had none
    keyring = SilentKeyring()
    answers: dict[str, Any] = {}
    async with run_in_process(make_spec({}), keyring=keyring) as client:
        async with anyio.create_task_group() as group:

            async def initialize() -> None:  # its auth status needs the keyring
                answers["initialize"] = await client.initialize(meta={"scripted/authStatus": 1})

            group.start_soon(initialize)
            assert await anyio.to_thread.run_sync(keyring.asked.wait, 20)
            with pytest.raises(RpcError) as unknown:
                await client.request("no/such_method", {})
            answered_while_asking = "initialize" not in answers
        logged_out = await client.request("logout", {})  # its keyring entry: unreachable, bounded
        keyring.answer.set()
    assert answered_while_asking and unknown.value.code == -32601
    assert answers["initialize"]["_meta"]["scripted/authStatus"]["source"] == "none"
    assert logged_out["_meta"]["scripted/authStatus"]["source"] == "none"
    assert not keyring.kept_waiting


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_the_keyring_is_loaded_off_the_event_loop_once_initialize_is_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With no key in the environment the first session reads the keyring: its backend (100-200 ms
    to import and probe here) is found from a worker thread as soon as `initialize` is answered,
    before any session asks, and only once."""
    import keyring

    memory = MemoryKeyring()
    memory.set_password("acp-agent", "scripted", "sk-keyring-abcdef123456")
    on_main_thread: list[bool] = []
    found = threading.Event()

    def get_keyring() -> KeyringBackend:
        on_main_thread.append(threading.current_thread() is threading.main_thread())
        found.set()
        return memory

    monkeypatch.setattr(keyring, "get_keyring", get_keyring)
    settings = attrs.evolve(default_settings(make_spec({"turns": [[{"text": "ok"}]]})), keyring=KeyringStore())
    async with run_in_process(settings.provider, settings=settings) as client:
        await client.initialize()
        assert await anyio.to_thread.run_sync(found.wait, 10)  # no session asked for yet
        session_id = await client.new_session(CWD)
        result = await client.prompt(session_id, "hi")
    assert result["stopReason"] == "end_turn"
    assert on_main_thread == [False]


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_logout_keeps_reporting_an_inherited_environment_key() -> None:
    async with run_in_process(make_spec({}), environ={"SCRIPTED_API_KEY": "sk-env-123456"},
                              keyring=MemoryKeyring()) as client:
        await client.initialize(meta={"scripted/authStatus": 1})
        response = await client.request("logout", {})
    assert response["_meta"]["scripted/authStatus"] == {"configured": True, "source": "environment",
                                                        "verification": "unknown", "identity": "unknown"}


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_terminal_auth_method_only_for_clients_that_declare_it() -> None:
    async with run_in_process(make_spec({})) as client:
        plain = await client.initialize()
    async with run_in_process(make_spec({})) as client:
        terminal = await client.initialize(terminal_auth=True)
    assert [m["id"] for m in plain["authMethods"]] == ["scripted"]
    assert terminal["authMethods"][1] == {
        "id": "scripted-terminal", "name": "Store a Scripted key in the keyring",
        "description": "Runs `acp-agent auth set` in a terminal.", "type": "terminal",
        "args": ["auth", "set", "--provider", "scripted"]}


@pytest.mark.parametrize(("state", "rejected", "expected"), [
    (CredentialState(True, "environment"), False,
     {"state": "authenticated", "accounts": [{"label": "API key from the environment", "active": True}]}),
    (CredentialState(True, "keyring", "secret"), True,
     {"state": "unauthenticated", "accounts": [{"label": "API key from the keyring", "active": True}]}),
    (CredentialState(True, "stored"), False,
     {"state": "authenticated", "accounts": [{"label": "Signed-in account", "active": True}]}),
    (CredentialState(False, "none"), False, {"state": "unauthenticated"}),
    (CredentialState(False, "none"), True, {"state": "unauthenticated"}),
])
def test_acp_auth_status_from_the_credentials_and_the_latest_turn(
        state: CredentialState, rejected: bool, expected: dict[str, Any]) -> None:
    from tests import acp_schema

    status = acp_auth_status(state, rejected)
    assert status == expected
    assert "secret" not in repr(status)
    acp_schema.check_result("auth/status", status)
    acp_schema.check_notification({"method": "auth/status_update", "params": status})


def test_the_feed_tells_only_a_client_that_asked_and_only_changes() -> None:
    feed = AuthStatusFeed()
    configured = CredentialState(True, "environment")
    feed.turn_ended(AuthObservation("rejected"))
    assert feed.update(configured) is None  # never asked
    assert feed.answer(configured)["state"] == "unauthenticated"
    assert feed.update(configured) is None  # unchanged
    feed.turn_ended(AuthObservation("unknown"))  # a cancelled turn says nothing of the credentials
    assert feed.update(configured) is None
    feed.turn_ended(AuthObservation("acceptedForTurn"))
    assert feed.update(configured) == acp_auth_status(configured, False)
    assert feed.update(CredentialState(False, "none")) == {"state": "unauthenticated"}
