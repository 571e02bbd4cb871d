"""`acp_agent.sessions.instructions`: the checks on AIR's `customInstructions` and the store that
keeps them with a session across agent processes (untrusted files, atomic writes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acp_agent.sessions.instructions import MAX_BYTES, InstructionStore, requested
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError


def meta(value: Any) -> dict[str, Any]:
    return {"jetbrains": {"air": {"version": 1, "customInstructions": value}}}


@pytest.mark.parametrize(("given", "expected"), [
    (None, None), ({}, None), ({"jetbrains": "x"}, None), (meta(None), None), (meta(""), ""),
    (meta("Be terse."), "Be terse."), (meta("é" * (MAX_BYTES // 2)), "é" * (MAX_BYTES // 2)),
])
def test_requested_reads_a_string_or_nothing(given: Any, expected: str | None) -> None:
    assert requested(given) == expected


@pytest.mark.parametrize("value", [1, True, ["a"], {"text": "a"}, "x" * (MAX_BYTES + 1),
                                   "é" * (MAX_BYTES // 2 + 1), "\ud800"])
def test_requested_refuses_what_is_not_bounded_text(value: Any) -> None:
    with pytest.raises(RpcError) as caught:
        requested(meta(value))
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data is not None
    assert caught.value.data["field"] == "_meta.jetbrains.air.customInstructions"


def test_the_store_keeps_them_for_a_fresh_process_and_forgets_a_deleted_session(tmp_path: Path) -> None:
    InstructionStore("claude", tmp_path).put("s1", "Be terse.")
    fresh = InstructionStore("claude", tmp_path)
    assert fresh.get("s1") == "Be terse."
    assert fresh.get("s2") is None
    assert InstructionStore("codex", tmp_path).get("s1") is None  # per provider
    fresh.forget("s1")
    assert InstructionStore("claude", tmp_path).get("s1") is None
    assert os.listdir(tmp_path / "instructions" / "claude") == []  # no temporary left behind


def test_a_hostile_or_oversized_file_is_no_instructions(tmp_path: Path) -> None:
    store = InstructionStore("claude", tmp_path)
    store.put("fifo", "x")
    store.put("big", "x")
    fifo, big = store._path("fifo"), store._path("big")
    fifo.unlink()
    os.mkfifo(fifo)  # opening it would block: it is never opened
    big.write_bytes(b"x" * (MAX_BYTES + 1))
    fresh = InstructionStore("claude", tmp_path)
    assert fresh.get("fifo") is None
    assert fresh.get("big") is None


def test_an_unusable_state_directory_keeps_them_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = InstructionStore("claude", blocker)  # its directory cannot be made
    store.put("s1", "Be terse.")
    assert store.get("s1") == "Be terse."
    memory = InstructionStore("claude", None)
    memory.put("s1", "Be terse.")
    assert memory.get("s1") == "Be terse."
